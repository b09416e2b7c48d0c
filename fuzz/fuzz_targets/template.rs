//! An `mcp` node's `args`: literal JSON where `{"expr": ...}` is JSONata, compiled from any
//! JSON and rendered against a run. A template without expressions renders to itself.
#![no_main]

#[path = "common/scope.rs"]
mod scope;

use libfuzzer_sys::fuzz_target;
use mcpflow_expr::{Scope, Template};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(args) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok(template) = Template::compile(&args) else {
        return;
    };
    let run = scope::run();
    let rendered = template.render(&Scope::new(&run.context, &run.history, &run.limits));
    if !template.has_expressions() {
        assert_eq!(
            rendered.ok().flatten().as_ref(),
            Some(&args),
            "a literal template changed"
        );
    }
});
