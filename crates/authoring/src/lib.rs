//! mcpflow-authoring: the built-in tools through which a model that knows nothing of mcpflow
//! learns the graph format, finds the upstream tools to build from, and writes, checks and runs
//! a graph tool — over MCP alone, without a human editing YAML.
//!
//! ```ignore
//! let authoring = Authoring::new(config.authoring.unwrap_or_default(), Served {
//!     engine: engine.clone(),
//!     config: Arc::new(loaded.config.clone()),
//!     base_dir: loaded.base_dir.clone(),
//! });
//! mcpflow_authoring::check_names(graph_and_proxied_names)?;   // a clash is a load error
//! let listed = authoring.tools();                            // only what the flags allow
//! if authoring.handles(&request.name) {
//!     return Ok(authoring.call(&request.name, request.arguments.unwrap_or_default()).await);
//! }
//! ```
//!
//! Every tool answers an object (structured content, and the same JSON as text), or, for a
//! malformed call, a tool-level error that says what is wrong and shows a correct call; every
//! answer carries the milliseconds it took in `_meta["mcpflow/tookMs"]`. The tools teach
//! (`mcpflow_syntax`, whose every example mcpflow's tests execute; `mcpflow_node_types`,
//! `mcpflow_node_details`), check (`mcpflow_test_expression`, `mcpflow_validate_tool`, through
//! the config loader's and the engine's own checks), run (`mcpflow_run_tool`, through
//! [`Engine::run`](mcpflow_engine::Engine::run); `mcpflow_list_runs` and `mcpflow_get_run` show
//! past runs and the context at any step of one) and discover (upstream servers and tools
//! through the engine's [`UpstreamPool`](mcpflow_upstream::UpstreamPool), graph tools, a scored
//! search); `mcpflow_call_upstream` calls one upstream tool as an mcp node would.
//!
//! `mcpflow_save_tool` and `mcpflow_delete_tool` (the `save` flag) write a tool's own file
//! and have the running server serve it through [`Publish`], which the binary provides.
//! The web UI's graph editor uses the same checks and the same save ([`save_definition`],
//! [`check`], [`check_expression`], [`source`]) through the run API, and so does its hook flow
//! editor ([`hook_flows`], [`check_hook`], [`read_flow`], [`save_hooks`]: the hooks file).
//!
//! Uses rmcp's model types only ([`Tool`], [`CallToolResult`]): framing MCP messages is the
//! server's job. Writes no file but the saved tools' own and the hooks file.

mod answer;
mod args;
mod catalog;
mod definition;
mod discover;
mod edit;
mod expression;
mod hooks;
mod node_schema;
mod node_types;
mod prompts;
mod run;
mod runs;
mod save;
mod search;
mod syntax;
mod tools;
mod upstream_call;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;

use mcpflow_engine::Engine;
use mcpflow_model::Config;
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Map, Value};

pub use answer::TOOK_MS;
pub use edit::{
    Checked, Language, Source, can_save, catalog, check, check_expression, source, templates,
};
pub use hooks::{HookFlows, ListedHook, SavedHooks, check_hook, hook_flows, read_flow, save_hooks};
pub use mcpflow_model::AuthoringConfig;
pub use prompts::PromptError;
pub use save::{Expected, SaveError, Saved, save_definition, version};
pub use tools::PREFIX;

use answer::Answer;
use args::Args;
use tools::{SPECS, Spec};

/// What the authoring tools read at call time: the running engine (its compiled graph tools
/// and its upstream pool), the loaded config it was compiled from, and that config's directory.
#[derive(Clone)]
pub struct Served {
    pub engine: Engine,
    pub config: Arc<Config>,
    /// The config file's directory: `file:` scripts of a submitted definition resolve there.
    pub base_dir: PathBuf,
}

/// How saved tools reach the running server, given by whoever serves the config from its
/// files (the binary): the config as it is on disk, and serving it anew.
pub trait Publish: Send + Sync {
    /// Loads (without compiling) the config files as they are on disk now, with the options
    /// the server was started with.
    fn load(&self) -> Result<mcpflow_config::Loaded, mcpflow_config::ConfigErrors>;
    /// [`Publish::load`] with the hooks file (`authoring.hooksFile`) read as `text`: the config
    /// as it will load once a save writes `text` there, checked before it does.
    fn load_with_hooks(
        &self,
        text: &str,
    ) -> Result<mcpflow_config::Loaded, mcpflow_config::ConfigErrors>;
    /// Compiles the config on disk now and serves it in place of the running one: runs in
    /// flight finish on their graph, waiting sessions stay valid, clients are told the list
    /// changed. Answers the graph tools now served, or why the config could not be served (the
    /// running one then stays).
    fn reload(&self) -> BoxFuture<'_, Result<Vec<String>, String>>;
    /// Held by each save from its check to its reload: saves are taken one at a time.
    fn saving(&self) -> &tokio::sync::Mutex<()>;
}

