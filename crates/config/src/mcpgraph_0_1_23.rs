//! mcpGraph 0.1.23's format (what `npx mcpgraph` installs), recognised and migrated.
//!
//! 0.1.23 routes a switch condition with `target:` and takes a condition without a `rule` as
//! the default route (0.1.32: `next:` on the condition and on the switch), and evaluates a
//! top-level mcp `args` string that starts with `$` as JSONata (0.1.32 sends it as written;
//! `{expr: …}` evaluates). A file with `target:` conditions is surely 0.1.23's and runs with
//! its meaning, with a warning; a `$` string alone is ambiguous, keeps 0.1.32's meaning and is
//! warned about. [`migrate`] rewrites such a file's text in the current format, comments kept.

use serde_json::Value;

use crate::source::{Anchor, Pos, Problem, SourceMap, Span};
use crate::yaml::{self, escape};

/// One place where a file is written in 0.1.23's format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mark {
    /// A switch condition (its pointer) routing with `target` and a rule.
    Target { condition: String },
    /// A condition with `target` and no rule: the default route, the switch's `next` now.
    Default { switch: String, index: usize },
    /// A top-level mcp argument (its pointer) that is a string starting with `$`.
    Dollar { arg: String },
}

impl Mark {
    fn pointer(&self) -> String {
        match self {
            Mark::Target { condition } => format!("{condition}/target"),
            Mark::Default { switch, index } => format!("{switch}/conditions/{index}/target"),
            Mark::Dollar { arg } => arg.clone(),
        }
    }

    fn routes(&self) -> bool {
        !matches!(self, Mark::Dollar { .. })
    }
}

/// Every mark of 0.1.23's format in a parsed config, in file order.
pub(crate) fn marks(doc: &Value) -> Vec<Mark> {
    let mut marks = Vec::new();
    let tools = doc.get("tools").and_then(Value::as_array);
    for (t, tool) in tools.into_iter().flatten().enumerate() {
        let nodes = tool.get("nodes").and_then(Value::as_array);
        for (n, node) in nodes.into_iter().flatten().enumerate() {
            let at = format!("/tools/{t}/nodes/{n}");
            match node.get("type").and_then(Value::as_str) {
                Some("switch") => {
                    let conditions = node.get("conditions").and_then(Value::as_array);
                    for (c, condition) in conditions.into_iter().flatten().enumerate() {
                        let Some(fields) = condition.as_object() else {
                            continue;
                        };
                        if !fields.contains_key("target") || fields.contains_key("next") {
                            continue;
                        }
                        if fields.get("rule").is_none_or(Value::is_null) {
                            marks.push(Mark::Default {
                                switch: at.clone(),
                                index: c,
                            });
                            // Conditions after the default never ran in 0.1.23.
                            break;
                        }
                        marks.push(Mark::Target {
                            condition: format!("{at}/conditions/{c}"),
                        });
                    }
                }
                Some("mcp") => {
                    let args = node.get("args").and_then(Value::as_object);
                    for (key, value) in args.into_iter().flatten() {
                        if value.as_str().is_some_and(|s| s.starts_with('$')) {
                            marks.push(Mark::Dollar {
                                arg: format!("{at}/args/{}", escape(key)),
                            });
                        }
                    }
                }
                _ => {}
            }
        }
    }
    marks
}

/// Whether the marks make the file surely 0.1.23's (a `$` string alone does not).
pub(crate) fn is_0_1_23(marks: &[Mark]) -> bool {
    marks.iter().any(Mark::routes)
}

/// Rewrites `doc` in memory to the current format with 0.1.23's meaning; `alias(from, to)`
/// gives a moved value its old position.
pub(crate) fn apply(doc: &mut Value, marks: &[Mark], alias: &mut dyn FnMut(&str, String)) {
    for mark in marks {
        match mark {
            Mark::Target { condition } => {
                if let Some(fields) = doc.pointer_mut(condition).and_then(Value::as_object_mut)
                    && let Some(target) = fields.remove("target")
                {
                    fields.insert("next".into(), target);
                    alias(&format!("{condition}/target"), format!("{condition}/next"));
                }
            }
            Mark::Default { switch, index } => {
                let from = format!("{switch}/conditions/{index}/target");
                let Some(node) = doc.pointer_mut(switch).and_then(Value::as_object_mut) else {
                    continue;
                };
                let target = node
                    .get_mut("conditions")
                    .and_then(Value::as_array_mut)
                    .and_then(|c| {
                        let target = c.get_mut(*index)?.get_mut("target")?.take();
                        c.truncate(*index);
                        Some(target)
                    });
                if let Some(target) = target {
                    node.insert("next".into(), target);
                    alias(&from, format!("{switch}/next"));
                }
            }
            Mark::Dollar { arg } => {
                if let Some(value) = doc.pointer_mut(arg) {
                    let expr = value.take();
                    *value = serde_json::json!({ "expr": expr });
                    alias(arg, format!("{arg}/expr"));
                }
            }
        }
    }
}

