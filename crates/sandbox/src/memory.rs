//! The memory cap, enforced by the allocator QuickJS gets.
//!
//! `Runtime::set_memory_limit` alone caps the heap, but when the cap is hit while memory is
//! nearly full QuickJS cannot allocate its "out of memory" error either and throws `null`
//! instead, which is indistinguishable from a script's own `throw null`. An allocator that
//! enforces the cap itself knows exactly when it refused, so the error is always reported as
//! what it is. Where no `malloc_usable_size` is available, QuickJS's own limit is used and only
//! the `InternalError: out of memory` it throws is recognised.

use std::cell::Cell;
use std::rc::Rc;

use rquickjs::Runtime;

/// Bytes held by one runtime, and whether an allocation has been refused since the last reset.
///
/// The same budget also covers what the host builds from the call's result (and from thrown
/// values and log arguments): a script cannot make the host allocate more than its own cap,
/// whatever the shape of what it returns.
#[derive(Debug)]
pub(crate) struct Meter {
    limit: usize,
    used: Cell<usize>,
    /// Bytes the host has built out of this call's values (an estimate that never undercounts).
    host: Cell<usize>,
    refused: Cell<bool>,
    /// False when the platform allocator cannot be metered and QuickJS enforces the limit.
    exact: bool,
}

impl Meter {
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Whether an allocation was refused for the cap: `None` where that cannot be known.
    pub(crate) fn refused(&self) -> Option<bool> {
        self.exact.then(|| self.refused.get())
    }

    /// Heap bytes the runtime holds now.
    pub(crate) fn used(&self) -> usize {
        self.used.get()
    }

    /// Starts a call on a runtime that served others: what the host built for them is gone, and
    /// a refusal then is not this call's.
    pub(crate) fn begin_call(&self) {
        self.host.set(0);
        self.refused.set(false);
    }

    fn admit(&self, more: usize) -> bool {
        let held = self.used.get().saturating_add(self.host.get());
        if held.saturating_add(more) > self.limit {
            self.refused.set(true);
            return false;
        }
        true
    }

    /// Charges `bytes` the host is about to allocate for this call; false (and nothing
    /// charged) when they do not fit in what the script's heap leaves of the cap.
    pub(crate) fn charge_host(&self, bytes: usize) -> bool {
        if !self.admit(bytes) {
            return false;
        }
        self.host.set(self.host.get().saturating_add(bytes));
        true
    }
}

