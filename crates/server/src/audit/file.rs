//! The audit file: JSON lines appended by a thread of its own, so no request waits on a disk.
//! Lines reach it through a bounded queue; each batch the thread finds waiting is one write,
//! so a line is either whole in the file or counted as dropped.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use mcpflow_store::AuditRow;

use super::Drops;

/// Lines waiting for the writer at most: about 2 MB of rows, seconds of a busy server's calls.
const QUEUE: usize = 8192;

enum Msg {
    Line(AuditRow),
    /// Answered once everything sent before it is written.
    Flush(std::sync::mpsc::Sender<()>),
}

pub(super) struct FileSink {
    tx: SyncSender<Msg>,
    reopen: Arc<AtomicBool>,
    pub(super) drops: Arc<Drops>,
}

impl FileSink {
    pub(super) fn open(path: &Path) -> std::io::Result<FileSink> {
        let file = open_append(path)?;
        let (tx, rx) = sync_channel(QUEUE);
        let reopen = Arc::new(AtomicBool::new(false));
        let drops = Arc::new(Drops::new("file"));
        let writer = Writer {
            path: path.to_path_buf(),
            file,
            reopen: reopen.clone(),
            drops: drops.clone(),
        };
        std::thread::Builder::new()
            .name("mcpflow-audit".into())
            .spawn(move || writer.run(rx))?;
        Ok(FileSink { tx, reopen, drops })
    }

    pub(super) fn push(&self, row: AuditRow) {
        match self.tx.try_send(Msg::Line(row)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.drops.add(1, &"the file's queue is full"),
            Err(TrySendError::Disconnected(_)) => self.drops.add(1, &"the file's writer stopped"),
        }
    }

    pub(super) fn reopen(&self) {
        self.reopen.store(true, Ordering::Relaxed);
    }

    pub(super) async fn flush(&self, patience: Duration) {
        let tx = self.tx.clone();
        let waited = tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + patience;
            let (ack, done) = std::sync::mpsc::channel();
            let mut msg = Msg::Flush(ack);
            loop {
                match tx.try_send(msg) {
                    Ok(()) => break,
                    Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                        msg = back;
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => return false,
                }
            }
            done.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .is_ok()
        })
        .await;
        if !matches!(waited, Ok(true)) {
            tracing::warn!("the audit file was not flushed within {patience:?}");
        }
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // Who called what is for the operator's eyes: a new file is readable by its owner only.
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
}

struct Writer {
    path: PathBuf,
    file: File,
    reopen: Arc<AtomicBool>,
    drops: Arc<Drops>,
}

impl Writer {
    /// Until every sender is gone: each wake-up writes all the lines waiting, in one write.
    fn run(mut self, rx: Receiver<Msg>) {
        let mut batch = Vec::with_capacity(64 * 1024);
        let mut acks = Vec::new();
        while let Ok(first) = rx.recv() {
            let mut lines = 0u64;
            let mut next = Some(first);
            while let Some(msg) = next {
                match msg {
                    Msg::Line(row) => {
                        if serde_json::to_writer(&mut batch, &row).is_ok() {
                            batch.push(b'\n');
                            lines += 1;
                        }
                    }
                    Msg::Flush(ack) => acks.push(ack),
                }
                next = match rx.try_recv() {
                    Ok(msg) if batch.len() < 1024 * 1024 => Some(msg),
                    Ok(msg) => {
                        self.write(&batch, lines);
                        batch.clear();
                        lines = 0;
                        Some(msg)
                    }
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => None,
                };
            }
            self.write(&batch, lines);
            batch.clear();
            for ack in acks.drain(..) {
                let _ = ack.send(());
            }
        }
    }

    fn write(&mut self, batch: &[u8], lines: u64) {
        if lines == 0 {
            return;
        }
        if self.reopen.swap(false, Ordering::Relaxed) {
            match open_append(&self.path) {
                Ok(file) => self.file = file,
                Err(e) => tracing::warn!(
                    path = %self.path.display(),
                    "cannot reopen the audit file, writing on to the old one: {e}"
                ),
            }
        }
        if let Err(e) = self.file.write_all(batch) {
            self.drops.add(lines, &e);
        }
    }
}