/// What loading does with the marks: applies 0.1.23's meaning to a file that is surely
/// 0.1.23's, and returns the warnings either way.
pub(crate) fn recognise(doc: &mut Value, sources: &mut SourceMap) -> Vec<Problem> {
    let marks = marks(doc);
    if marks.is_empty() {
        return Vec::new();
    }
    if is_0_1_23(&marks) {
        let first = marks.iter().find(|m| m.routes()).map(Mark::pointer);
        let dollars = marks.iter().filter(|m| !m.routes()).count();
        let also = if dollars > 0 {
            format!(", and its {dollars} mcp argument(s) written \"$…\" are evaluated as JSONata")
        } else {
            String::new()
        };
        apply(doc, &marks, &mut |from, to| sources.alias(from, to));
        return vec![
            Problem::new(
                first.unwrap_or_default(),
                format!(
                    "this file is written for mcpGraph 0.1.23 (`npx mcpgraph`): switch \
                     conditions route with `target:`; it runs with 0.1.23's meaning{also}"
                ),
            )
            .at(Anchor::Key)
            .hint(
                "`mcpflow migrate FILE --in-place` rewrites it in the current format (conditions \
                 with `next:`, the default as the switch's `next:`, `{expr: …}` arguments), \
                 which mcpGraph 0.1.32 and mcpflow read alike",
            ),
        ];
    }
    marks
        .iter()
        .map(|m| {
            let text = doc
                .pointer(&m.pointer())
                .and_then(Value::as_str)
                .unwrap_or_default();
            Problem::new(
                m.pointer(),
                format!(
                    "argument {}{} is the string {}: sent as written (mcpGraph 0.1.32, \
                     mcpflow), while mcpGraph 0.1.23 evaluated it as JSONata",
                    crate::place::field_name(&m.pointer()),
                    crate::place::in_owner(&m.pointer(), doc),
                    Value::from(text)
                ),
            )
            .hint(format!(
                "to evaluate it write {{expr: {}}} (`mcpflow migrate FILE` does)",
                Value::from(text)
            ))
        })
        .collect()
}

/// A config's text rewritten in the current format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migrated {
    /// The new text: the old one with only the 0.1.23 spellings changed, comments kept.
    pub text: String,
    /// What changed, one line each (`line N: …`), in file order; empty when nothing did.
    pub changes: Vec<String>,
}

/// Why a file could not be migrated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}:{line}: {message}")]
pub struct MigrateError {
    pub name: String,
    pub line: u32,
    pub message: String,
}

