//! How an expression is evaluated, decided at compile time:
//!
//! - a plain path (`$.node.field`, `node.field`) is looked up directly, without the engine,
//!   as long as it only crosses objects (an array would make JSONata map over it);
//! - a call of a history function with literal arguments (`$nodeExecution("n", -1)`) is
//!   computed once before the evaluation and bound to a variable that replaces it in the
//!   source: a host call converts its arguments and result to and from JSON each time.

use jlens_core::Expression;
use jlens_core::ast::{Node, NodeKind};
use serde_json::Value as Json;

use crate::ExprError;
use crate::history::SIGNATURES;
use crate::input::Input;
use crate::member::member;

#[derive(Debug)]
pub(super) enum Plan {
    Path(Vec<String>),
    Engine,
    Hoisted {
        expr: Rewritten,
        calls: Vec<Hoisted>,
    },
}

/// An expression evaluated in place of the one written, and how to find an error's position
/// in the source as written.
#[derive(Debug)]
pub(super) struct Rewritten {
    /// `None`: the expression as written.
    expr: Option<Expression>,
    /// Where each rewrite's edits went, the last rewrite first.
    maps: Vec<Vec<Replaced>>,
}

impl Rewritten {
    /// `expr` with its ranges guarded (`super::range`), or as it is when it needs no guard.
    pub(super) fn guarded(expr: &Expression) -> Rewritten {
        match super::range::guard(expr) {
            Some((guarded, replaced)) => Rewritten {
                expr: Some(guarded),
                maps: vec![replaced],
            },
            None => Rewritten {
                expr: None,
                maps: Vec::new(),
            },
        }
    }

    /// `rewritten` (made by edits that went to `replaced`), with its ranges guarded.
    fn guarding(rewritten: Expression, replaced: Vec<Replaced>) -> Rewritten {
        match super::range::guard(&rewritten) {
            Some((guarded, ranges)) => Rewritten {
                expr: Some(guarded),
                maps: vec![ranges, replaced],
            },
            None => Rewritten {
                expr: Some(rewritten),
                maps: vec![replaced],
            },
        }
    }

    /// What to evaluate for `written`.
    pub(super) fn expr<'e>(&'e self, written: &'e Expression) -> &'e Expression {
        self.expr.as_ref().unwrap_or(written)
    }

    /// `error` with its position in the source as written.
    pub(super) fn locate(&self, mut error: ExprError) -> ExprError {
        error.position = error
            .position
            .map(|p| self.maps.iter().fold(p, |p, map| original_position(map, p)));
        error
    }
}

/// One replaced call, as UTF-16 offsets (JSONata's positions) in the rewritten and the
/// original source.
#[derive(Debug)]
pub(super) struct Replaced {
    rewritten: (usize, usize),
    original: (usize, usize),
}

/// The position in the original source of `position` in the rewritten one.
fn original_position(replaced: &[Replaced], position: usize) -> usize {
    let mut mapped = position;
    for r in replaced {
        if position <= r.rewritten.0 {
            break;
        }
        if position <= r.rewritten.1 {
            return r.original.1;
        }
        mapped = position - r.rewritten.1 + r.original.1;
    }
    mapped
}

/// The prefix of the variables that replace calls: errors that name one are re-run on the
/// source as written.
pub(super) const HOISTED_PREFIX: &str = "__mcpflow_h";

#[derive(Debug)]
pub(super) struct Hoisted {
    /// The variable (without `$`) that replaces the call.
    pub var: String,
    pub function: &'static str,
    pub args: Vec<Option<Json>>,
}

impl Plan {
    pub(super) fn new(expr: &Expression) -> Plan {
        if let Some(steps) = plain_path(expr.source()) {
            return Plan::Path(steps);
        }
        hoist(expr).unwrap_or(Plan::Engine)
    }
}

const KEYWORDS: [&str; 7] = ["and", "or", "in", "true", "false", "null", "function"];

/// The field names of `$.a.b`, `$$.a.b` or `a.b` (empty for `$` and `$$`), when that is all
/// the expression is.
fn plain_path(src: &str) -> Option<Vec<String>> {
    let src = src.trim();
    let rest = match src {
        "$" | "$$" => return Some(Vec::new()),
        _ => src
            .strip_prefix("$$.")
            .or_else(|| src.strip_prefix("$."))
            .unwrap_or(src),
    };
    let mut steps = Vec::new();
    for name in rest.split('.') {
        let mut chars = name.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !first_ok
            || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            || KEYWORDS.contains(&name)
        {
            return None;
        }
        steps.push(name.to_owned());
    }
    Some(steps)
}

