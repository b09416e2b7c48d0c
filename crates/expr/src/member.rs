//! A field of a JSON object, looked up without hashing when the object is small.
//!
//! serde_json's map (an `IndexMap` with std's SipHash, for `preserve_order`) hashes every key
//! it is asked for: about a hundred instructions, more than comparing the few keys most
//! objects in a graph have (`{"counter": …, "sum": …}`). On `loop_example` these lookups were
//! ~11 % of a transform + switch node's instructions.

use serde_json::{Map, Value as Json};

/// Up to this many fields, a scan; above, the map's own hashed lookup. Comparing a key costs
/// a length check and, on a match of lengths, a short memcmp.
const SCAN_UP_TO: usize = 8;

/// `fields[name]`, as `Map::get` answers it.
pub(crate) fn member<'a>(fields: &'a Map<String, Json>, name: &str) -> Option<&'a Json> {
    if fields.len() <= SCAN_UP_TO {
        fields
            .iter()
            .find_map(|(key, value)| (key == name).then_some(value))
    } else {
        fields.get(name)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn answers_as_the_map_does_small_and_large() {
        for size in [0, 1, SCAN_UP_TO, SCAN_UP_TO + 1, 40] {
            let mut fields = Map::new();
            for i in 0..size {
                fields.insert(format!("k{i}"), json!(i));
            }
            for i in 0..size + 2 {
                let name = format!("k{i}");
                assert_eq!(
                    member(&fields, &name),
                    fields.get(&name),
                    "{name} of {size}"
                );
            }
            assert_eq!(member(&fields, ""), None);
            assert_eq!(member(&fields, "k"), None);
        }
    }
}
