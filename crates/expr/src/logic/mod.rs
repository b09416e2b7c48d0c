//! JSON Logic (jsonlogic.com), evaluated with JavaScript's semantics as json-logic-js applies
//! them, in two modes:
//!
//! - **mcpGraph mode** ([`Logic::compile`]): a single-key `{"var": "<string>"}` is a JSONata
//!   expression, compiled with the rule and evaluated against the [`Scope`]: the context (`$`,
//!   `$$`, bare `node.field`) with the history functions bound. Its value is used as data (an
//!   object or array result is never read as a rule), and an undefined result stays
//!   `undefined` (so `undefined < 5` is false, as in the reference).
//!   - `{"var": ["<string>", default]}`: the JSONata value, or `default` when it is `null` or
//!     undefined.
//!   - `{"var": ""}` (or `null`, `[]`): the current data itself.
//!   - any other `var` (a number, a computed operand): the classic dotted path into the
//!     current data.
//!   - inside `map`, `filter`, `reduce`, `all`, `none`, `some` the current data is the item
//!     (`{current, accumulator}` for `reduce`): a JSONata `var` is evaluated with the item as
//!     its input, so `{"var": "price"}` and `{"var": "$.price"}` read the item's field.
//!   - `missing` and `missing_some` look keys up as dotted paths into the current data.
//! - **classic mode** ([`Logic::compile_classic`]): `var` is a dotted path into the data, as
//!   on jsonlogic.com.
//!
//! Operators: `var missing missing_some if ?: == === != !== ! !! or and > >= < <= max min
//! + - * / % map reduce filter all none some merge in cat substr log`. Unknown operators are
//! compile errors. Not supported: json-logic-js's `method` and custom operations.

mod js;
mod ops;

use serde_json::Value as Json;

pub use js::{js_truthy, logic_truthy};

use crate::jsonata::Reads;
use crate::member::member;
use crate::{Context, ExprError, Jsonata, Limits, Scope};
use ops::Op;

/// Truthiness of a switch rule's result: JavaScript's ([`js_truthy`]), because mcpGraph
/// routes on `Boolean(result)`. Inside rules, operators use JSON Logic's ([`logic_truthy`]),
/// where `[]` is false.
pub fn truthy(v: &Json) -> bool {
    js_truthy(v)
}

/// A compiled JSON Logic rule whose `{var: "<string>"}` operands are JSONata.
#[derive(Clone, Debug)]
pub struct Logic {
    root: Rule,
}

#[derive(Clone, Debug)]
enum Rule {
    Literal(Json),
    /// An array of rules, evaluated item by item (json-logic-js maps `apply` over arrays).
    Array(Vec<Rule>),
    Op(Op, Vec<Rule>),
    /// mcpGraph's `{"var": "<jsonata>"}`, with the default of the array form.
    Expr(Box<Jsonata>, Option<Box<Rule>>),
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    McpGraph,
    Classic,
}

impl Logic {
    /// Compiles a rule in mcpGraph mode (see the module documentation): JSONata in every
    /// `var` string is compiled now, and its syntax errors are reported with the path of the
    /// `var` in the rule.
    pub fn compile(rule: &Json) -> Result<Self, ExprError> {
        Ok(Logic {
            root: compile(rule, Mode::McpGraph, &mut Vec::new())?,
        })
    }

    /// Compiles a rule with jsonlogic.com's semantics: `var` is a dotted path into the data.
    pub fn compile_classic(rule: &Json) -> Result<Self, ExprError> {
        Ok(Logic {
            root: compile(rule, Mode::Classic, &mut Vec::new())?,
        })
    }

    /// Evaluates against the scope: the context is the data, and JSONata `var`s see the
    /// history functions. An undefined result is `null`.
    pub fn evaluate(&self, scope: &Scope<'_>) -> Result<Json, ExprError> {
        let env = Env {
            reads: Reads::of(scope),
        };
        Ok(env
            .eval(&self.root, Data::Context(scope.context))?
            .unwrap_or(Json::Null))
    }

    /// Evaluates against plain JSON data, as jsonlogic.com's `apply(rule, data)` (the CLI and
    /// the conformance tests). JSONata `var`s of an mcpGraph-mode rule read `data` and see an
    /// empty history.
    pub fn evaluate_json(&self, data: &Json) -> Result<Json, ExprError> {
        let limits = Limits::default();
        let env = Env {
            reads: Reads {
                history: &crate::NoHistory,
                limits: &limits,
                caller: None,
            },
        };
        Ok(env
            .eval(&self.root, Data::Json(data))?
            .unwrap_or(Json::Null))
    }
}

fn path_text(path: &[String]) -> String {
    if path.is_empty() {
        "rule".to_owned()
    } else {
        format!("rule/{}", path.join("/"))
    }
}

/// Deeper rules (in steps from the root: an operator and its operand index are two) are
/// refused rather than risking the stack in compile and evaluate.
const MAX_NESTING: usize = 512;

