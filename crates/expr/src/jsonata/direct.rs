//! A direct evaluator for the shape most transforms and switch operands have: literals, field
//! paths into the context, history calls with literal arguments, arithmetic, comparisons,
//! `and`/`or`, conditionals and object constructors with literal keys (mcpGraph's
//! `loop_example` is all of these).
//!
//! jlens-core evaluates such an expression in a few microseconds, most of it spent making its
//! own values of the input and of the history calls' results (copies) and building frames. Here
//! the expression is walked over our values as they are, borrowed: a history call reads the
//! recorded output in place, a path reads the context's entries, and only the result is built.
//!
//! It answers only where its answer is certainly jlens-core's: on anything else (an array met,
//! an operand of the wrong type, a number out of range, an error of any kind) it gives up and
//! the expression is evaluated by jlens-core as before, which then gives the result or the
//! error in the user's terms. Evaluation is pure, so giving up and starting again changes
//! nothing. Which expressions it takes is decided at compile time ([`Direct::new`]); what they
//! meet at run time decides the rest.

use std::cell::Cell;

use jlens_core::Expression;
use jlens_core::ast::{BinaryOp, Node, NodeKind};
use serde_json::{Map, Value as Json};

use super::plan::as_jsonata;
use crate::history::SIGNATURES;
use crate::input::Input;
use crate::member::member;
use crate::{HistoryView, Limits, memory};

/// An expression in the subset, ready to walk.
#[derive(Debug)]
pub(super) struct Direct {
    root: Expr,
    /// The distinct history calls, each read once per evaluation however often it is written
    /// (`loop_example` writes `$nodeExecution("increment_node", -1)` three times).
    calls: Vec<Call>,
    /// AST nodes: a bound on jlens-core's steps for it (see [`Direct::fits`]).
    nodes: u64,
    /// Nesting of the AST: a bound on jlens-core's depth for it.
    depth: usize,
}

#[derive(Debug)]
enum Expr {
    /// A string, number, `true`, `false` or `null` literal, as JSON.
    Literal(Json),
    /// Fields read from the input (`$.a.b`, `$$.a`, `a.b`; `$` alone is not taken).
    Input(Vec<String>),
    /// Fields read from the value of a history call (`$nodeExecution("n", -1).sum`), by its
    /// index in [`Direct::calls`].
    History(usize, Vec<String>),
    Negate(Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    Condition(Box<Expr>, Box<Expr>, Option<Box<Expr>>),
    /// An object constructor whose keys are distinct string literals.
    Object(Vec<(String, Expr)>),
}

/// A history call with literal arguments (the types its signature wants).
#[derive(Debug, PartialEq)]
enum Call {
    /// `$previousNode(n)`: `None` when `n` is not an integer.
    PreviousNode(Option<i64>),
    ExecutionCount(String),
    /// `$nodeExecution(id, i)`: `None` when `i` is not an integer.
    NodeExecution(String, Option<i64>),
}

/// The direct walk gave up: jlens-core decides.
struct GiveUp;

/// What a history call reads.
#[derive(Clone, Copy)]
enum Read<'a> {
    Undefined,
    Ref(&'a Json),
    Number(f64),
}

impl<'a> From<Read<'a>> for V<'a> {
    fn from(read: Read<'a>) -> V<'a> {
        match read {
            Read::Undefined => V::Undefined,
            Read::Ref(json) => V::Ref(json),
            Read::Number(n) => V::Number(n),
        }
    }
}

/// History calls remembered within one evaluation; later ones are read each time.
const REMEMBERED: usize = 4;

/// One evaluation: what it reads, and the history calls read so far.
struct Walk<'a> {
    input: Input<'a>,
    history: &'a dyn HistoryView,
    calls: &'a [Call],
    read: [Cell<Option<Read<'a>>>; REMEMBERED],
}

/// A value met during the walk: borrowed from the input, the history or the expression where
/// possible.
enum V<'a> {
    Undefined,
    Ref(&'a Json),
    Number(f64),
    Bool(bool),
    Object(Map<String, Json>),
}

impl Direct {
    /// The expression, when all of it is in the subset and it shadows no history function.
    pub(super) fn new(expr: &Expression) -> Option<Direct> {
        let root = &expr.ast().root;
        let mut nodes = 0u64;
        let mut depth = 0usize;
        if !measure(root, 1, &mut nodes, &mut depth) {
            return None;
        }
        let mut calls = Vec::new();
        Some(Direct {
            root: compile(root, &mut calls)?,
            calls,
            nodes,
            depth,
        })
    }