/// A runtime whose heap is capped at `limit` bytes, with the meter that enforces it.
pub(crate) fn capped_runtime(limit: usize) -> rquickjs::Result<(Runtime, Rc<Meter>)> {
    capped::runtime(limit)
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
mod capped {
    use std::cell::Cell;
    use std::ffi::c_void;
    use std::ptr;
    use std::rc::Rc;

    use rquickjs::Runtime;
    use rquickjs::allocator::Allocator;

    use super::Meter;

    pub(super) fn runtime(limit: usize) -> rquickjs::Result<(Runtime, Rc<Meter>)> {
        let meter = Rc::new(Meter {
            limit,
            used: Cell::new(0),
            host: Cell::new(0),
            refused: Cell::new(false),
            exact: true,
        });
        let runtime = Runtime::new_with_alloc(CappedMalloc {
            meter: Rc::clone(&meter),
        })?;
        Ok((runtime, meter))
    }

    /// The C allocator (what QuickJS uses by default), metered. None of these functions may
    /// panic: QuickJS calls them through `extern "C"` frames.
    struct CappedMalloc {
        meter: Rc<Meter>,
    }

    fn usable(ptr: *mut u8) -> usize {
        if ptr.is_null() {
            return 0;
        }
        #[cfg(target_os = "linux")]
        // SAFETY: `ptr` is a live allocation from this process's `malloc`.
        let size = unsafe { libc::malloc_usable_size(ptr.cast::<c_void>()) };
        #[cfg(target_os = "macos")]
        // SAFETY: `ptr` is a live allocation from this process's `malloc`.
        let size = unsafe { libc::malloc_size(ptr.cast::<c_void>().cast_const()) };
        size
    }

    impl CappedMalloc {
        fn add(&self, ptr: *mut u8) {
            let used = &self.meter.used;
            used.set(used.get().saturating_add(usable(ptr)));
        }

        fn sub(&self, bytes: usize) {
            let used = &self.meter.used;
            used.set(used.get().saturating_sub(bytes));
        }
    }

    // SAFETY: every pointer returned comes from the C allocator, which aligns to at least
    // `max_align_t` (16 bytes on the supported targets), and `usable_size` reports that
    // allocator's own idea of the block's size.
    unsafe impl Allocator for CappedMalloc {
        fn alloc(&mut self, size: usize) -> *mut u8 {
            if !self.meter.admit(size) {
                return ptr::null_mut();
            }
            // SAFETY: plain `malloc`; a null result is passed on as allocation failure.
            let ptr = unsafe { libc::malloc(size) }.cast::<u8>();
            self.add(ptr);
            ptr
        }

        fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
            let Some(total) = count.checked_mul(size) else {
                return ptr::null_mut();
            };
            if !self.meter.admit(total) {
                return ptr::null_mut();
            }
            // SAFETY: plain `calloc`; a null result is passed on as allocation failure.
            let ptr = unsafe { libc::calloc(count, size) }.cast::<u8>();
            self.add(ptr);
            ptr
        }

        unsafe fn dealloc(&mut self, ptr: *mut u8) {
            self.sub(usable(ptr));
            // SAFETY: the caller passes a pointer this allocator returned (or null).
            unsafe { libc::free(ptr.cast::<c_void>()) };
        }

        unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
            if ptr.is_null() {
                return self.alloc(new_size);
            }
            if new_size == 0 {
                // SAFETY: as for `dealloc`.
                unsafe { self.dealloc(ptr) };
                return ptr::null_mut();
            }
            let old = usable(ptr);
            if !self.meter.admit(new_size.saturating_sub(old)) {
                return ptr::null_mut();
            }
            // SAFETY: `ptr` came from this allocator; on failure it stays valid and accounted.
            let moved = unsafe { libc::realloc(ptr.cast::<c_void>(), new_size) }.cast::<u8>();
            if !moved.is_null() {
                self.sub(old);
                self.add(moved);
            }
            moved
        }

        unsafe fn usable_size(ptr: *mut u8) -> usize {
            usable(ptr)
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod capped {
    use std::cell::Cell;
    use std::rc::Rc;

    use rquickjs::Runtime;

    use super::Meter;

    pub(super) fn runtime(limit: usize) -> rquickjs::Result<(Runtime, Rc<Meter>)> {
        let runtime = Runtime::new()?;
        runtime.set_memory_limit(limit);
        let meter = Meter {
            limit,
            used: Cell::new(0),
            host: Cell::new(0),
            refused: Cell::new(false),
            exact: false,
        };
        Ok((runtime, Rc::new(meter)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meter_refuses_past_the_limit_and_remembers_it() {
        let meter = Meter {
            limit: 100,
            used: Cell::new(90),
            host: Cell::new(0),
            refused: Cell::new(false),
            exact: true,
        };
        assert!(meter.admit(10));
        assert_eq!(meter.refused(), Some(false));
        assert!(!meter.admit(11));
        assert_eq!(meter.refused(), Some(true));
    }

    #[test]
    fn host_bytes_and_heap_bytes_share_one_cap() {
        let meter = Meter {
            limit: 100,
            used: Cell::new(60),
            host: Cell::new(0),
            refused: Cell::new(false),
            exact: true,
        };
        assert!(meter.charge_host(30));
        assert!(!meter.charge_host(11));
        assert!(!meter.admit(11), "the heap sees what the host took");
        assert!(meter.admit(10));
    }
}
