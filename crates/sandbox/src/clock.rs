//! A clock and randomness fixed by the caller, for scripts whose calls must give the same
//! answer when they are repeated: a durable run that resumes re-runs the script nodes it had
//! not committed, and a script that made an idempotency key with `Date.now()` or
//! `Math.random()` must make the same key again.
//!
//! With a [`Determinism`], `Date.now()`, `new Date()` and `Date()` read `now_ms` (the clock
//! does not move during the call) and `Math.random()` is a SplitMix64 sequence started at
//! `seed`; without one, they read the real clock and a sequence seeded afresh from the OS for
//! each call. Everything else about `Date` is the real one: `new Date(x)`, its methods,
//! `instanceof Date` and subclasses.

use std::cell::Cell;
use std::rc::Rc;

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

/// The clock and randomness of the call running in a context: set by the host before each
/// call, read by the functions [`install`] put in place of the built-in ones.
#[derive(Debug, Default)]
pub(crate) struct Clock {
    fixed_now: Cell<Option<f64>>,
    /// `None` until the call's first `Math.random()`, which then seeds it from the OS.
    random: Cell<Option<u64>>,
}

impl Clock {
    /// Starts a call: fixed by `fixed`, or the real clock and fresh randomness. Nothing of the
    /// previous call's sequence survives, so no call can learn or steer the next one's numbers.
    pub(crate) fn begin(&self, fixed: Option<Determinism>) {
        self.fixed_now.set(fixed.map(|f| f.now_ms));
        self.random.set(fixed.map(|f| f.seed));
    }

    fn now(&self) -> f64 {
        self.fixed_now.get().unwrap_or_else(real_now)
    }

    fn next_random(&self) -> f64 {
        let state = Cell::new(self.random.get().unwrap_or_else(os_seed));
        let x = splitmix64(&state);
        self.random.set(Some(state.get()));
        // The top 53 bits, as a double in [0, 1).
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn real_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64)
}

fn os_seed() -> u64 {
    let mut seed = [0u8; 8];
    #[cfg(target_os = "linux")]
    // SAFETY: `seed` is a valid, writable buffer of the length given.
    let filled = unsafe { libc::getrandom(seed.as_mut_ptr().cast(), seed.len(), 0) } == 8;
    #[cfg(not(target_os = "linux"))]
    let filled = false;
    if !filled {
        // No OS randomness: a hasher's per-process random keys, mixed with the clock.
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::UNIX_EPOCH
                .elapsed()
                .map_or(0, |d| d.as_nanos()),
        );
        return hasher.finish();
    }
    u64::from_ne_bytes(seed)
}

/// Replaces `Date` and `Math.random` of a call context, once, before it is hardened: `Date.now()`,
/// `new Date()` and `Date()` read [`Clock::now`], `Math.random()` draws from the call's
/// sequence. The functions installed capture only the `Clock`: a JavaScript value held by a Rust
/// closure is invisible to QuickJS's cycle collector and would keep the context alive, and
/// whatever they need (the real `Date`) arrives as the arguments of the proxy's traps.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, clock: &Rc<Clock>) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    let date: Object<'js> = globals.get("Date")?;

    let handler = Object::new(ctx.clone())?;
    let on_new = {
        let clock = Rc::clone(clock);
        move |ctx: Ctx<'js>,
              target: Constructor<'js>,
              args: Array<'js>,
              new_target: Value<'js>|
              -> rquickjs::Result<Value<'js>> {
            let mut call = Args::new(ctx, args.len().max(1));
            // `new_target` makes `class Stamp extends Date {}` build a `Stamp`.
            call.this(new_target)?;
            if args.is_empty() {
                call.push_arg(clock.now())?;
            } else {
                call.push_args(args.iter::<Value<'js>>())?;
            }
            call.construct(&target)
        }
    };
    handler.set("construct", Function::new(ctx.clone(), on_new)?)?;
    // `Date()` called without `new` returns the current time as a string.
    let on_call = {
        let clock = Rc::clone(clock);
        move |target: Constructor<'js>, _this: Value<'js>, _args: Value<'js>| {
            let date: Object<'js> = target.construct((clock.now(),))?;
            let to_string: Function<'js> = date.get("toString")?;
            to_string.call::<_, Value<'js>>((This(date),))
        }
    };
    handler.set("apply", Function::new(ctx.clone(), on_call)?)?;
    let proxy: Constructor<'js> = globals.get("Proxy")?;
    let clocked_date: Value<'js> = proxy.construct((date.clone(), handler))?;

    let now = {
        let clock = Rc::clone(clock);
        move || clock.now()
    };
    date.set("now", Function::new(ctx.clone(), now)?.with_name("now")?)?;
    let prototype: Object<'js> = date.get("prototype")?;
    prototype.set("constructor", clocked_date.clone())?;
    globals.set("Date", clocked_date)?;

    let random = {
        let clock = Rc::clone(clock);
        move || clock.next_random()
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
