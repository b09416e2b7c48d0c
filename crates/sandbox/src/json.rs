//! JavaScript values out of the sandbox, as JSON. Input goes in through QuickJS's own
//! `JSON.parse` (a deep copy by construction); output is walked here rather than through
//! `JSON.stringify`, so that every value that JSON would silently drop or mangle (functions,
//! symbols, BigInt, NaN, cycles) is an error that names where it is.
//!
//! The walk runs JavaScript (getters, proxies, `toJSON`), all of it under the call's budget, and
//! its work is bounded by the output size cap: every value visited adds at least one byte.

use rquickjs::{Atom, Ctx, Function, Object, Type, Value, function::This};
use serde_json::{Map, Number, Value as Json};

use crate::budget::Budget;

/// Deeper results are refused: `serde_json` (and most JSON parsers downstream) refuse to parse
/// text nested deeper than 128 levels, so a deeper result could not travel further anyway.
pub(crate) const MAX_DEPTH: usize = 128;

/// Whether `value` nests deeper than `limit`, found without recursion: the value comes from
/// the caller, and recursing over a pathological one would overflow the caller's stack.
pub(crate) fn deeper_than(value: &Json, limit: usize) -> bool {
    let mut pending = vec![(value, 0usize)];
    while let Some((value, depth)) = pending.pop() {
        let is_container = matches!(value, Json::Array(_) | Json::Object(_));
        if is_container && depth >= limit {
            return true;
        }
        match value {
            Json::Array(items) => pending.extend(items.iter().map(|c| (c, depth + 1))),
            Json::Object(map) => pending.extend(map.values().map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    false
}

/// Why a walk stopped.
pub(crate) enum Stop {
    /// JavaScript threw while we ran it (a getter, a proxy trap, `toJSON`); the exception is
    /// pending on the context.
    Js(rquickjs::Error),
    /// The value is not plain JSON data, or too big.
    Output(String),
    /// The CPU budget ran out during the walk.
    Timeout,
}

impl From<rquickjs::Error> for Stop {
    fn from(e: rquickjs::Error) -> Self {
        match e {
            rquickjs::Error::Utf8(_) => {
                Stop::Output("a string that is not valid Unicode (unpaired surrogates)".into())
            }
            e => Stop::Js(e),
        }
    }
}

/// Strict: refuse what JSON cannot hold. Lenient (for log lines and thrown values): describe it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Strict,
    Lenient,
}

/// Converts one value. The walk is iterative (an explicit stack of open arrays and objects):
/// recursion here would spend the real stack that QuickJS's stack limit measures, so a deep
/// result would look like a stack overflow of the script.
pub(crate) struct Walker<'a, 'js> {
    ctx: Ctx<'js>,
    budget: &'a Budget,
    mode: Mode,
    max_bytes: usize,
    bytes: usize,
    visits: u32,
    /// Keys from the root to the value being converted, for error messages.
    path: Vec<String>,
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
    pub(crate) fn new(ctx: Ctx<'js>, budget: &'a Budget, mode: Mode, max_bytes: usize) -> Self {
        Self {
            ctx,
            budget,
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
        let mut step = self.property(value, "", &open)?;
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
                match open.last_mut() {
                    None => return Ok(value),
                    Some(Open::Array { items, .. }) => {
                        // JSON.stringify turns holes and undefined in arrays into null.
                        items.push(value.unwrap_or(Json::Null));
                    }
                    Some(Open::Object { map, .. }) => {
                        let key = self.path.last().cloned().unwrap_or_default();
                        if let Some(value) = value {
                            self.grow(key.len() + 4)?;
                            map.insert(key, value);
                        }
                    }
                }
                self.path.pop();
            }
            step = match self.next_member(open.last_mut())? {
                Some((key, member)) => {
                    self.path.push(key.clone());
                    self.property(member, &key, &open)?
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
    ) -> Result<Option<(String, Value<'js>)>, Stop> {
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
                Ok(Some((index.to_string(), obj.get(index)?)))
            }
            Some(Open::Object { obj, keys, .. }) => match keys.next() {
                None => Ok(None),
                Some(key) => {
                    let name = atom_text(&self.ctx, &key)?;
                    Ok(Some((name, obj.get(key)?)))
                }
            },
        }
    }

    fn pointer(&self) -> String {
        if self.path.is_empty() {
            "the top level".to_owned()
        } else {
            self.path.iter().fold(String::new(), |mut p, seg| {
                p.push('/');
                p.push_str(&seg.replace('~', "~0").replace('/', "~1"));
                p
            })
        }
    }

    fn refuse(&self, what: String) -> Result<Step<'js>, Stop> {
        Err(Stop::Output(format!("{what} at {}", self.pointer())))
    }

    fn grow(&mut self, n: usize) -> Result<(), Stop> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > self.max_bytes {
            return Err(Stop::Output(format!(
                "it is larger than the limit of {} bytes",
                self.max_bytes
            )));
        }
        Ok(())
    }

    /// One property's value, `toJSON` applied first as JSON.stringify does.
    fn property(
        &mut self,
        value: Value<'js>,
        key: &str,
        open: &[Open<'js>],
    ) -> Result<Step<'js>, Stop> {
        self.visits = self.visits.wrapping_add(1);
        if self.visits.is_multiple_of(1024) && self.budget.expired() {
            return Err(Stop::Timeout);
        }
        let value = match value.as_object() {
            Some(obj) if !value.is_function() => {
                let to_json: Value = obj.get("toJSON")?;
                match to_json.as_function() {
                    Some(f) => f.call((This(value.clone()), key))?,
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
                let text = js_string(&self.ctx, &value)?;
                self.grow(text.len() + 2)?;
                done(Json::String(text))
            }
            Type::Symbol if lenient => done(Json::String(describe_symbol(&value))),
            Type::Symbol => self.refuse(format!("a symbol ({})", describe_symbol(&value))),
            Type::BigInt if lenient => done(Json::String(describe_bigint(&value))),
            Type::BigInt => self.refuse(format!(
                "a BigInt ({}; convert it with Number() or String())",
                describe_bigint(&value)
            )),
            Type::Function | Type::Constructor if lenient => {
                done(Json::String(describe_function(&value)))
            }
            Type::Function | Type::Constructor => {
                self.refuse(format!("a function ({})", describe_function(&value)))
            }
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
                    let text = js_string(&self.ctx, &v)?;
                    self.grow(key.len() + text.len() + 6)?;
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

/// A JavaScript string as Rust text. Strings with unpaired surrogates (legal in JavaScript, not
/// in UTF-8) are made well-formed first, each unpaired surrogate becoming U+FFFD. The
/// `toWellFormed` used is whatever the script left on `String.prototype`: it can only change
/// text that the script controls anyway, and anything but a well-formed string is refused.
pub(crate) fn js_string<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> rquickjs::Result<String> {
    let Some(s) = value.as_string() else {
        return Ok(String::new());
    };
    match s.to_string() {
        Err(rquickjs::Error::Utf8(e)) => well_formed(ctx, value).ok_or(rquickjs::Error::Utf8(e)),
        other => other,
    }
}

fn well_formed<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> Option<String> {
    let fixed = (|| -> rquickjs::Result<Value<'js>> {
        let string: Object = ctx.globals().get("String")?;
        let proto: Object = string.get("prototype")?;
        let to_well_formed: Function = proto.get("toWellFormed")?;
        to_well_formed.call((This(value.clone()),))
    })();
    match fixed {
        Ok(fixed) => fixed.as_string()?.to_string().ok(),
        Err(rquickjs::Error::Exception) => {
            // The script replaced it with something that throws; the caller reports the string.
            let _ = ctx.catch();
            None
        }
        Err(_) => None,
    }
}

fn atom_text<'js>(ctx: &Ctx<'js>, atom: &Atom<'js>) -> rquickjs::Result<String> {
    match atom.to_string() {
        Err(rquickjs::Error::Utf8(_)) => js_string(ctx, &atom.to_value()?),
        other => other,
    }
}

fn describe_symbol(value: &Value<'_>) -> String {
    let description = value
        .as_symbol()
        .and_then(|s| s.description().ok())
        .and_then(|d| d.as_string().and_then(|s| s.to_string().ok()));
    format!("Symbol({})", description.unwrap_or_default())
}

fn describe_bigint(value: &Value<'_>) -> String {
    match value.as_big_int().cloned().map(|b| b.to_i64()) {
        Some(Ok(n)) => format!("{n}n"),
        _ => "a BigInt".to_owned(),
    }
}

fn describe_function(value: &Value<'_>) -> String {
    let name = value
        .as_object()
        .and_then(|o| o.get::<_, Value>("name").ok())
        .and_then(|n| n.as_string().and_then(|s| s.to_string().ok()))
        .filter(|n| !n.is_empty());
    match name {
        Some(n) => format!("[Function {n}]"),
        None => "[Function anonymous]".to_owned(),
    }
}
