//! The global allocator: mimalloc, asked through its plain entry points whenever a layout
//! allows.
//!
//! The `mimalloc` crate's allocator asks `mi_malloc_aligned` for every layout. That entry point
//! takes a slower, generic path for any block over 1 KB and re-checks the alignment of every
//! small one; callgrind put ~7 k instructions per served HTTP call in it. Every mimalloc block
//! is aligned to a word at least (its smallest size classes are whole words), so a layout
//! aligned to a word or less can take `mi_malloc`'s fast path; larger alignments (tokio's
//! cache-padded task cells) still go to the aligned entry points.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The alignment every mimalloc block has whatever its size.
const WORD: usize = std::mem::size_of::<usize>();

pub struct Mimalloc;

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free` takes a block from
// any of its entry points); a layout is given a plain block only when its alignment is at most
// a word, which every mimalloc block has.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: FFI calls with the layout's own size and alignment.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, hence from mimalloc.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator; the block keeps `layout`'s alignment.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size class a word-aligned layout can land in, and the aligned path, give blocks
    /// aligned as asked, writable to their end, and survive growing and shrinking.
    #[test]
    fn blocks_are_aligned_as_asked() {
        let a = Mimalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 128, 4096] {
            for size in (1..=64).chain([100, 1000, 1024, 1025, 5000, 70_000, 1 << 21]) {
                let layout = Layout::from_size_align(size, align).expect("a valid layout");
                // SAFETY: a non-zero size; every block is freed with its layout below.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(
                        !p.is_null() && (p as usize).is_multiple_of(align),
                        "{size} {align}"
                    );
                    p.write_bytes(0xa5, size);
                    let grown = a.realloc(p, layout, size * 3);
                    assert!(
                        (grown as usize).is_multiple_of(align),
                        "grown {size} {align}"
                    );
                    assert_eq!(*grown.add(size - 1), 0xa5);
                    let grown_layout = Layout::from_size_align(size * 3, align).expect("valid");
                    a.dealloc(grown, grown_layout);
                    let z = a.alloc_zeroed(layout);
                    assert!((z as usize).is_multiple_of(align));
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
