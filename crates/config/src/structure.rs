//! Structural checks: the config against the JSON Schema generated from its types, with the
//! validator's findings rewritten as messages for the file's author.
//!
//! Node and server types are unions (`oneOf`/`anyOf`). A validator reports a failed union as one
//! error holding every branch's errors; the branch the author meant is the one whose `type`
//! matches, so only that branch's errors are reported.

use std::collections::HashSet;
use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

use crate::place::{self, describe, field_name, in_owner};
use crate::source::{Anchor, Problem, SourceMap};
use crate::suggest::{closest, did_you_mean};
use crate::yaml::escape;

fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        // The schema is generated from our own types: failing to compile it is a bug, caught by
        // the tests, never by a user's file.
        jsonschema::validator_for(mcpflow_model::schema()).expect("the config schema compiles")
    })
}

/// Every structural problem of `doc` (the config with any `mcp.json` servers merged in).
pub(crate) fn check(doc: &Value, sources: &SourceMap) -> Vec<Problem> {
    let ctx = Ctx {
        doc,
        sources,
        schema: mcpflow_model::schema(),
    };
    let mut out = Out::default();
    for err in validator().iter_errors(doc) {
        ctx.report(&err, &mut out);
    }
    // `nxt: a` is reported as an unknown key suggesting `next`; a second error saying `next` is
    // missing would only repeat it.
    let mut problems = out.problems;
    problems.extend(
        out.required
            .into_iter()
            .filter(|(key, _)| !out.suggested.contains(key))
            .map(|(_, p)| p),
    );
    problems.dedup();
    problems
}

#[derive(Default)]
struct Out {
    problems: Vec<Problem>,
    /// Missing keys, by the pointer they would have.
    required: Vec<(String, Problem)>,
    /// Pointers of keys that an unknown-key error suggested.
    suggested: HashSet<String>,
}

impl Out {
    fn push(&mut self, p: Problem) {
        self.problems.push(p);
    }
}

struct Ctx<'a> {
    doc: &'a Value,
    sources: &'a SourceMap,
    schema: &'a Value,
}

