//! `store:`: the URL alone or with its settings, and what `validate` says of the settings.

mod common;

use common::{ok, one_err};

const TOOL: &str = r#"
version: "1.0"
server: {name: s, version: "1.0.0"}
tools:
  - name: t
    nodes:
      - {id: entry, type: entry, next: exit}
      - {id: exit, type: exit}
"#;

fn with_store(store: &str) -> String {
    format!("{TOOL}store: {store}\n")
}

#[test]
fn the_run_lease_is_thirty_seconds_unless_the_config_says_otherwise() {
    let url = ok(&with_store("sqlite://state.db"));
    assert_eq!(url.config.store.expect("store").lease_seconds(), 30);
    let settings = ok(&with_store("{url: sqlite://state.db}"));
    assert_eq!(settings.config.store.expect("store").lease_seconds(), 30);
    let short = ok(&with_store("{url: sqlite://state.db, leaseSeconds: 2}"));
    assert_eq!(short.config.store.expect("store").lease_seconds(), 2);
}

#[test]
fn a_lease_a_live_process_could_not_keep_is_refused() {
    for (value, bound) in [("1", "2"), ("0", "2"), ("3601", "3600")] {
        let e = one_err(&with_store(&format!("{{leaseSeconds: {value}}}")));
        assert_eq!(e.pointer, "/store/leaseSeconds", "{e}");
        assert!(e.message.contains(bound), "{value}: {e}");
    }
    let e = one_err(&with_store("{leaseSeconds: 2.5}"));
    assert_eq!(e.pointer, "/store/leaseSeconds", "{e}");
}
