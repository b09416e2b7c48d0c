//! The session API: continue a waiting run with its client's input, cancel it, or read its
//! session; and why such a request is refused ([`SessionError`]).

use std::time::Duration;

use mcpflow_expr::Value;
use mcpflow_store::{Session, SessionStatus, StoreError, now_ms};

use super::execute::{Claim, Execution, Start};
use super::{Durability, restore, to_row};
use crate::Engine;
use crate::caller::Caller;
use crate::request::RunRequest;
use crate::run::Run;

/// Why a continue, cancel or status request for a session was refused. The session is left
/// as it was, except where the message says otherwise.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(
        "no session {0:?}: it never existed, or it was purged; call the tool again to start a \
         new run"
    )]
    Unknown(String),
    #[error(
        "session {id:?} expired at {expired_at_ms} ms since the epoch before it was continued; \
         call the tool again to start a new run"
    )]
    Expired { id: String, expired_at_ms: i64 },
    #[error("session {id:?} has ended ({status}); it cannot be continued")]
    Ended { id: String, status: SessionStatus },
    #[error(
        "session {0:?} is being continued by another request right now; only one continue can \
         win: check its status, then continue again if it is waiting"
    )]
    Busy(String),
    #[error("{0}")]
    TooManyRuns(#[from] crate::caller::TooManyRuns),
    #[error(
        "session {id:?} belongs to tool `{tool}`: use `{tool}_continue`, `{tool}_status` or `{tool}_cancel`"
    )]
    WrongTool { id: String, tool: String },
    #[error(
        "session {id:?} was started on config version {started}, and this server runs {current}: \
         the config changed since, and mcpflow never continues a run on another config; cancel \
         it and start a new run, or serve the old config to finish it"
    )]
    ConfigChanged {
        id: String,
        started: String,
        current: String,
    },
    #[error(
        "session {id:?} was started on revision {started} of tool `{tool}`, and this server \
         runs revision {current}: its author marked the change as one a waiting run must not \
         cross; cancel it and start a new run"
    )]
    MigrationRequired {
        id: String,
        tool: String,
        started: u64,
        current: u64,
    },
    #[error(
        "input does not match the inputSchema of await node `{node}`: {}; the session is \
         unchanged and still waiting", .errors.join("; ")
    )]
    InvalidInput { node: String, errors: Vec<String> },
    /// Another principal's session: nothing of it is told, not even its tool.
    #[error(
        "session {0:?} was started by another principal: only the principal that started it, \
         or one with the `admin` scope, may continue, read or cancel it"
    )]
    NotYours(String),
    #[error("this server keeps no sessions: no store is configured")]
    NoStore,
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl Engine {
    /// Continues the session `session_id` of `request.tool` with the client's input
    /// (`request.args`), for `request.caller`, who must be the principal that started it or an
    /// admin (the run goes on as the continuing caller's: `$caller` is who continues): validated against the await node's schema (a rejected input leaves
    /// the session waiting), claimed (of concurrent continues exactly one wins), recorded as
    /// the await node's output, and the run goes on to its next wait or its end.
    pub async fn continue_session(
        &self,
        mut request: RunRequest,
        session_id: &str,
    ) -> Result<Run, SessionError> {
        let durability = self.durability().ok_or(SessionError::NoStore)?;
        // A continued run counts as one of its caller's runs in flight until it ends or waits
        // again: the slot is held to the end of this future, and handed on, not taken twice,
        // when an older engine continues it.
        let slot = match request.slot.take() {
            Some(slot) => slot,
            None => request.caller.admit()?,
        };
        // One read of the session serves both the version check and the continue.
        let session = self
            .session(&request.tool, session_id, &request.caller)
            .await?;
        if let Some(older) = self.engine_of_session(durability, &session).await? {
            return Box::pin(older.continue_session(request.with_slot(slot), session_id)).await;
        }
        let _slot = slot;
        let input = std::mem::take(&mut request.args);
        let tool = request.tool.as_str();
        let session = live_session(durability, session)?;
        let graph = self
            .graph(tool)
            .ok_or_else(|| SessionError::Unknown(session_id.to_owned()))?;
        let Some((at, step)) = graph.await_step(&session.node_id) else {
            return Err(SessionError::ConfigChanged {
                id: session.id.clone(),
                started: session.config_version.clone(),
                current: durability.config_version.clone(),
            });
        };
        step.check(&input)
            .map_err(|errors| SessionError::InvalidInput {
                node: session.node_id.clone(),
                errors,
            })?;
        let next = step.next;
        // Read before the claim: a waiting run's records do not change, and the claim at
        // `session.version` fails if the session moved since (versions only grow), so what
        // was read is what the claimed run holds.
        let rows = durability
            .store
            .get_records(&session.run_id)
            .await
            .map_err(|e| claim_error(e, &session.id))?;
        let mut frame = restore(rows);
        let node = graph.nodes[at].id.clone();
        let at_ms = now_ms() as f64;
        let output = Value::from_json(input);
        frame.context.set(&node, Some(output.clone()));
        let mut record = frame
            .history
            .record(&node, "await", Duration::ZERO, Duration::ZERO);
        record.output = Some(output);
        record.start_time = at_ms;
        record.end_time = at_ms;
        frame.append(record);
        // The client's input is committed with the claim, before anything else runs.
        let input_row: Vec<_> = frame.history.last().map(to_row).into_iter().collect();
        let claimed = durability
            .store
            .claim_session_with_records(
                &session.id,
                session.version,
                &durability.lease(),
                now_ms(),
                &input_row,
            )
            .await
            .map_err(|e| claim_error(e, &session.id))?;
        let claim = Claim {
            session_id: claimed.id.clone(),
            version: claimed.version,
        };
        let execution = Execution {
            graph,
            run_id: claimed.run_id.clone(),
            start: Start::Resumed {
                stored: frame.history.len(),
                frame: Box::new(frame),
                at: next,
            },
            claim: Some(claim),
            request,
        };
        Ok(self.execute_durable(durability, execution).await)
    }

    /// The engine of the config version `session` was started on, when it is not this one's
    /// (see [`Engine::engine_of_version`]); refused when the tool's `revision` changed since.
    async fn engine_of_session(
        &self,
        durability: &Durability,
        session: &Session,
    ) -> Result<Option<Engine>, SessionError> {
        if session.config_version == durability.config_version {
            return Ok(None);
        }
        let Some(older) = self.engine_of_version(&session.config_version).await else {
            return Ok(None);
        };
        self.check_revision(&older, &session.tool, &session.id)?;
        Ok(Some(older))
    }

    /// The session `session_id`, checked to be one `caller` may act on (see
    /// [`Caller::may_act_for`]) and to belong to `tool`, in that order: another principal's
    /// session is refused before anything of it is told.
    pub async fn session(
        &self,
        tool: &str,
        session_id: &str,
        caller: &Caller,
    ) -> Result<Session, SessionError> {
        let durability = self.durability().ok_or(SessionError::NoStore)?;
        let session = durability
            .store
            .get_session(session_id)
            .await
            .map_err(|e| match e {
                StoreError::NotFound { .. } => SessionError::Unknown(session_id.to_owned()),
                other => other.into(),
            })?;
        if !caller.may_act_for(session.started_by.as_deref()) {
            return Err(SessionError::NotYours(session.id));
        }
        if session.tool != tool {
            return Err(SessionError::WrongTool {
                id: session.id,
                tool: session.tool,
            });
        }
        Ok(session)
    }

    /// Cancels a waiting session of `tool` and its run, for `caller` (who must be allowed to:
    /// see [`Engine::session`]).
    pub async fn cancel_session(
        &self,
        tool: &str,
        session_id: &str,
        caller: &Caller,
    ) -> Result<Session, SessionError> {
        let durability = self.durability().ok_or(SessionError::NoStore)?;
        let session = self.session(tool, session_id, caller).await?;
        match session.status {
            SessionStatus::Waiting => {}
            SessionStatus::Claimed => return Err(SessionError::Busy(session.id)),
            status => {
                return Err(SessionError::Ended {
                    id: session.id,
                    status,
                });
            }
        }
        durability
            .store
            .cancel_session(&session.id, now_ms())
            .await
            .map_err(|e| claim_error(e, &session.id))
    }
}

/// `session` if it may be continued now, or why not.
fn live_session(durability: &Durability, session: Session) -> Result<Session, SessionError> {
    match session.status {
        SessionStatus::Waiting if now_ms() < session.expires_at => {}
        SessionStatus::Waiting | SessionStatus::Expired => {
            return Err(SessionError::Expired {
                id: session.id,
                expired_at_ms: session.expires_at,
            });
        }
        SessionStatus::Claimed => return Err(SessionError::Busy(session.id)),
        status => {
            return Err(SessionError::Ended {
                id: session.id,
                status,
            });
        }
    }
    if session.config_version != durability.config_version {
        return Err(SessionError::ConfigChanged {
            id: session.id,
            started: session.config_version,
            current: durability.config_version.clone(),
        });
    }
    Ok(session)
}

fn claim_error(e: StoreError, id: &str) -> SessionError {
    match e {
        StoreError::Conflict { .. } => SessionError::Busy(id.to_owned()),
        StoreError::Expired { id, expired_at_ms } => SessionError::Expired { id, expired_at_ms },
        StoreError::NotFound { .. } => SessionError::Unknown(id.to_owned()),
        other => SessionError::Store(other),
    }
}
