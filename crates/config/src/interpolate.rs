//! `${VAR}` in upstream settings, read from the environment, so secrets stay out of the file.
//!
//! - `${NAME}`: the variable's value; an unset variable is an error naming it.
//! - `${NAME:-default}`: `default` when the variable is unset or empty (may itself use `${…}`).
//! - `${env:NAME}`: the same as `${NAME}` (the spelling some MCP clients use in `mcp.json`).
//! - `$${NAME}`: the literal text `${NAME}`.
//! - A `$` not followed by `{` is literal.
//!
//! Errors name variables, never their values.

/// Why a string could not be interpolated. Offsets count characters from the string's start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpolationError {
    #[error("{}", unset_message(names))]
    Unset {
        /// Every unset variable of the string, in order, each once.
        names: Vec<String>,
        /// Where the first of them is used.
        offset: usize,
    },
    #[error("\"${{\" is not closed by \"}}\"")]
    Unclosed { offset: usize },
    #[error("\"${{{text}}}\" is not a variable reference")]
    BadName { text: String, offset: usize },
}

impl InterpolationError {
    /// Character offset of the problem in the string.
    pub fn offset(&self) -> usize {
        match self {
            InterpolationError::Unset { offset, .. }
            | InterpolationError::Unclosed { offset }
            | InterpolationError::BadName { offset, .. } => *offset,
        }
    }
}

fn unset_message(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    match quoted.as_slice() {
        [one] => format!("environment variable {one} is not set"),
        _ => format!("environment variables {} are not set", quoted.join(", ")),
    }
}

