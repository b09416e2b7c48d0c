//! `mcpflow run` abandons an upstream call when a `failFast` sibling fails, then exits: the
//! upstream must hear `notifications/cancelled` before the process is gone, every time (a
//! remote upstream would otherwise work on for nobody). The fixture records every message it
//! receives (`--record`), written before it acts on one.
mod common;

use common::{cli, stderr, write_config};

const RACE: &str = r#"
version: "1.0"
server: { name: "race", version: "1.0.0" }
mcpServers:
  fx: { command: "{fixture}", args: ["--record", "RECORD"] }
tools:
  - name: race
    nodes:
      - { id: entry, type: entry, next: par }
      - id: par
        type: parallel
        mode: failFast
        branches: { slow: slow, quick: wait }
        next: join
      - { id: slow, type: mcp, server: fx, tool: sleep, args: { ms: 600000 }, next: join }
      - { id: wait, type: mcp, server: fx, tool: sleep, args: { ms: 300 }, next: boom }
      - { id: boom, type: mcp, server: fx, tool: fail, args: { message: "boom" }, next: join }
      - { id: join, type: transform, transform: { expr: '$.par' }, next: exit }
      - { id: exit, type: exit }
"#;

#[test]
fn the_cancel_of_an_abandoned_call_leaves_before_run_exits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let record = dir.path().join("received.jsonl");
    let yaml = RACE.replace("RECORD", record.to_str().expect("a UTF-8 path"));
    let config = write_config(dir.path(), &yaml);
    let config = config.to_str().expect("a UTF-8 path");
    for round in 0..20 {
        let _ = std::fs::remove_file(&record);
        let out = cli(&["run", config, "race"], None);
        assert_eq!(
            out.status.code(),
            Some(1),
            "round {round}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("boom"),
            "round {round}: {}",
            stderr(&out)
        );
        let received = std::fs::read_to_string(&record).expect("the fixture's record");
        let slept = received
            .lines()
            .any(|l| l.contains(r#""name":"sleep""#) && l.contains("600000"));
        assert!(
            slept,
            "round {round}: the long sleep was never sent:\n{received}"
        );
        assert!(
            received.contains("notifications/cancelled"),
            "round {round}: the upstream never heard the cancel; it received:\n{received}"
        );
    }
}