    /// Whether the limits leave jlens-core room to evaluate it in full: then the walk, which
    /// takes no more steps and no more depth than jlens-core, gives what jlens-core would.
    fn fits(&self, limits: &Limits) -> bool {
        // jlens-core takes a step per node evaluated and one per function called: at most two
        // per AST node here, where each node is evaluated once at most.
        limits.max_steps.is_none_or(|s| s >= 2 * self.nodes)
            && limits.max_depth > 2 * self.depth + 2
            && !limits.timeout.is_zero()
    }

    /// The result (`Some(None)`: undefined), or `None` when jlens-core must decide.
    pub(super) fn evaluate(
        &self,
        input: Input<'_>,
        history: &dyn HistoryView,
        limits: &Limits,
    ) -> Option<Option<Json>> {
        if !self.fits(limits) || matches!(input, Input::Json(Json::Array(_))) {
            return None;
        }
        // Held to the same memory budget as jlens-core: only a result that copies a large
        // output can reach it.
        let walk = Walk {
            input,
            history,
            calls: &self.calls,
            read: Default::default(),
        };
        let (result, exhausted) =
            memory::metered(limits.max_memory_bytes, limits.max_steps, |_| {
                walk.eval(&self.root).and_then(output)
            });
        if exhausted {
            // jlens-core would fail the same way; let it say so in its words.
            return None;
        }
        result.ok()
    }
}

/// Deeper expressions are left to jlens-core (a transform is a few levels deep).
const MAX_DEPTH: usize = 64;

/// Counts the nodes of `node` and the depth it reaches; `false` past [`MAX_DEPTH`].
fn measure(node: &Node, level: usize, nodes: &mut u64, depth: &mut usize) -> bool {
    if level > MAX_DEPTH {
        return false;
    }
    *nodes += 1;
    *depth = (*depth).max(level);
    let mut children = Vec::new();
    node.for_each_child(|c| children.push(c));
    children
        .into_iter()
        .all(|c| measure(c, level + 1, nodes, depth))
}

/// Nothing attached to the node that changes how it is evaluated (filters, grouping, focus,
/// position or ancestor bindings, `[]`).
fn plain(node: &Node) -> bool {
    let a = &node.attrs;
    a.stages.is_empty()
        && a.predicate.is_empty()
        && a.group.is_none()
        && !a.tuple
        && !a.cons_array
        && !a.keep_array
        && a.focus.is_none()
        && a.index.is_none()
        && a.ancestor.is_none()
        && a.ancestor_label.is_none()
        && a.seeking_parent.is_empty()
}

fn compile(node: &Node, calls: &mut Vec<Call>) -> Option<Expr> {
    if !plain(node) {
        return None;
    }
    Some(match &node.kind {
        NodeKind::String { value } => Expr::Literal(Json::String(value.clone())),
        NodeKind::Number { value } => Expr::Literal(number_literal(*value)?),
        NodeKind::Bool { value } => Expr::Literal(Json::Bool(*value)),
        NodeKind::Null => Expr::Literal(Json::Null),
        NodeKind::Name { name } => Expr::Input(vec![name.clone()]),
        NodeKind::Path {
            steps,
            keep_singleton_array: false,
        } => path(steps, calls)?,
        NodeKind::Function { .. } => Expr::History(remember(call(node)?, calls), Vec::new()),
        NodeKind::Negate { expr } => Expr::Negate(Box::new(compile(expr, calls)?)),
        NodeKind::Binary { op, lhs, rhs } => match op {
            BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::Div
            | BinaryOp::Mod
            | BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge
            | BinaryOp::And
            | BinaryOp::Or => Expr::Binary(
                *op,
                Box::new(compile(lhs, calls)?),
                Box::new(compile(rhs, calls)?),
            ),
            _ => return None,
        },
        NodeKind::Condition {
            condition,
            then,
            otherwise,
        } => Expr::Condition(
            Box::new(compile(condition, calls)?),
            Box::new(compile(then, calls)?),
            match otherwise {
                Some(e) => Some(Box::new(compile(e, calls)?)),
                None => None,
            },
        ),
        NodeKind::Object { pairs } => {
            let mut out: Vec<(String, Expr)> = Vec::with_capacity(pairs.len());
            for (key, value) in pairs {
                let NodeKind::String { value: key } = &key.kind else {
                    return None;
                };
                // Two pairs of one key fail (D1009): jlens-core says so.
                if out.iter().any(|(k, _)| k == key) {
                    return None;
                }
                out.push((key.clone(), compile(value, calls)?));
            }
            Expr::Object(out)
        }
        _ => return None,
    })
}

/// A number literal as JSON (jlens-core's output rule: an integer when it has no fraction).
fn number_literal(value: f64) -> Option<Json> {
    value.is_finite().then(|| number(value))
}

/// `$.a.b`, `$$.a`, `a.b`, `$f(…).a`: field names after the input or a history call.
fn path(steps: &[Node], calls: &mut Vec<Call>) -> Option<Expr> {
    let (first, rest) = steps.split_first()?;
    let mut fields = Vec::with_capacity(steps.len());
    let base = match &first.kind {
        // `$` and `$$` are the input here: nothing in the subset moves the context.
        NodeKind::Variable { name } if plain(first) && (name.is_empty() || name == "$") => None,
        NodeKind::Name { name } if plain(first) => {
            fields.push(name.clone());
            None
        }
        NodeKind::Function { .. } if plain(first) => Some(remember(call(first)?, calls)),
        _ => return None,
    };
    for step in rest {
        match &step.kind {
            NodeKind::Name { name } if plain(step) => fields.push(name.clone()),
            _ => return None,
        }
    }
    match base {
        // `$` alone is the whole context, which jlens-core builds.
        None if fields.is_empty() => None,
        None => Some(Expr::Input(fields)),
        Some(call) => Some(Expr::History(call, fields)),
    }
}

/// The index of `call` among the distinct calls.
fn remember(call: Call, calls: &mut Vec<Call>) -> usize {
    match calls.iter().position(|c| *c == call) {
        Some(i) => i,
        None => {
            calls.push(call);
            calls.len() - 1
        }
    }
}

/// A history call whose arguments are literals of the types its signature wants
/// (`$nodeExecutions`, an array, is left to jlens-core).
fn call(node: &Node) -> Option<Call> {
    let NodeKind::Function { procedure, args } = &node.kind else {
        return None;
    };
    let NodeKind::Variable { name } = &procedure.kind else {
        return None;
    };
    if !plain(procedure) || !SIGNATURES.iter().any(|(n, _)| n == name) {
        return None;
    }
    let args: Vec<&Node> = args.iter().collect();
    if !args.iter().all(|a| plain(a)) {
        return None;
    }
    match (name.as_str(), args.as_slice()) {
        ("previousNode", []) => Some(Call::PreviousNode(Some(1))),
        ("previousNode", [n]) => Some(Call::PreviousNode(integer(literal_number(n)?))),
        ("executionCount", [id]) => Some(Call::ExecutionCount(literal_string(id)?)),
        ("nodeExecution", [id, i]) => Some(Call::NodeExecution(
            literal_string(id)?,
            integer(literal_number(i)?),
        )),
        _ => None,
    }
}

fn literal_string(node: &Node) -> Option<String> {
    match &node.kind {
        NodeKind::String { value } => Some(value.clone()),
        _ => None,
    }
}

fn literal_number(node: &Node) -> Option<f64> {
    match &node.kind {
        NodeKind::Number { value } => Some(*value),
        NodeKind::Negate { expr } if plain(expr) => match &expr.kind {
            NodeKind::Number { value } => Some(-*value),
            _ => None,
        },
        _ => None,
    }
}

/// As the history functions read an index: an integer, or nothing.
fn integer(n: f64) -> Option<i64> {
    (n.fract() == 0.0 && n.abs() < 9.0e15).then_some(n as i64)
}

impl<'a> Walk<'a> {
    /// Walks `expr`. The subset has neither bindings nor lambdas, so a history function's
    /// name is never shadowed here: a call is always the history's.
    fn eval(&self, expr: &'a Expr) -> Result<V<'a>, GiveUp> {
        Ok(match expr {
            Expr::Literal(json) => V::Ref(json),
            Expr::Input(fields) => {
                let (first, rest) = fields.split_first().ok_or(GiveUp)?;
                let start = match self.input {
                    Input::Context(ctx) => match ctx.get(first) {
                        Some(v) => V::Ref(v.as_json()),
                        None => V::Undefined,
                    },
                    Input::Json(json) => field(V::Ref(json), first)?,
                };
                fields_of(start, rest)?
            }
            Expr::History(call, fields) => fields_of(self.call(*call)?.into(), fields)?,
            Expr::Negate(operand) => match self.eval(operand)? {
                V::Undefined => V::Undefined,
                v => V::Number(-number_of(&v).ok_or(GiveUp)?),
            },
            Expr::Binary(op, lhs, rhs) => self.binary(*op, lhs, rhs)?,
            Expr::Condition(condition, then, otherwise) => {
                if boolean(&self.eval(condition)?)? == Some(true) {
                    self.eval(then)?
                } else if let Some(e) = otherwise {
                    self.eval(e)?
                } else {
                    V::Undefined
                }
            }
            Expr::Object(pairs) => {
                let mut out = Map::with_capacity(pairs.len());
                for (key, value) in pairs {
                    if let Some(v) = output(self.eval(value)?)? {
                        out.insert(key.clone(), v);
                    }
                }
                V::Object(out)
            }
        })
    }

    fn binary(&self, op: BinaryOp, lhs: &'a Expr, rhs: &'a Expr) -> Result<V<'a>, GiveUp> {
        let l = self.eval(lhs)?;
        if matches!(op, BinaryOp::And | BinaryOp::Or) {
            let l = boolean(&l)?.unwrap_or(false);
            let result = match op {
                BinaryOp::And if !l => false,
                BinaryOp::Or if l => true,
                _ => boolean(&self.eval(rhs)?)?.unwrap_or(false),
            };
            return Ok(V::Bool(result));
        }
        let r = self.eval(rhs)?;
        Ok(match op {
            BinaryOp::Eq | BinaryOp::Ne => {
                if matches!(l, V::Undefined) || matches!(r, V::Undefined) {
                    V::Bool(false)
                } else {
                    V::Bool(scalar_eq(&l, &r)? == (op == BinaryOp::Eq))
                }
            }
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => compare(op, &l, &r)?,
            _ => {
                // A defined operand that is not a number fails (T2001, T2002).
                let (a, b) = (operand(&l)?, operand(&r)?);
                let (Some(a), Some(b)) = (a, b) else {
                    return Ok(V::Undefined);
                };
                let n = match op {
                    BinaryOp::Add => a + b,
                    BinaryOp::Sub => a - b,
                    BinaryOp::Mul => a * b,
                    BinaryOp::Div => a / b,
                    _ => a % b,
                };
                // Out of range fails (D1001).
                if !n.is_finite() {
                    return Err(GiveUp);
                }
                V::Number(n)
            }
        })
    }

