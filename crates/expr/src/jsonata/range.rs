//! Ranges sized before they are built.
//!
//! jlens builds `[a..b]` in one step: up to the reference's 10^7 items of 24 bytes, allocated
//! and filled before it looks at its cancel token again. As one step it also slipped under
//! the small step budget that sends heavy evaluations off the async runtime
//! (`mcpflow-engine`'s offload), so a client's `n: 10000000` for `[1..$n]` built 240 MB in
//! place on a runtime thread, and the memory budget could only refuse it once it was built.
//!
//! So the bounds of each range pass through two host functions, written around them at
//! compile time: `[$__mcpflow_range_from(a)..$__mcpflow_range_to(b)]`. The first notes the
//! start on the evaluation's meter, the second knows the size before jlens builds anything
//! and refuses a range of more items than the step budget allows steps (`U1006`: the engine
//! evaluates it again, off the runtime, without that budget) or of more bytes than are left
//! of the memory budget ([`MEMORY_CODE`]). Both give their argument back unchanged, so
//! whatever else a range does (its type errors, `D2014` past 10^7 items, an empty range) is
//! jlens' own. Ranges of two literal bounds and few items are left as written.

use jlens_core::ast::{BinaryOp, Node, NodeKind};
use jlens_core::{Bindings, Expression, HostCall, HostFunction};
use serde_json::Value as Json;

use super::plan::{self, Edit, Replaced};
use crate::memory::{self, MEMORY_CODE};

/// The host function around a range's start.
const FROM: &str = "__mcpflow_range_from";
/// The host function around a range's end.
const TO: &str = "__mcpflow_range_to";

/// What one item of a range takes in jlens (its `Value`: a tag and a fat pointer).
const ITEM_BYTES: f64 = 24.0;

/// Literal ranges up to this many items are left as written.
const SMALL: f64 = 1024.0;

/// `expr` with its ranges guarded, and where the guards went; `None` when it has no range
/// that needs one (or, defensively, when the guarded source would not be the same expression).
pub(super) fn guard(expr: &Expression) -> Option<(Expression, Vec<Replaced>)> {
    let src = expr.source();
    // A source that already names our functions would bind its own: leave it as written.
    if src.contains("__mcpflow_range") {
        return None;
    }
    let mut bounds: Vec<(&Node, &Node)> = Vec::new();
    expr.ast().root.walk(&mut |node| {
        if let Some((lhs, rhs)) = range_bounds(node)
            && !small_literal(lhs, rhs)
        {
            bounds.push((lhs, rhs));
        }
    });
    if bounds.is_empty() {
        return None;
    }
    let mut edits = Vec::with_capacity(bounds.len() * 4);
    for (lhs, rhs) in &bounds {
        for (node, function) in [(lhs, FROM), (rhs, TO)] {
            edits.push(Edit {
                start: node.span.start,
                end: node.span.start,
                text: format!("${function}("),
            });
            edits.push(Edit {
                start: node.span.end,
                end: node.span.end,
                text: ")".to_owned(),
            });
        }
    }
    // Source order. At one offset a bound that ends closes before one that starts opens, and
    // of nested bounds (found outer first) the outer opens first and closes last.
    let mut numbered: Vec<(usize, Edit)> = edits.into_iter().enumerate().collect();
    numbered.sort_by_key(|(i, edit)| {
        let opens = edit.text != ")";
        let i = *i as isize;
        (edit.start, opens, if opens { i } else { -i })
    });
    let edits: Vec<Edit> = numbered.into_iter().map(|(_, edit)| edit).collect();
    let (guarded, replaced) = plan::rewrite(src, &edits)?;
    // jlens' spans are those of its processed tree: make sure each bound was wrapped whole (a
    // call around part of a bound would change what it means): the argument of every guard,
    // taken back to the source as written, is a bound's span.
    let mut wanted: Vec<(usize, usize)> = bounds
        .iter()
        .flat_map(|(l, r)| [(l.span.start, l.span.end), (r.span.start, r.span.end)])
        .collect();
    let mut found = Vec::with_capacity(wanted.len());
    guarded.ast().root.walk(&mut |node| {
        if let Some((lhs, rhs)) = range_bounds(node) {
            for (bound, function) in [(lhs, FROM), (rhs, TO)] {
                if let Some(arg) = wrapped_argument(bound, function) {
                    found.push((
                        as_written(&edits, arg.span.start),
                        as_written(&edits, arg.span.end),
                    ));
                }
            }
        }
    });
    wanted.sort_unstable();
    found.sort_unstable();
    (found == wanted).then_some((guarded, replaced))
}

/// The byte offset in the source as written of `offset` in the source with `insertions` made,
/// for an offset outside the inserted text.
fn as_written(insertions: &[Edit], offset: usize) -> usize {
    let mut shift = 0;
    for insertion in insertions {
        let end = insertion.start + shift + insertion.text.len();
        if end > offset {
            break;
        }
        shift += insertion.text.len();
    }
    offset - shift
}

