//! Hardening a call context so that the calls of one worker can share it without sharing state
//! (the hardened-JavaScript approach): every object reachable from the global object, from the
//! intrinsics no property reaches (the generator, iterator and `%TypedArray%` prototypes,
//! `%ThrowTypeError%`) and from their prototypes and accessors is frozen, after the two
//! accessors that write the context's own state (`Error.prepareStackTrace`,
//! `Error.stackTraceLimit`) are removed. A script can then change nothing that the next call can
//! see: the objects it makes are its own, and the module it runs in is instantiated afresh.
//!
//! Freezing a prototype makes assigning a property it holds to a *derived* object throw (the
//! "override mistake"), which breaks ordinary code (`this.name = "MyError"` in an `Error`
//! subclass). `constructor`, `toString`, `name` and `message` of the built-in constructors'
//! prototypes, and `valueOf` and `toLocaleString` of `Object.prototype`, become accessors that
//! define the property on the object assigned to and refuse only the prototype itself.
//!
//! What must be done from JavaScript (removing the two accessors, the assignable properties,
//! finding the hidden intrinsics) is `lockdown.js`, compiled to bytecode once per process and
//! run in each new call context before any script; it exports the roots. The walk and the
//! freezing are done here, through QuickJS's C API: the same walk in JavaScript allocates a
//! descriptor object per property and cost about 40 M instructions per context, this one
//! about 4 M.

use std::collections::HashSet;
use std::sync::OnceLock;

use rquickjs::qjs;
use rquickjs::{Array, Context, Ctx, Module, Runtime, Value, WriteOptions};

use crate::SandboxError;
use crate::isolate::ParseIntrinsics;

const SOURCE: &str = include_str!("lockdown.js");

/// The module name the lockdown runs under; no script can import it (no import resolves).
pub(crate) const NAME: &str = "mcpflow:lockdown";

/// Freezes what `ctx` shares between calls. Call it after every host function the calls use is
/// installed, and before any script runs.
pub(crate) fn harden(ctx: &Ctx<'_>) -> Result<(), SandboxError> {
    let bytecode = bytecode()?;
    let failed = |e: rquickjs::Error| {
        let thrown = ctx.catch();
        SandboxError::Internal(format!("hardening the call context: {e}: {thrown:?}"))
    };
    // SAFETY: the bytecode was written by `Module::write` in this process, by this QuickJS build,
    // and is never modified afterwards.
    let declared = unsafe { Module::load(ctx.clone(), bytecode) }.map_err(failed)?;
    let (module, done) = declared.eval().map_err(failed)?;
    // The lockdown awaits nothing, so the module's promise is settled when `eval` returns.
    done.finish::<()>().map_err(failed)?;
    let roots: Array<'_> = module.get("default").map_err(failed)?;
    let roots = roots
        .iter::<Value<'_>>()
        .collect::<rquickjs::Result<Vec<_>>>()
        .map_err(failed)?;
    freeze_reachable(ctx, &roots)
        .map(drop)
        .map_err(|e| SandboxError::Internal(format!("hardening: {e}")))
}

/// Freezes every object reachable from `roots` through own properties (string and symbol
/// keys; data values, getters and setters) and prototypes. Returns how many were frozen.
fn freeze_reachable(ctx: &Ctx<'_>, roots: &[Value<'_>]) -> Result<usize, String> {
    let raw = ctx.as_raw().as_ptr();
    // Owned references (each dup'd once), freed whatever happens.
    let mut walk = Walk {
        ctx: raw,
        pending: Vec::new(),
        reached: Vec::new(),
    };
    for root in roots {
        // SAFETY: `root` is a live value of this context; the dup is owned by `walk`.
        walk.pending
            .push(unsafe { qjs::JS_DupValue(raw, root.as_raw()) });
    }
    let mut seen = HashSet::new();
    while let Some(value) = walk.pending.pop() {
        // SAFETY: reading the tag and pointer of a value `walk` owns.
        let object = unsafe { qjs::JS_VALUE_GET_TAG(value) } == qjs::JS_TAG_OBJECT;
        if !object || !seen.insert(unsafe { qjs::JS_VALUE_GET_PTR(value) } as usize) {
            // SAFETY: `walk` owned it; a non-object or a second reference is dropped here.
            unsafe { qjs::JS_FreeValue(raw, value) };
            continue;
        }
        walk.reached.push(value);
        // SAFETY: `value` is a live object owned by `walk`; every value the calls below return
        // is a new reference, handed to `walk` to free.
        unsafe { walk.expand(value)? };
    }
    for &value in &walk.reached {
        // SAFETY: a live object owned by `walk`.
        if unsafe { qjs::JS_FreezeObject(raw, value) } < 0 {
            return Err(walk.exception("freezing"));
        }
    }
    Ok(walk.reached.len())
}

