//! The operators, as json-logic-js defines them.

use std::cmp::Ordering;

use serde_json::{Map, Value as Json};

use super::js::{
    join, less, less_eq, loose_eq, number, parse_float, strict_eq, to_integer, to_number,
    to_string, truthy_opt,
};
use super::{Data, Env, Rule};
use crate::ExprError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Var,
    Missing,
    MissingSome,
    If,
    Eq,
    StrictEq,
    Ne,
    StrictNe,
    Not,
    NotNot,
    Or,
    And,
    Gt,
    Ge,
    Lt,
    Le,
    Max,
    Min,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Map,
    Reduce,
    Filter,
    All,
    None,
    Some,
    Merge,
    In,
    Cat,
    Substr,
    Log,
}

impl Op {
    pub(super) fn from_name(name: &str) -> Option<Op> {
        Some(match name {
            "var" => Op::Var,
            "missing" => Op::Missing,
            "missing_some" => Op::MissingSome,
            "if" | "?:" => Op::If,
            "==" => Op::Eq,
            "===" => Op::StrictEq,
            "!=" => Op::Ne,
            "!==" => Op::StrictNe,
            "!" => Op::Not,
            "!!" => Op::NotNot,
            "or" => Op::Or,
            "and" => Op::And,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "<" => Op::Lt,
            "<=" => Op::Le,
            "max" => Op::Max,
            "min" => Op::Min,
            "+" => Op::Add,
            "-" => Op::Sub,
            "*" => Op::Mul,
            "/" => Op::Div,
            "%" => Op::Mod,
            "map" => Op::Map,
            "reduce" => Op::Reduce,
            "filter" => Op::Filter,
            "all" => Op::All,
            "none" => Op::None,
            "some" => Op::Some,
            "merge" => Op::Merge,
            "in" => Op::In,
            "cat" => Op::Cat,
            "substr" => Op::Substr,
            "log" => Op::Log,
            _ => return None,
        })
    }
}

type Out = Result<Option<Json>, ExprError>;

fn ok(v: Json) -> Out {
    Ok(Some(v))
}

fn boolean(b: bool) -> Out {
    ok(Json::Bool(b))
}