fn compile(rule: &Json, mode: Mode, path: &mut Vec<String>) -> Result<Rule, ExprError> {
    if path.len() > MAX_NESTING {
        return Err(ExprError::new(
            "L0003",
            format!("the rule nests too deeply (over {MAX_NESTING} steps from its root)"),
        ));
    }
    match rule {
        Json::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                out.push(compile(item, mode, path)?);
                path.pop();
            }
            Ok(if out.iter().all(|r| matches!(r, Rule::Literal(_))) {
                Rule::Literal(rule.clone())
            } else {
                Rule::Array(out)
            })
        }
        Json::Object(map) if map.len() == 1 => {
            let Some((name, args)) = map.iter().next() else {
                return Ok(Rule::Literal(rule.clone()));
            };
            path.push(name.clone());
            let compiled = compile_op(name, args, mode, path);
            path.pop();
            compiled
        }
        // json-logic-js reads an object as an operation only when it has exactly one key.
        other => Ok(Rule::Literal(other.clone())),
    }
}

fn compile_op(
    name: &str,
    args: &Json,
    mode: Mode,
    path: &mut Vec<String>,
) -> Result<Rule, ExprError> {
    let Some(op) = Op::from_name(name) else {
        return Err(
            ExprError::new("L0001", format!("unknown JSON Logic operator \"{name}\""))
                .context(path_text(&path[..path.len() - 1])),
        );
    };
    if op == Op::Var && mode == Mode::McpGraph {
        let jsonata = |src: &str, path: &[String]| {
            Jsonata::compile(src)
                .map(Box::new)
                .map_err(|e| e.context(format!("{}: JSONata \"{src}\"", path_text(path))))
        };
        if let Json::String(src) = args
            && !src.is_empty()
        {
            return Ok(Rule::Expr(jsonata(src, path)?, None));
        }
        if let Json::Array(items) = args
            && let Some(Json::String(src)) = items.first()
            && !src.is_empty()
        {
            let default = match items.get(1) {
                Some(d) => {
                    path.push("1".to_owned());
                    let d = compile(d, mode, path)?;
                    path.pop();
                    Some(Box::new(d))
                }
                None => None,
            };
            return Ok(Rule::Expr(jsonata(src, path)?, default));
        }
    }
    // json-logic-js wraps a lone operand in an array.
    let operands = match args {
        Json::Array(items) => items.as_slice(),
        single => std::slice::from_ref(single),
    };
    let mut out = Vec::with_capacity(operands.len());
    for (i, operand) in operands.iter().enumerate() {
        path.push(i.to_string());
        out.push(compile(operand, mode, path)?);
        path.pop();
    }
    Ok(Rule::Op(op, out))
}

/// The data a rule reads: the context at the top of an mcpGraph rule, JSON elsewhere.
#[derive(Clone, Copy)]
enum Data<'a> {
    Context(&'a Context),
    Json(&'a Json),
}

impl<'a> Data<'a> {
    /// The data as JSON, copied (only `var ""` of a whole context needs this).
    fn to_json(self) -> Json {
        match self {
            Data::Context(ctx) => ctx.to_json(),
            Data::Json(j) => j.clone(),
        }
    }

    /// json-logic-js's dotted-path lookup: `None` when a step is missing or crosses a
    /// `null`.
    fn lookup(self, path: &str) -> Option<&'a Json> {
        let mut parts = path.split('.');
        let first = parts.next()?;
        let mut cur = match self {
            Data::Context(ctx) => ctx.get(first)?.as_json(),
            Data::Json(j) => step(j, first)?,
        };
        for part in parts {
            cur = step(cur, part)?;
        }
        Some(cur)
    }
}

fn step<'j>(v: &'j Json, key: &str) -> Option<&'j Json> {
    match v {
        Json::Object(map) => member(map, key),
        Json::Array(items) => {
            // A JavaScript array index is a canonical decimal ("01" is not one).
            if key.len() > 1 && key.starts_with('0') {
                return None;
            }
            items.get(key.parse::<usize>().ok()?)
        }
        _ => None,
    }
}

struct Env<'s> {
    reads: Reads<'s>,
}

impl Env<'_> {
    /// Evaluates a rule; `None` is JavaScript's `undefined`.
    fn eval(&self, rule: &Rule, data: Data<'_>) -> Result<Option<Json>, ExprError> {
        match rule {
            Rule::Literal(v) => Ok(Some(v.clone())),
            Rule::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(self.eval(item, data)?.unwrap_or(Json::Null));
                }
                Ok(Some(Json::Array(out)))
            }
            Rule::Expr(expr, default) => {
                let input = match data {
                    Data::Context(ctx) => crate::input::Input::Context(ctx),
                    Data::Json(j) => crate::input::Input::Json(j),
                };
                let value = expr.eval(input, self.reads)?;
                match default {
                    Some(d) if value.as_ref().is_none_or(Json::is_null) => self.eval(d, data),
                    _ => Ok(value),
                }
            }
            Rule::Op(op, args) => ops::apply(self, *op, args, data),
        }
    }
}
