//! MCP prompts that walk a model through the authoring loop: writing a tool for a stated goal
//! (`mcpflow_write_tool`) and finding out why a run failed (`mcpflow_debug_run`). Each names
//! only the built-in tools this server lists.

use rmcp::model::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::{Map, Value};

use crate::Authoring;

pub(crate) const WRITE_TOOL: &str = "mcpflow_write_tool";
pub(crate) const DEBUG_RUN: &str = "mcpflow_debug_run";

/// Why a prompt cannot be given: what the model or client should send instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PromptError(pub String);

impl Authoring {
    /// The prompts this server offers.
    pub fn prompts(&self) -> Vec<Prompt> {
        vec![
            Prompt::new(
                WRITE_TOOL,
                Some(
                    "Write, test and save a graph tool for a goal you state, step by step with \
                     the built-in tools",
                ),
                Some(vec![
                    PromptArgument::new("goal")
                        .with_description("what the tool should do, in a sentence")
                        .with_required(true),
                    PromptArgument::new("upstream")
                        .with_description("the upstream server to build on, if you know it")
                        .with_required(false),
                ]),
            ),
            Prompt::new(
                DEBUG_RUN,
                Some("Find out why a run of a graph tool failed, and fix the tool"),
                Some(vec![
                    PromptArgument::new("runId")
                        .with_description(
                            "the failed run's id (mcpflow_run_tool answers it; mcpflow_list_runs \
                             lists recent ones)",
                        )
                        .with_required(false),
                    PromptArgument::new("tool")
                        .with_description("the tool whose recent failed runs to look at")
                        .with_required(false),
                ]),
            ),
        ]
    }

    /// Whether `name` is one of [`Authoring::prompts`].
    pub fn has_prompt(&self, name: &str) -> bool {
        name == WRITE_TOOL || name == DEBUG_RUN
    }

    /// The prompt `name` with its arguments filled in.
    pub fn prompt(
        &self,
        name: &str,
        arguments: Option<&Map<String, Value>>,
    ) -> Result<GetPromptResult, PromptError> {
        let arg = |key: &str| {
            arguments
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
        };
        let text = match name {
            WRITE_TOOL => {
                let goal = arg("goal").ok_or_else(|| {
                    PromptError(format!(
                        "{WRITE_TOOL} needs `goal`: what the tool should do, e.g. \
                         {{\"goal\": \"count the files of a directory by extension\"}}"
                    ))
                })?;
                self.write_steps(goal, arg("upstream"))
            }
            DEBUG_RUN => self.debug_steps(arg("runId"), arg("tool")),
            other => {
                return Err(PromptError(format!(
                    "no prompt named `{other}`; this server's prompts are {WRITE_TOOL} and {DEBUG_RUN}"
                )));
            }
        };
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]).with_description(
                match name {
                    WRITE_TOOL => "Write, test and save a graph tool",
                    _ => "Debug a failed run",
                },
            ),
        )
    }

    fn write_steps(&self, goal: &str, upstream: Option<&str>) -> String {
        let settings = self.settings();
        let discover = match upstream {
            Some(server) => format!(
                "List the tools of upstream `{server}` with mcpflow_list_upstream_tools \
                 {{\"server\": \"{server}\"}}, and read the full schemas of the ones you need \
                 with mcpflow_get_upstream_tool."
            ),
            None => "Find the upstream tools to build from: mcpflow_list_upstreams, then \
                     mcpflow_list_upstream_tools and mcpflow_get_upstream_tool for full schemas."
                .to_owned(),
        };
        let mut steps = vec![
            "Read mcpflow_syntax (all topics) before writing anything: it is short and every \
             example in it runs."
                .to_owned(),
            discover,
        ];
        if settings.search() {
            steps.push(
                "If you are not sure what exists, mcpflow_search finds graph tools, upstream \
                 tools and node types by words, best first."
                    .into(),
            );
        }
        steps.extend([
            "Pick node types with mcpflow_node_types and read the fields and a complete example \
             of each with mcpflow_node_details."
                .to_owned(),
            "Try each JSONata expression and JSON Logic rule against a sample context with \
             mcpflow_test_expression."
                .to_owned(),
        ]);
        if settings.call_upstreams() {
            steps.push(
                "See what an upstream tool answers, exactly as an mcp node reads it, with \
                 mcpflow_call_upstream."
                    .into(),
            );
        }
        steps.push(
            "Check the whole definition with mcpflow_validate_tool; fix every problem it lists \
             (each has a path inside your definition and a fix) and check again until it is \
             valid."
                .into(),
        );
        if settings.run_inline() {
            steps.push(
                "Run it with mcpflow_run_tool {\"definition\": ..., \"arguments\": ...} on real \
                 arguments and read the result and the history; on failure the answer names the \
                 failing node, its error and the context it saw."
                    .into(),
            );
        }
        if settings.save() {
            steps.push(
                "Save it with mcpflow_save_tool: it is served at once, and you can call it by \
                 its name."
                    .into(),
            );
        } else {
            steps.push(
                "Saving is off on this server: give the user the final definition (YAML) to \
                 add to the config's `tools:`."
                    .into(),
            );
        }
        let mut text = format!(
            "Write an mcpflow graph tool for this goal: {goal}\n\nA graph tool chains upstream \
             MCP tool calls declaratively, so the intermediate results never pass through your \
             context. Work in this order:\n"
        );
        for (i, step) in steps.iter().enumerate() {
            text.push_str(&format!("{}. {step}\n", i + 1));
        }
        text.push_str(
            "\nKeep the tool small: one entry, one exit, and give it an inputSchema (and an \
             outputSchema when the result has a fixed shape).",
        );
        text
    }

    fn debug_steps(&self, run: Option<&str>, tool: Option<&str>) -> String {
        let find = match (run, tool) {
            (Some(run), _) => format!(
                "Read run `{run}` with mcpflow_get_run {{\"runId\": \"{run}\"}}: its arguments, \
                 its error and its history."
            ),
            (None, Some(tool)) => format!(
                "List the recent runs of `{tool}` with mcpflow_list_runs {{\"tool\": \"{tool}\"}} \
                 and read the newest failed one with mcpflow_get_run."
            ),
            (None, None) => "List recent runs with mcpflow_list_runs and read the newest failed \
                             one with mcpflow_get_run."
                .to_owned(),
        };
        let mut text = String::from("Find out why a graph tool's run failed, then fix the tool.\n");
        let steps = [
            find,
            "Find the failing node: the last record of the history with an `error`. Read the \
             context it saw with mcpflow_get_run {\"runId\": ..., \"index\": N} for the record \
             before it (time travel: the context right after record N)."
                .to_owned(),
            "Reproduce the failing expression on that context with mcpflow_test_expression; for \
             an mcp node, compare its evaluated args with the upstream tool's inputSchema \
             (mcpflow_get_upstream_tool)."
                .to_owned(),
            "Change the definition (mcpflow_get_graph_tool gives the saved one), check it with \
             mcpflow_validate_tool and run it again with mcpflow_run_tool on the same arguments."
                .to_owned(),
        ];
        for (i, step) in steps.iter().enumerate() {
            text.push_str(&format!("{}. {step}\n", i + 1));
        }
        if self.settings().save() {
            text.push_str("When it passes, save the fixed tool with mcpflow_save_tool.\n");
        }
        text
    }
}
