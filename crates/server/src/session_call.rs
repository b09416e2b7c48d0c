//! `NAME_continue`, `NAME_cancel` and `NAME_status` calls, with the same cancellation and
//! progress reporting as the tool call that started the run.

use mcpflow_engine::{Control, RunStatus};
use rmcp::model::CallToolResult;
use serde_json::Value;

use crate::handler::{CallOptions, GraphServer};
use crate::result::tool_result;
use crate::session::{self, Companion, CompanionKind};

impl GraphServer {
    pub(crate) async fn call_companion(
        &self,
        name: &str,
        c: &Companion,
        arguments: Option<serde_json::Map<String, Value>>,
        options: &CallOptions,
    ) -> CallToolResult {
        let args = match session::parse_args(name, c, arguments) {
            Ok(a) => a,
            Err(result) => return result,
        };
        let engine = self.engine();
        if c.kind != CompanionKind::Continue {
            return session::inspect(engine, c, &args.session_id).await;
        }
        let input = args.input.unwrap_or(Value::Null);
        let control = Control::new();
        let ask = options.asker();
        let (ctl, tool, session_id) = (&control, &c.tool, &args.session_id);
        let run = options
            .drive(ctl, |tx| async move {
                engine
                    .continue_session(tool, session_id, input, ctl, tx.as_ref(), ask)
                    .await
            })
            .await;
        let run = match run {
            Ok(run) => run,
            Err(e) => {
                tracing::debug!(session = %args.session_id, tool = %c.tool, error = %e, "continue refused");
                return session::continue_error(&e);
            }
        };
        if run.status == RunStatus::Waiting {
            return session::waiting_result(&run);
        }
        if let Err(e) = &run.result {
            tracing::warn!(run = %run.id, tool = %c.tool, error = %e, "run failed");
        }
        tool_result(&run, self.output_validator(&c.tool))
    }
}
