//! How a call can fail, and whose fault each failure is (what a policy may forgive).

use std::time::Duration;

/// Whose fault a failed call is, for policies that may forgive some failures (a gateway hook's
/// `onHookError: open`). Only [`Fault::Script`] may be forgiven: anything else may be caused
/// by the traffic the script was meant to judge, and forgiving it would let that traffic
/// switch the script off (a request padded until it no longer fits in the script's memory
/// would walk past a guard).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The script's own: it threw, ran out of its CPU budget, returned something that is not
    /// JSON data or a promise that never settles, or does not compile.
    Script,
    /// The input or a limit it drives: the input is too large, too deep or holds a number
    /// JavaScript cannot hold exactly; the call ran out of memory or stack; the result is
    /// larger than the output cap. An attacker can cause each of these by shaping the input.
    Input,
    /// Not a verdict of the script at all: the call was cancelled, the background queue was
    /// full, the sandbox failed or is misconfigured.
    Sandbox,
}

/// Why a script could not be compiled or called.
///
/// Every variant says what happened in words a script author can act on; none of them means the
/// host is damaged: after any error the sandbox takes the next call as if nothing happened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SandboxError {
    /// The source does not parse. `line` and `column` are 1-based and point into the source as
    /// the author wrote it.
    #[error("{script}:{line}:{column}: syntax error: {message}")]
    Syntax {
        script: String,
        line: u32,
        column: u32,
        message: String,
    },

    /// The source parsed but does not produce a function (see the crate docs for the forms).
    #[error("the script must evaluate to a function, but it evaluated to {found}")]
    NotAFunction { found: String },

    /// The script threw (or its promise rejected). `message` renders the thrown value the way a
    /// developer would want to read it: `TypeError: x is undefined` for errors, the text itself
    /// for a string, `42`, `null`, `undefined`, `Symbol(s)`, or compact JSON for an object.
    /// `value` is the thrown value as JSON when it is not an `Error` and converts cleanly, so a
    /// hook can reject with structured data (`throw {code: 403, reason: "..."}`).
    #[error("the script threw {message}")]
    Thrown {
        message: String,
        value: Option<serde_json::Value>,
        stack: Option<String>,
    },

    /// The script used up its CPU time budget (an endless loop, or too much work for the budget).
    #[error("the script ran out of its CPU time budget of {budget:?} and was stopped")]
    Timeout { budget: Duration },

    /// The script tried to use more memory than the sandbox allows.
    #[error("the script ran out of memory: the sandbox allows {limit} bytes")]
    OutOfMemory { limit: usize },

    /// The script recursed deeper than the stack limit allows.
    #[error("the script overflowed its stack ({limit} bytes): recursion too deep")]
    StackOverflow { limit: usize },

    /// The script returned a promise (or awaited one) that can never settle: nothing is left to
    /// run and the promise is still pending. There are no timers or I/O in the sandbox, so a
    /// promise only settles through the script's own code.
    #[error("the script's promise never settled (nothing left to run, and it is still pending)")]
    Unsettled,

    /// The input could not be handed to the script (too large or too deeply nested).
    #[error("the input cannot be passed to the script: {reason}")]
    Input { reason: String },

    /// The script's result is not plain JSON data (a function, a symbol, a cycle, a string
    /// with a lone surrogate…); `reason` names the offending value with a JSON pointer
    /// (`/items/3/callback`).
    #[error("the script's result cannot be returned as JSON: {reason}")]
    Output { reason: String },

    /// The script's result is larger than [`crate::SandboxOptions::max_output_bytes`] as JSON
    /// text.
    #[error("the script's result is larger than the limit of {limit} bytes")]
    OutputTooLarge { limit: usize },

    /// The caller gave up on the call (its future was dropped) and the script was stopped.
    #[error("the call was cancelled")]
    Cancelled,

    /// A background call was refused because the background queue already holds `queued`
    /// calls.
    #[error(
        "the sandbox's background queue is full ({queued} calls waiting); the call was dropped"
    )]
    Busy { queued: usize },

    /// The `SandboxOptions` make no sense (zero workers, a memory limit too small to start).
    #[error("invalid sandbox options: {0}")]
    Options(String),

    /// A failure of the sandbox itself, not of the script.
    #[error("sandbox internal error: {0}")]
    Internal(String),
}

impl SandboxError {
    /// Whose fault this failure is; see [`Fault`].
    pub fn fault(&self) -> Fault {
        match self {
            SandboxError::Syntax { .. }
            | SandboxError::NotAFunction { .. }
            | SandboxError::Thrown { .. }
            | SandboxError::Timeout { .. }
            | SandboxError::Unsettled
            | SandboxError::Output { .. } => Fault::Script,
            SandboxError::Input { .. }
            | SandboxError::OutputTooLarge { .. }
            | SandboxError::OutOfMemory { .. }
            | SandboxError::StackOverflow { .. } => Fault::Input,
            SandboxError::Cancelled
            | SandboxError::Busy { .. }
            | SandboxError::Options(_)
            | SandboxError::Internal(_) => Fault::Sandbox,
        }
    }

    /// Whether the context a call failed in may serve the next call: yes when the script ended
    /// the ordinary way (it threw, returned something that is not JSON data, or a promise that
    /// can no longer settle); no when QuickJS stopped it midway (time, memory, stack, the caller
    /// leaving) or anything failed that is not the script's own doing.
    pub(crate) fn leaves_context_sound(&self) -> bool {
        matches!(
            self,
            SandboxError::NotAFunction { .. }
                | SandboxError::Thrown { .. }
                | SandboxError::Unsettled
                | SandboxError::Output { .. }
                | SandboxError::OutputTooLarge { .. }
        )
    }

    /// The `kind` label of `mcpflow_sandbox_failures_total`; none for a call its caller
    /// cancelled, which is not a failure.
    pub fn metric_kind(&self) -> Option<&'static str> {
        Some(match self {
            SandboxError::Syntax { .. } | SandboxError::NotAFunction { .. } => "compile",
            SandboxError::Thrown { .. } => "exception",
            SandboxError::Timeout { .. } => "time",
            SandboxError::OutOfMemory { .. } => "memory",
            SandboxError::StackOverflow { .. } => "stack",
            SandboxError::Unsettled => "unsettled",
            SandboxError::Input { .. } => "input",
            SandboxError::Output { .. } | SandboxError::OutputTooLarge { .. } => "output",
            SandboxError::Busy { .. } => "busy",
            SandboxError::Options(_) | SandboxError::Internal(_) => "internal",
            SandboxError::Cancelled => return None,
        })
    }
}
