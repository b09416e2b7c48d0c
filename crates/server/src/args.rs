//! A tool's arguments and results against its JSON Schema, through the engine's one
//! validator setup ([`mcpflow_engine::SchemaValidator`]).

use mcpflow_engine::SchemaValidator;
use serde_json::Value;

/// Checks a tool's arguments (or result) against its JSON Schema, compiled once.
pub struct ArgsValidator {
    validator: SchemaValidator,
}

impl ArgsValidator {
    pub fn new(schema: &Value) -> Result<Self, String> {
        let validator = SchemaValidator::new(schema).map_err(|e| e.to_string())?;
        Ok(ArgsValidator { validator })
    }

    /// Every violation, each as `at /pointer: message` (the root is `/`).
    pub fn check(&self, instance: &Value) -> Result<(), Vec<String>> {
        self.validator.check(instance)
    }
}
