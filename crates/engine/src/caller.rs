//! [`Caller`]: who a run runs for, as the engine needs it. Expressions read it as `$caller`;
//! a durable run records its subject as `started_by`, and its session may be continued, read
//! or cancelled only by a caller that [`may_act_for`](Caller::may_act_for) it. The engine knows
//! no credentials: the server makes a `Caller` of the request's principal.

use std::fmt;
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
    /// How many runs this caller may have in flight (issue #18); `None`: no limit.
    runs: Option<Arc<dyn RunLimit>>,
    /// The credential the caller presented, kept only for an upstream that forwards it
    /// (`forwardCallerToken`); never recorded, never in `$caller`.
    token: Option<Token>,
}

/// A caller's credential: shown by no `Debug`.
#[derive(Clone)]
struct Token(Arc<str>);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// The counter of a caller's runs in flight, which the server keeps per principal (it outlives
/// any one engine: a reload must not reset it). The engine takes a slot when a run starts or a
/// session is continued, and drops it when the run ends or waits for its client.
pub trait RunLimit: Send + Sync + fmt::Debug {
    /// A slot, counted until it is dropped; `None` when the caller has all it may have.
    fn take(&self) -> Option<Box<dyn Send + Sync>>;
    /// What a refusal tells the client.
    fn max(&self) -> u32;
}

/// One run's place in its caller's [`RunLimit`], given back when dropped: whatever way the
/// run ends (finished, waiting, cancelled, its future dropped with a disconnected client).
#[must_use = "the slot is given back when dropped"]
pub struct RunSlot(#[allow(dead_code)] Option<Box<dyn Send + Sync>>);

impl fmt::Debug for RunSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "RunSlot(counted)"
        } else {
            "RunSlot(unlimited)"
        })
    }
}

/// A caller with as many runs in flight as it may have.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "too many runs in flight for this caller (at most {max} at once); retry when one of them has ended"
)]
pub struct TooManyRuns {
    pub max: u32,
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
            runs: None,
            token: None,
        }
    }

    /// This caller's runs in flight are counted, and refused past the limit.
    pub fn with_run_limit(mut self, limit: Arc<dyn RunLimit>) -> Caller {
        self.runs = Some(limit);
        self
    }

    /// The credential this caller presented, for the upstreams that forward it.
    pub fn with_token(mut self, token: Arc<str>) -> Caller {
        self.token = Some(Token(token));
        self
    }

    /// Who an upstream request of this caller is made for (its `${caller.…}` headers).
    pub fn identity(&self) -> mcpflow_upstream::Identity {
        mcpflow_upstream::Identity::new(self.json.clone(), self.token.as_ref().map(|t| t.0.clone()))
    }

    /// A slot for one more run of this caller (always one without a limit).
    pub fn admit(&self) -> Result<RunSlot, TooManyRuns> {
        match &self.runs {
            None => Ok(RunSlot(None)),
            Some(limit) => limit
                .take()
                .map(|slot| RunSlot(Some(slot)))
                .ok_or(TooManyRuns { max: limit.max() }),
        }
    }

    /// Everyone, with every right: a server without access control. Its runs record no
    /// `started_by`.
    pub fn open() -> Caller {
        Caller {
            subject: None,
            admin: true,
            json: OPEN.clone(),
            runs: None,
            token: None,
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
                // A run the engine restarts on its own is no client's request to refuse.
                runs: None,
                // Credentials are never stored: a restarted run forwards none.
                token: None,
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
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// A limit of one, counted in an atomic the slot gives back when dropped.
    #[derive(Debug, Default)]
    struct One(Arc<AtomicU32>);

    struct Held(Arc<AtomicU32>);

    impl Drop for Held {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl RunLimit for One {
        fn take(&self) -> Option<Box<dyn Send + Sync>> {
            self.0
                .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
                .ok()
                .map(|_| Box::new(Held(self.0.clone())) as Box<dyn Send + Sync>)
        }

        fn max(&self) -> u32 {
            1
        }
    }

    #[test]
    fn a_limited_caller_is_admitted_until_its_slots_are_taken() {
        let count = Arc::new(AtomicU32::new(0));
        let alice =
            Caller::new("alice", false, json!({})).with_run_limit(Arc::new(One(count.clone())));
        let slot = alice.admit().expect("the first run");
        // Clones (sub-runs, hooks' metadata) share the limit, not a slot of their own.
        let refused = alice.clone().admit().expect_err("the second run");
        assert_eq!(refused.max, 1);
        assert!(refused.to_string().contains("at most 1"), "{refused}");
        drop(slot);
        assert_eq!(count.load(Ordering::SeqCst), 0, "given back when dropped");
        assert!(alice.admit().is_ok());
        // Without a limit every run is admitted.
        let open = Caller::open();
        let (_a, _b) = (open.admit().expect("one"), open.admit().expect("two"));
    }

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