/// Replaces `${NAME}` references in `text` with values from `env`.
pub fn interpolate(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, InterpolationError> {
    interpolate_as(text, env, Mode::Plain)
}

/// [`interpolate`] for a remote upstream's header value, which is a template read again per
/// request (`mcpflow_model::caller_header`): `${caller.…}` and `$${` are left as written, and
/// a `${` inside a variable's value is written `$${`, so a value never becomes a reference.
pub fn interpolate_header(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, InterpolationError> {
    interpolate_as(text, env, Mode::Header)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Plain,
    Header,
}

fn interpolate_as(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    mode: Mode,
) -> Result<String, InterpolationError> {
    let mut unset = Vec::new();
    let mut first_unset = None;
    let out = expand(text, 0, env, mode, &mut unset, &mut first_unset)?;
    match first_unset {
        None => Ok(out),
        Some(offset) => Err(InterpolationError::Unset {
            names: unset,
            offset,
        }),
    }
}

/// [`interpolate`] with the process environment.
pub fn interpolate_env(text: &str) -> Result<String, InterpolationError> {
    interpolate(text, &|name| std::env::var(name).ok())
}

/// `base` is the character offset of `text` in the string being interpolated.
fn expand(
    text: &str,
    base: usize,
    env: &dyn Fn(&str) -> Option<String>,
    mode: Mode,
    unset: &mut Vec<String>,
    first_unset: &mut Option<usize>,
) -> Result<String, InterpolationError> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let char_offset = |byte: usize| base + text[..byte].chars().count();
    while i < bytes.len() {
        if bytes[i] != b'$' {
            // Copy up to the next `$` in one go (keeps multi-byte characters whole).
            let next = text[i..].find('$').map_or(text.len(), |n| i + n);
            out.push_str(&text[i..next]);
            i = next;
            continue;
        }
        if text[i..].starts_with("$${") {
            out.push_str(if mode == Mode::Header { "$${" } else { "${" });
            i += 3;
            continue;
        }
        if mode == Mode::Header && text[i..].starts_with("${caller.") {
            // The reference's own syntax is checked where the template is read.
            let end = text[i..].find('}').map_or(text.len(), |n| i + n + 1);
            out.push_str(&text[i..end]);
            i = end;
            continue;
        }
        if !text[i..].starts_with("${") {
            out.push('$');
            i += 1;
            continue;
        }
        let start = i;
        let body_start = i + 2;
        let end = closing_brace(text, body_start).ok_or(InterpolationError::Unclosed {
            offset: char_offset(start),
        })?;
        let body = &text[body_start..end];
        let (name, default) = match body.find(":-") {
            Some(n) => (&body[..n], Some(&body[n + 2..])),
            None => (body, None),
        };
        let prefix = if name.starts_with("env:") { 4 } else { 0 };
        let name = &name[prefix..];
        if !valid_name(name) {
            return Err(InterpolationError::BadName {
                text: body.to_owned(),
                offset: char_offset(start),
            });
        }
        let value = |v: &str| match mode {
            Mode::Plain => v.to_owned(),
            Mode::Header => v.replace("${", "$${"),
        };
        match (env(name), default) {
            (Some(v), Some(_)) if !v.is_empty() => out.push_str(&value(&v)),
            (Some(v), None) => out.push_str(&value(&v)),
            (_, Some(d)) => {
                let d_base = char_offset(body_start + prefix + name.len() + 2);
                out.push_str(&expand(d, d_base, env, mode, unset, first_unset)?);
            }
            (None, None) => {
                first_unset.get_or_insert(char_offset(start));
                if !unset.iter().any(|u| u == name) {
                    unset.push(name.to_owned());
                }
            }
        }
        i = end + 1;
    }
    Ok(out)
}

/// Byte index of the `}` closing a `${` whose body starts at `from`; nested `${…}` (in
/// defaults) are skipped.
fn closing_brace(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 1usize;
    let mut i = from;
    while i < bytes.len() {
        if bytes[i] == b'$' && bytes.get(i + 1) == Some(&b'{') {
            depth += 1;
            i += 2;
            continue;
        }
        if bytes[i] == b'}' {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            "HOME" => Some("/home/u".into()),
            _ => None,
        }
    }

    fn run(s: &str) -> Result<String, InterpolationError> {
        interpolate(s, &env)
    }

    #[test]
    fn replaces_variables() {
        assert_eq!(run("Bearer ${TOKEN}").unwrap(), "Bearer s3cret");
        assert_eq!(run("${HOME}/x:${TOKEN}").unwrap(), "/home/u/x:s3cret");
        assert_eq!(
            run("no refs, $5 and $HOME").unwrap(),
            "no refs, $5 and $HOME"
        );
        assert_eq!(run("${EMPTY}").unwrap(), "");
        assert_eq!(run("é${TOKEN}é").unwrap(), "és3creté");
        assert_eq!(run("${env:TOKEN}").unwrap(), "s3cret");
    }

    #[test]
    fn header_values_keep_caller_references_and_escapes() {
        let header = |s: &str| {
            interpolate_header(s, &|n: &str| match n {
                "TRICK" => Some("${caller.token}".to_owned()),
                other => env(other),
            })
        };
        assert_eq!(
            header("Bearer ${TOKEN} ${caller.subject}").unwrap(),
            "Bearer s3cret ${caller.subject}"
        );
        assert_eq!(header("$${HOME} ${HOME}").unwrap(), "$${HOME} /home/u");
        // A variable's value is text, never a reference to the caller.
        assert_eq!(header("${TRICK}").unwrap(), "$${caller.token}");
        assert_eq!(header("${caller.subject").unwrap(), "${caller.subject");
        // Elsewhere `${caller.…}` is no variable.
        assert!(matches!(
            run("${caller.subject}"),
            Err(InterpolationError::BadName { .. })
        ));
    }

    #[test]
    fn defaults_apply_when_unset_or_empty() {
        assert_eq!(run("${NOPE:-fallback}").unwrap(), "fallback");
        assert_eq!(run("${EMPTY:-fallback}").unwrap(), "fallback");
        assert_eq!(run("${TOKEN:-fallback}").unwrap(), "s3cret");
        assert_eq!(run("${NOPE:-}").unwrap(), "");
        assert_eq!(run("${NOPE:-${HOME}/d}").unwrap(), "/home/u/d");
    }

    #[test]
    fn double_dollar_escapes() {
        assert_eq!(run("$${TOKEN}").unwrap(), "${TOKEN}");
        assert_eq!(run("$${NOPE} ${TOKEN}").unwrap(), "${NOPE} s3cret");
        assert_eq!(run("$$").unwrap(), "$$");
    }

    #[test]
    fn unset_variables_are_named_never_valued() {
        let err = run("a ${NOPE} ${TOKEN} ${ALSO} ${NOPE}").unwrap_err();
        assert_eq!(
            err,
            InterpolationError::Unset {
                names: vec!["NOPE".into(), "ALSO".into()],
                offset: 2
            }
        );
        let text = err.to_string();
        assert_eq!(text, "environment variables \"NOPE\", \"ALSO\" are not set");
        assert!(!text.contains("s3cret"));
    }

    #[test]
    fn malformed_references_are_errors() {
        assert_eq!(
            run("x ${TOKEN").unwrap_err(),
            InterpolationError::Unclosed { offset: 2 }
        );
        assert!(matches!(
            run("${1ABC}").unwrap_err(),
            InterpolationError::BadName { .. }
        ));
        assert!(matches!(
            run("${}").unwrap_err(),
            InterpolationError::BadName { .. }
        ));
        assert!(matches!(
            run("${A?x}").unwrap_err(),
            InterpolationError::BadName { .. }
        ));
    }
}
