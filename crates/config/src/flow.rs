//! Checks of the resilience extensions that look beyond one node: chains of `parallel`
//! branches and `foreach` bodies, and `call` cycles between tools.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::model::Node;
use crate::source::Problem;
use crate::validate::Findings;

/// A `call` node: tool `from` calls tool `to`.
pub(crate) struct CallEdge<'a> {
    pub from: &'a str,
    pub to: &'a str,
    pub ptr: String,
}

/// A tool that calls itself, directly or through others, would recurse until `maxCallDepth`:
/// every edge that lies on a cycle is an error.
pub(crate) fn check_call_cycles(calls: &[CallEdge<'_>], f: &mut Findings) {
    let mut adjacent: HashMap<&str, Vec<&str>> = HashMap::new();
    for c in calls {
        adjacent.entry(c.from).or_default().push(c.to);
    }
    // A path from `to` back to `from` closes a cycle through this edge.
    let path_back = |start: &str, goal: &str| -> Option<Vec<String>> {
        let mut seen = HashSet::from([start]);
        let mut queue = VecDeque::from([(start, vec![start.to_owned()])]);
        while let Some((at, path)) = queue.pop_front() {
            if at == goal {
                return Some(path);
            }
            for &next in adjacent.get(at).map(Vec::as_slice).unwrap_or(&[]) {
                if seen.insert(next) {
                    let mut p = path.clone();
                    p.push(next.to_owned());
                    queue.push_back((next, p));
                }
            }
        }
        None
    };
    for c in calls {
        if let Some(path) = path_back(c.to, c.from) {
            let cycle = std::iter::once(c.from.to_owned())
                .chain(path)
                .collect::<Vec<_>>()
                .join(" -> ");
            f.errors.push(
                Problem::new(
                    c.ptr.clone(),
                    format!(
                        "tool \"{}\" calls \"{}\", which forms a call cycle: {cycle}",
                        c.from, c.to
                    ),
                )
                .hint("`call` nodes must not recurse: loop inside one graph with a switch instead"),
            );
        }
    }
}

/// Follows a chain's routes from `first` without passing `end`: (reaches `end`, reaches the exit).
pub(crate) fn walk_chain(
    typed: &[Option<Node>],
    ids: &HashMap<&str, usize>,
    first: &str,
    end: &str,
) -> (bool, bool) {
    if first == end {
        return (true, false);
    }
    let (mut reaches_end, mut reaches_exit) = (false, false);
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([first]);
    while let Some(id) = queue.pop_front() {
        if id == end {
            reaches_end = true;
            continue;
        }
        let Some(node) = ids.get(id).and_then(|&k| typed[k].as_ref()) else {
            continue;
        };
        if !seen.insert(id) {
            continue;
        }
        if matches!(node, Node::Exit(_)) {
            reaches_exit = true;
        }
        queue.extend(node.routes());
        queue.extend(node.options().on_error.as_deref());
    }
    (reaches_end, reaches_exit)
}