    /// The value of history call `index`, read in place, once per evaluation.
    fn call(&self, index: usize) -> Result<Read<'a>, GiveUp> {
        let slot = self.read.get(index);
        if let Some(read) = slot.and_then(Cell::get) {
            return Ok(read);
        }
        let read = history_value(self.calls.get(index).ok_or(GiveUp)?, self.history);
        if let Some(slot) = slot {
            slot.set(Some(read));
        }
        Ok(read)
    }
}

/// An arithmetic operand: `None` when undefined; a defined non-number gives up.
fn operand(v: &V<'_>) -> Result<Option<f64>, GiveUp> {
    match v {
        V::Undefined => Ok(None),
        v => number_of(v).map(Some).ok_or(GiveUp),
    }
}

fn number_of(v: &V<'_>) -> Option<f64> {
    match v {
        V::Number(n) => Some(*n),
        V::Ref(Json::Number(n)) => n.as_f64().filter(|n| n.is_finite()),
        _ => None,
    }
}

/// A scalar, as `=` compares it.
#[derive(PartialEq)]
enum Scalar<'s> {
    Number(f64),
    Bool(bool),
    String(&'s str),
    Null,
}

/// `=` of two defined values: scalars only (objects and arrays compare deeply: jlens-core's).
fn scalar_eq(l: &V<'_>, r: &V<'_>) -> Result<bool, GiveUp> {
    fn scalar<'s>(v: &'s V<'_>) -> Result<Scalar<'s>, GiveUp> {
        Ok(match v {
            V::Number(_) | V::Ref(Json::Number(_)) => Scalar::Number(number_of(v).ok_or(GiveUp)?),
            V::Bool(b) | V::Ref(Json::Bool(b)) => Scalar::Bool(*b),
            V::Ref(Json::String(s)) => Scalar::String(s),
            V::Ref(Json::Null) => Scalar::Null,
            _ => return Err(GiveUp),
        })
    }
    // Values of different types are not equal.
    Ok(scalar(l)? == scalar(r)?)
}

