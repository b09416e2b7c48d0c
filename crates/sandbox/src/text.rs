//! JavaScript strings (values and property keys) as Rust text: exactly, or not at all.
//!
//! rquickjs's own conversions are not fit for data crossing a security boundary:
//! `Atom::to_string` reads a key as a C string (a key holding NUL is cut at the NUL, so
//! `"path\0x"` would come out as `"path"`) and does not check that QuickJS's bytes are UTF-8 (a
//! key holding a lone surrogate would become invalid UTF-8 inside a Rust `String`), and
//! `String::to_string` copies the whole string whatever its size. Here every string is read by
//! its length, checked as UTF-8, and copied only as far as the caller can afford.

use rquickjs::{Atom, Ctx, Value, qjs};

/// How a string failed to come out.
#[derive(Debug)]
pub(crate) enum Unreadable {
    /// QuickJS could not make its UTF-8 copy (out of memory); the exception is pending.
    Js(rquickjs::Error),
    /// The string holds a lone surrogate, which UTF-8 (and so JSON text) cannot carry.
    NotUnicode,
    /// The string is longer than the caller's limit (in UTF-8 bytes).
    TooLong,
}

impl From<rquickjs::Error> for Unreadable {
    fn from(e: rquickjs::Error) -> Self {
        Unreadable::Js(e)
    }
}

/// The string `value` exactly, if it is valid Unicode and at most `limit` bytes of UTF-8.
/// `value` must be a string: nothing here calls `toString`, so no script code runs.
pub(crate) fn exact<'js>(
    ctx: &Ctx<'js>,
    value: &Value<'js>,
    limit: usize,
) -> Result<String, Unreadable> {
    with_utf8(ctx, value, |bytes| {
        if bytes.len() > limit {
            return Err(Unreadable::TooLong);
        }
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| Unreadable::NotUnicode)
    })
}

/// A property key exactly (see [`exact`]).
pub(crate) fn exact_key<'js>(
    ctx: &Ctx<'js>,
    atom: &Atom<'js>,
    limit: usize,
) -> Result<String, Unreadable> {
    exact(ctx, &atom.to_value()?, limit)
}

/// The string `value` for a human: at most `limit` bytes (cut on a character boundary and
/// marked with `…`), each lone surrogate shown as U+FFFD. For log lines and error messages,
/// never for data.
pub(crate) fn lossy<'js>(ctx: &Ctx<'js>, value: &Value<'js>, limit: usize) -> Option<String> {
    with_utf8(ctx, value, |bytes| Ok(lossy_prefix(bytes, limit))).ok()
}

fn lossy_prefix(bytes: &[u8], limit: usize) -> String {
    if bytes.len() <= limit {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut cut = limit;
    // Back off to the start of a UTF-8 sequence so the cut does not add a replacement char.
    while cut > 0 && bytes[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    let mut text = String::from_utf8_lossy(&bytes[..cut]).into_owned();
    text.push('…');
    text
}

/// Runs `read` on QuickJS's UTF-8 encoding of the string `value` (lone surrogates encoded as
/// three-byte sequences, which Rust's UTF-8 check refuses). The encoding lives in the
/// script's heap, so a huge string costs the script's memory budget, not the host's.
fn with_utf8<'js, T>(
    ctx: &Ctx<'js>,
    value: &Value<'js>,
    read: impl FnOnce(&[u8]) -> Result<T, Unreadable>,
) -> Result<T, Unreadable> {
    if !value.is_string() {
        return Err(Unreadable::Js(rquickjs::Error::Unknown));
    }
    let raw = ctx.as_raw().as_ptr();
    let mut len: qjs::size_t = 0;
    // SAFETY: `raw` is the live context `ctx` borrows; `value` is a live string of that
    // context, so QuickJS only reads it (no conversion, no script code). The returned buffer
    // holds `len` bytes and stays valid until `JS_FreeCString`, which every path below calls.
    let ptr = unsafe { qjs::JS_ToCStringLen2(raw, &mut len, value.as_raw(), false) };
    if ptr.is_null() {
        return Err(Unreadable::Js(rquickjs::Error::Exception));
    }
    // SAFETY: see above; `len` bytes at `ptr` are initialised.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len as usize) };
    let result = read(bytes);
    // SAFETY: `ptr` came from `JS_ToCStringLen2` on this context and is freed exactly once.
    unsafe { qjs::JS_FreeCString(raw, ptr) };
    result
}

#[cfg(test)]
mod tests {
    use super::lossy_prefix;

    #[test]
    fn a_lossy_prefix_cuts_on_a_character_boundary() {
        assert_eq!(lossy_prefix("abc".as_bytes(), 3), "abc");
        assert_eq!(lossy_prefix("aéb".as_bytes(), 2), "a…");
        assert_eq!(
            lossy_prefix(b"a\xed\xa0\x80b", 10),
            "a\u{fffd}\u{fffd}\u{fffd}b"
        );
    }
}
