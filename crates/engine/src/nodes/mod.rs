//! What each node kind does when it runs, one file per kind. The run loop
//! ([`crate::run::Executor::run_chain`]) calls them with the frame they read, and records
//! what they return in one place; none of them writes a record itself.
//!
//! - [`transform`]: `transform`, and the `exit` that ends a run (pure: JSONata only);
//! - [`switch`]: `switch` (pure: JSON Logic rules, first truthy wins);
//! - [`mcp`]: `mcp`, a call to an upstream tool (with progress and cancellation);
//! - [`call`]: `call`, another tool of the config as a sub-run;
//! - [`fanout`]: `parallel` branches and `foreach` items on forks of the frame;
//! - [`await_node`]: `await`, where a run waits for its client or asks it inline;
//! - [`script`]: `script`, a JavaScript function in the sandbox.

pub(crate) mod await_node;
pub(crate) mod call;
pub(crate) mod fanout;
pub(crate) mod mcp;
pub(crate) mod script;
pub(crate) mod switch;
pub(crate) mod transform;