/// `<`, `<=`, `>`, `>=`: numbers with numbers, strings with strings (UTF-16 order, as
/// JavaScript compares), undefined when either is.
fn compare<'a>(op: BinaryOp, l: &V<'a>, r: &V<'a>) -> Result<V<'a>, GiveUp> {
    let comparable = |v: &V<'_>| {
        matches!(
            v,
            V::Undefined | V::Number(_) | V::Ref(Json::Number(_) | Json::String(_))
        )
    };
    if !comparable(l) || !comparable(r) {
        return Err(GiveUp);
    }
    if matches!(l, V::Undefined) || matches!(r, V::Undefined) {
        return Ok(V::Undefined);
    }
    let ordering = match (l, r) {
        (V::Ref(Json::String(a)), V::Ref(Json::String(b))) => {
            a.encode_utf16().cmp(b.encode_utf16())
        }
        _ => {
            let (Some(a), Some(b)) = (number_of(l), number_of(r)) else {
                // A number against a string fails (T2009).
                return Err(GiveUp);
            };
            a.partial_cmp(&b).ok_or(GiveUp)?
        }
    };
    Ok(V::Bool(match op {
        BinaryOp::Lt => ordering.is_lt(),
        BinaryOp::Le => ordering.is_le(),
        BinaryOp::Gt => ordering.is_gt(),
        _ => ordering.is_ge(),
    }))
}