/// Follows a plain path: `Some(None)` for undefined, `None` when it reaches an array before
/// its end (or starts on one), where the engine must map.
pub(super) fn lookup<'a>(input: Input<'a>, steps: &[String]) -> Option<Option<&'a Json>> {
    let (mut cur, rest) = match input {
        Input::Context(ctx) => match steps.split_first() {
            Some((first, rest)) => match ctx.get(first) {
                Some(v) => (v.as_json(), rest),
                None => return Some(None),
            },
            // `$` alone: the whole context, which the engine copies out.
            None => return None,
        },
        Input::Json(json) => (json, steps),
    };
    for step in rest {
        cur = match cur {
            Json::Object(fields) => match member(fields, step) {
                Some(v) => v,
                None => return Some(None),
            },
            Json::Array(_) => return None,
            _ => return Some(None),
        };
    }
    match cur {
        // The engine flattens and unwraps arrays by rules that a lookup need not repeat.
        Json::Array(_) => None,
        _ => Some(Some(cur)),
    }
}

/// A copy of a value found by [`lookup`], as the engine would give it back: its numbers are
/// JavaScript numbers (jlens's output rule), so a float with no fraction is an integer, `-0` is
/// `0` and an integer past 2^53 is the nearest double; the rest as is.
pub(super) fn as_jsonata(json: &Json) -> Json {
    const SAFE: f64 = 9.007_199_254_740_992e15;
    match json {
        Json::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() || f.abs() >= SAFE => {
                if f.fract() == 0.0 && f.abs() < SAFE {
                    // Integral and below 2^53: exact.
                    Json::from(f as i64)
                } else {
                    serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number)
                }
            }
            _ => json.clone(),
        },
        Json::Array(items) => Json::Array(items.iter().map(as_jsonata).collect()),
        Json::Object(fields) => Json::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), as_jsonata(v)))
                .collect(),
        ),
        _ => json.clone(),
    }
}

/// Whether the expression reads the variable `$name` anywhere (a binding of its own of the
/// same name included: binding ours as well changes nothing then).
pub(super) fn names_variable(expr: &Expression, name: &str) -> bool {
    let mut found = false;
    expr.ast().root.walk(&mut |node| {
        if matches!(&node.kind, NodeKind::Variable { name: n } if n == name) {
            found = true;
        }
    });
    found
}