/// The two bounds of `node`, when it is a range (`lhs..rhs`).
fn range_bounds(node: &Node) -> Option<(&Node, &Node)> {
    match &node.kind {
        NodeKind::Binary {
            op: BinaryOp::Range,
            lhs,
            rhs,
        } => Some((lhs, rhs)),
        _ => None,
    }
}

/// The argument of `$function(arg)` when that is what `node` is.
fn wrapped_argument<'n>(node: &'n Node, function: &str) -> Option<&'n Node> {
    let NodeKind::Function { procedure, args } = &node.kind else {
        return None;
    };
    match (&procedure.kind, args.as_slice()) {
        (NodeKind::Variable { name }, [arg]) if name == function => Some(arg),
        _ => None,
    }
}

fn small_literal(lhs: &Node, rhs: &Node) -> bool {
    match (&lhs.kind, &rhs.kind) {
        (NodeKind::Number { value: l }, NodeKind::Number { value: r }) => r - l < SMALL,
        _ => false,
    }
}

/// `bindings` with the two guards bound.
pub(super) fn bind(bindings: Bindings) -> Bindings {
    let from = HostFunction::new(1, |args, call| {
        let start = bound(args, call);
        memory::note_range_start(start.as_ref().and_then(integer));
        Ok(start)
    })
    .without_input();
    let to = HostFunction::new(1, |args, call| {
        let end = bound(args, call);
        let start = memory::take_range_start();
        if let (Some(start), Some(last)) = (start, end.as_ref().and_then(integer)) {
            check(last - start + 1.0)?;
        }
        Ok(end)
    })
    .without_input();
    bindings.function(FROM, from).function(TO, to)
}

/// The bound as jlens should see it. A function crosses as `None`, which jlens would take for
/// undefined (an empty range) where the bound as written is an error (`T2003`, `T2004`): any
/// other value that is not a number gives that error, and its message names no value.
fn bound(args: &[Option<Json>], call: &HostCall<'_>) -> Option<Json> {
    match args.first() {
        Some(Some(value)) => Some(value.clone()),
        _ => call.function(0).map(|_| Json::Bool(false)),
    }
}

/// A bound jlens would accept: an integral number.
fn integer(v: &Json) -> Option<f64> {
    v.as_f64().filter(|n| n.is_finite() && n.fract() == 0.0)
}

/// Refuses a range of `items` that the evaluation's budgets cannot hold. Empty ranges and
/// ranges past jlens' own limit are left to jlens.
fn check(items: f64) -> Result<(), jlens_core::Error> {
    if !(1.0..=1e7).contains(&items) {
        return Ok(());
    }
    let Some(budget) = memory::budget() else {
        return Ok(());
    };
    if let Some(steps) = budget.steps
        && items > steps as f64
    {
        // Counted as the steps its items take to build, as jlens counts nothing for them.
        return Err(jlens_core::Error::new("U1006").with("value", steps));
    }
    let bytes = items * ITEM_BYTES;
    if bytes > budget.bytes_left as f64 {
        return Err(jlens_core::Error::new(MEMORY_CODE).with(
            "message",
            format!(
                "a range of {items} items needs about {} MiB, more than is left of the {} MiB \
                 one evaluation may hold; build smaller values (filter before mapping, avoid \
                 ranges of ranges)",
                (bytes / (1024.0 * 1024.0)).ceil(),
                budget.bytes / (1024 * 1024)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guarded(src: &str) -> Option<String> {
        let expr = Expression::compile(src).expect("compiles");
        guard(&expr).map(|(e, _)| e.source().to_owned())
    }

    #[test]
    fn each_bound_is_wrapped_whole() {
        assert_eq!(
            guarded("[1..$n]").as_deref(),
            Some("[$__mcpflow_range_from(1)..$__mcpflow_range_to($n)]")
        );
        assert_eq!(
            guarded("[a.b[0]..($n + 1)]").as_deref(),
            Some("[$__mcpflow_range_from(a.b[0])..$__mcpflow_range_to(($n + 1))]")
        );
        // Nested: the inner range's guards inside the outer bound's.
        assert_eq!(
            guarded("[1..[1..$n][-1]]").as_deref(),
            Some(
                "[$__mcpflow_range_from(1)..$__mcpflow_range_to(\
                 [$__mcpflow_range_from(1)..$__mcpflow_range_to($n)][-1])]"
            )
        );
    }

    #[test]
    fn small_literal_ranges_and_our_own_names_are_left_as_written() {
        assert_eq!(guarded("[1..10, 0..1023]"), None);
        assert!(guarded("[0..1024]").is_some());
        assert_eq!(guarded("$x.a + 1"), None);
        assert_eq!(guarded("($__mcpflow_range_to := 1; [1..$n])"), None);
    }
}
