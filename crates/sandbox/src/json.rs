//! JavaScript values out of the sandbox, as JSON. Input goes in through QuickJS's own
//! `JSON.parse` (a deep copy by construction); output is walked here rather than through
//! `JSON.stringify`, so that every value that JSON would silently drop or mangle (functions,
//! symbols, BigInt, NaN, cycles) is an error that names where it is.
//!
//! The walk runs JavaScript (getters, proxies, `toJSON`), all of it under the call's budget.
//! Two things bound it: the size of the result as JSON text (every value visited adds at least
//! one byte) and the memory the host builds for it, charged to the call's memory cap before it
//! is allocated (see [`Walker::charge`]), so a result that is small in the script's heap but
//! large as Rust values (a sparse array of length 2^32−1, one empty object repeated a million
//! times) stops with `OutOfMemory` instead of growing the host.
//!
//! Every string and every key crosses exactly (see [`crate::text`]): a key holding NUL stays
//! whole, and a lone surrogate, which JSON text cannot carry, is refused rather than replaced.

use std::mem::size_of;

use rquickjs::{Atom, Ctx, Object, Type, Value, function::This};
use serde_json::{Map, Number, Value as Json};

use crate::budget::Budget;
use crate::memory::Meter;
use crate::text::{self, Unreadable};

/// Deeper inputs and results are refused: `serde_json` (and most JSON parsers downstream) refuse to parse
/// text nested deeper than 128 levels, so a deeper result could not travel further anyway.
pub(crate) const MAX_DEPTH: usize = 128;

/// The input as the JSON text the script's `JSON.parse` reads, or why it cannot cross exactly:
/// nested deeper than [`MAX_DEPTH`], holding an integer that an IEEE double (JavaScript's only
/// number) would change, or longer than `max_bytes` as text. Checked before anything is copied,
/// without recursion (the value comes from the caller, and recursing over a pathological one
/// would overflow the caller's stack), and written once, straight into the text handed over.
pub(crate) fn input_text(value: &Json, max_bytes: usize) -> Result<String, String> {
    let mut pending = vec![(value, 0usize)];
    while let Some((value, depth)) = pending.pop() {
        match value {
            Json::Array(_) | Json::Object(_) if depth >= MAX_DEPTH => {
                return Err(format!("it is nested deeper than {MAX_DEPTH} levels"));
            }
            Json::Array(items) => pending.extend(items.iter().map(|c| (c, depth + 1))),
            Json::Object(map) => pending.extend(map.values().map(|c| (c, depth + 1))),
            Json::Number(n) if !exact_in_javascript(n) => {
                return Err(format!(
                    "the integer {n} cannot be held exactly by a JavaScript number"
                ));
            }
            _ => {}
        }
    }
    let mut text = Capped {
        bytes: Vec::new(),
        max: max_bytes,
    };
    serde_json::to_writer(&mut text, value)
        .map_err(|_| format!("it is larger than the limit of {max_bytes} bytes as JSON text"))?;
    String::from_utf8(text.bytes).map_err(|e| e.to_string())
}

/// Whether a JSON number survives the trip through an IEEE double unchanged.
fn exact_in_javascript(n: &Number) -> bool {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if let Some(i) = n.as_i64() {
        let f = i as f64;
        // The bounds keep a saturating cast from passing off 2^63 as i64::MAX.
        return (-TWO_63..TWO_63).contains(&f) && f as i64 == i;
    }
    if let Some(u) = n.as_u64() {
        let f = u as f64;
        return f < 2.0 * TWO_63 && f as u64 == u;
    }
    // A float was parsed to the nearest double already: it is what JavaScript will see.
    true
}

