//! The hasher of maps keyed by node id (the context, the history's index by node).
//!
//! Every node looks its id up a few times (the context entry it replaces, the history's list
//! of its runs, the entries and runs its expressions read), and std's SipHash costs about a
//! hundred instructions per id, a large share of a cheap node. Node ids are the config's own
//! (its author's, checked when it is loaded), not input from the network, so the protection
//! SipHash gives against chosen colliding keys buys nothing here; this is the multiply-rotate
//! hash rustc uses for its own maps.

use std::hash::{BuildHasherDefault, Hasher};

/// A `BuildHasher` for maps keyed by node id.
pub type NodeIds = BuildHasherDefault<NodeIdHasher>;

/// See the module documentation.
#[derive(Clone, Copy, Default)]
pub struct NodeIdHasher(u64);

impl NodeIdHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for NodeIdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn ids_that_differ_hash_apart() {
        let ids = NodeIds::default();
        let names = [
            "increment_node",
            "check_condition",
            "entry_sum",
            "exit_sum",
            "a",
            "b",
            "",
        ];
        let hashes: Vec<u64> = names.iter().map(|n| ids.hash_one(n)).collect();
        for (i, a) in hashes.iter().enumerate() {
            for b in &hashes[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // The same id hashes the same, as a `str` or an `Arc<str>`.
        let shared: std::sync::Arc<str> = "increment_node".into();
        assert_eq!(ids.hash_one("increment_node"), ids.hash_one(&*shared));
    }
}