/// Rewrites the calls of history functions whose arguments are literals into variables.
fn hoist(expr: &Expression) -> Option<Plan> {
    let root = &expr.ast().root;
    let names: Vec<&str> = SIGNATURES.iter().map(|(n, _)| *n).collect();
    // A user binding or parameter of the same name changes what the call means.
    let mut shadowed = false;
    let mut applied = Vec::new();
    root.walk(&mut |node| match &node.kind {
        NodeKind::Bind { lhs, .. }
            if matches!(&lhs.kind, NodeKind::Variable { name } if names.contains(&name.as_str())) =>
        {
            shadowed = true;
        }
        NodeKind::Lambda(def) if def.params.iter().any(|p| names.contains(&p.as_str())) => {
            shadowed = true;
        }
        // `x ~> $f()` passes `x` as the first argument: not a call with literal arguments.
        NodeKind::Apply { rhs, .. } => applied.push(rhs.id),
        _ => {}
    });
    if shadowed {
        return None;
    }
    let src = expr.source();
    let mut found: Vec<(usize, usize, &'static str, Vec<Option<Json>>)> = Vec::new();
    root.walk(&mut |node| {
        if applied.contains(&node.id) {
            return;
        }
        if let Some((function, args)) = literal_call(node) {
            found.push((node.span.start, node.span.end, function, args));
        }
    });
    if found.is_empty() {
        return None;
    }
    found.sort_by_key(|f| f.0);
    let prefix = (0..)
        .map(|n| format!("{HOISTED_PREFIX}{}_", "x".repeat(n)))
        .find(|p| !src.contains(p.as_str()))?;
    let mut calls: Vec<Hoisted> = Vec::new();
    let mut edits = Vec::with_capacity(found.len());
    for (start, end, function, args) in found {
        let index = match calls
            .iter()
            .position(|c| c.function == function && c.args == args)
        {
            Some(i) => i,
            None => {
                calls.push(Hoisted {
                    var: format!("{prefix}{}", calls.len()),
                    function,
                    args,
                });
                calls.len() - 1
            }
        };
        edits.push(Edit {
            start,
            end,
            text: format!("${}", calls[index].var),
        });
    }
    let (rewritten, replaced) = rewrite(src, &edits)?;
    Some(Plan::Hoisted {
        expr: Rewritten::guarding(rewritten, replaced),
        calls,
    })
}

/// A change of the source: the bytes `start..end` replaced by `text` (inserted when the two
/// are equal).
#[derive(Debug)]
pub(super) struct Edit {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// `src` with `edits` (in source order, none overlapping) made, compiled, and where each edit
/// went; `None` when they do not fit the source or the result does not compile.
pub(super) fn rewrite(src: &str, edits: &[Edit]) -> Option<(Expression, Vec<Replaced>)> {
    let utf16 = |s: &str| s.encode_utf16().count();
    let mut out =
        String::with_capacity(src.len() + edits.iter().map(|e| e.text.len()).sum::<usize>());
    let mut replaced = Vec::with_capacity(edits.len());
    let mut at = 0;
    for edit in edits {
        if edit.start < at || edit.end < edit.start {
            return None;
        }
        out.push_str(src.get(at..edit.start)?);
        let rewritten_start = utf16(&out);
        out.push_str(&edit.text);
        let original_start = utf16(src.get(..edit.start)?);
        replaced.push(Replaced {
            rewritten: (rewritten_start, utf16(&out)),
            original: (
                original_start,
                original_start + utf16(src.get(edit.start..edit.end)?),
            ),
        });
        at = edit.end;
    }
    out.push_str(src.get(at..)?);
    Some((Expression::compile(&out).ok()?, replaced))
}

/// A call of a history function whose arguments are literals of the types its signature
/// wants.
fn literal_call(node: &Node) -> Option<(&'static str, Vec<Option<Json>>)> {
    let NodeKind::Function { procedure, args } = &node.kind else {
        return None;
    };
    let NodeKind::Variable { name } = &procedure.kind else {
        return None;
    };
    let function = SIGNATURES.iter().find(|(n, _)| n == name)?.0;
    let values: Vec<Json> = args.iter().map(literal).collect::<Option<_>>()?;
    let types_ok = matches!(
        (function, values.as_slice()),
        ("previousNode", [] | [Json::Number(_)])
            | ("executionCount" | "nodeExecutions", [Json::String(_)])
            | ("nodeExecution", [Json::String(_), Json::Number(_)])
    );
    types_ok.then(|| (function, values.into_iter().map(Some).collect()))
}

fn literal(node: &Node) -> Option<Json> {
    match &node.kind {
        NodeKind::String { value } => Some(Json::String(value.clone())),
        NodeKind::Number { value } => serde_json::Number::from_f64(*value).map(Json::Number),
        NodeKind::Negate { expr } => match &expr.kind {
            NodeKind::Number { value } => serde_json::Number::from_f64(-*value).map(Json::Number),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(src: &str) -> Plan {
        Plan::new(&Expression::compile(src).expect("compiles"))
    }

    #[test]
    fn plain_paths_are_recognised() {
        assert!(matches!(plan("$.a.b"), Plan::Path(s) if s == ["a", "b"]));
        assert!(matches!(plan("a"), Plan::Path(s) if s == ["a"]));
        assert!(matches!(plan("$$"), Plan::Path(s) if s.is_empty()));
        for src in [
            "a[0]", "a.b + 1", "$x.a", "a.`b c`", "true", "a.and", "$.a.", "a..b",
        ] {
            assert!(
                !matches!(
                    Plan::new(&match Expression::compile(src) {
                        Ok(e) => e,
                        Err(_) => continue,
                    }),
                    Plan::Path(_)
                ),
                "{src}"
            );
        }
    }

    #[test]
    fn literal_history_calls_are_hoisted() {
        let Plan::Hoisted { expr, calls, .. } = plan(
            r#"$executionCount("n") = 0 ? 1 : $nodeExecution("n", -1).c + $nodeExecution("n", -1).s"#,
        ) else {
            panic!("not hoisted");
        };
        assert_eq!(calls.len(), 2, "the two identical calls share one variable");
        assert_eq!(
            calls[1].args,
            [Some(Json::from("n")), Some(Json::from(-1.0))]
        );
        let source = expr.expr.as_ref().expect("rewritten").source();
        assert!(!source.contains("nodeExecution"), "{source}");
    }

    #[test]
    fn calls_that_are_not_literal_or_are_shadowed_stay_calls() {
        for src in [
            r#"$nodeExecution("n", $i)"#,
            r#"$executionCount(5)"#,
            r#"( $executionCount := function($x) { 1 }; $executionCount("n") )"#,
            r#"function($previousNode) { $previousNode() }"#,
            r#"3 ~> $previousNode()"#,
        ] {
            assert!(!matches!(plan(src), Plan::Hoisted { .. }), "{src}");
        }
    }
}