pub(super) fn apply(env: &Env<'_>, op: Op, args: &[Rule], data: Data<'_>) -> Out {
    // The operators that choose which operands to evaluate, or evaluate them per item.
    match op {
        Op::If => return if_(env, args, data),
        Op::And | Op::Or => {
            let mut current = None;
            for arg in args {
                current = env.eval(arg, data)?;
                if truthy_opt(current.as_ref()) == (op == Op::Or) {
                    break;
                }
            }
            return Ok(current);
        }
        Op::Map | Op::Filter | Op::All | Op::None | Op::Some | Op::Reduce => {
            return iterate(env, op, args, data);
        }
        _ => {}
    }
    let mut values = Vec::with_capacity(args.len());
    for arg in args {
        values.push(env.eval(arg, data)?);
    }
    let v = |i: usize| values.get(i).and_then(Option::as_ref);
    match op {
        Op::Var => Ok(var(data, v(0), values.get(1))),
        Op::Missing => ok(Json::Array(missing(data, &values))),
        Op::MissingSome => {
            let options: &[Json] = match v(1) {
                Some(Json::Array(items)) => items,
                _ => &[],
            };
            let options: Vec<Option<Json>> = options.iter().cloned().map(Some).collect();
            let absent = missing(data, &options);
            let present = (options.len() - absent.len()) as f64;
            if present >= to_number(v(0)) {
                ok(Json::Array(Vec::new()))
            } else {
                ok(Json::Array(absent))
            }
        }
        Op::Eq => boolean(loose_eq(v(0), v(1))),
        Op::StrictEq => boolean(strict_eq(v(0), v(1))),
        Op::Ne => boolean(!loose_eq(v(0), v(1))),
        Op::StrictNe => boolean(!strict_eq(v(0), v(1))),
        Op::Not => boolean(!truthy_opt(v(0))),
        Op::NotNot => boolean(truthy_opt(v(0))),
        Op::Gt => boolean(less(v(1), v(0))),
        Op::Ge => boolean(less_eq(v(1), v(0))),
        Op::Lt | Op::Le => {
            let cmp = if op == Op::Lt { less } else { less_eq };
            match v(2) {
                None => boolean(cmp(v(0), v(1))),
                Some(_) => boolean(cmp(v(0), v(1)) && cmp(v(1), v(2))),
            }
        }
        Op::Max | Op::Min => {
            let want = if op == Op::Max {
                Ordering::Greater
            } else {
                Ordering::Less
            };
            let mut best = if op == Op::Max {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            };
            for value in &values {
                let n = to_number(value.as_ref());
                if n.is_nan() {
                    return ok(Json::Null);
                }
                if n.partial_cmp(&best) == Some(want) {
                    best = n;
                }
            }
            ok(number(best))
        }
        Op::Add => ok(number(
            values.iter().map(|x| parse_float(x.as_ref())).sum::<f64>(),
        )),
        Op::Mul => match values.as_slice() {
            [] => Err(ExprError::new("L0002", "\"*\" needs at least one operand")),
            // json-logic-js reduces without an initial value: a lone operand is returned as is.
            [only] => Ok(only.clone()),
            many => ok(number(
                many.iter()
                    .map(|x| parse_float(x.as_ref()))
                    .product::<f64>(),
            )),
        },
        Op::Sub => match values.get(1) {
            None | Some(None) => ok(number(-to_number(v(0)))),
            Some(_) => ok(number(to_number(v(0)) - to_number(v(1)))),
        },
        Op::Div => ok(number(to_number(v(0)) / to_number(v(1)))),
        Op::Mod => ok(number(to_number(v(0)) % to_number(v(1)))),
        Op::Merge => {
            let mut out = Vec::new();
            for value in values {
                match value {
                    Some(Json::Array(items)) => out.extend(items),
                    other => out.push(other.unwrap_or(Json::Null)),
                }
            }
            ok(Json::Array(out))
        }
        Op::In => boolean(match v(1) {
            Some(Json::String(hay)) if !hay.is_empty() => hay.contains(&*to_string(v(0))),
            Some(Json::Array(items)) => items.iter().any(|item| strict_eq(v(0), Some(item))),
            _ => false,
        }),
        Op::Cat => {
            let parts: Vec<Json> = values
                .into_iter()
                .map(|x| x.unwrap_or(Json::Null))
                .collect();
            ok(Json::String(join(&parts, "")))
        }
        Op::Substr => ok(Json::String(substr(
            &to_string(v(0)),
            to_integer(v(1)),
            values
                .get(2)
                .and_then(|x| x.as_ref().map(|e| to_integer(Some(e)))),
        ))),
        Op::Log => {
            tracing::info!(target: "mcpflow_expr::log", value = %v(0).map_or("undefined".into(), Json::to_string), "JSON Logic log");
            Ok(v(0).cloned())
        }
        Op::If
        | Op::And
        | Op::Or
        | Op::Map
        | Op::Filter
        | Op::All
        | Op::None
        | Op::Some
        | Op::Reduce => {
            unreachable!("handled above")
        }
    }
}

fn if_(env: &Env<'_>, args: &[Rule], data: Data<'_>) -> Out {
    let mut i = 0;
    while i + 1 < args.len() {
        if truthy_opt(env.eval(&args[i], data)?.as_ref()) {
            return env.eval(&args[i + 1], data);
        }
        i += 2;
    }
    match args.get(i) {
        Some(last) => env.eval(last, data),
        None => ok(Json::Null),
    }
}

