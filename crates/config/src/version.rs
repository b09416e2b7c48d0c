//! The version of a loaded config that durable runs are pinned to: `sha256:<hex>` of a
//! canonical form of the config. A waiting run is only continued on the config it started on,
//! so the version must change when what runs changes, and only then: it is computed over the
//! parsed model (serialised with every object's keys sorted) and the text of every `file:`
//! script, not over the file's text, so comments, formatting and key order leave it as it is
//! (issue #22: a comment edit must not strand waiting sessions).

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::{Config, Node};

/// `sha256:<64 hex digits>` of `config` as loaded (with `mcp.json` merged and the `file:`
/// scripts read).
pub fn version(config: &Config) -> String {
    let mut hash = Sha256::new();
    // A model that cannot be serialised would be a bug in the types: hash what can be, so the
    // version is still stable for the same config.
    let model = serde_json::to_value(config).unwrap_or(Value::Null);
    hash.update(canonical(&model).as_bytes());
    for text in script_files(config) {
        // Length-prefixed, so text moved from one script to the next is a different config.
        hash.update((text.len() as u64).to_le_bytes());
        hash.update(text.as_bytes());
    }
    let digest = hash.finalize();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// JSON text of `v` with every object's keys sorted, whatever order they were written in.
fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

/// The texts of every `file:` script the config loaded, in config order.
fn script_files(config: &Config) -> impl Iterator<Item = &str> {
    config
        .tools
        .iter()
        .flat_map(|tool| tool.nodes.iter())
        .filter_map(|node| match node {
            Node::Script(script) => script.loaded.as_ref(),
            _ => None,
        })
        .map(|file| file.text.as_str())
}

#[cfg(test)]
mod tests {
    use super::version;
    use crate::load_str;

    const BASE: &str = r#"
version: "1.0"
server: {name: v, version: "1.0.0"}
tools:
  - name: double
    description: doubles n
    inputSchema: {type: object, properties: {n: {type: number}, m: {type: number}}}
    nodes:
      - {id: entry, type: entry, next: twice}
      - {id: twice, type: transform, transform: {expr: "{\"n\": entry.n * 2}"}, next: exit}
      - {id: exit, type: exit}
"#;

    fn version_of(text: &str) -> String {
        let loaded = load_str(text, "config.yaml").expect("the config loads");
        version(&loaded.config)
    }

    #[test]
    fn comments_formatting_and_key_order_leave_the_version_as_it_is() {
        let base = version_of(BASE);
        assert!(
            base.starts_with("sha256:") && base.len() == 7 + 64,
            "{base}"
        );
        let commented = format!(
            "# the doubling tool\n{}\n# end\n",
            BASE.replace(
                "    description: doubles n",
                "    description: doubles n # what it does",
            )
        );
        assert_eq!(version_of(&commented), base);
        let reformatted = BASE.replace(
            "    inputSchema: {type: object, properties: {n: {type: number}, m: {type: number}}}",
            "    inputSchema:\n      type: object\n      properties:\n        n:\n          type: number\n        m: {type: number}",
        );
        assert_eq!(version_of(&reformatted), base);
        let reordered = BASE
            .replace(
                "{n: {type: number}, m: {type: number}}",
                "{m: {type: number}, n: {type: number}}",
            )
            .replace(
                "  - name: double\n    description: doubles n\n",
                "  - description: doubles n\n    name: double\n",
            );
        assert_eq!(version_of(&reordered), base);
    }

    #[test]
    fn a_changed_expression_is_a_new_version() {
        let changed = BASE.replace("entry.n * 2", "entry.n * 3");
        assert_ne!(version_of(&changed), version_of(BASE));
    }

    #[test]
    fn a_changed_script_file_is_a_new_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("graph.yaml");
        std::fs::write(
            &path,
            r#"
version: "1.0"
server: {name: v, version: "1.0.0"}
tools:
  - name: s
    nodes:
      - {id: entry, type: entry, next: s}
      - {id: s, type: script, file: s.js, next: exit}
      - {id: exit, type: exit}
"#,
        )
        .expect("write the config");
        let version_with = |script: &str| {
            std::fs::write(dir.path().join("s.js"), script).expect("write the script");
            let loaded = crate::load(&path, None).expect("the config loads");
            version(&loaded.config)
        };
        let one = version_with("export default function (x) { return x; }\n");
        assert_eq!(
            one,
            version_with("export default function (x) { return x; }\n")
        );
        assert_ne!(
            one,
            version_with("export default function (x) { return 1; }\n")
        );
    }
}
