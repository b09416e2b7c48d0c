//! The source convention: a script is either an expression that evaluates to a function, or an
//! ES module whose default export is a function. Both are compiled as a module (strict mode).
//! The expression form is wrapped on the source's own first line, so line numbers never shift
//! and only columns on line 1 need correcting: as a factory, `export default () => (<source>\n);`
//! (a module that can be kept: each call evaluates the expression afresh), or, when that does not
//! parse (a top-level `await`) or the source is not one expression, as
//! `export default (<source>\n);` (a module instantiated per call).

/// What precedes the author's source in the expression form instantiated per call.
pub(crate) const EXPRESSION_PREFIX: &str = "export default (";

/// What precedes the author's source in the expression form kept as a factory.
pub(crate) const FACTORY_PREFIX: &str = "export default () => (";

pub(crate) fn wrap_factory(source: &str) -> String {
    wrap(FACTORY_PREFIX, expression_body(source), "\n);")
}

/// The source as an array's only element: it parses as `[…]` and as `(…)` only if it is one
/// expression. Text that closes the factory's parenthesis to declare something beside it (module
/// state every call would share) leaves a `)` that does not match the `[`: the two wrappers
/// open the source in the same lexical context, so its tokens are the same in both.
pub(crate) fn wrap_element(source: &str) -> String {
    wrap("[", expression_body(source), "\n];")
}

fn wrap(prefix: &str, body: &str, suffix: &str) -> String {
    let mut wrapped = String::with_capacity(prefix.len() + body.len() + suffix.len());
    wrapped.push_str(prefix);
    wrapped.push_str(body);
    wrapped.push_str(suffix);
    wrapped
}

/// The part of the source that the expression form wraps: trailing semicolons are dropped so
/// that `x => x;` is accepted.
pub(crate) fn expression_body(source: &str) -> &str {
    source.trim_end().trim_end_matches(';')
}

pub(crate) fn wrap_expression(source: &str) -> String {
    wrap(EXPRESSION_PREFIX, expression_body(source), "\n);")
}

/// A position reported by QuickJS, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Position {
    pub(crate) line: u32,
    pub(crate) column: u32,
}

/// QuickJS reports a syntax error's position only in its `stack`, as `    at name:LINE:COL`.
pub(crate) fn syntax_position(stack: &str) -> Option<Position> {
    let first = stack.lines().find(|l| !l.trim().is_empty())?;
    let mut parts = first.trim().trim_end_matches(')').rsplitn(3, ':');
    let column = parts.next()?.parse().ok()?;
    let line = parts.next()?.parse().ok()?;
    Some(Position { line, column })
}

/// Whether a position in the compiled text lies after the end of `source` (on the wrapper's
/// closing line): the source ended in the middle of something.
pub(crate) fn past_end(source: &str, compiled: Position) -> bool {
    compiled.line as usize > source.split('\n').count()
}

/// Maps a position in the compiled text back to the author's source. QuickJS counts columns in
/// bytes; authors count characters, so the column is converted using the source line.
pub(crate) fn to_source_position(source: &str, compiled: Position, prefix: usize) -> Position {
    let lines: Vec<&str> = source.split('\n').collect();
    let mut line = compiled.line.max(1);
    let mut byte_col = compiled.column.max(1) as usize;
    if line == 1 {
        byte_col = byte_col.saturating_sub(prefix).max(1);
    }
    if line as usize > lines.len() {
        // An error on the wrapper's closing line means the source ended too early.
        line = lines.len() as u32;
        byte_col = lines.last().map_or(0, |l| l.len()) + 1;
    }
    let text = lines.get(line as usize - 1).copied().unwrap_or("");
    Position {
        line,
        column: char_column(text, byte_col),
    }
}

fn char_column(line: &str, byte_col: usize) -> u32 {
    let upto = (byte_col - 1).min(line.len());
    let mut boundary = upto;
    while !line.is_char_boundary(boundary) {
        boundary -= 1;
    }
    line[..boundary].chars().count() as u32 + 1
}

/// Rewrites `name:1:COL` in a stack trace so that columns on line 1 point into the author's
/// source rather than into the expression wrapper.
pub(crate) fn adjust_stack(stack: &str, name: &str, prefix: usize) -> String {
    if prefix == 0 {
        return stack.to_owned();
    }
    let needle = format!("{name}:1:");
    let mut out = String::with_capacity(stack.len());
    let mut rest = stack;
    while let Some(at) = rest.find(&needle) {
        let (head, tail) = rest.split_at(at + needle.len());
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        match tail[..digits].parse::<usize>() {
            Ok(col) => out.push_str(&col.saturating_sub(prefix).max(1).to_string()),
            Err(_) => out.push_str(&tail[..digits]),
        }
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_position_out_of_a_quickjs_stack() {
        assert_eq!(
            syntax_position("    at hook.js:3:14\n"),
            Some(Position {
                line: 3,
                column: 14
            })
        );
        assert_eq!(
            syntax_position("    at a:b.js:1:2\n"),
            Some(Position { line: 1, column: 2 })
        );
        assert_eq!(syntax_position(""), None);
    }

    #[test]
    fn line_one_columns_lose_the_prefix_and_end_of_input_points_past_the_source() {
        let src = "function (ctx) {\n  return ctx";
        let p = to_source_position(
            src,
            Position {
                line: 1,
                column: 20,
            },
            16,
        );
        assert_eq!(p, Position { line: 1, column: 4 });
        let p = to_source_position(src, Position { line: 3, column: 1 }, 16);
        assert_eq!(
            p,
            Position {
                line: 2,
                column: 13
            }
        );
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let src = "x => 'é' + y y";
        // byte 13 (1-based) is the second `y`; it is character 12.
        let p = to_source_position(
            src,
            Position {
                line: 1,
                column: 13,
            },
            0,
        );
        assert_eq!(p.column, 12);
    }

    #[test]
    fn stack_columns_on_line_one_are_shifted_back() {
        let s = "    at default (hook.js:1:40)\n    at f (hook.js:12:3)\n";
        assert_eq!(
            adjust_stack(s, "hook.js", 16),
            "    at default (hook.js:1:24)\n    at f (hook.js:12:3)\n"
        );
    }

    #[test]
    fn trailing_semicolons_are_dropped_before_wrapping() {
        assert_eq!(wrap_expression("x => x; \n"), "export default (x => x\n);");
    }
}
