//! `${caller.…}` in the header values of a remote upstream: who the request is made for,
//! rendered per request (issue #18), so an upstream can tell users apart without ever seeing
//! their credentials.
//!
//! - `${caller.subject}`, `${caller.via}`, `${caller.key}` (the key's *name*),
//!   `${caller.scopes}` (space separated), `${caller.claims.NAME}` (a claim the `auth:` section
//!   chose to keep): what expressions read as `$caller`.
//! - `${caller.token}`: the credential the caller presented (its bearer token or API key), only
//!   on a server with `forwardCallerToken: true` (the loader refuses it otherwise).
//! - `$${` is a literal `${`.
//!
//! Environment variables (`${NAME}`) are replaced when the config is loaded, before this
//! template is read; the loader writes a `${` of a variable's value as `$${`, so a value never
//! becomes a reference.

use serde_json::Value;

/// One header value, split into text and references to the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderTemplate {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Caller(CallerField),
}

/// What a `${caller.…}` reference names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallerField {
    Subject,
    Via,
    Key,
    Scopes,
    Claim(String),
    Token,
}

/// Why a header value is not a template. `offset` counts characters from the value's start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TemplateError {
    pub message: String,
    pub offset: usize,
}

const REFERENCE: &str = "${caller.";

impl HeaderTemplate {
    pub fn parse(text: &str) -> Result<HeaderTemplate, TemplateError> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            literal.push_str(&rest[..at]);
            let here = &rest[at..];
            if let Some(after) = here.strip_prefix("$${") {
                literal.push_str("${");
                rest = after;
            } else if let Some(after) = here.strip_prefix(REFERENCE) {
                let offset = text.len() - here.len();
                let offset = text[..offset].chars().count();
                let Some(end) = after.find('}') else {
                    return Err(TemplateError {
                        message: "\"${caller.\" is not closed by \"}\"".into(),
                        offset,
                    });
                };
                let field = CallerField::parse(&after[..end]).ok_or_else(|| TemplateError {
                    message: format!(
                        "\"${{caller.{}}}\" names nothing of the caller (use subject, via, key, \
                         scopes, claims.NAME or token)",
                        &after[..end]
                    ),
                    offset,
                })?;
                if !literal.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                }
                pieces.push(Piece::Caller(field));
                rest = &after[end + 1..];
            } else {
                literal.push('$');
                rest = &here[1..];
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(HeaderTemplate { pieces })
    }

    /// The value when it names nothing of the caller (the same for every request).
    pub fn fixed(&self) -> Option<String> {
        match self.pieces.as_slice() {
            [] => Some(String::new()),
            [Piece::Text(text)] => Some(text.clone()),
            _ => None,
        }
    }

    /// Whether the caller's own credential goes into this value.
    pub fn forwards_token(&self) -> bool {
        self.pieces
            .iter()
            .any(|p| matches!(p, Piece::Caller(CallerField::Token)))
    }

    /// The value for one caller, `caller` being what expressions read as `$caller`; `None`
    /// when something it names is missing (no caller, an absent claim, no token kept): the
    /// header is then left out rather than sent half empty.
    pub fn render(&self, caller: &Value, token: Option<&str>) -> Option<String> {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Caller(CallerField::Token) => out.push_str(token?),
                Piece::Caller(field) => push_value(&mut out, field.read(caller)?)?,
            }
        }
        Some(out)
    }
}

impl CallerField {
    fn parse(path: &str) -> Option<CallerField> {
        Some(match path {
            "subject" => CallerField::Subject,
            "via" => CallerField::Via,
            "key" => CallerField::Key,
            "scopes" => CallerField::Scopes,
            "token" => CallerField::Token,
            _ => {
                let claim = path.strip_prefix("claims.")?;
                if claim.is_empty() {
                    return None;
                }
                CallerField::Claim(claim.to_owned())
            }
        })
    }

    fn read<'a>(&self, caller: &'a Value) -> Option<&'a Value> {
        match self {
            CallerField::Subject => caller.get("subject"),
            CallerField::Via => caller.get("via"),
            CallerField::Key => caller.get("key"),
            CallerField::Scopes => caller.get("scopes"),
            CallerField::Claim(name) => caller.get("claims")?.get(name),
            CallerField::Token => None,
        }
    }
}

/// Strings as they are, numbers and booleans as JSON writes them, a list of those joined by
/// spaces (as OAuth writes scopes); `null`, objects and nested lists name nothing sendable.
fn push_value(out: &mut String, value: &Value) -> Option<()> {
    match value {
        Value::String(s) => out.push_str(s),
        Value::Number(_) | Value::Bool(_) => out.push_str(&value.to_string()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                match item {
                    Value::Array(_) | Value::Object(_) | Value::Null => return None,
                    _ => push_value(out, item)?,
                }
            }
        }
        Value::Null | Value::Object(_) => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caller() -> Value {
        json!({
            "subject": "ada", "via": "jwt", "key": null, "scopes": ["tools:call", "sessions"],
            "claims": {"email": "ada@example.com", "level": 3, "groups": [["x"]]}
        })
    }

    fn render(text: &str, token: Option<&str>) -> Option<String> {
        HeaderTemplate::parse(text)
            .unwrap()
            .render(&caller(), token)
    }

    #[test]
    fn references_are_rendered_from_the_caller() {
        assert_eq!(
            render("u-${caller.subject}", None).as_deref(),
            Some("u-ada")
        );
        assert_eq!(
            render("${caller.scopes}", None).as_deref(),
            Some("tools:call sessions")
        );
        assert_eq!(
            render("${caller.claims.email}/${caller.claims.level}", None).as_deref(),
            Some("ada@example.com/3")
        );
        assert_eq!(
            render("Bearer ${caller.token}", Some("t0k")).as_deref(),
            Some("Bearer t0k")
        );
    }

    #[test]
    fn a_missing_value_leaves_the_header_out() {
        assert_eq!(render("${caller.key}", None), None);
        assert_eq!(render("${caller.claims.nope}", None), None);
        assert_eq!(render("${caller.claims.groups}", None), None);
        assert_eq!(render("Bearer ${caller.token}", None), None);
        let template = HeaderTemplate::parse("${caller.subject}").unwrap();
        assert_eq!(template.render(&Value::Null, None), None);
    }

    #[test]
    fn text_and_escapes_are_kept() {
        let fixed = HeaderTemplate::parse("a $5 $${caller.subject} $${X}").unwrap();
        assert_eq!(
            fixed.fixed().as_deref(),
            Some("a $5 ${caller.subject} ${X}")
        );
        assert!(!fixed.forwards_token());
        assert_eq!(
            HeaderTemplate::parse("").unwrap().fixed().as_deref(),
            Some("")
        );
        let templated = HeaderTemplate::parse("x${caller.token}").unwrap();
        assert_eq!(templated.fixed(), None);
        assert!(templated.forwards_token());
    }

    #[test]
    fn bad_references_say_where() {
        let e = HeaderTemplate::parse("é ${caller.subject").unwrap_err();
        assert_eq!(e.offset, 2);
        let e = HeaderTemplate::parse("${caller.password}").unwrap_err();
        assert!(e.message.contains("names nothing of the caller"), "{e}");
        assert!(HeaderTemplate::parse("${caller.claims.}").is_err());
    }
}
