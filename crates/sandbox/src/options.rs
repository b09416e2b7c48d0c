//! The limits a sandbox applies to every call, with their defaults and their sane ranges.

use std::time::Duration;

use crate::SandboxError;

/// Limits that apply to every call of every script compiled for one [`crate::Sandbox`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxOptions {
    /// Heap cap of one call, input and result included (QuickJS counts every allocation).
    pub memory_limit_bytes: usize,
    /// CPU time one call may use, measured on the worker thread's own CPU clock: module
    /// evaluation, the function, the promise jobs it queues and the conversion of its result.
    pub cpu_time: Duration,
    /// How deep the JavaScript stack may grow; recursion beyond it is a `StackOverflow`.
    pub stack_size: usize,
    /// Cap on the input as JSON text: a larger input is refused before it is copied
    /// ([`crate::SandboxError::Input`], a fault of the input, never of the script).
    pub max_input_bytes: usize,
    /// Cap on the result as JSON text, and separately on the captured console output.
    pub max_output_bytes: usize,
    /// Worker threads, each running one call at a time.
    pub workers: usize,
    /// Background calls ([`crate::Script::call_in_background`]) run on a worker of their own,
    /// started on the first such call, so they never hold up the callers who wait; at most
    /// this many wait for it, and the next is refused with [`crate::SandboxError::Busy`].
    pub background_queue: usize,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        Self {
            memory_limit_bytes: 32 << 20,
            cpu_time: Duration::from_millis(100),
            stack_size: 512 << 10,
            max_input_bytes: 4 << 20,
            max_output_bytes: 4 << 20,
            background_queue: 64,
            workers: std::thread::available_parallelism()
                .map(|n| n.get().clamp(1, 2))
                .unwrap_or(1),
        }
    }
}

/// Below this a context cannot even be created (QuickJS's intrinsics take about 300 KiB).
const MIN_MEMORY: usize = 1 << 20;
/// QuickJS ignores (treats as unlimited) stack limits above 16 MiB.
const MAX_STACK: usize = 16 << 20;
const MIN_STACK: usize = 64 << 10;

impl SandboxOptions {
    pub(crate) fn validate(&self) -> Result<(), SandboxError> {
        let bad = |why: String| Err(SandboxError::Options(why));
        if self.memory_limit_bytes < MIN_MEMORY {
            return bad(format!(
                "memory_limit_bytes is {}; it must be at least {MIN_MEMORY}",
                self.memory_limit_bytes
            ));
        }
        if self.cpu_time.is_zero() {
            return bad("cpu_time must be more than zero".into());
        }
        if !(MIN_STACK..=MAX_STACK).contains(&self.stack_size) {
            return bad(format!(
                "stack_size is {}; it must be between {MIN_STACK} and {MAX_STACK}",
                self.stack_size
            ));
        }
        if self.max_output_bytes == 0 || self.max_input_bytes == 0 {
            return bad("max_input_bytes and max_output_bytes must be more than zero".into());
        }
        if self.workers == 0 {
            return bad("workers must be at least 1".into());
        }
        Ok(())
    }

    /// The real stack of a thread that runs scripts: the JavaScript limit plus room for
    /// QuickJS's own C frames and our Rust conversion code, so the JS limit always trips first.
    pub(crate) fn thread_stack_size(&self) -> usize {
        self.stack_size + (4 << 20)
    }
}
