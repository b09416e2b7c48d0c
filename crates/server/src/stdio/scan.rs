//! What can be read of a message too large or too deep to parse: its top-level `id`, so the
//! refusal can carry it as JSON-RPC asks, and how deep it nests. Bytes are fed as they arrive,
//! so a line of any length is scanned in constant memory.

use serde_json::Value;

/// Longest `id` value kept (a longer one is not recovered: the refusal goes out with id null).
const MAX_ID_BYTES: usize = 256;

#[derive(Default)]
pub(crate) struct Scan {
    depth: usize,
    max_depth: usize,
    in_string: bool,
    escaped: bool,
    /// At depth 1, the next string is a key (after `{` or `,`).
    expect_key: bool,
    /// Inside a top-level key: its first bytes, enough to tell `id` from the rest.
    key: Option<Vec<u8>>,
    /// The last top-level key read was `id`.
    after_id_key: bool,
    /// The raw bytes of the top-level `id` value being read.
    capture: Option<Vec<u8>>,
    id: Option<Value>,
}

impl Scan {
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    /// The deepest nesting seen (`{"a":[1]}` is 2).
    pub(crate) fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// The top-level `id`, when it was a string or a number; else `null`.
    pub(crate) fn id(&mut self) -> Value {
        self.finish_capture();
        self.id.clone().unwrap_or(Value::Null)
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            self.push_capture(b);
            if let Some(key) = self.key.as_mut()
                && key.len() < 3
            {
                key.push(b);
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if let Some(key) = self.key.take() {
                    // The closing quote was pushed too: `id"` is the key `id`.
                    self.after_id_key = key == b"id\"";
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key && self.capture.is_none() {
                    self.expect_key = false;
                    self.key = Some(Vec::with_capacity(3));
                } else {
                    self.push_capture(b);
                }
            }
            b'{' | b'[' => {
                if self.depth == 1 && self.capture.is_some() {
                    // An object or array is no valid id.
                    self.capture = None;
                    self.after_id_key = false;
                }
                self.depth += 1;
                self.max_depth = self.max_depth.max(self.depth);
                if self.depth == 1 {
                    self.expect_key = b == b'{';
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.finish_capture();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 => {
                if std::mem::take(&mut self.after_id_key) {
                    self.capture = Some(Vec::new());
                }
            }
            b',' if self.depth == 1 => {
                self.finish_capture();
                self.expect_key = true;
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => self.push_capture(b),
        }
    }

    fn push_capture(&mut self, b: u8) {
        if self.depth != 1 {
            return;
        }
        if let Some(capture) = self.capture.as_mut() {
            if capture.len() < MAX_ID_BYTES {
                capture.push(b);
            } else {
                self.capture = None;
            }
        }
    }

    fn finish_capture(&mut self) {
        let Some(raw) = self.capture.take() else {
            return;
        };
        if self.id.is_some() {
            return;
        }
        self.id = match serde_json::from_slice::<Value>(&raw) {
            Ok(v @ (Value::String(_) | Value::Number(_))) => Some(v),
            _ => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scan(text: &str) -> Scan {
        let mut s = Scan::default();
        // Fed in pieces, as reads deliver them.
        for chunk in text.as_bytes().chunks(3) {
            s.feed(chunk);
        }
        s
    }

    #[test]
    fn finds_the_top_level_id_wherever_it_is() {
        assert_eq!(
            scan(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#).id(),
            json!(7)
        );
        assert_eq!(scan(r#"{"id" : "a\"b", "params":{}}"#).id(), json!("a\"b"));
        assert_eq!(
            scan(r#"{"method":"x","params":{"id":1,"pad":"id"},"id":-3.5}"#).id(),
            json!(-3.5)
        );
        // An id at the end of a line cut short is still found.
        assert_eq!(scan(r#"{"params":{"a":"b"},"id":42"#).id(), json!(42));
    }

    #[test]
    fn no_id_or_an_unusable_one_is_null() {
        assert_eq!(scan(r#"{"method":"x"}"#).id(), Value::Null);
        assert_eq!(scan(r#"{"id":{"n":1}}"#).id(), Value::Null);
        assert_eq!(scan(r#"{"id":[1]}"#).id(), Value::Null);
        assert_eq!(scan(r#"{"ids":1,"xid":2}"#).id(), Value::Null);
        assert_eq!(scan(r#"{"x":"id","y":1}"#).id(), Value::Null);
        assert_eq!(scan(r#"[{"id":1}]"#).id(), Value::Null);
        let long = format!(r#"{{"id":"{}"}}"#, "x".repeat(1000));
        assert_eq!(scan(&long).id(), Value::Null);
    }

    #[test]
    fn measures_the_nesting() {
        assert_eq!(scan(r#"{"a":[{"b":"[[["}]]}"#).max_depth(), 3);
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        assert_eq!(scan(&deep).max_depth(), 300);
    }
}