fn iterate(env: &Env<'_>, op: Op, args: &[Rule], data: Data<'_>) -> Out {
    let scoped = match args.first() {
        Some(rule) => env.eval(rule, data)?,
        None => None,
    };
    let logic = args.get(1);
    let apply_to = |item: &Json| -> Out {
        match logic {
            Some(rule) => env.eval(rule, Data::Json(item)),
            None => Ok(None),
        }
    };
    if op == Op::Reduce {
        let initial = match args.get(2) {
            Some(rule) => env.eval(rule, data)?,
            None => Some(Json::Null),
        };
        let Some(Json::Array(items)) = scoped else {
            return Ok(initial);
        };
        let mut acc = initial;
        for current in items {
            let mut scope = Map::with_capacity(2);
            scope.insert("current".to_owned(), current);
            scope.insert("accumulator".to_owned(), acc.take().unwrap_or(Json::Null));
            acc = apply_to(&Json::Object(scope))?;
        }
        return Ok(acc);
    }
    let items = match scoped {
        Some(Json::Array(items)) => items,
        // json-logic-js: `all` of an empty or non-array operand is false; the others treat
        // a non-array as an empty array.
        _ => Vec::new(),
    };
    match op {
        Op::Map => {
            let mut out = Vec::with_capacity(items.len());
            for item in &items {
                out.push(apply_to(item)?.unwrap_or(Json::Null));
            }
            ok(Json::Array(out))
        }
        Op::Filter => {
            let mut out = Vec::new();
            for item in items {
                if truthy_opt(apply_to(&item)?.as_ref()) {
                    out.push(item);
                }
            }
            ok(Json::Array(out))
        }
        Op::All => {
            if items.is_empty() {
                return boolean(false);
            }
            for item in &items {
                if !truthy_opt(apply_to(item)?.as_ref()) {
                    return boolean(false);
                }
            }
            boolean(true)
        }
        Op::None | Op::Some => {
            let mut any = false;
            for item in &items {
                if truthy_opt(apply_to(item)?.as_ref()) {
                    any = true;
                    break;
                }
            }
            boolean(any == (op == Op::Some))
        }
        _ => unreachable!("only iterating operators reach here"),
    }
}

/// Classic `var`: a dotted path into the data; `default` (or `null`) when it is missing.
fn var(data: Data<'_>, path: Option<&Json>, default: Option<&Option<Json>>) -> Option<Json> {
    let not_found = || match default {
        Some(Some(d)) => Some(d.clone()),
        _ => Some(Json::Null),
    };
    match path {
        None | Some(Json::Null) => return Some(data.to_json()),
        Some(Json::String(s)) if s.is_empty() => return Some(data.to_json()),
        _ => {}
    }
    match data.lookup(&to_string(path)) {
        Some(found) => Some(found.clone()),
        None => not_found(),
    }
}

/// `missing`: the keys (the first operand when it is an array, else all of them) whose value
/// is `null`, absent or `""`.
fn missing(data: Data<'_>, values: &[Option<Json>]) -> Vec<Json> {
    let keys: Vec<&Json> = match values.first() {
        Some(Some(Json::Array(items))) => items.iter().collect(),
        _ => values.iter().flatten().collect(),
    };
    let mut out = Vec::new();
    for key in keys {
        let value = var(data, Some(key), None);
        if matches!(value.as_ref(), None | Some(Json::Null))
            || value.as_ref().and_then(Json::as_str) == Some("")
        {
            out.push(key.clone());
        }
    }
    out
}

/// `String.prototype.substr`, with json-logic-js's negative length (cut from the end), in
/// UTF-16 code units.
fn substr(s: &str, start: i64, len: Option<i64>) -> String {
    let units: Vec<u16> = s.encode_utf16().collect();
    let n = units.len() as i64;
    let from = if start < 0 {
        (n + start).max(0)
    } else {
        start.min(n)
    };
    let rest = n - from;
    let take = match len {
        None => rest,
        Some(l) if l < 0 => (rest + l).max(0),
        Some(l) => l.min(rest),
    };
    let slice = &units[from as usize..(from + take) as usize];
    String::from_utf16_lossy(slice)
}
