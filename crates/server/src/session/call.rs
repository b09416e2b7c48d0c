//! `NAME_continue`, `NAME_cancel` and `NAME_status` calls, with the same cancellation and
//! progress reporting as the tool call that started the run.

use mcpflow_engine::{Control, RunRequest};
use serde_json::Value;

use crate::call_options::CallOptions;
use crate::server::{Called, GraphServer};
use crate::session::{self, Companion, CompanionKind};

impl GraphServer {
    pub(crate) async fn call_companion(
        &self,
        name: &str,
        c: &Companion,
        arguments: Option<serde_json::Map<String, Value>>,
        options: &CallOptions,
    ) -> Called {
        let args = match session::parse_args(name, c, arguments) {
            Ok(a) => a,
            Err(result) => return Called::Answer(result),
        };
        let engine = self.engine();
        let caller = options.caller();
        if c.kind != CompanionKind::Continue {
            return Called::Answer(session::inspect(engine, c, &args.session_id, &caller).await);
        }
        let input = args.input.unwrap_or(Value::Null);
        let control = Control::new();
        let ask = options.asker();
        let session_id = &args.session_id;
        let run = options
            .drive(&control, |tx| {
                let request = RunRequest::new(c.tool.as_str(), input)
                    .with_control(control.clone())
                    .with_events(tx)
                    .with_asker(ask)
                    .with_caller(caller);
                engine.continue_session(request, session_id)
            })
            .await;
        let run = match run {
            Ok(run) => run,
            Err(e) => {
                tracing::debug!(session = %args.session_id, tool = %c.tool, error = %e, "continue refused");
                return Called::Answer(session::continue_error(&e));
            }
        };
        options.note_run(&run.id);
        if let Some(e) = run.error() {
            tracing::warn!(run = %run.id, tool = %c.tool, error = %e, "run failed");
        }
        Called::of(run, self.output_validator(&c.tool))
    }
}
