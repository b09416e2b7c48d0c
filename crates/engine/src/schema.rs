//! JSON Schema, set up once for the workspace: a tool's arguments and result, an `await`
//! node's input. Draft 2020-12 unless the schema's `$schema` says otherwise (MCP's rule), and
//! one way of writing a violation: `at /pointer: message`.

use serde_json::Value;

/// A compiled JSON Schema.
#[derive(Debug)]
pub struct SchemaValidator {
    validator: jsonschema::Validator,
}

/// Why a schema does not compile: the place in the schema (a JSON pointer, empty for its
/// root) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SchemaError {
    pub pointer: String,
    pub message: String,
}

impl SchemaValidator {
    pub fn new(schema: &Value) -> Result<Self, SchemaError> {
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(schema)
            .map(|validator| SchemaValidator { validator })
            .map_err(|e| SchemaError {
                pointer: e.instance_path().as_str().to_owned(),
                message: e.to_string(),
            })
    }

    /// Every violation, each as `at /pointer: message` (the root is `/`). Values are masked:
    /// an argument may be a secret.
    pub fn check(&self, instance: &Value) -> Result<(), Vec<String>> {
        let errors: Vec<String> = self
            .validator
            .iter_errors(instance)
            .map(|e| {
                let path = e.instance_path().to_string();
                let path = if path.is_empty() { "/".into() } else { path };
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn violations_name_their_pointer_and_bad_schemas_their_place() {
        let v = SchemaValidator::new(&json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"]
        }))
        .expect("compiles");
        assert_eq!(v.check(&json!({"n": 1})), Ok(()));
        let errors = v.check(&json!({"n": "x"})).expect_err("a string");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("at /n: "), "{errors:?}");
        assert!(v.check(&json!([])).expect_err("not an object")[0].starts_with("at /: "));
        let e = SchemaValidator::new(&json!({"properties": {"n": {"type": 5}}})).expect_err("bad");
        assert_eq!(e.pointer, "/properties/n/type");
    }
}