impl Ctx<'_> {
    fn report(&self, err: &ValidationError<'_>, out: &mut Out) {
        let pointer = err.instance_path().as_str().to_owned();
        let instance = err.instance();
        match err.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let allowed = self.allowed_keys(err);
                for key in unexpected {
                    let hint = (!allowed.is_empty())
                        .then(|| format!("valid keys here: {}", allowed.join(", ")));
                    let close = closest(key, allowed.iter().map(String::as_str));
                    if let Some(c) = close {
                        out.suggested.insert(format!("{pointer}/{}", escape(c)));
                    }
                    out.push(
                        Problem::new(
                            format!("{pointer}/{}", escape(key)),
                            format!(
                                "unknown key \"{key}\"{}{}",
                                self.in_place_or_top(&pointer),
                                close
                                    .map(|c| format!(" (did you mean \"{c}\"?)"))
                                    .unwrap_or_default()
                            ),
                        )
                        .at(Anchor::Key)
                        .hint_opt(hint),
                    );
                }
            }
            ValidationErrorKind::Required { property } => {
                let key = property.as_str().unwrap_or_default();
                let hint = self
                    .property_description(err, key)
                    .map(|d| format!("`{key}`: {}", sentence_case(&d)));
                out.required.push((
                    format!("{pointer}/{}", escape(key)),
                    Problem::new(
                        pointer.clone(),
                        format!(
                            "missing required key \"{key}\"{}",
                            self.in_place_or_top(&pointer)
                        ),
                    )
                    .hint_opt(hint),
                ));
            }
            ValidationErrorKind::Type { .. } => {
                let expected = self.keyword_value(err);
                out.push(self.type_problem(&pointer, instance, expected));
            }
            ValidationErrorKind::Minimum { limit } if limit.as_u64().is_some_and(|m| m > 1) => {
                out.push(Problem::new(
                    pointer.clone(),
                    format!(
                        "{} must be at least {limit}, got {}{}",
                        field_name(&pointer),
                        self.written(&pointer, instance),
                        self.in_place(place::parent(&pointer))
                    ),
                ));
            }
            ValidationErrorKind::Minimum { .. } | ValidationErrorKind::ExclusiveMinimum { .. } => {
                out.push(Problem::new(
                    pointer.clone(),
                    format!(
                        "{} must be a positive integer, got {}{}",
                        field_name(&pointer),
                        self.written(&pointer, instance),
                        self.in_place(place::parent(&pointer))
                    ),
                ));
            }
            ValidationErrorKind::Maximum { limit } => {
                out.push(Problem::new(
                    pointer.clone(),
                    format!(
                        "{} must be at most {limit}, got {}{}",
                        field_name(&pointer),
                        self.written(&pointer, instance),
                        self.in_place(place::parent(&pointer))
                    ),
                ));
            }
            ValidationErrorKind::MinLength { .. } => out.push(Problem::new(
                pointer.clone(),
                format!(
                    "{} must not be empty{}",
                    field_name(&pointer),
                    self.in_place(place::parent(&pointer))
                ),
            )),
            ValidationErrorKind::Enum { options } => {
                let options: Vec<&str> = options
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                out.push(self.choice_problem(&pointer, instance, &options));
            }
            ValidationErrorKind::Constant { expected_value } => {
                let options: Vec<&str> = expected_value.as_str().into_iter().collect();
                out.push(self.choice_problem(&pointer, instance, &options));
            }
            ValidationErrorKind::OneOfNotValid { context }
            | ValidationErrorKind::AnyOf { context } => {
                let kinds = self.union_types(err);
                self.union(&pointer, instance, context, &kinds, out);
            }
            _ => out.push(Problem::new(
                pointer.clone(),
                format!("{}{}: {err}", field_name(&pointer), self.in_place(&pointer)),
            )),
        }
    }

    /// A failed union: report the errors of the branch the `type` key selects.
    fn union(
        &self,
        pointer: &str,
        instance: &Value,
        branches: &[Vec<ValidationError<'static>>],
        kinds: &[String],
        out: &mut Out,
    ) {
        let what = if pointer.contains("/nodes/") {
            "node"
        } else if pointer.starts_with("/mcpServers/") {
            "server"
        } else {
            "value"
        };
        let Some(object) = instance.as_object() else {
            out.push(Problem::new(
                pointer,
                format!(
                    "a {what} must be a mapping, got {}{}",
                    describe(instance),
                    self.in_place(place::parent(pointer))
                ),
            ));
            return;
        };
        let type_pointer = format!("{pointer}/type");
        let rejects_type = |errors: &Vec<ValidationError<'static>>| {
            errors.iter().any(|e| {
                let p = e.instance_path().as_str();
                p == type_pointer
                    || (p == pointer
                        && matches!(e.kind(), ValidationErrorKind::Required { property }
                            if property == "type"))
            })
        };
        // A branch that rejects the value's JSON type outright (`null` of an optional field) is
        // the least likely meant.
        let wrong_json_type = |errors: &Vec<ValidationError<'static>>| {
            errors.iter().any(|e| {
                e.instance_path().as_str() == pointer
                    && matches!(e.kind(), ValidationErrorKind::Type { .. })
            })
        };
        let candidates: Vec<&Vec<ValidationError<'static>>> =
            branches.iter().filter(|b| !rejects_type(b)).collect();
        if let Some(best) = candidates
            .iter()
            .min_by_key(|b| (wrong_json_type(b), b.len()))
        {
            for e in best.iter() {
                self.report(e, out);
            }
            return;
        }
        let hint = format!("`type` is one of: {}", kinds.join(", "));
        let problem = match object.get("type") {
            None => Problem::new(
                pointer,
                format!("{what} has no \"type\"{}", self.in_place(pointer)),
            ),
            Some(Value::String(t)) => {
                // Other MCP clients' spellings of Streamable HTTP.
                let alias = matches!(
                    t.to_lowercase().as_str(),
                    "http" | "streamable-http" | "streamable_http" | "streamablehttp"
                );
                let suggestion = if alias && kinds.iter().any(|k| k == "streamableHttp") {
                    " (did you mean \"streamableHttp\"?)".to_owned()
                } else {
                    did_you_mean(t, kinds.iter().map(String::as_str))
                };
                Problem::new(
                    type_pointer.clone(),
                    format!(
                        "unknown {what} type \"{t}\"{}{suggestion}",
                        self.in_place(pointer)
                    ),
                )
            }
            Some(other) => Problem::new(
                type_pointer.clone(),
                format!(
                    "{what} \"type\" must be a string, got {}{}",
                    describe(other),
                    self.in_place(pointer)
                ),
            ),
        };
        out.push(problem.hint(hint));
    }

    fn type_problem(&self, pointer: &str, instance: &Value, expected: Option<&Value>) -> Problem {
        let mut types: Vec<&str> = match expected {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        // `null` is accepted only so that an empty YAML value means "absent"; not worth naming.
        types.retain(|t| *t != "null");
        let positive = types == ["integer"]
            && self
                .sibling_keyword(pointer, "minimum")
                .is_some_and(|m| m == 1);
        let message = if positive {
            format!(
                "{} must be a positive integer, got {}",
                field_name(pointer),
                self.written(pointer, instance)
            )
        } else {
            let wanted: Vec<&str> = types.iter().map(|t| article(t)).collect();
            format!(
                "{} must be {}, got {}",
                field_name(pointer),
                if wanted.is_empty() {
                    "of another type".to_owned()
                } else {
                    wanted.join(" or ")
                },
                self.written(pointer, instance)
            )
        };
        let hint = (types == ["string"] && !instance.is_object() && !instance.is_array())
            .then(|| "quote the value to make it a string".to_owned());
        Problem::new(
            pointer,
            format!("{message}{}", self.in_place(place::parent(pointer))),
        )
        .hint_opt(hint)
    }

    fn choice_problem(&self, pointer: &str, instance: &Value, options: &[&str]) -> Problem {
        let quoted: Vec<String> = options.iter().map(|o| format!("\"{o}\"")).collect();
        let suggestion = instance
            .as_str()
            .map(|s| did_you_mean(s, options.iter().copied()))
            .unwrap_or_default();
        Problem::new(
            pointer,
            format!(
                "{} must be {}, got {}{}{suggestion}",
                field_name(pointer),
                if quoted.len() == 1 {
                    quoted[0].clone()
                } else {
                    format!("one of {}", quoted.join(", "))
                },
                describe(instance),
                self.in_place(place::parent(pointer)),
            ),
        )
    }

    /// A number as written in the file (`1.5`, `1e3`), else the value described.
    fn written(&self, pointer: &str, instance: &Value) -> String {
        match (instance, self.sources.raw_text(pointer)) {
            (Value::Number(_), Some(raw)) if raw.len() <= 40 => raw.to_owned(),
            _ => describe(instance),
        }
    }

    fn in_place(&self, pointer: &str) -> String {
        in_owner(pointer, self.doc)
    }

    fn in_place_or_top(&self, pointer: &str) -> String {
        match pointer {
            "" => " at the top level".to_owned(),
            "/server" => " in \"server\"".to_owned(),
            "/executionLimits" => " in \"executionLimits\"".to_owned(),
            p => in_owner(p, self.doc),
        }
    }

    /// The schema object that holds the failing keyword.
    fn keyword_holder(&self, err: &ValidationError<'_>) -> Option<&Value> {
        let path = err.schema_path().as_str();
        self.schema.pointer(place::parent(path))
    }

    fn keyword_value(&self, err: &ValidationError<'_>) -> Option<&Value> {
        let path = err.schema_path().as_str();
        self.schema.pointer(path)
    }

    fn allowed_keys(&self, err: &ValidationError<'_>) -> Vec<String> {
        self.keyword_holder(err)
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn property_description(&self, err: &ValidationError<'_>, key: &str) -> Option<String> {
        let prop = self.keyword_holder(err)?.get("properties")?.get(key)?;
        let prop = match prop.get("$ref").and_then(Value::as_str) {
            Some(r) if prop.get("description").is_none() => {
                self.schema.pointer(r.trim_start_matches('#'))?
            }
            _ => prop,
        };
        prop.get("description")?.as_str().map(str::to_owned)
    }

    /// A keyword next to `type` in the schema of the value at `pointer`, found by walking the
    /// schema along the pointer (enough for the plain objects the limits live in).
    fn sibling_keyword(&self, pointer: &str, keyword: &str) -> Option<&Value> {
        let mut schema = self.schema;
        for seg in place::segments(pointer) {
            schema = self.deref(schema);
            schema = match schema.get("properties").and_then(|p| p.get(&seg)) {
                Some(s) => s,
                None => schema
                    .get("items")
                    .or_else(|| schema.get("additionalProperties"))?,
            };
            schema = self.deref(schema);
            if let Some(any) = schema.get("anyOf").and_then(Value::as_array) {
                schema = any.iter().find(|s| s.get("type") != Some(&"null".into()))?;
            }
        }
        self.deref(schema).get(keyword)
    }

    /// The `type` values the branches of a failed union accept, read from the schema.
    fn union_types(&self, err: &ValidationError<'_>) -> Vec<String> {
        let Some(branches) = self.keyword_value(err).and_then(Value::as_array) else {
            return Vec::new();
        };
        let mut kinds = Vec::new();
        for branch in branches {
            let Some(t) = self
                .deref(branch)
                .get("properties")
                .and_then(|p| p.get("type"))
            else {
                continue;
            };
            let t = self.deref(t);
            let t = t
                .get("anyOf")
                .and_then(Value::as_array)
                .and_then(|a| {
                    a.iter()
                        .map(|s| self.deref(s))
                        .find(|s| s.get("enum").is_some())
                })
                .unwrap_or(t);
            if let Some(c) = t.get("const").and_then(Value::as_str) {
                kinds.push(c.to_owned());
            }
            if let Some(e) = t.get("enum").and_then(Value::as_array) {
                kinds.extend(e.iter().filter_map(Value::as_str).map(str::to_owned));
            }
        }
        kinds
    }

    fn deref<'s>(&'s self, schema: &'s Value) -> &'s Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => self
                .schema
                .pointer(r.trim_start_matches('#'))
                .unwrap_or(schema),
            None => schema,
        }
    }
}

fn article(json_type: &str) -> &'static str {
    match json_type {
        "string" => "a string",
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "true or false",
        "array" => "a list",
        "object" => "a mapping",
        "null" => "empty",
        _ => "a value of another type",
    }
}

/// "Program to start." → "program to start", to follow a key name in a hint.
fn sentence_case(description: &str) -> String {
    let d = description.trim_end_matches('.');
    let mut chars = d.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
