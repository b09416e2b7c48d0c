//! JavaScript's value semantics over JSON, as json-logic-js inherits them: truthiness,
//! `ToNumber`, `parseFloat`, `String()`, loose and strict equality, relational comparison.
//! `None` stands for JavaScript's `undefined`.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value as Json;

/// JavaScript truthiness (`Boolean(v)`): `null`, `false`, `0`, `NaN`, `""` are false; every
/// array and object, empty ones included, is true. mcpGraph routes a switch on this
/// (`Boolean(jsonLogic.apply(...))`), and an exit node turns a falsy output into `{}`.
pub fn js_truthy(v: &Json) -> bool {
    match v {
        Json::Null => false,
        Json::Bool(b) => *b,
        Json::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Json::String(s) => !s.is_empty(),
        Json::Array(_) | Json::Object(_) => true,
    }
}

/// JSON Logic's truthiness (jsonlogic.com "truthy"): JavaScript's, except that an empty array
/// is false. `!`, `!!`, `if`, `and`, `or`, `filter`, `all`, `none`, `some` use it.
pub fn logic_truthy(v: &Json) -> bool {
    match v {
        Json::Array(items) => !items.is_empty(),
        other => js_truthy(other),
    }
}

pub(crate) fn truthy_opt(v: Option<&Json>) -> bool {
    v.is_some_and(logic_truthy)
}

/// A finite number as JSON the way `JSON.stringify` writes it (integral values without a
/// fraction); `NaN` and the infinities become `null`, as they do there.
pub(crate) fn number(f: f64) -> Json {
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        Json::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number)
    }
}

/// JavaScript's `Number.prototype.toString()`.
pub(crate) fn number_to_string(f: f64) -> String {
    if f == 0.0 {
        return "0".to_owned();
    }
    ryu_js::Buffer::new().format(f).to_owned()
}

/// JavaScript's `String(v)`.
pub(crate) fn to_string(v: Option<&Json>) -> Cow<'_, str> {
    match v {
        None => Cow::Borrowed("undefined"),
        Some(Json::Null) => Cow::Borrowed("null"),
        Some(Json::Bool(b)) => Cow::Borrowed(if *b { "true" } else { "false" }),
        Some(Json::Number(n)) => Cow::Owned(number_to_string(n.as_f64().unwrap_or(f64::NAN))),
        Some(Json::String(s)) => Cow::Borrowed(s),
        Some(Json::Array(items)) => Cow::Owned(join(items, ",")),
        Some(Json::Object(_)) => Cow::Borrowed("[object Object]"),
    }
}

/// `Array.prototype.join`: `null` (and `undefined`) items are empty.
pub(crate) fn join(items: &[Json], sep: &str) -> String {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        if !item.is_null() {
            out.push_str(&to_string(Some(item)));
        }
    }
    out
}

/// A primitive, as JavaScript's `ToPrimitive` leaves it.
enum Prim<'a> {
    Undefined,
    Null,
    Bool(bool),
    Num(f64),
    Str(Cow<'a, str>),
}

fn to_primitive(v: Option<&Json>) -> Prim<'_> {
    match v {
        None => Prim::Undefined,
        Some(Json::Null) => Prim::Null,
        Some(Json::Bool(b)) => Prim::Bool(*b),
        Some(Json::Number(n)) => Prim::Num(n.as_f64().unwrap_or(f64::NAN)),
        Some(Json::String(s)) => Prim::Str(Cow::Borrowed(s)),
        other => Prim::Str(to_string(other)),
    }
}

fn prim_number(p: &Prim<'_>) -> f64 {
    match p {
        Prim::Undefined => f64::NAN,
        Prim::Null => 0.0,
        Prim::Bool(b) => f64::from(u8::from(*b)),
        Prim::Num(n) => *n,
        Prim::Str(s) => string_to_number(s),
    }
}

/// JavaScript's `ToNumber` (unary `+`).
pub(crate) fn to_number(v: Option<&Json>) -> f64 {
    match v {
        Some(Json::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        other => prim_number(&to_primitive(other)),
    }
}

fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `ToNumber` applied to a string: the whole (trimmed) string must be a numeric literal.
pub(crate) fn string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(is_js_space);
    if t.is_empty() {
        return 0.0;
    }
    for (prefix, radix) in [
        ("0x", 16),
        ("0X", 16),
        ("0o", 8),
        ("0O", 8),
        ("0b", 2),
        ("0B", 2),
    ] {
        if let Some(digits) = t.strip_prefix(prefix) {
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                return f64::NAN;
            }
            return digits.chars().fold(0.0, |acc, c| {
                acc * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0))
            });
        }
    }
    match decimal_prefix(t) {
        Some((value, len)) if len == t.len() => value,
        _ => f64::NAN,
    }
}