/// JSONata's `$boolean` (`None` for undefined); an array's rules are jlens-core's.
fn boolean(v: &V<'_>) -> Result<Option<bool>, GiveUp> {
    Ok(Some(match v {
        V::Undefined => return Ok(None),
        V::Bool(b) | V::Ref(Json::Bool(b)) => *b,
        V::Number(_) | V::Ref(Json::Number(_)) => number_of(v).ok_or(GiveUp)? != 0.0,
        V::Ref(Json::String(s)) => !s.is_empty(),
        V::Ref(Json::Null) => false,
        V::Ref(Json::Object(o)) => !o.is_empty(),
        V::Object(o) => !o.is_empty(),
        V::Ref(Json::Array(_)) => return Err(GiveUp),
    }))
}

/// What a history call out of range gives.
static NULL: Json = Json::Null;

/// What a history call gives, read in place.
fn history_value<'a>(call: &Call, h: &'a dyn HistoryView) -> Read<'a> {
    let record = |index: usize| {
        h.output(index)
            .map_or(Read::Undefined, |v| Read::Ref(v.as_json()))
    };
    match call {
        Call::PreviousNode(n) => {
            let cur = h.len() as i64;
            match *n {
                Some(n) if n >= 1 && n <= cur => record((cur - n) as usize),
                _ => Read::Ref(&NULL),
            }
        }
        Call::ExecutionCount(id) => Read::Number(h.executions(id).len() as f64),
        Call::NodeExecution(id, i) => {
            let Some(i) = *i else {
                return Read::Ref(&NULL);
            };
            let runs = h.executions(id);
            let pos = if i < 0 { runs.len() as i64 + i } else { i };
            match usize::try_from(pos).ok().and_then(|p| runs.get(p)) {
                Some(&index) => record(index),
                None => Read::Ref(&NULL),
            }
        }
    }
}

