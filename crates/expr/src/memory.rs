//! The memory bound of an evaluation.
//!
//! jlens-core caps the size of each value it builds, not their sum: `[1..$n].[1..$n]` with
//! `n = 10000` builds ten thousand arrays of ten thousand items, each under the cap, and holds
//! them all before flattening (2.2 GB in one call). It offers no allocation hook, so the bound
//! is kept where every allocation passes: [`Metered`] wraps the process's global allocator
//! (the binary installs it; a library never does). While an evaluation runs, the bytes its
//! thread allocates and frees are charged to it; once the live total passes the budget, the
//! evaluation's cancel token is set and jlens stops at its next step, which this crate reports
//! as [`MEMORY_CODE`]. Without [`Metered`] installed the budget is not enforced (only jlens'
//! per-value caps are); [`memory_bound_active`] tells.
//!
//! Evaluations are synchronous and run on one thread, host functions included, so a
//! thread-local meter sees exactly the evaluation's own allocations. Outside an evaluation the
//! allocator costs one thread-local read per call.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::{Cell, RefCell};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use jlens_core::CancelToken;

/// The error code of an evaluation stopped by its memory budget.
pub const MEMORY_CODE: &str = "M1001";

/// A global allocator that charges the allocations made during an evaluation to its budget.
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: mcpflow_expr::Metered<std::alloc::System> =
///     mcpflow_expr::Metered::new(std::alloc::System);
/// ```
pub struct Metered<A>(A);

impl<A> Metered<A> {
    pub const fn new(inner: A) -> Self {
        Metered(inner)
    }
}

static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Whether the process's allocator is [`Metered`], so that evaluations are held to their
/// memory budget (known after its first allocation, which happens before `main`).
pub fn memory_bound_active() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// One evaluation's account.
pub(crate) struct Meter {
    live: Cell<isize>,
    limit: isize,
    token: CancelToken,
    tripped: Cell<bool>,
    /// The evaluation's step budget, if it has one.
    steps: Option<u64>,
    /// The starts of the ranges being built, innermost last (`jsonata::range`).
    range_starts: RefCell<Vec<Option<f64>>>,
}

/// What is left to the evaluation running on this thread.
pub(crate) struct Budget {
    /// Its step budget, if it has one.
    pub steps: Option<u64>,
    /// Its memory budget, and what is left of it.
    pub bytes: usize,
    pub bytes_left: usize,
}

/// The budget of the evaluation running on this thread; `None` outside one.
pub(crate) fn budget() -> Option<Budget> {
    with_meter(|meter| Budget {
        steps: meter.steps,
        bytes: meter.limit.max(0) as usize,
        bytes_left: (meter.limit - meter.live.get()).max(0) as usize,
    })
}

/// Notes where a range starts (`None`: not a bound jlens builds from), until its end is known.
pub(crate) fn note_range_start(start: Option<f64>) {
    with_meter(|meter| meter.range_starts.borrow_mut().push(start));
}

/// The start of the innermost range being built, once its end is known.
pub(crate) fn take_range_start() -> Option<f64> {
    with_meter(|meter| meter.range_starts.borrow_mut().pop().flatten()).flatten()
}

fn with_meter<R>(f: impl FnOnce(&Meter) -> R) -> Option<R> {
    let meter = CURRENT.try_with(Cell::get).ok()?;
    // SAFETY: as in `charge`: the pointer is to a live meter of this thread's evaluation.
    (!meter.is_null()).then(|| f(unsafe { &*meter }))
}

thread_local! {
    /// The meter of the evaluation running on this thread; null outside one. Const-initialised
    /// and without a destructor, so reading it allocates nothing (the allocator reads it).
    static CURRENT: Cell<*const Meter> = const { Cell::new(ptr::null()) };
}

#[inline]
fn charge(bytes: isize) {
    let _ = CURRENT.try_with(|current| {
        let meter = current.get();
        if meter.is_null() {
            return;
        }
        // SAFETY: `metered` publishes a pointer to a meter on its own stack frame and
        // withdraws it before that frame ends (also on unwind); only this thread reads it.
        let meter = unsafe { &*meter };
        let live = meter.live.get() + bytes;
        meter.live.set(live);
        if live > meter.limit && !meter.tripped.get() {
            meter.tripped.set(true);
            meter.token.cancel();
        }
    });
}

// SAFETY: every method forwards to the inner allocator with the same arguments; the meter only
// counts.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Metered<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_installed();
        charge(layout.size() as isize);
        // SAFETY: forwarded as received.
        unsafe { self.0.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        charge(layout.size() as isize);
        // SAFETY: forwarded as received.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        charge(-(layout.size() as isize));
        // SAFETY: forwarded as received.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        charge(new_size as isize - layout.size() as isize);
        // SAFETY: forwarded as received.
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}

#[inline]
fn note_installed() {
    if !INSTALLED.load(Ordering::Relaxed) {
        INSTALLED.store(true, Ordering::Relaxed);
    }
}

thread_local! {
    /// A token per thread, replaced only once an evaluation has cancelled it (a cancelled token
    /// cannot be reset), so a cheap evaluation allocates no token of its own.
    static TOKEN: RefCell<CancelToken> = RefCell::new(CancelToken::new());
}

/// Runs `f` (one evaluation) with its allocations charged to a budget of `limit` bytes.
/// `steps` is its step budget, if it has one. `f` gets the token to hand jlens; the result
/// says whether the budget ran out.
pub(crate) fn metered<R>(
    limit: usize,
    steps: Option<u64>,
    f: impl FnOnce(&CancelToken) -> R,
) -> (R, bool) {
    let token = TOKEN.with(|t| t.borrow().clone());
    let meter = Meter {
        live: Cell::new(0),
        limit: isize::try_from(limit).unwrap_or(isize::MAX),
        token,
        tripped: Cell::new(false),
        steps,
        range_starts: RefCell::new(Vec::new()),
    };
    struct Restore(*const Meter);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }
    let previous = CURRENT.with(|c| c.replace(&meter));
    let restore = Restore(previous);
    let out = f(&meter.token);
    drop(restore);
    let tripped = meter.tripped.get();
    if tripped || meter.token.is_cancelled() {
        TOKEN.with(|t| *t.borrow_mut() = CancelToken::new());
    }
    (out, tripped)
}