/// The built-in authoring tools of one served config.
#[derive(Clone)]
pub struct Authoring {
    settings: AuthoringConfig,
    served: Served,
    /// Runs made through `mcpflow_run_tool`, for `mcpflow_list_runs` and `mcpflow_get_run`.
    recent: Arc<runs::Recent>,
    /// Where `mcpflow_save_tool` publishes; without it saving is refused.
    publish: Option<Arc<dyn Publish>>,
}

/// Graph or proxied tools named with the built-in tools' prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "tool name{} {} start{} with `{PREFIX}`, which is reserved for mcpflow's built-in authoring \
     tools; rename {}, or turn authoring off",
    if .names.len() == 1 { "" } else { "s" },
    .names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
    if .names.len() == 1 { "s" } else { "" },
    if .names.len() == 1 { "it (or, for a proxied tool, give its upstream a prefix)" } else { "them (or, for proxied tools, give their upstream a prefix)" }
)]
pub struct NameClash {
    pub names: Vec<String>,
}

/// Whether `name` is in the built-in tools' namespace (whether or not a flag lists it).
pub fn is_reserved(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// Fails when any of `names` (the graph tools and the proxied tools as listed) is in the
/// built-in tools' namespace: with authoring on, that is a load error.
pub fn check_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), NameClash> {
    let names: Vec<String> = names
        .into_iter()
        .filter(|n| is_reserved(n))
        .map(str::to_owned)
        .collect();
    if names.is_empty() {
        Ok(())
    } else {
        Err(NameClash { names })
    }
}

impl Authoring {
    pub fn new(settings: AuthoringConfig, served: Served) -> Self {
        Authoring {
            settings,
            served,
            recent: Arc::default(),
            publish: None,
        }
    }

    /// Saves publish through `publish` (listed only when `authoring.save` is on).
    pub fn with_publish(mut self, publish: Arc<dyn Publish>) -> Self {
        self.publish = Some(publish);
        self
    }

    /// The same tools over a reloaded config: the flags and the runs kept in memory carry over.
    pub fn reloaded(&self, served: Served) -> Self {
        Authoring {
            settings: self.settings.clone(),
            served,
            recent: self.recent.clone(),
            publish: self.publish.clone(),
        }
    }

    pub fn settings(&self) -> &AuthoringConfig {
        &self.settings
    }

    /// The built-in tools the flags allow, with their full input schemas.
    pub fn tools(&self) -> Vec<Tool> {
        self.listed().map(|s| s.tool(&self.settings)).collect()
    }

    /// The built-in tool `name` as listed, when the flags list it.
    pub fn tool(&self, name: &str) -> Option<Tool> {
        self.listed()
            .find(|s| s.name == name)
            .map(|s| s.tool(&self.settings))
    }

    /// Whether `name` is a built-in tool this server lists.
    pub fn handles(&self, name: &str) -> bool {
        self.listed().any(|s| s.name == name)
    }

    /// How the authoring loop goes, for the server's `initialize` instructions; names only the
    /// tools the flags list.
    pub fn instructions(&self) -> String {
        let mut steps = vec![
            "Learn the format with mcpflow_syntax (read it before writing a graph tool).",
            "Find what to build from: mcpflow_list_upstreams, mcpflow_list_upstream_tools and \
             mcpflow_get_upstream_tool (full schemas), mcpflow_list_graph_tools.",
            "Look up node fields and complete examples with mcpflow_node_types and \
             mcpflow_node_details.",
            "Try each expression with mcpflow_test_expression.",
            "Check the whole tool with mcpflow_validate_tool, and fix every problem it lists \
             (each has a path and a fix).",
            "Run it with mcpflow_run_tool (result, history, failing node and its context); \
             mcpflow_list_runs and mcpflow_get_run show past runs and the context at any step.",
        ];
        if self.settings.search() {
            steps.insert(
                1,
                "Search graph tools, upstream tools and node types with mcpflow_search.",
            );
        }
        if self.settings.call_upstreams() {
            steps.insert(
                steps.len() - 2,
                "See what an upstream tool answers, as an mcp node would read it, with \
                 mcpflow_call_upstream.",
            );
        }
        if self.settings.save() {
            steps.push(
                "Save it with mcpflow_save_tool: it is served at once, without a restart \
                 (mcpflow_delete_tool removes a saved tool).",
            );
        }
        let mut text = String::from(
            "This server can teach you to write its graph tools (declarative workflows that \
             chain upstream MCP tools) and check and run them for you:\n",
        );
        for (i, step) in steps.iter().enumerate() {
            text.push_str(&format!("{}. {step}\n", i + 1));
        }
        text
    }

