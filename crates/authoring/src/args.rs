//! Reading a built-in tool's arguments against its [`Spec`]: unknown keys (with a "did you
//! mean"), missing keys and wrong types are all reported at once, each with what the parameter
//! is for, followed by an example of a correct call. Past this check, reading a parameter
//! cannot fail.

use serde_json::{Map, Value};

use crate::tools::{Kind, Spec};

/// A malformed call: the message for the model.
#[derive(Debug)]
pub(crate) struct Malformed(pub String);

impl Malformed {
    /// A problem with one call of `spec`, followed by an example of a correct call.
    pub(crate) fn new(spec: &Spec, problem: impl std::fmt::Display) -> Self {
        Malformed(format!(
            "{}: {problem}\nExample of a correct call: {}",
            spec.name,
            spec.example()
        ))
    }
}

/// The arguments of one call, checked against its spec.
pub(crate) struct Args<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    pub(crate) fn check(spec: &Spec, map: &'a Map<String, Value>) -> Result<Self, Malformed> {
        let mut problems = Vec::new();
        let names = || spec.params.iter().map(|p| p.name);
        for key in map.keys() {
            if names().any(|n| n == key) {
                continue;
            }
            let hint = match closest(key, names()) {
                Some(c) => format!(" (did you mean `{c}`?)"),
                None if spec.params.is_empty() => " (this tool takes no arguments)".to_owned(),
                None => format!(
                    " (the parameters are: {})",
                    names()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            problems.push(format!("unknown parameter `{key}`{hint}"));
        }
        for p in spec.params {
            match map.get(p.name) {
                None | Some(Value::Null) if p.required => {
                    problems.push(format!("missing `{}`: {}", p.name, p.description));
                }
                None | Some(Value::Null) => {}
                Some(v) if !p.kind.accepts(v) => problems.push(format!(
                    "`{}` must be {}, got {}",
                    p.name,
                    p.kind.describe(),
                    mcpflow_model::describe(v)
                )),
                Some(_) => {}
            }
        }
        if problems.is_empty() {
            Ok(Args { map })
        } else {
            Err(Malformed::new(spec, problems.join("; ")))
        }
    }

    /// The value of `key`, `None` when absent or null.
    pub(crate) fn value(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub(crate) fn str(&self, key: &str) -> Option<&'a str> {
        self.value(key).and_then(Value::as_str)
    }

    pub(crate) fn bool(&self, key: &str) -> Option<bool> {
        self.value(key).and_then(Value::as_bool)
    }

    pub(crate) fn object(&self, key: &str) -> Option<&'a Map<String, Value>> {
        self.value(key).and_then(Value::as_object)
    }

    pub(crate) fn array(&self, key: &str) -> Option<&'a Vec<Value>> {
        self.value(key).and_then(Value::as_array)
    }

    pub(crate) fn integer(&self, key: &str) -> Option<u64> {
        self.value(key).and_then(Value::as_u64)
    }

    /// A string, or a list of strings, as a list.
    pub(crate) fn strings(&self, key: &str) -> Vec<&'a str> {
        match self.value(key) {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }
}

impl Kind {
    fn accepts(self, v: &Value) -> bool {
        match self {
            Kind::String => v.is_string(),
            Kind::Bool => v.is_boolean(),
            Kind::Integer => v.as_u64().is_some(),
            Kind::Object => v.is_object(),
            Kind::Array => v.is_array(),
            Kind::Strings => {
                v.is_string() || v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
            }
            Kind::TextOrObject => v.is_string() || v.is_object(),
            Kind::Enum(values) => v.as_str().is_some_and(|s| values.contains(&s)),
            Kind::Any => true,
        }
    }

    fn describe(self) -> String {
        match self {
            Kind::String => "a string".into(),
            Kind::Bool => "true or false".into(),
            Kind::Integer => "a non-negative integer".into(),
            Kind::Object => "an object".into(),
            Kind::Array => "a list".into(),
            Kind::Strings => "a string or a list of strings".into(),
            Kind::TextOrObject => "an object, or YAML/JSON text".into(),
            Kind::Enum(values) => format!(
                "one of {}",
                values
                    .iter()
                    .map(|v| format!("\"{v}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Kind::Any => "any JSON value".into(),
        }
    }
}

/// The candidate closest to `word` when it is close enough to be a slip, case ignored.
pub(crate) fn closest<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    let lower = word.to_lowercase();
    let mut best: Option<(usize, &'c str)> = None;
    for c in candidates {
        let d = strsim::osa_distance(&lower, &c.to_lowercase());
        let limit = (word.chars().count().max(c.chars().count()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}