/// A writer that refuses to grow past `max` bytes, so an oversized input is never copied whole.
struct Capped {
    bytes: Vec<u8>,
    max: usize,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.max {
            return Err(std::io::Error::other("too large"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Why a walk stopped.
pub(crate) enum Stop {
    /// JavaScript threw while we ran it (a getter, a proxy trap, `toJSON`); the exception is
    /// pending on the context.
    Js(rquickjs::Error),
    /// The value is not plain JSON data.
    Output(String),
    /// The value is larger than the walk's limit (in bytes of JSON text).
    TooLarge(usize),
    /// The CPU budget ran out during the walk.
    Timeout,
    /// What the host would build does not fit in the call's memory cap.
    OutOfMemory,
}

impl From<rquickjs::Error> for Stop {
    fn from(e: rquickjs::Error) -> Self {
        Stop::Js(e)
    }
}

/// Strict: refuse what JSON cannot hold. Lenient (for log lines and thrown values): describe it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Strict,
    Lenient,
}

/// Host bytes of one array slot or map value.
const SLOT: usize = size_of::<Json>();
/// Host bytes of one map entry besides its key's text: the key's `String`, the value, the
/// entry's hash and index, doubled for the spare capacity a growing map keeps.
const ENTRY: usize = 2 * (size_of::<String>() + size_of::<Json>() + 2 * size_of::<usize>());
/// Error messages name where a value is; a key longer than this is cut in them.
const POINTER_SEGMENT: usize = 64;
/// And a pointer longer than this is cut too.
const POINTER_CAP: usize = 1024;

/// Converts one value. The walk is iterative (an explicit stack of open arrays and objects):
/// recursion here would spend the real stack that QuickJS's stack limit measures, so a deep
/// result would look like a stack overflow of the script.
pub(crate) struct Walker<'a, 'js> {
    ctx: Ctx<'js>,
    budget: &'a Budget,
    meter: &'a Meter,
    mode: Mode,
    max_bytes: usize,
    bytes: usize,
    visits: u32,
    /// Keys from the root to the value being converted (error messages, and the key the
    /// value is inserted under).
    path: Vec<Segment>,
}

enum Segment {
    Index(u32),
    Key(String),
}

/// An array or object whose members are being converted.
enum Open<'js> {
    Array {
        obj: Object<'js>,
        len: u64,
        items: Vec<Json>,
    },
    Object {
        obj: Object<'js>,
        keys: std::vec::IntoIter<Atom<'js>>,
        map: Map<String, Json>,
    },
}

impl<'js> Open<'js> {
    fn obj(&self) -> &Object<'js> {
        match self {
            Open::Array { obj, .. } | Open::Object { obj, .. } => obj,
        }
    }
}

/// What converting one value gave: a finished JSON value (`None` for `undefined`), or an array
/// or object whose members come next.
enum Step<'js> {
    Done(Option<Json>),
    Open(Open<'js>),
}

impl<'a, 'js> Walker<'a, 'js> {
    pub(crate) fn new(
        ctx: Ctx<'js>,
        budget: &'a Budget,
        meter: &'a Meter,
        mode: Mode,
        max_bytes: usize,
    ) -> Self {
        Self {
            ctx,
            budget,
            meter,
            mode,
            max_bytes,
            bytes: 0,
            visits: 0,
            path: Vec::new(),
        }
    }

    /// `None` is `undefined` (and anything else that JSON.stringify omits).
    pub(crate) fn walk(&mut self, value: Value<'js>) -> Result<Option<Json>, Stop> {
        let mut open: Vec<Open<'js>> = Vec::new();
        let mut step = self.property(value, &open)?;
        loop {
            let finished = match step {
                Step::Open(frame) => {
                    open.push(frame);
                    None
                }
                Step::Done(value) => Some(value),
            };
            if let Some(value) = finished {
                // `value` belongs to the innermost open container (or is the result).
                let segment = self.path.pop();
                match open.last_mut() {
                    None => return Ok(value),
                    Some(Open::Array { items, .. }) => {
                        if items.len() == items.capacity() {
                            // Reserve (and pay for) the doubling before it happens.
                            let more = items.capacity().max(4);
                            self.charge(more * SLOT)?;
                            items.reserve_exact(more);
                        }
                        // JSON.stringify turns holes and undefined in arrays into null.
                        items.push(value.unwrap_or(Json::Null));
                    }
                    Some(Open::Object { map, .. }) => {
                        if let (Some(value), Some(Segment::Key(key))) = (value, segment) {
                            self.grow(key.len() + 4)?;
                            self.charge(key.len() + ENTRY)?;
                            map.insert(key, value);
                        }
                    }
                }
            }
            step = match self.next_member(open.last_mut())? {
                Some((segment, member)) => {
                    self.path.push(segment);
                    self.property(member, &open)?
                }
                None => match open.pop() {
                    Some(Open::Array { items, .. }) => Step::Done(Some(Json::Array(items))),
                    Some(Open::Object { map, .. }) => Step::Done(Some(Json::Object(map))),
                    None => return Ok(None),
                },
            };
        }
    }

