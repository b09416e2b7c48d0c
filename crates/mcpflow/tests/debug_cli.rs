//! `mcpflow debug` in a terminal (tmux): paused at the start, a conditional breakpoint inside
//! a foreach, print, history, next, quit.
mod http_common;

use std::process::Command;
use std::time::{Duration, Instant};

use http_common::{config, mcpflow};

struct Tmux(String);

impl Tmux {
    fn keys(&self, keys: &str) {
        let ok = Command::new("tmux")
            .args(["send-keys", "-t", &self.0, keys, "Enter"])
            .status()
            .expect("tmux runs");
        assert!(ok.success());
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-J", "-S", "-200", "-t", &self.0])
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits (10 s at most) until the screen shows `text` `n` times.
    fn wait_for(&self, text: &str, n: usize) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.matches(text).count() >= n {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "`{text}` did not show; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .status();
    }
}

#[test]
fn a_terminal_debug_session() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let name = format!("mcpflow-debug-{}", std::process::id());
    let command = format!(
        "{} debug {} each --args '{{\"list\": [1, 2]}}' --break 'dbl:$.fe.index = 1'; sleep 30",
        mcpflow().display(),
        config("run_api.yaml").display()
    );
    let ok = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            "200",
            "-y",
            "60",
            &command,
        ])
        .status()
        .expect("tmux runs");
    assert!(ok.success());
    let t = Tmux(name);
    t.wait_for("paused before entry (pause)", 1);
    t.keys("c");
    t.wait_for("paused before dbl (breakpoint) in item 1", 1);
    t.keys("p $.fe");
    t.wait_for(r#"{"item":2,"index":1}"#, 1);
    t.keys("history");
    let screen = t.wait_for("#1 dbl (transform)", 1);
    assert!(screen.contains("#0 entry (entry)"), "{screen}");
    t.keys("p $.fe.item +");
    t.wait_for("not valid JSONata", 1);
    t.keys("n");
    t.wait_for("paused before exit (step)", 1);
    t.keys("q");
    t.wait_for(r#"status: "stopped""#, 1);
}
