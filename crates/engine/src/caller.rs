//! [`Caller`]: who a run runs for, as the engine needs it. Expressions read it as `$caller`;
//! a durable run records its subject as `started_by`, and its session may be continued, read
//! or cancelled only by a caller that [`may_act_for`](Caller::may_act_for) it. The engine knows
//! no credentials: the server makes a `Caller` of the request's principal.

use std::sync::{Arc, LazyLock};

use serde_json::{Value as Json, json};

/// Who a run runs for. Cheap to clone; carries no secret.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Recorded as the run's `started_by`; `None` without access control (everyone).
    subject: Option<Arc<str>>,
    /// May act on any run or session (`admin`).
    admin: bool,
    /// What expressions read as `$caller`.
    json: Arc<Json>,
}

/// `$caller` without access control (no `auth:`, stdio without `MCPFLOW_TOKEN`, the CLI): the
/// open principal, as `mcpflow_auth::Principal::open` describes it.
static OPEN: LazyLock<Arc<Json>> = LazyLock::new(|| {
    Arc::new(json!({
        "subject": "anonymous",
        "via": "open",
        "key": null,
        "scopes": ["admin"],
        "claims": {},
    }))
});

impl Default for Caller {
    fn default() -> Caller {
        Caller::open()
    }
}

impl Caller {
    /// A caller identified as `subject`, seen by expressions as `json`.
    pub fn new(subject: impl Into<Arc<str>>, admin: bool, json: Json) -> Caller {
        Caller {
            subject: Some(subject.into()),
            admin,
            json: Arc::new(json),
        }
    }

    /// Everyone, with every right: a server without access control. Its runs record no
    /// `started_by`.
    pub fn open() -> Caller {
        Caller {
            subject: None,
            admin: true,
            json: OPEN.clone(),
        }
    }

    /// The caller as a stored run recorded it (`started_by`, its `$caller`), for a run the
    /// engine restarts on its own after an interruption. Rights do not matter there: nothing
    /// is authorised on its behalf.
    pub(crate) fn recorded(started_by: Option<String>, json: Option<Json>) -> Caller {
        match (started_by, json) {
            (None, _) => Caller::open(),
            (Some(subject), json) => Caller {
                json: Arc::new(json.unwrap_or_else(|| json!({"subject": subject}))),
                subject: Some(subject.into()),
                admin: false,
            },
        }
    }

    /// The subject a run started by this caller records; `None`: no access control.
    pub fn subject(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    pub fn is_admin(&self) -> bool {
        self.admin
    }

    /// What `$caller` is bound to.
    pub fn json(&self) -> &Json {
        &self.json
    }

    /// What a stored run keeps of `$caller`: nothing for the open caller (it is the same for
    /// every run).
    pub(crate) fn recorded_json(&self) -> Option<Json> {
        self.subject.as_ref().map(|_| (*self.json).clone())
    }

    /// The JSON shared, for those that keep it beyond a borrow (hook metadata).
    pub fn shared_json(&self) -> Arc<Json> {
        self.json.clone()
    }

    /// Whether this caller may continue, read or cancel what `started_by` started: its own,
    /// or anything with `admin`. A run recorded with no `started_by` (started without access
    /// control, or before runs recorded it) is only an admin's: who started it is unknown.
    pub fn may_act_for(&self, started_by: Option<&str>) -> bool {
        self.admin || (started_by.is_some() && started_by == self.subject())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_starter_or_an_admin_may_act() {
        let alice = Caller::new("alice", false, json!({}));
        assert!(alice.may_act_for(Some("alice")));
        assert!(!alice.may_act_for(Some("bob")));
        assert!(!alice.may_act_for(None), "unknown starter: admin only");
        let admin = Caller::new("root", true, json!({}));
        assert!(admin.may_act_for(Some("alice")) && admin.may_act_for(None));
        assert!(Caller::open().may_act_for(Some("alice")));
        assert_eq!(Caller::open().subject(), None);
    }
}