/// Rewrites a config written for mcpGraph 0.1.23 in the current format, keeping everything
/// else of the text (comments, quoting, layout). The result is checked: parsed again, it must
/// be the config that loading the old text with 0.1.23's meaning gives.
pub fn migrate(text: &str, name: &str) -> Result<Migrated, MigrateError> {
    let fail = |line: u32, message: String| MigrateError {
        name: name.to_owned(),
        line,
        message,
    };
    let parsed = yaml::parse(text, 0).map_err(|p| fail(0, p.message))?;
    let marks = marks(&parsed.value);
    let span = |pointer: &str| {
        parsed
            .spans
            .iter()
            .find(|(p, _)| p == pointer)
            .map(|(_, s)| *s)
    };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut changes = Vec::new();
    for mark in &marks {
        let pointer = mark.pointer();
        let Some(at) = span(&pointer) else {
            return Err(fail(0, format!("cannot find {pointer} in the text")));
        };
        let line = at.key.unwrap_or(at.value).line;
        match mark {
            Mark::Target { .. } => {
                let key = at
                    .key
                    .ok_or_else(|| fail(line, "`target` has no key".into()))?;
                let start = offset(text, key).ok_or_else(|| fail(line, "bad position".into()))?;
                let quote = usize::from(text[start..].starts_with(['"', '\'']));
                edits.push((start + quote, start + quote + "target".len(), "next".into()));
                changes.push(format!("line {line}: condition `target:` → `next:`"));
            }
            Mark::Default { switch, index } => {
                edits.push(
                    default_edit(text, &parsed.value, &span, switch, *index, at)
                        .map_err(|m| fail(line, m))?,
                );
                changes.push(format!(
                    "line {line}: the condition without a rule → the switch's `next:`"
                ));
            }
            Mark::Dollar { .. } => {
                let (start, end) = scalar(text, at)
                    .ok_or_else(|| fail(line, "the argument's text is not located".into()))?;
                let value = parsed.value.pointer(&pointer).cloned().unwrap_or_default();
                edits.push((start, end, format!("{{expr: {value}}}")));
                changes.push(format!("line {line}: argument {value} → {{expr: {value}}}"));
            }
        }
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_owned();
    for (start, end, replacement) in edits {
        out.replace_range(start..end, &replacement);
    }
    let mut expected = parsed.value.clone();
    apply(&mut expected, &marks, &mut |_, _| {});
    let reparsed = yaml::parse(&out, 0).map_err(|p| {
        fail(
            0,
            format!(
                "the rewritten text does not parse ({}); rewrite it by hand",
                p.message
            ),
        )
    })?;
    if reparsed.value != expected {
        return Err(fail(
            0,
            "the rewrite would change more than the 0.1.23 spellings (an unusual layout); \
             rewrite it by hand"
                .into(),
        ));
    }
    Ok(Migrated { text: out, changes })
}

/// The edit that turns a block-style default condition (the last one) into the switch's
/// `next:`, at the switch's indentation, keeping the condition's trailing comment.
fn default_edit(
    text: &str,
    doc: &Value,
    span: &dyn Fn(&str) -> Option<Span>,
    switch: &str,
    index: usize,
    target: Span,
) -> Result<(usize, usize, String), String> {
    let count = doc
        .pointer(&format!("{switch}/conditions"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if index + 1 != count {
        return Err(
            "conditions after the default never ran in mcpGraph 0.1.23; remove them and \
                    migrate again"
                .into(),
        );
    }
    if index == 0 {
        return Err(
            "the switch has only a default condition: replace the switch by its target".into(),
        );
    }
    if doc.pointer(&format!("{switch}/next")).is_some() {
        return Err("the switch has both a `next:` and a default condition".into());
    }
    let conditions_key = span(&format!("{switch}/conditions"))
        .and_then(|s| s.key)
        .ok_or("the switch's `conditions` key is not located")?;
    let item = span(&format!("{switch}/conditions/{index}")).ok_or("condition not located")?;
    let item_start = offset(text, item.value).ok_or("bad position")?;
    let line_start = text[..item_start].rfind('\n').map_or(0, |i| i + 1);
    let lead = &text[line_start..item_start];
    let dash = lead.trim_end();
    if !dash.ends_with('-') || !dash[..dash.len() - 1].trim().is_empty() {
        return Err(
            "the conditions are not a block list (`- rule: …` lines); rewrite by hand".into(),
        );
    }
    let dash_indent = dash.len() - 1;
    // The item runs to the first later line indented no deeper than its dash; blank and
    // comment lines after its last line of content stay where they are.
    let mut end = text[item_start..]
        .find('\n')
        .map_or(text.len(), |i| item_start + i + 1);
    let mut cursor = end;
    while cursor < text.len() {
        let rest = &text[cursor..];
        let line = rest.split('\n').next().unwrap_or_default();
        let after = rest.find('\n').map_or(text.len(), |i| cursor + i + 1);
        let content = line.trim();
        let indent = line.len() - line.trim_start().len();
        if !content.is_empty() && !content.starts_with('#') {
            if indent <= dash_indent {
                break;
            }
            end = after;
        }
        cursor = after;
    }
    let (value_start, value_end) =
        scalar(text, target).ok_or("the target's text is not located")?;
    let value = &text[value_start..value_end];
    let rest = text[value_end..].split('\n').next().unwrap_or_default();
    let comment = rest
        .find('#')
        .map(|i| format!("  {}", rest[i..].trim_end()))
        .unwrap_or_default();
    let indent = " ".repeat(conditions_key.col.saturating_sub(1) as usize);
    let newline = if end == text.len() && !text.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    Ok((
        line_start,
        end,
        format!("{indent}next: {value}{comment}{newline}"),
    ))
}

/// The byte range of a scalar's source text, its quotes included.
fn scalar(text: &str, span: Span) -> Option<(usize, usize)> {
    let (start, len) = span.bytes?;
    let end = start + len;
    let source = text.get(start..end)?;
    for quote in ['"', '\''] {
        let quoted = source.len() >= 2 && source.starts_with(quote) && source.ends_with(quote);
        if !quoted && start > 0 && text[..start].ends_with(quote) && text[end..].starts_with(quote)
        {
            return Some((start - 1, end + 1));
        }
    }
    Some((start, end))
}

/// The byte offset of a 1-based line and column (in characters).
fn offset(text: &str, pos: Pos) -> Option<usize> {
    let mut line_start = 0;
    for _ in 1..pos.line {
        line_start += text[line_start..].find('\n')? + 1;
    }
    let line = &text[line_start..];
    let col = line
        .char_indices()
        .nth(pos.col.saturating_sub(1) as usize)
        .map_or(line.len(), |(i, _)| i);
    Some(line_start + col)
}
