//! A stdio upstream's child process: spawned in its own process group, watched for exit, and
//! killed with everything it started when dropped.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use indexmap::IndexMap;
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio_util::sync::CancellationToken;

use crate::stderr::{self, StderrTail};

/// How long to wait for the last stderr lines once a child is gone: they explain the crash.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// What to run for a stdio upstream, resolved against the config's directory.
#[derive(Debug, Clone)]
pub(crate) struct CommandSpec {
    pub program: OsString,
    pub args: Vec<String>,
    pub env: IndexMap<String, String>,
    pub cwd: Option<PathBuf>,
    /// `program args…` for messages.
    pub display: String,
}

/// A running (or exited) child.
pub(crate) struct ChildProcess {
    pid: Option<u32>,
    status: Arc<OnceLock<ExitStatus>>,
    exited: CancellationToken,
    /// Asks the waiter task to kill the child where process groups are not available.
    kill: CancellationToken,
    pub stderr: Arc<StderrTail>,
}

pub(crate) struct Spawned {
    pub process: ChildProcess,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
}

/// Starts the child with piped stdio. Its stderr is read into `stderr` at once.
pub(crate) fn spawn(
    server: &Arc<str>,
    spec: &CommandSpec,
    stderr: Arc<StderrTail>,
) -> std::io::Result<Spawned> {
    if let Some(cwd) = &spec.cwd
        && !cwd.is_dir()
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("working directory `{}` does not exist", cwd.display()),
        ));
    }
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // The last line of defence: tokio kills the direct child if everything else is skipped.
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    // A group of its own lets us kill what the child starts too (`npx` runs `node`), and keeps
    // a Ctrl-C meant for mcpflow from reaching the upstream before we shut it down.
    #[cfg(unix)]
    command.process_group(0);

    let mut child = command.spawn()?;
    let (Some(stdin), Some(stdout), Some(child_stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the child's stdio was not piped"));
    };
    stderr::spawn_reader(server.clone(), child_stderr, stderr.clone());

    let pid = child.id();
    let status = Arc::new(OnceLock::new());
    let exited = CancellationToken::new();
    let kill = CancellationToken::new();
    {
        let (status, exited, kill, server) =
            (status.clone(), exited.clone(), kill.clone(), server.clone());
        tokio::spawn(async move {
            let result = tokio::select! {
                result = child.wait() => result,
                () = kill.cancelled() => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            match result {
                Ok(exit) => {
                    tracing::debug!(server = %server, pid, status = %describe(exit), "upstream process ended");
                    let _ = status.set(exit);
                }
                Err(error) => {
                    tracing::warn!(server = %server, pid, %error, "cannot wait for upstream process")
                }
            }
            exited.cancel();
        });
    }
    Ok(Spawned {
        process: ChildProcess {
            pid,
            status,
            exited,
            kill,
            stderr,
        },
        stdin,
        stdout,
    })
}

impl ChildProcess {
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    pub fn has_exited(&self) -> bool {
        self.exited.is_cancelled()
    }

    /// Resolves once the child has exited.
    pub async fn exited(&self) {
        self.exited.cancelled().await;
    }

    /// Waits briefly for the child to finish dying and for its last stderr lines, then says
    /// how it ended, e.g. `exited with code 3`.
    pub async fn death_report(&self, limit: Duration) -> (String, String) {
        let _ = tokio::time::timeout(limit, self.exited()).await;
        self.stderr.drained(STDERR_DRAIN).await;
        let status = match self.status.get() {
            Some(status) => describe(*status),
            None => "closed its stdout".to_string(),
        };
        (status, self.stderr.snapshot())
    }

    /// The end of the MCP stdio shutdown sequence, once stdin is closed: wait for the child to
    /// exit, then SIGTERM, then SIGKILL.
    pub async fn terminate(&self, grace: Duration) {
        if tokio::time::timeout(grace, self.exited()).await.is_ok() {
            return;
        }
        #[cfg(unix)]
        {
            self.signal_group(libc::SIGTERM);
            if tokio::time::timeout(grace, self.exited()).await.is_ok() {
                return;
            }
        }
        self.kill_now();
        let _ = tokio::time::timeout(grace, self.exited()).await;
    }

    fn kill_now(&self) {
        #[cfg(unix)]
        self.signal_group(libc::SIGKILL);
        self.kill.cancel();
    }

    /// Signals the child's whole process group; a grandchild may outlive the child itself.
    #[cfg(unix)]
    fn signal_group(&self, signal: libc::c_int) {
        let Some(pgid) = self.pid.and_then(|pid| libc::pid_t::try_from(pid).ok()) else {
            return;
        };
        // SAFETY: killpg has no memory-safety preconditions; a stale group id only yields ESRCH.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // Synchronous, so it works even while the runtime is shutting down.
        self.kill_now();
    }
}

/// `exited with code 3`, `was killed by signal 9 (SIGKILL)`.
pub(crate) fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with code {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let name = match signal {
                libc::SIGKILL => " (SIGKILL)",
                libc::SIGTERM => " (SIGTERM)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGABRT => " (SIGABRT)",
                libc::SIGINT => " (SIGINT)",
                _ => "",
            };
            return format!("was killed by signal {signal}{name}");
        }
    }
    format!("ended ({status})")
}
