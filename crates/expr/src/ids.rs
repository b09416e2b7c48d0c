//! The hasher of maps keyed by node id (the context, the history's index by node).
//!
//! Every node looks its id up a few times (the context entry it replaces, the history's list
//! of its runs, the entries and runs its expressions read), and std's SipHash costs about a
//! hundred instructions per id, a large share of a cheap node. Node ids are the config's own
//! (its author's, checked when it is loaded), not input from the network, so the protection
//! SipHash gives against chosen colliding keys buys nothing here.

/// A `BuildHasher` for maps keyed by node id: foldhash's fast hasher (already built for
/// hashbrown), randomly seeded per map.
pub type NodeIds = foldhash::fast::RandomState;

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