    /// The next member of the innermost open container, or `None` when it has no more.
    fn next_member(
        &mut self,
        top: Option<&mut Open<'js>>,
    ) -> Result<Option<(Segment, Value<'js>)>, Stop> {
        match top {
            None => Ok(None),
            Some(Open::Array { obj, len, items }) => {
                let index = items.len() as u64;
                if index >= *len {
                    return Ok(None);
                }
                self.grow(1)?;
                let index = u32::try_from(index).map_err(|_| {
                    Stop::Output(format!("an array too long at {}", self.pointer()))
                })?;
                Ok(Some((Segment::Index(index), obj.get(index)?)))
            }
            Some(Open::Object { obj, keys, .. }) => match keys.next() {
                None => Ok(None),
                Some(key) => {
                    let name = self.key_text(&key)?;
                    let value = obj.get(key)?;
                    Ok(Some((Segment::Key(name), value)))
                }
            },
        }
    }

    /// A key exactly (strict) or readably (lenient), charged like a string value.
    fn key_text(&mut self, key: &Atom<'js>) -> Result<String, Stop> {
        let room = self.room();
        let text = match self.mode {
            Mode::Strict => {
                text::exact_key(&self.ctx, key, room).map_err(|e| self.unreadable(e, "a key"))?
            }
            Mode::Lenient => text::lossy(&self.ctx, &key.to_value()?, room)
                .unwrap_or_else(|| "<unreadable key>".to_owned()),
        };
        Ok(text)
    }

    /// Bytes of JSON text left before the size cap.
    fn room(&self) -> usize {
        self.max_bytes.saturating_sub(self.bytes)
    }

    fn unreadable(&self, e: Unreadable, what: &str) -> Stop {
        match e {
            Unreadable::Js(e) => Stop::Js(e),
            Unreadable::NotUnicode => Stop::Output(format!(
                "{what} that is not valid Unicode (a lone surrogate) at {}",
                self.pointer()
            )),
            Unreadable::TooLong => self.too_large(),
        }
    }

    fn too_large(&self) -> Stop {
        Stop::TooLarge(self.max_bytes)
    }

    /// Where the walk is, as a JSON pointer, cut to a readable length.
    fn pointer(&self) -> String {
        if self.path.is_empty() {
            return "the top level".to_owned();
        }
        let mut p = String::new();
        for segment in &self.path {
            p.push('/');
            match segment {
                Segment::Index(i) => p.push_str(&i.to_string()),
                Segment::Key(k) => {
                    let shown: String = k.chars().take(POINTER_SEGMENT).collect();
                    p.push_str(&shown.replace('~', "~0").replace('/', "~1"));
                    if shown.len() < k.len() {
                        p.push('…');
                    }
                }
            }
            if p.len() > POINTER_CAP {
                p.push_str("/…");
                break;
            }
        }
        p
    }

    fn refuse(&self, what: String) -> Result<Step<'js>, Stop> {
        Err(Stop::Output(format!("{what} at {}", self.pointer())))
    }