    fn listed(&self) -> impl Iterator<Item = &'static Spec> + '_ {
        SPECS.iter().filter(|s| s.gate.open(&self.settings))
    }

    /// Answers one call of a built-in tool. Never fails: a malformed call, an unknown or
    /// disabled tool, is a tool-level error that says what is wrong and how to fix it.
    pub async fn call(&self, name: &str, arguments: Map<String, Value>) -> CallToolResult {
        self.call_as(name, arguments, mcpflow_engine::Caller::open())
            .await
    }

    /// [`Authoring::call`] for `caller`: the runs `mcpflow_run_tool` starts are its (their
    /// `$caller`, their sessions' owner), not the open caller's.
    pub async fn call_as(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        caller: mcpflow_engine::Caller,
    ) -> CallToolResult {
        let started = Instant::now();
        let answer = match self.listed().find(|s| s.name == name) {
            None => self.not_listed(name),
            Some(spec) => match Args::check(spec, &arguments) {
                Err(m) => m.into(),
                Ok(args) => self.dispatch(spec, &args, caller).await,
            },
        };
        answer.into_result(started)
    }

    async fn dispatch(
        &self,
        spec: &Spec,
        args: &Args<'_>,
        caller: mcpflow_engine::Caller,
    ) -> Answer {
        let served = &self.served;
        match spec.name {
            tools::SYNTAX => syntax::answer(args),
            tools::NODE_TYPES => catalog::types(args),
            tools::NODE_DETAILS => catalog::details(spec, args),
            tools::TEST_EXPRESSION => expression::answer(spec, args),
            tools::VALIDATE_TOOL => definition::validate(served, spec, args),
            tools::RUN_TOOL => {
                let run = run::Runs {
                    settings: &self.settings,
                    recent: &self.recent,
                    caller,
                };
                run::answer(served, run, spec, args).await
            }
            tools::LIST_RUNS => runs::list(served, &self.recent, spec, args).await,
            tools::GET_RUN => runs::get(served, &self.recent, spec, args).await,
            tools::LIST_UPSTREAMS => discover::upstreams(served).await,
            tools::LIST_UPSTREAM_TOOLS => discover::upstream_tools(served, args).await,
            tools::GET_UPSTREAM_TOOL => discover::upstream_tool(served, args).await,
            tools::LIST_GRAPH_TOOLS => discover::graph_tools(served),
            tools::GET_GRAPH_TOOL => discover::graph_tool(served, args),
            tools::SEARCH => search::answer(served, args).await,
            tools::CALL_UPSTREAM => upstream_call::answer(served, spec, args).await,
            tools::SAVE_TOOL => save::save(served, self.publish.as_deref(), spec, args).await,
            tools::DELETE_TOOL => save::delete(self.publish.as_deref(), spec, args).await,
            other => Answer::Refused(format!("{other} is listed but not implemented")),
        }
    }

    fn not_listed(&self, name: &str) -> Answer {
        if let Some(spec) = Spec::find(name) {
            let flag = match spec.gate {
                tools::Gate::Search => "search",
                tools::Gate::CallUpstreams => "callUpstreams",
                tools::Gate::Save => "save",
                tools::Gate::Always => "",
            };
            return Answer::Refused(format!(
                "{name} is turned off on this server; the config's `authoring: {{{flag}: true}}` \
                 turns it on"
            ));
        }
        let listed: Vec<&str> = self.listed().map(|s| s.name).collect();
        let hint = match args::closest(name, listed.iter().copied()) {
            Some(c) => format!("did you mean `{c}`?"),
            None => format!("the built-in tools are: {}", listed.join(", ")),
        };
        Answer::Refused(format!("no built-in tool named `{name}`; {hint}"))
    }
}
