use serde_json::Value;

/// Checks a tool's arguments (or result) against its JSON Schema, compiled once.
pub struct ArgsValidator {
    validator: jsonschema::Validator,
}

impl ArgsValidator {
    pub fn new(schema: &Value) -> Result<Self, String> {
        // Draft detection follows `$schema`; MCP says 2020-12 when absent.
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(schema)
            .map_err(|e| e.to_string())?;
        Ok(ArgsValidator { validator })
    }

    /// Every violation, each as `at /pointer: message` (the root is `/`).
    pub fn check(&self, instance: &Value) -> Result<(), Vec<String>> {
        let errors: Vec<String> = self
            .validator
            .iter_errors(instance)
            .map(|e| {
                let path = e.instance_path().to_string();
                let path = if path.is_empty() {
                    "/".to_owned()
                } else {
                    path
                };
                format!("at {path}: {}", e.masked())
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}