    /// Counts `n` bytes of JSON text against the output cap.
    fn grow(&mut self, n: usize) -> Result<(), Stop> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > self.max_bytes {
            return Err(self.too_large());
        }
        Ok(())
    }

    /// Charges `n` bytes the host is about to allocate to the call's memory cap.
    fn charge(&self, n: usize) -> Result<(), Stop> {
        if self.meter.charge_host(n) {
            Ok(())
        } else {
            Err(Stop::OutOfMemory)
        }
    }

    /// One property's value (its key is the last of the path), `toJSON` applied first as
    /// JSON.stringify does.
    fn property(&mut self, value: Value<'js>, open: &[Open<'js>]) -> Result<Step<'js>, Stop> {
        self.visits = self.visits.wrapping_add(1);
        if self.visits.is_multiple_of(1024) && self.budget.expired() {
            return Err(Stop::Timeout);
        }
        let value = match value.as_object() {
            Some(obj) if !value.is_function() => {
                let to_json: Value = obj.get("toJSON")?;
                match to_json.as_function() {
                    Some(f) => {
                        let key = match self.path.last() {
                            None => String::new(),
                            Some(Segment::Index(i)) => i.to_string(),
                            Some(Segment::Key(k)) => k.clone(),
                        };
                        f.call((This(value.clone()), key))?
                    }
                    None => value,
                }
            }
            _ => value,
        };
        self.plain(value, open)
    }

    fn plain(&mut self, value: Value<'js>, open: &[Open<'js>]) -> Result<Step<'js>, Stop> {
        let lenient = self.mode == Mode::Lenient;
        let done = |json: Json| Ok(Step::Done(Some(json)));
        match value.type_of() {
            Type::Uninitialized | Type::Undefined => Ok(Step::Done(None)),
            Type::Null => {
                self.grow(4)?;
                done(Json::Null)
            }
            Type::Bool => {
                self.grow(5)?;
                done(Json::Bool(value.as_bool().unwrap_or(false)))
            }
            Type::Int => {
                self.grow(11)?;
                done(Json::from(value.as_int().unwrap_or(0)))
            }
            Type::Float => {
                self.grow(24)?;
                let f = value.as_float().unwrap_or(f64::NAN);
                match number(f) {
                    Some(n) => done(Json::Number(n)),
                    None if lenient => done(Json::String(js_number_text(f))),
                    None => self.refuse(format!("{} (not a finite number)", js_number_text(f))),
                }
            }
            Type::String => {
                let room = self.room().saturating_sub(2);
                let text = match self.mode {
                    Mode::Strict => text::exact(&self.ctx, &value, room)
                        .map_err(|e| self.unreadable(e, "a string"))?,
                    Mode::Lenient => text::lossy(&self.ctx, &value, room)
                        .unwrap_or_else(|| "<unreadable string>".to_owned()),
                };
                self.grow(text.len() + 2)?;
                self.charge(text.len())?;
                done(Json::String(text))
            }
            Type::Symbol if lenient => done(Json::String(describe_symbol(&self.ctx, &value))),
            Type::Symbol => {
                self.refuse(format!("a symbol ({})", describe_symbol(&self.ctx, &value)))
            }
            Type::BigInt if lenient => done(Json::String(describe_bigint(&value))),
            Type::BigInt => self.refuse(format!(
                "a BigInt ({}; convert it with Number() or String())",
                describe_bigint(&value)
            )),
            Type::Function | Type::Constructor if lenient => {
                done(Json::String(describe_function(&self.ctx, &value)))
            }
            Type::Function | Type::Constructor => self.refuse(format!(
                "a function ({})",
                describe_function(&self.ctx, &value)
            )),
            Type::Promise if lenient => done(Json::String("[Promise]".into())),
            Type::Promise => {
                self.refuse("a promise (await it before returning the result)".to_owned())
            }
            Type::Array | Type::Object | Type::Exception | Type::Proxy => match value.as_object() {
                Some(obj) => self.open(&value, obj.clone(), open),
                None => self.refuse("a value of unknown type".into()),
            },
            Type::Module | Type::Unknown if lenient => {
                done(Json::String(format!("[{}]", value.type_name())))
            }
            Type::Module | Type::Unknown => self.refuse(format!("a {} value", value.type_name())),
        }
    }

    /// `Array.isArray`: QuickJS's own check does not look through proxies, JSON.stringify does.
    fn is_array(&self, value: &Value<'js>) -> Result<bool, Stop> {
        if !value.is_proxy() {
            return Ok(value.is_array());
        }
        let array: Value = self.ctx.globals().get("Array")?;
        let is_array: Value = match array.as_object() {
            Some(array) => array.get("isArray")?,
            None => return Ok(false),
        };
        match is_array.as_function() {
            Some(f) => Ok(f.call::<_, Value>((value.clone(),))?.as_bool() == Some(true)),
            None => Ok(false),
        }
    }

    fn open(
        &mut self,
        value: &Value<'js>,
        obj: Object<'js>,
        open: &[Open<'js>],
    ) -> Result<Step<'js>, Stop> {
        if open.iter().any(|o| o.obj() == &obj) {
            if self.mode == Mode::Lenient {
                return Ok(Step::Done(Some(Json::String("[Circular]".into()))));
            }
            return self.refuse("a cycle (an object that contains itself)".into());
        }
        if open.len() >= MAX_DEPTH {
            return self.refuse(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        self.grow(2)?;
        if self.is_array(value)? {
            // A proxy may claim any length; only a number is one.
            let len: Value = obj.get("length")?;
            let Some(len) = len.as_number() else {
                return self.refuse("an array whose length is not a number".into());
            };
            let len = if len.is_finite() && len > 0.0 {
                len as u64
            } else {
                0
            };
            return Ok(Step::Open(Open::Array {
                obj,
                len,
                items: Vec::new(),
            }));
        }
        let mut map = Map::new();
        if value.is_error() {
            // Error's name and message are inherited or non-enumerable, so JSON.stringify would
            // give `{}`; a result that carries an error should carry what it says.
            for key in ["name", "message"] {
                let v: Value = obj.get(key)?;
                if v.is_string() {
                    let room = self.room();
                    let text = match self.mode {
                        Mode::Strict => text::exact(&self.ctx, &v, room)
                            .map_err(|e| self.unreadable(e, "a string"))?,
                        Mode::Lenient => text::lossy(&self.ctx, &v, room).unwrap_or_default(),
                    };
                    self.grow(key.len() + text.len() + 6)?;
                    self.charge(key.len() + text.len() + ENTRY)?;
                    map.insert(key.to_owned(), Json::String(text));
                }
            }
        }
        let keys = obj.keys::<Atom>().collect::<rquickjs::Result<Vec<_>>>()?;
        Ok(Step::Open(Open::Object {
            obj,
            keys: keys.into_iter(),
            map,
        }))
    }
}

/// A JSON number for an f64: integral values that fit an i64 become integers, as
/// `JSON.stringify` writes them (JavaScript has no separate integer type, and `2` should not come
/// out as `2.0`).
fn number(f: f64) -> Option<Number> {
    const I64_BOUND: f64 = 9_223_372_036_854_775_808.0; // 2^63, exact as an f64
    if f.fract() == 0.0 && (-I64_BOUND..I64_BOUND).contains(&f) {
        Some(Number::from(f as i64))
    } else {
        Number::from_f64(f)
    }
}

/// A number formatted the way JavaScript's `String(n)` formats it.
pub(crate) fn js_number_text(f: f64) -> String {
    let mut buf = ryu_js::Buffer::new();
    buf.format(f).to_owned()
}

/// Descriptions of values JSON cannot hold, for error messages: short, whatever the script
/// made the names and descriptions.
const DESCRIPTION_CAP: usize = 80;

fn describe_symbol<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> String {
    let description = value
        .as_symbol()
        .and_then(|s| s.description().ok())
        .and_then(|d| text::lossy(ctx, &d, DESCRIPTION_CAP));
    format!("Symbol({})", description.unwrap_or_default())
}

fn describe_bigint(value: &Value<'_>) -> String {
    match value.as_big_int().cloned().map(|b| b.to_i64()) {
        Some(Ok(n)) => format!("{n}n"),
        _ => "a BigInt".to_owned(),
    }
}

fn describe_function<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> String {
    let name = value
        .as_object()
        .and_then(|o| o.get::<_, Value>("name").ok())
        .and_then(|n| text::lossy(ctx, &n, DESCRIPTION_CAP))
        .filter(|n| !n.is_empty());
    match name {
        Some(n) => format!("[Function {n}]"),
        None => "[Function anonymous]".to_owned(),
    }
}
