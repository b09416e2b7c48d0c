//! Turning whatever JavaScript threw into a `SandboxError`, and rendering values as text.

use rquickjs::{Ctx, Object, Value};
use serde_json::Value as Json;

use crate::SandboxError;
use crate::budget::Budget;
use crate::json::{Mode, Stop, Walker, js_number_text};
use crate::memory::Meter;
use crate::source::adjust_stack;
use crate::text;

/// What is needed to explain a failure of one call.
pub(crate) struct Env<'a> {
    pub(crate) budget: &'a Budget,
    pub(crate) meter: &'a Meter,
    pub(crate) stack_size: usize,
    pub(crate) script: &'a str,
    pub(crate) prefix: usize,
}

/// Rendered text of a thrown value, an error's name or message, or a log argument is cut here
/// (marked `…`); it is meant for humans.
pub(crate) const RENDER_CAP: usize = 8 << 10;
/// An error's stack is cut here.
pub(crate) const STACK_CAP: usize = 16 << 10;
/// A thrown non-Error value is also handed back as JSON up to this size.
pub(crate) const THROWN_VALUE_CAP: usize = 64 << 10;

impl Env<'_> {
    /// The budget stopped the call: its CPU time ran out, or its caller went away.
    pub(crate) fn timeout(&self) -> SandboxError {
        if self.budget.cancelled() {
            return SandboxError::Cancelled;
        }
        SandboxError::Timeout {
            budget: self.budget.limit(),
        }
    }

    pub(crate) fn explain_js_error<'js>(
        &self,
        ctx: &Ctx<'js>,
        err: rquickjs::Error,
    ) -> SandboxError {
        if self.budget.fired() {
            return self.timeout();
        }
        match err {
            rquickjs::Error::Exception => {
                let thrown = ctx.catch();
                self.explain_thrown(ctx, thrown)
            }
            rquickjs::Error::Allocation => self.out_of_memory(),
            other => SandboxError::Internal(other.to_string()),
        }
    }

    pub(crate) fn explain_stop<'js>(&self, ctx: &Ctx<'js>, stop: Stop) -> SandboxError {
        match stop {
            Stop::Js(e) => self.explain_js_error(ctx, e),
            Stop::Timeout => self.timeout(),
            Stop::Output(_) | Stop::TooLarge(_) if self.budget.fired() => self.timeout(),
            Stop::TooLarge(limit) => SandboxError::OutputTooLarge { limit },
            Stop::Output(reason) => SandboxError::Output { reason },
            Stop::OutOfMemory => self.out_of_memory(),
        }
    }

    pub(crate) fn explain_thrown<'js>(&self, ctx: &Ctx<'js>, thrown: Value<'js>) -> SandboxError {
        let error = self.classify(ctx, thrown);
        if self.budget.fired() {
            // Rendering ran script code (getters); if that is what used up the budget, the call
            // timed out whatever it threw.
            return self.timeout();
        }
        error
    }

    fn out_of_memory(&self) -> SandboxError {
        SandboxError::OutOfMemory {
            limit: self.meter.limit(),
        }
    }

    fn classify<'js>(&self, ctx: &Ctx<'js>, thrown: Value<'js>) -> SandboxError {
        // With the heap full, QuickJS cannot allocate its error object and throws `null`.
        if thrown.is_null() && self.meter.refused() == Some(true) {
            return self.out_of_memory();
        }
        if let (true, Some(obj)) = (thrown.is_error(), thrown.as_object()) {
            let name =
                text_property(ctx, obj, "name", RENDER_CAP).unwrap_or_else(|| "Error".into());
            let message = text_property(ctx, obj, "message", RENDER_CAP).unwrap_or_default();
            // QuickJS reports these two engine limits with these exact errors. A look-alike thrown
            // by the script is told apart where the allocator knows whether it refused; a stack
            // overflow look-alike only mislabels the script's own failure.
            match (name.as_str(), message.as_str()) {
                ("InternalError", "out of memory") if self.meter.refused() != Some(false) => {
                    return self.out_of_memory();
                }
                ("RangeError", "Maximum call stack size exceeded") => {
                    return SandboxError::StackOverflow {
                        limit: self.stack_size,
                    };
                }
                _ => {}
            }
            let stack = text_property(ctx, obj, "stack", STACK_CAP)
                .filter(|s| !s.trim().is_empty())
                .map(|s| adjust_stack(&s, self.script, self.prefix));
            let message = if message.is_empty() {
                name
            } else {
                format!("{name}: {message}")
            };
            return SandboxError::Thrown {
                message,
                value: None,
                stack,
            };
        }
        let walked = Walker::new(
            ctx.clone(),
            self.budget,
            self.meter,
            Mode::Strict,
            THROWN_VALUE_CAP,
        )
        .walk(thrown.clone());
        let value = match walked {
            Ok(v) => v,
            Err(stop) => {
                discard(ctx, stop);
                None
            }
        };
        SandboxError::Thrown {
            message: render(ctx, self.budget, self.meter, thrown),
            value,
            stack: None,
        }
    }
}

/// A property as text, or `None` if it is missing, not a string, or its getter throws.
fn text_property<'js>(ctx: &Ctx<'js>, obj: &Object<'js>, key: &str, cap: usize) -> Option<String> {
    match obj.get::<_, Value>(key) {
        Ok(v) if v.is_string() => text::lossy(ctx, &v, cap),
        Ok(_) => None,
        Err(e) => {
            discard(ctx, Stop::Js(e));
            None
        }
    }
}

/// Drops the exception a failed rendering left pending, so it cannot surface later.
fn discard(ctx: &Ctx<'_>, stop: Stop) {
    if let Stop::Js(rquickjs::Error::Exception) = stop {
        let _ = ctx.catch();
    }
}

/// A value as a developer would want to read it in a log line or an error message, at most
/// about [`RENDER_CAP`] bytes.
pub(crate) fn render<'js>(
    ctx: &Ctx<'js>,
    budget: &Budget,
    meter: &Meter,
    value: Value<'js>,
) -> String {
    if value.is_string() {
        return text::lossy(ctx, &value, RENDER_CAP)
            .unwrap_or_else(|| "<unreadable string>".into());
    }
    if value.is_undefined() {
        return "undefined".into();
    }
    if let Some(f) = value.as_float() {
        return js_number_text(f);
    }
    if let (true, Some(obj)) = (value.is_error(), value.as_object()) {
        let name = text_property(ctx, obj, "name", RENDER_CAP).unwrap_or_else(|| "Error".into());
        return match text_property(ctx, obj, "message", RENDER_CAP).filter(|m| !m.is_empty()) {
            Some(message) => format!("{name}: {message}"),
            None => name,
        };
    }
    match Walker::new(ctx.clone(), budget, meter, Mode::Lenient, RENDER_CAP).walk(value.clone()) {
        Ok(Some(Json::String(s))) => s,
        Ok(Some(json)) => json.to_string(),
        Ok(None) => "undefined".into(),
        Err(stop) => {
            discard(ctx, stop);
            if value.is_array() {
                "[Array]".into()
            } else {
                "[object Object]".into()
            }
        }
    }
}