struct Walk {
    ctx: *mut qjs::JSContext,
    pending: Vec<qjs::JSValue>,
    reached: Vec<qjs::JSValue>,
}

impl Walk {
    /// Queues `object`'s prototype and the values, getters and setters of its own properties.
    ///
    /// # Safety
    /// `object` must be a live object of `self.ctx`.
    unsafe fn expand(&mut self, object: qjs::JSValue) -> Result<(), String> {
        let ctx = self.ctx;
        // SAFETY (whole body): `ctx` and `object` are live; the enum table is freed below and
        // every value a descriptor holds is a new reference queued for `self` to free.
        unsafe {
            let prototype = qjs::JS_GetPrototype(ctx, object);
            if qjs::JS_IsException(prototype) {
                return Err(self.exception("reading a prototype"));
            }
            self.pending.push(prototype);
            let mut table: *mut qjs::JSPropertyEnum = std::ptr::null_mut();
            let mut len: u32 = 0;
            let flags = (qjs::JS_GPN_STRING_MASK | qjs::JS_GPN_SYMBOL_MASK) as i32;
            if qjs::JS_GetOwnPropertyNames(ctx, &mut table, &mut len, object, flags) < 0 {
                return Err(self.exception("listing properties"));
            }
            let mut failed = false;
            for i in 0..len as usize {
                let atom = (*table.add(i)).atom;
                let mut found = qjs::JSPropertyDescriptor {
                    flags: 0,
                    value: qjs::JS_UNDEFINED,
                    getter: qjs::JS_UNDEFINED,
                    setter: qjs::JS_UNDEFINED,
                };
                match qjs::JS_GetOwnProperty(ctx, &mut found, object, atom) {
                    r if r < 0 => {
                        failed = true;
                        break;
                    }
                    0 => {}
                    _ => {
                        self.pending.push(found.value);
                        self.pending.push(found.getter);
                        self.pending.push(found.setter);
                    }
                }
            }
            qjs::JS_FreePropertyEnum(ctx, table, len);
            if failed {
                return Err(self.exception("reading a property"));
            }
        }
        Ok(())
    }

    /// Takes the pending exception as text.
    fn exception(&self, doing: &str) -> String {
        // SAFETY: `ctx` is live; the exception value is freed after being described.
        unsafe {
            let thrown = qjs::JS_GetException(self.ctx);
            let text = qjs::JS_ToCString(self.ctx, thrown);
            let message = if text.is_null() {
                "an exception".to_owned()
            } else {
                let message = std::ffi::CStr::from_ptr(text)
                    .to_string_lossy()
                    .into_owned();
                qjs::JS_FreeCString(self.ctx, text);
                message
            };
            qjs::JS_FreeValue(self.ctx, thrown);
            format!("{doing}: {message}")
        }
    }
}

impl Drop for Walk {
    fn drop(&mut self) {
        for value in self.pending.drain(..).chain(self.reached.drain(..)) {
            // SAFETY: each is a reference this walk owns, freed once.
            unsafe { qjs::JS_FreeValue(self.ctx, value) };
        }
    }
}

fn bytecode() -> Result<&'static [u8], SandboxError> {
    static BYTECODE: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();
    BYTECODE
        .get_or_init(compile)
        .as_deref()
        .map_err(|e| SandboxError::Internal(format!("compiling the lockdown: {e}")))
}

fn compile() -> Result<Vec<u8>, String> {
    let runtime = Runtime::new().map_err(|e| e.to_string())?;
    let context = Context::custom::<ParseIntrinsics>(&runtime).map_err(|e| e.to_string())?;
    context.with(|ctx| {
        Module::declare(ctx.clone(), NAME, SOURCE)
            .and_then(|module| module.write(WriteOptions::default()))
            .map_err(|e| format!("{e}: {:?}", ctx.catch()))
    })
}