/// Follows field names; an array met on the way (which jlens-core maps over) gives up.
fn fields_of<'a>(mut value: V<'a>, fields: &[String]) -> Result<V<'a>, GiveUp> {
    for name in fields {
        value = field(value, name)?;
    }
    match value {
        V::Ref(Json::Array(_)) => Err(GiveUp),
        v => Ok(v),
    }
}

fn field<'a>(value: V<'a>, name: &str) -> Result<V<'a>, GiveUp> {
    Ok(match value {
        V::Ref(Json::Object(fields)) => member(fields, name).map_or(V::Undefined, V::Ref),
        V::Ref(Json::Array(_)) | V::Object(_) => return Err(GiveUp),
        // A field of a scalar, or of nothing, is undefined.
        _ => V::Undefined,
    })
}

/// A value as jlens-core hands it back (its numbers as JavaScript's); an array gives up.
fn output(v: V<'_>) -> Result<Option<Json>, GiveUp> {
    Ok(Some(match v {
        V::Undefined => return Ok(None),
        V::Ref(Json::Array(_)) => return Err(GiveUp),
        V::Ref(json) => as_jsonata(json),
        V::Number(n) => number(n),
        V::Bool(b) => Json::Bool(b),
        V::Object(o) => Json::Object(o),
    }))
}

