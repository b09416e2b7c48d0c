//! The JSON Schema of the config, generated from the types.

use std::sync::OnceLock;

use serde_json::Value;

use crate::config::Config;

/// The JSON Schema (draft 2020-12) of a config file, as `mcpflow schema` prints it.
///
/// Every object has `additionalProperties: false`: an editor using it flags a misspelt key the
/// way loading does.
pub fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| schemars::schema_for!(Config).to_value())
}
