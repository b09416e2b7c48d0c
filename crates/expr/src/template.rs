//! mcp node argument templates: literal JSON with `{expr: …}` JSONata holes.

use serde_json::{Map, Value as Json};

use crate::input::Input;
use crate::jsonata::Reads;
use crate::{ExprError, Jsonata, Scope};

/// mcp node arguments: literal JSON where `{expr: "<string>"}` objects are JSONata.
///
/// Only an object whose single key is `expr` with a string value is an expression; everything
/// else, including a string such as `"$.entry.x"`, is sent as written. An object with an `expr`
/// key and other keys, or a non-string `expr`, is a compile error (the reference fails on it
/// at run time). When an expression is undefined, an object key holding it is dropped, an
/// array item holding it becomes `null` (what the reference's `JSON.stringify` sends), and a
/// template that is itself one expression renders as `None`.
#[derive(Clone, Debug)]
pub struct Template {
    root: Part,
}

#[derive(Clone, Debug)]
enum Part {
    /// A subtree with no expression in it, copied as is.
    Literal(Json),
    Expr(Box<Jsonata>),
    Object(Vec<(String, Part)>),
    Array(Vec<Part>),
}

impl Template {
    /// Compiles every `{expr}` in `args`; a syntax error names the JSON pointer of the
    /// expression.
    pub fn compile(args: &Json) -> Result<Self, ExprError> {
        Ok(Template {
            root: compile(args, &mut String::new())?,
        })
    }

    /// Whether rendering can differ from the literal arguments.
    pub fn has_expressions(&self) -> bool {
        !matches!(self.root, Part::Literal(_))
    }

    /// Evaluates the expressions; an error names the JSON pointer of the failing one
    /// (`args/path/0: ...`).
    pub fn render(&self, scope: &Scope<'_>) -> Result<Option<Json>, ExprError> {
        render(&self.root, scope).map_err(|(err, tokens)| {
            let mut pointer = String::new();
            for token in tokens.iter().rev() {
                push_token(&mut pointer, token);
            }
            err.context(at(&pointer))
        })
    }
}

fn compile(v: &Json, pointer: &mut String) -> Result<Part, ExprError> {
    match v {
        Json::Object(map) => {
            if let Some(expr) = map.get("expr") {
                // The reference rejects these when it meets them; we do it at load.
                let Json::String(src) = expr else {
                    return Err(ExprError::new(
                        "A0001",
                        "\"expr\" must be a string (a JSONata expression)",
                    )
                    .context(at(pointer)));
                };
                if map.len() != 1 {
                    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
                    return Err(ExprError::new(
                        "A0002",
                        format!(
                            "an object with \"expr\" must have no other key (found {})",
                            keys.join(", ")
                        ),
                    )
                    .context(at(pointer)));
                }
                return Jsonata::compile(src)
                    .map(|e| Part::Expr(Box::new(e)))
                    .map_err(|e| e.context(at(pointer)));
            }
            let mut parts = Vec::with_capacity(map.len());
            for (k, item) in map {
                let len = pointer.len();
                push_token(pointer, k);
                parts.push((k.clone(), compile(item, pointer)?));
                pointer.truncate(len);
            }
            Ok(
                if parts.iter().all(|(_, p)| matches!(p, Part::Literal(_))) {
                    Part::Literal(v.clone())
                } else {
                    Part::Object(parts)
                },
            )
        }
        Json::Array(items) => {
            let mut parts = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                push_token(pointer, &i.to_string());
                parts.push(compile(item, pointer)?);
                pointer.truncate(len);
            }
            Ok(if parts.iter().all(|p| matches!(p, Part::Literal(_))) {
                Part::Literal(v.clone())
            } else {
                Part::Array(parts)
            })
        }
        other => Ok(Part::Literal(other.clone())),
    }
}

/// A failed render: the error, and the reference tokens from the failing expression up to
/// the root (built only on failure).
type Failure = (ExprError, Vec<String>);

fn render(part: &Part, scope: &Scope<'_>) -> Result<Option<Json>, Failure> {
    match part {
        Part::Literal(v) => Ok(Some(v.clone())),
        Part::Expr(e) => e
            .eval(Input::Context(scope.context), Reads::of(scope))
            .map_err(|err| (err, Vec::new())),
        Part::Object(fields) => {
            let mut out = Map::with_capacity(fields.len());
            for (k, p) in fields {
                match render(p, scope) {
                    Ok(Some(v)) => {
                        out.insert(k.clone(), v);
                    }
                    Ok(None) => {}
                    Err((e, mut tokens)) => {
                        tokens.push(k.clone());
                        return Err((e, tokens));
                    }
                }
            }
            Ok(Some(Json::Object(out)))
        }
        Part::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, p) in items.iter().enumerate() {
                match render(p, scope) {
                    Ok(v) => out.push(v.unwrap_or(Json::Null)),
                    Err((e, mut tokens)) => {
                        tokens.push(i.to_string());
                        return Err((e, tokens));
                    }
                }
            }
            Ok(Some(Json::Array(out)))
        }
    }
}

fn at(pointer: &str) -> String {
    if pointer.is_empty() {
        "args".to_owned()
    } else {
        format!("args{pointer}")
    }
}

/// Appends one RFC 6901 reference token.
fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}