/// A finite number as jlens-core writes it: an integer when it has no fraction and is below
/// 2^53, `-0` as `0`.
fn number(n: f64) -> Json {
    const SAFE: f64 = 9.007_199_254_740_992e15;
    if n.fract() == 0.0 && n.abs() < SAFE {
        Json::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Json::Null, Json::Number)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::jsonata::{Jsonata, Reads};
    use crate::{Context, MemoryHistory, NoHistory, Value};

    /// What the walk answers for `src` over `input` (`None`: it gave up or does not take it),
    /// and what jlens-core answers, as compact JSON text (key order included).
    fn both(
        src: &str,
        input: Input<'_>,
        history: &dyn HistoryView,
    ) -> (Option<Option<String>>, Result<Option<String>, String>) {
        let expr = Jsonata::compile(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        let limits = Limits::default();
        let text = |v: Option<Json>| v.map(|v| v.to_string());
        let direct = Direct::new(&expr.inner.expr)
            .and_then(|d| d.evaluate(input, history, &limits))
            .map(text);
        let reads = Reads {
            history,
            limits: &limits,
            caller: None,
        };
        let engine = expr
            .run_as_written(input, reads, None)
            .map(text)
            .map_err(|e| e.to_string());
        (direct, engine)
    }

    /// A run of `loop_example` after `iterations` increments, as the context and history.
    fn looped(iterations: u64) -> (Context, MemoryHistory) {
        let (mut ctx, mut history) = (Context::new(), MemoryHistory::new());
        let mut push = |id: &str, v: Json| {
            let v = Value::from_json(v);
            history.push(id, Some(v.clone()));
            ctx.set(id, Some(v));
        };
        push("entry_sum", json!({"n": 5}));
        for i in 1..=iterations {
            push(
                "increment_node",
                json!({"counter": i, "sum": i * (i + 1) / 2, "target": 5}),
            );
            push("check_condition", json!("increment_node"));
        }
        (ctx, history)
    }

    const INCREMENT: &str = r#"$executionCount("increment_node") = 0
      ? {"counter": 1, "sum": 1, "target": $.entry_sum.n}
      : {
          "counter": $nodeExecution("increment_node", -1).counter + 1,
          "sum": $nodeExecution("increment_node", -1).sum + $nodeExecution("increment_node", -1).counter + 1,
          "target": $.entry_sum.n
        }"#;

    /// The transform of `loop_example` is walked directly, on its first iteration and later
    /// ones, and gives jlens-core's answer (this fails if the walk is taken away or gives up).
    #[test]
    fn loop_example_is_walked() {
        for iterations in [0, 1, 7] {
            let (ctx, history) = looped(iterations);
            let (direct, engine) = both(INCREMENT, Input::Context(&ctx), &history);
            assert!(direct.is_some(), "not walked after {iterations} iterations");
            assert_eq!(direct, engine.ok(), "after {iterations} iterations");
        }
        let (ctx, history) = looped(3);
        let exit = r#"$previousNode() = "increment_node" ? {"sum": $.increment_node.sum} : {"sum": 0, "error": "x"}"#;
        let (direct, engine) = both(exit, Input::Context(&ctx), &history);
        assert_eq!(direct, Some(Some(r#"{"sum":6}"#.to_owned())));
        assert_eq!(direct, engine.ok());
    }

    /// Expressions in and out of the subset, over inputs of every type: where the walk
    /// answers, it answers what jlens-core does; where jlens-core fails, the walk gives up.
    #[test]
    fn walk_agrees_with_jlens() {
        let (ctx, history) = looped(2);
        let inputs = [
            json!({"a": {"b": 2, "c": [1, 2], "s": "x", "t": true, "z": null, "f": 1.5, "o": {}},
                   "n": 3, "big": 1e300, "neg": -0.0, "u": "\u{1F600}", "v": "\u{FFFF}"}),
            json!([1, 2]),
            json!(null),
            json!("text"),
            json!(4),
        ];
        let sources = [
            "1",
            "-1",
            "1.5",
            "\"s\"",
            "true",
            "null",
            "a",
            "a.b",
            "$.a.b",
            "$$.a.b",
            "a.c",
            "a.c.x",
            "a.s.x",
            "a.z.x",
            "missing.x",
            "a.b + 1",
            "a.b - a.f",
            "a.b * 3",
            "a.b / 4",
            "a.b % 4",
            "-a.b",
            "-a.s",
            "a.s + 1",
            "a.t + 1",
            "missing + 1",
            "a.z + 1",
            "big * big",
            "1 / 0",
            "a.b = 2",
            "a.b = \"2\"",
            "a.s = \"x\"",
            "a.z = null",
            "missing = missing",
            "a.o = a.o",
            "a.c = a.c",
            "a.b != 2",
            "missing != 1",
            "a.b < 3",
            "a.b <= 2",
            "a.b > n",
            "a.b >= n",
            "a.s < \"y\"",
            "u < v",
            "a.s < 1",
            "a.t < 1",
            "missing < 1",
            "missing < a.t",
            "a.b and a.s",
            "a.z or missing",
            "a.c and true",
            "a.o or false",
            "a.b ? a.s : a.t",
            "a.z ? 1 : 2",
            "missing ? 1",
            "a.c ? 1 : 2",
            "a.o ? 1 : 2",
            "{\"k\": a.b}",
            "{\"k\": missing, \"j\": a.s}",
            "{\"k\": a.c}",
            "{\"k\": a}",
            "{\"k\": a.f * 2}",
            "{\"k\": 1, \"k\": 2}",
            "{\"k\": {\"j\": neg}}",
            "neg",
            "a.f * 2",
            "$",
            "$$",
            "$previousNode()",
            "$previousNode(2).counter",
            "$previousNode(1.5)",
            "$previousNode(99)",
            "$executionCount(\"increment_node\")",
            "$nodeExecution(\"increment_node\", 0).sum",
            "$nodeExecution(\"increment_node\", -9)",
            "$nodeExecution(\"increment_node\", 0.5)",
            "$nodeExecutions(\"increment_node\")",
            "$nodeExecution(\"entry_sum\", 0).n + $executionCount(\"check_condition\")",
            "a.b[0]",
            "a.b.$string()",
            "$x",
            "a.b & \"\"",
            "a.{\"k\": b}",
        ];
        let mut walked = 0;
        for src in sources {
            for input in &inputs {
                let (direct, engine) = both(src, Input::Json(input), &history);
                if let Some(direct) = direct {
                    walked += 1;
                    assert_eq!(Ok(direct), engine, "{src} over {input}");
                }
            }
            let (direct, engine) = both(src, Input::Context(&ctx), &history);
            if let Some(direct) = direct {
                walked += 1;
                assert_eq!(Ok(direct), engine, "{src} over the context");
            }
        }
        assert!(walked > 200, "only {walked} evaluations walked");
    }

    /// The jsonata-js reference suite: every case without bindings that the walk answers, it
    /// answers as jlens-core does.
    #[test]
    fn walk_agrees_on_the_reference_suite() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/conformance/jsonata-test-suite");
        let groups = std::fs::read_dir(root.join("groups")).unwrap_or_else(|e| {
            panic!("this test needs ../shared/ beside the repository root: {e}")
        });
        let (mut taken, mut walked) = (0, 0);
        for group in groups.filter_map(Result::ok) {
            let files = std::fs::read_dir(group.path()).expect("group directory");
            for file in files.filter_map(Result::ok) {
                let Ok(text) = std::fs::read_to_string(file.path()) else {
                    continue;
                };
                let Ok(json) = serde_json::from_str::<Json>(&text) else {
                    continue;
                };
                let cases = match json {
                    Json::Array(cases) => cases,
                    case => vec![case],
                };
                for case in cases {
                    let Some(Json::String(src)) = case.get("expr") else {
                        continue;
                    };
                    let data = match (case.get("data"), case.get("dataset")) {
                        (Some(data), _) => data.clone(),
                        (None, Some(Json::String(name))) => {
                            let path = root.join("datasets").join(format!("{name}.json"));
                            match std::fs::read_to_string(path)
                                .ok()
                                .and_then(|t| serde_json::from_str(&t).ok())
                            {
                                Some(data) => data,
                                None => continue,
                            }
                        }
                        _ => continue,
                    };
                    let data = &data;
                    if case.get("bindings").is_some() {
                        continue;
                    }
                    let Ok(expr) = Jsonata::compile(src) else {
                        continue;
                    };
                    if Direct::new(&expr.inner.expr).is_none() {
                        continue;
                    }
                    taken += 1;
                    let (direct, engine) = both(src, Input::Json(data), &NoHistory);
                    if let Some(direct) = direct {
                        walked += 1;
                        assert_eq!(Ok(direct), engine, "{src} over {data}");
                    }
                }
            }
        }
        // Most of the suite exercises functions and paths over arrays, which the walk leaves
        // to jlens-core: 20 of its expressions are taken, 13 walked to the end.
        assert!(
            taken >= 20 && walked >= 13,
            "{taken} cases taken, {walked} walked"
        );
    }
}