/// JavaScript's `parseFloat(String(v))`: the longest decimal literal at the start.
pub(crate) fn parse_float(v: Option<&Json>) -> f64 {
    if let Some(Json::Number(n)) = v {
        return n.as_f64().unwrap_or(f64::NAN);
    }
    let s = to_string(v);
    let t = s.trim_start_matches(is_js_space);
    decimal_prefix(t).map_or(f64::NAN, |(value, _)| value)
}

/// The value and length of the longest `StrDecimalLiteral` (sign, `Infinity`, digits, point,
/// exponent) at the start of `s`.
fn decimal_prefix(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    let negative = match b.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    if s[i..].starts_with("Infinity") {
        let inf = if negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
        return Some((inf, i + 8));
    }
    let start = i;
    let digits = |i: &mut usize| {
        let from = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - from
    };
    let mut mantissa = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        let mut j = i + 1;
        let frac = digits(&mut j);
        if mantissa + frac > 0 {
            mantissa += frac;
            i = j;
        }
    }
    if mantissa == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if digits(&mut j) > 0 {
            i = j;
        }
    }
    let text = &s[start..i];
    // A lone trailing point ("5.") is valid in JavaScript but not for Rust's parser.
    let value: f64 = text.trim_end_matches('.').parse().ok()?;
    Some((if negative { -value } else { value }, i))
}

/// JavaScript's `a == b`. Arrays and objects are equal only to themselves in JavaScript; two
/// JSON values have no identity, so two of them are never loosely equal.
pub(crate) fn loose_eq(a: Option<&Json>, b: Option<&Json>) -> bool {
    let compound = |v: Option<&Json>| matches!(v, Some(Json::Array(_) | Json::Object(_)));
    if compound(a) && compound(b) {
        return false;
    }
    prim_loose_eq(&to_primitive(a), &to_primitive(b))
}

fn prim_loose_eq(a: &Prim<'_>, b: &Prim<'_>) -> bool {
    use Prim::*;
    match (a, b) {
        (Undefined | Null, Undefined | Null) => true,
        (Undefined | Null, _) | (_, Undefined | Null) => false,
        (Str(x), Str(y)) => x == y,
        (Bool(x), Bool(y)) => x == y,
        _ => prim_number(a) == prim_number(b),
    }
}

/// JavaScript's `a === b` (arrays and objects: never, as for [`loose_eq`]).
pub(crate) fn strict_eq(a: Option<&Json>, b: Option<&Json>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(Json::Null), Some(Json::Null)) => true,
        (Some(Json::Bool(x)), Some(Json::Bool(y))) => x == y,
        (Some(Json::Number(x)), Some(Json::Number(y))) => x.as_f64() == y.as_f64(),
        (Some(Json::String(x)), Some(Json::String(y))) => x == y,
        _ => false,
    }
}

/// The order of `a` and `b` under JavaScript's relational operators: strings by UTF-16 code
/// units when both are strings, numbers otherwise; `None` when a `NaN` makes every comparison
/// false.
pub(crate) fn compare(a: Option<&Json>, b: Option<&Json>) -> Option<Ordering> {
    let (pa, pb) = (to_primitive(a), to_primitive(b));
    if let (Prim::Str(x), Prim::Str(y)) = (&pa, &pb) {
        return Some(x.encode_utf16().cmp(y.encode_utf16()));
    }
    prim_number(&pa).partial_cmp(&prim_number(&pb))
}

pub(crate) fn less(a: Option<&Json>, b: Option<&Json>) -> bool {
    compare(a, b) == Some(Ordering::Less)
}

pub(crate) fn less_eq(a: Option<&Json>, b: Option<&Json>) -> bool {
    matches!(compare(a, b), Some(Ordering::Less | Ordering::Equal))
}

/// JavaScript's `ToIntegerOrInfinity`, saturated to `i64`.
pub(crate) fn to_integer(v: Option<&Json>) -> i64 {
    let n = to_number(v);
    if n.is_nan() { 0 } else { n.trunc() as i64 }
}
