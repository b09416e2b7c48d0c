//! `@modelcontextprotocol/server-everything` as a real remote upstream: started through npx in
//! `streamableHttp` or `sse` mode on a port of our choosing, killed (with its `node` child) when
//! dropped. Shared by this crate's tests and the `mcpflow` binary's (`#[path]` include).
//!
//! `scripts/test` warms npx's cache with the same pinned version, so starting does not download.

#![allow(
    dead_code,
    reason = "each test file uses a different part of this module"
)]

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Pinned: its CLI (`streamableHttp` / `sse` argument, `PORT` variable) and tools (`echo`,
/// `get-sum`) are what the tests rely on. Keep in step with `scripts/test`.
pub const PACKAGE: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// Generous: the first start on a cold machine installs the package.
const START_LIMIT: Duration = Duration::from_secs(180);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    StreamableHttp,
    Sse,
}

pub struct Everything {
    child: Option<Child>,
    pub port: u16,
    pub mode: Mode,
    log: PathBuf,
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind an ephemeral port");
    listener.local_addr().expect("a local address").port()
}

impl Everything {
    pub fn start(mode: Mode) -> Everything {
        Everything::start_on(mode, free_port())
    }

    /// Starts the server on `port` and waits until it accepts connections.
    pub fn start_on(mode: Mode, port: u16) -> Everything {
        let log = std::env::temp_dir().join(format!("mcpflow-everything-{port}.log"));
        let log_file = std::fs::File::create(&log).expect("create the server's log file");
        let arg = match mode {
            Mode::StreamableHttp => "streamableHttp",
            Mode::Sse => "sse",
        };
        let mut command = Command::new("npx");
        command
            .args(["-y", PACKAGE, arg])
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("clone the log file"))
            .stderr(log_file);
        // Its own group, so that killing it kills the `node` that npx starts too.
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        let child = command.spawn().unwrap_or_else(|e| {
            panic!("cannot run npx ({e}): node and npm are needed; scripts/test installs {PACKAGE}")
        });
        let mut server = Everything {
            child: Some(child),
            port,
            mode,
            log,
        };
        server.wait_until_listening();
        server
    }

    fn wait_until_listening(&mut self) {
        let started = Instant::now();
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!(
                    "{PACKAGE} exited ({status}) before listening on port {}; its output:\n{}\n\
                     (scripts/test warms npx's cache with this package)",
                    self.port,
                    self.output()
                );
            }
            assert!(
                started.elapsed() < START_LIMIT,
                "{PACKAGE} did not listen on port {} in time; its output:\n{}",
                self.port,
                self.output()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn url(&self) -> String {
        match self.mode {
            Mode::StreamableHttp => format!("http://127.0.0.1:{}/mcp", self.port),
            Mode::Sse => format!("http://127.0.0.1:{}/sse", self.port),
        }
    }

    /// `type` of the config entry that reaches this server.
    pub fn kind(&self) -> &'static str {
        match self.mode {
            Mode::StreamableHttp => "streamableHttp",
            Mode::Sse => "sse",
        }
    }

    /// Kills the server (and npx's `node`) and waits until the port is closed.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // The group npx leads (see `start_on`); never a group id of 0 or 1.
        #[cfg(unix)]
        if let Ok(pgid) = libc::pid_t::try_from(child.id())
            && pgid > 1
        {
            // SAFETY: killpg has no memory-safety preconditions.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let started = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            && started.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        self.stop();
    }
}
