//! The JSON Schema of the config, generated from the types in [`mcpflow_model`].

use serde_json::Value;

/// The JSON Schema (draft 2020-12) of a config file, as `mcpflow schema` prints it (an owned
/// copy of [`mcpflow_model::schema`]).
///
/// Every object has `additionalProperties: false`: an editor using it flags a misspelt key the
/// way loading does.
pub fn schema() -> Value {
    mcpflow_model::schema().clone()
}
