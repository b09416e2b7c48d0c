//! A clock and randomness fixed by the caller, for scripts whose calls must give the same
//! answer when they are repeated: a durable run that resumes re-runs the script nodes it had
//! not committed, and a script that made an idempotency key with `Date.now()` or
//! `Math.random()` must make the same key again.
//!
//! With a [`Determinism`], `Date.now()`, `new Date()` and `Date()` read `now_ms` (the clock
//! does not move during the call) and `Math.random()` is a SplitMix64 sequence started at
//! `seed`. Everything else about `Date` is the real one: `new Date(x)`, its methods,
//! `instanceof Date` and subclasses.

use std::cell::Cell;

use rquickjs::function::{Args, This};
use rquickjs::{Array, Constructor, Ctx, Function, Object, Value};

/// What `Date.now()` and `Math.random()` are made of in one call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Determinism {
    /// Milliseconds since the Unix epoch, as `Date.now()` returns them.
    pub now_ms: f64,
    /// Seed of `Math.random()`'s sequence.
    pub seed: u64,
}

/// Replaces the clock and `Math.random` of the call's context, before the script's module is
/// evaluated. The functions installed capture only numbers: a JavaScript value held by a Rust
/// closure is invisible to QuickJS's cycle collector and would keep the context alive, and
/// whatever they need (the real `Date`) arrives as the arguments of the proxy's traps.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, fixed: Determinism) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    let date: Object<'js> = globals.get("Date")?;
    let now = fixed.now_ms;

    let handler = Object::new(ctx.clone())?;
    let on_new = move |ctx: Ctx<'js>,
                       target: Constructor<'js>,
                       args: Array<'js>,
                       new_target: Value<'js>|
          -> rquickjs::Result<Value<'js>> {
        let mut call = Args::new(ctx, args.len().max(1));
        // `new_target` makes `class Stamp extends Date {}` build a `Stamp`.
        call.this(new_target)?;
        if args.is_empty() {
            call.push_arg(now)?;
        } else {
            call.push_args(args.iter::<Value<'js>>())?;
        }
        call.construct(&target)
    };
    handler.set("construct", Function::new(ctx.clone(), on_new)?)?;
    // `Date()` called without `new` returns the current time as a string.
    let on_call = move |target: Constructor<'js>, _this: Value<'js>, _args: Value<'js>| {
        let date: Object<'js> = target.construct((now,))?;
        let to_string: Function<'js> = date.get("toString")?;
        to_string.call::<_, Value<'js>>((This(date),))
    };
    handler.set("apply", Function::new(ctx.clone(), on_call)?)?;
    let proxy: Constructor<'js> = globals.get("Proxy")?;
    let fixed_date: Value<'js> = proxy.construct((date.clone(), handler))?;

    date.set(
        "now",
        Function::new(ctx.clone(), move || now)?.with_name("now")?,
    )?;
    let prototype: Object<'js> = date.get("prototype")?;
    prototype.set("constructor", fixed_date.clone())?;
    globals.set("Date", fixed_date)?;

    let state = Cell::new(fixed.seed);
    let random = move || {
        let x = splitmix64(&state);
        // The top 53 bits, as a double in [0, 1).
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let math: Object<'js> = globals.get("Math")?;
    math.set(
        "random",
        Function::new(ctx.clone(), random)?.with_name("random")?,
    )?;
    Ok(())
}

fn splitmix64(state: &Cell<u64>) -> u64 {
    let s = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
    state.set(s);
    let mut z = s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stable 64-bit hash (FNV-1a) for seeds: the same bytes give the same seed in every build
/// and on every machine, so a run resumed by another replica draws the same numbers.
pub fn seed_from(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &byte in *part {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator, so ("ab", "c") and ("a", "bc") differ.
        hash ^= 0xff;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
