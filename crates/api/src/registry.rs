//! [`Registry`]: the live runs of a server (whoever started them) and their event logs.
//!
//! A run is registered when it starts (the engine's [`Observe`] hook): its id, tool, start
//! time and [`Control`]. Nothing more happens unless someone watches: the run's events are
//! recorded (serialised once, kept in a bounded log, fanned out to its watchers) only from the
//! moment it is watched, if it was started through this API, or if it started while someone
//! watched all runs. Until then it has no event channel of ours (the engine builds no event
//! for it); a late watcher attaches one through its `Control`, which the engine reads with one
//! atomic load per event it could emit.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mcpflow_engine::{Control, Event, Observe, Record, Run, RunStatus, Started};
use serde_json::{Value as Json, json};
use tokio::sync::broadcast;

/// The frames a watcher missed and, unless the run ended, a subscription to what follows.
pub type CatchUp = (Vec<Arc<Frame>>, Option<broadcast::Receiver<Arc<Frame>>>);
/// Events a run's channel holds for its recorder (the engine's side).
const RUN_CHANNEL: usize = 1024;
/// Events a watcher's channel holds; one that falls further behind catches up from the log.
const WATCHER_BUFFER: usize = 256;
/// Events of one run kept for late joiners and for watchers catching up, at most this many
/// and this many bytes; older ones are dropped. A watcher that falls behind what is kept is
/// dropped with an end event: this log is the most a watcher can cost, however slow it is.
pub const LOG_LIMIT: usize = 10_000;
pub const LOG_BYTES: usize = 16 << 20;
/// Ended runs kept in memory (those that were watched or started here), newest last.
const KEEP_ENDED: usize = 64;

/// One event as watchers receive it: serialised once, shared by every watcher.
#[derive(Debug)]
pub struct Frame {
    pub seq: u64,
    pub name: &'static str,
    pub data: String,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Live runs and the runs kept after their end.
pub struct Registry {
    live: Mutex<HashMap<Arc<str>, Arc<LiveRun>>>,
    ended: Mutex<VecDeque<Arc<LiveRun>>>,
    /// Channels of runs this API is starting: such a run is recorded from its first event.
    starting: Mutex<Vec<broadcast::Sender<Event>>>,
    /// Every recorded event of every run, for the watchers of all runs.
    all: broadcast::Sender<Arc<Frame>>,
    next_seq: AtomicU64,
}

/// A run as the registry knows it.
pub struct LiveRun {
    pub id: Arc<str>,
    pub tool: Arc<str>,
    /// Milliseconds since the epoch.
    pub started_at: i64,
    pub control: Control,
    /// The run's event channel: its starter's, or one attached when recording began.
    events: Mutex<Option<broadcast::Sender<Event>>>,
    /// Told when the run ends, so a recorder attached after its last event stops too.
    over: tokio::sync::Notify,
    recording: AtomicBool,
    /// The run's events this registry has handled (compared with [`Control::emitted`]), and
    /// told on each: a reader waits on it so the history it shows is never behind the
    /// pause it sees in the control.
    handled: AtomicU64,
    progress: tokio::sync::Notify,
    log: Mutex<Log>,
    /// Recorded events, to this run's watchers; made when recording begins (a run nobody
    /// watches allocates no buffer).
    out: std::sync::OnceLock<broadcast::Sender<Arc<Frame>>>,
    end: Mutex<Option<Ended>>,
}

/// What ended: its status and, for a run kept in memory, the run itself.
pub struct Ended {
    pub status: RunStatus,
    pub at: i64,
    pub run: Run,
}

#[derive(Default)]
struct Log {
    frames: VecDeque<Arc<Frame>>,
    /// The newest frame dropped from the front (the log is bounded).
    dropped_upto: u64,
    bytes: usize,
    /// The records of the nodes that finished since recording began, in the order they did.
    pub records: Vec<Record>,
    /// Whether recording began with the run (the records are then its whole history so far).
    from_start: bool,
    done: bool,
}

/// What a watcher of one run gets: what was recorded, then what follows.
pub struct Watch {
    pub replay: Vec<Arc<Frame>>,
    pub follow: Option<broadcast::Receiver<Arc<Frame>>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            live: Mutex::new(HashMap::new()),
            ended: Mutex::new(VecDeque::new()),
            starting: Mutex::new(Vec::new()),
            all: broadcast::channel(RUN_CHANNEL).0,
            next_seq: AtomicU64::new(1),
        }
    }
}

impl Registry {
    pub fn new() -> Arc<Registry> {
        Arc::new(Registry::default())
    }

    /// A channel for a run this API starts: the run is recorded from its first event.
    pub fn starting(&self) -> broadcast::Sender<Event> {
        let tx = broadcast::channel(RUN_CHANNEL).0;
        lock(&self.starting).push(tx.clone());
        tx
    }

    /// Forgets a channel from [`Registry::starting`] whose run never started.
    pub fn not_started(&self, tx: &broadcast::Sender<Event>) {
        lock(&self.starting).retain(|t| !t.same_channel(tx));
    }

    /// The run with this id, live or kept after its end.
    pub fn get(&self, id: &str) -> Option<Arc<LiveRun>> {
        if let Some(r) = lock(&self.live).get(id) {
            return Some(r.clone());
        }
        lock(&self.ended).iter().find(|r| &*r.id == id).cloned()
    }

    /// Live runs, then those kept after their end, newest first.
    pub fn runs(&self) -> Vec<Arc<LiveRun>> {
        let mut runs: Vec<Arc<LiveRun>> = lock(&self.live).values().cloned().collect();
        // A run that is ending is briefly in both.
        let ended: Vec<Arc<LiveRun>> = lock(&self.ended)
            .iter()
            .filter(|r| !runs.iter().any(|l| Arc::ptr_eq(l, r)))
            .cloned()
            .collect();
        runs.extend(ended);
        runs.sort_by(|a, b| b.started_at.cmp(&a.started_at).then(b.id.cmp(&a.id)));
        runs
    }

    /// Watches one run: its recorded events, then the rest as they happen. Recording starts
    /// now if nobody watched it before (the replay then says that earlier events were missed).
    pub fn watch(self: &Arc<Self>, run: &Arc<LiveRun>) -> Watch {
        self.record(run, false);
        let log = lock(&run.log);
        let replay = log.frames.iter().cloned().collect();
        let follow = (!log.done).then(|| run.out().subscribe());
        Watch { replay, follow }
    }

    /// Watches every run: the live ones as a first frame, then every event of every run.
    pub fn watch_all(self: &Arc<Self>) -> (Arc<Frame>, broadcast::Receiver<Arc<Frame>>) {
        let rx = self.all.subscribe();
        let live: Vec<Arc<LiveRun>> = lock(&self.live).values().cloned().collect();
        for run in &live {
            self.record(run, false);
        }
        let runs: Vec<Json> = live.iter().map(|r| r.summary()).collect();
        let frame = self.frame("live", json!({"event": "live", "runs": runs}));
        (frame, rx)
    }

    fn frame(&self, name: &'static str, data: Json) -> Arc<Frame> {
        Arc::new(Frame {
            seq: self.next_seq.fetch_add(1, Ordering::Relaxed),
            name,
            data: data.to_string(),
        })
    }

    /// Starts recording `run`'s events, once: a task reads its channel, serialises each event
    /// once, appends it to the bounded log and hands it to the run's and all runs' watchers.
    fn record(self: &Arc<Self>, run: &Arc<LiveRun>, from_start: bool) {
        if run.recording.swap(true, Ordering::AcqRel) {
            return;
        }
        let tx = lock(&run.events)
            .get_or_insert_with(|| run.control.attach_events(broadcast::channel(RUN_CHANNEL).0))
            .clone();
        let mut rx = tx.subscribe();
        drop(tx);
        // Events sent before the subscription never reach this recorder: they count as handled.
        run.handled.store(run.control.emitted(), Ordering::Release);
        {
            let mut log = lock(&run.log);
            log.from_start = from_start;
            if lock(&run.end).is_some() {
                log.done = true;
                return;
            }
            if !from_start {
                let note = json!({
                    "event": "joined",
                    "runId": &*run.id,
                    "tool": &*run.tool,
                    "message": "nobody watched this run before now: the events before this one \
                                were not recorded (GET /api/runs/{id} has its history)",
                    "debug": run.control.state(),
                });
                let frame = self.frame("joined", note);
                log.frames.push_back(frame.clone());
                let _ = run.out().send(frame);
            }
        }
        let registry = self.clone();
        let run = run.clone();
        tokio::spawn(async move {
            let mut ended = false;
            loop {
                let received = if ended {
                    // The run has ended: what is still queued, then stop.
                    match rx.try_recv() {
                        Ok(e) => Ok(e),
                        Err(broadcast::error::TryRecvError::Lagged(n)) => {
                            Err(broadcast::error::RecvError::Lagged(n))
                        }
                        Err(_) => break,
                    }
                } else {
                    tokio::select! {
                        biased;
                        r = rx.recv() => r,
                        () = run.over.notified() => {
                            ended = true;
                            continue;
                        }
                    }
                };
                match received {
                    Ok(event) => {
                        let last = matches!(event, Event::RunFinished { .. });
                        registry.publish(&run, event);
                        run.handled_more(1);
                        if last {
                            break;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        let data = json!({"event": "gap", "runId": &*run.id, "missed": missed,
                            "message": "the run outpaced its recorder: these events were lost"});
                        let frame = registry.frame("gap", data);
                        registry.push(&run, frame);
                        run.handled_more(missed);
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
            lock(&run.log).done = true;
            run.progress.notify_waiters();
            // Closes the run's watchers' streams once they have read what is left.
            let _ = run.out().send(registry.frame(
                "end",
                json!({"event": "end", "runId": &*run.id, "reason": "the run ended"}),
            ));
        });
    }

    fn publish(&self, run: &LiveRun, mut event: Event) {
        // A live run's records are numbered in the order they finished: a branch's or an
        // item's records only get their place in the history when their node ends, and
        // concurrent items would otherwise share numbers. (For a recording that did not start
        // with the run, the engine's numbering is kept.)
        {
            let log = lock(&run.log);
            if log.from_start {
                let next = log.records.len();
                match &mut event {
                    Event::NodeFinished { record } => record.index = next,
                    Event::NodeStarted { index, .. } | Event::Paused { index, .. } => *index = next,
                    _ => {}
                }
            }
        }
        let name = event_name(&event);
        let mut data = serde_json::to_value(&event).unwrap_or(Json::Null);
        if let Json::Object(map) = &mut data {
            map.insert("runId".into(), Json::from(&*run.id));
        }
        let frame = self.frame(name, data);
        if let Event::NodeFinished { record } = event {
            lock(&run.log).records.push(*record);
        }
        self.push(run, frame);
    }

    fn push(&self, run: &LiveRun, frame: Arc<Frame>) {
        {
            let mut log = lock(&run.log);
            log.bytes += frame.data.len();
            log.frames.push_back(frame.clone());
            while log.frames.len() > LOG_LIMIT || log.bytes > LOG_BYTES {
                let Some(old) = log.frames.pop_front() else {
                    break;
                };
                log.bytes -= old.data.len();
                log.dropped_upto = old.seq;
            }
            // Under the log's lock: a watcher's snapshot and subscription see each frame once.
            let _ = run.out().send(frame.clone());
        }
        if self.all.receiver_count() > 0 {
            let _ = self.all.send(frame);
        }
    }
}

/// The engine's hook into a [`Registry`].
pub(crate) struct Hook(pub Arc<Registry>);

impl Observe for Hook {
    fn started(&self, run: Started<'_>) -> Option<broadcast::Sender<Event>> {
        let registry = &self.0;
        let ours = run.events.is_some_and(|events| {
            let mut starting = lock(&registry.starting);
            let before = starting.len();
            starting.retain(|t| !t.same_channel(events));
            starting.len() != before
        });
        let from_start = ours || registry.all.receiver_count() > 0;
        // A channel only for a run recorded from its start: any other emits nothing until a
        // watcher attaches one (through its `Control`).
        let given = (from_start && run.events.is_none()).then(|| broadcast::channel(RUN_CHANNEL).0);
        let live = Arc::new(LiveRun {
            id: run.id.clone(),
            tool: run.tool.clone(),
            started_at: now_ms(),
            control: run.control.clone(),
            events: Mutex::new(run.events.cloned().or_else(|| given.clone())),
            over: tokio::sync::Notify::new(),
            recording: AtomicBool::new(false),
            handled: AtomicU64::new(0),
            progress: tokio::sync::Notify::new(),
            log: Mutex::new(Log::default()),
            out: std::sync::OnceLock::new(),
            end: Mutex::new(None),
        });
        // A run that goes on again (a continued session, a restarted resumable run) replaces
        // what was kept of its earlier end: that status (`waiting`) is no longer true.
        lock(&registry.ended).retain(|r| r.id != *run.id);
        lock(&registry.live).insert(run.id.clone(), live.clone());
        if from_start {
            registry.record(&live, true);
        }
        given
    }

    fn ended(&self, run: &Run) {
        let registry = &self.0;
        // Removed from the live runs only once it is among the kept ones (if kept): a reader
        // between the two would find it nowhere (404) though it was only ending.
        let Some(live) = lock(&registry.live).get(&run.id).cloned() else {
            return;
        };
        let keep = live.recording.load(Ordering::Acquire);
        *lock(&live.end) = Some(Ended {
            status: run.status,
            at: now_ms(),
            // Kept whole only for a run someone watched: nobody else pays for the copy.
            run: if keep { run.clone() } else { empty_run(run) },
        });
        live.over.notify_one();
        if keep {
            let mut ended = lock(&registry.ended);
            ended.push_back(live.clone());
            while ended.len() > KEEP_ENDED {
                ended.pop_front();
            }
        }
        let mut runs = lock(&registry.live);
        if runs.get(&run.id).is_some_and(|r| Arc::ptr_eq(r, &live)) {
            runs.remove(&run.id);
        }
    }
}

fn empty_run(run: &Run) -> Run {
    Run {
        id: run.id.clone(),
        tool: run.tool.clone(),
        status: run.status,
        end: mcpflow_engine::RunEnd::Finished(Ok(mcpflow_engine::Value::from_json(Json::Null))),
        history: Default::default(),
    }
}

impl LiveRun {
    fn out(&self) -> &broadcast::Sender<Arc<Frame>> {
        self.out
            .get_or_init(|| broadcast::channel(WATCHER_BUFFER).0)
    }

    fn handled_more(&self, n: u64) {
        self.handled.fetch_add(n, Ordering::AcqRel);
        self.progress.notify_waiters();
    }

    /// Waits (at most `limit`) until every event the run had sent when this was called has
    /// been recorded, so the records read next are not behind the run's control: after a
    /// step, the pause is in the control at once while the record of the step's node is
    /// still on its way through the event channel.
    pub async fn caught_up(&self, limit: std::time::Duration) {
        if !self.recording.load(Ordering::Acquire) {
            return;
        }
        let target = self.control.emitted();
        let _ = tokio::time::timeout(limit, async {
            loop {
                let progress = self.progress.notified();
                tokio::pin!(progress);
                progress.as_mut().enable();
                if self.handled.load(Ordering::Acquire) >= target || lock(&self.log).done {
                    return;
                }
                progress.await;
            }
        })
        .await;
    }

    /// `running`, `paused`, or how it ended.
    pub fn status(&self) -> String {
        if let Some(end) = &*lock(&self.end) {
            return status_name(end.status).to_owned();
        }
        if self.control.is_paused() {
            "paused".to_owned()
        } else {
            "running".to_owned()
        }
    }

    pub fn is_live(&self) -> bool {
        lock(&self.end).is_none()
    }

    pub fn ended_at(&self) -> Option<i64> {
        lock(&self.end).as_ref().map(|e| e.at)
    }

    /// The run as it ended, when it was kept.
    pub fn with_end<T>(&self, f: impl FnOnce(Option<&Ended>) -> T) -> T {
        f(lock(&self.end).as_ref())
    }

    /// The records recorded so far, and whether they are the whole history so far.
    pub fn with_records<T>(&self, f: impl FnOnce(&[Record], bool) -> T) -> T {
        let log = lock(&self.log);
        f(&log.records, log.from_start)
    }

    /// What the log holds after frame `seq` and a subscription to what follows, taken
    /// together (a watcher that fell behind its channel catches up here); `None` when frames
    /// after `seq` were already dropped from the log.
    pub fn resubscribe(&self, seq: u64) -> Option<CatchUp> {
        let log = lock(&self.log);
        if seq < log.dropped_upto {
            return None;
        }
        let frames = log.frames.iter().filter(|f| f.seq > seq).cloned().collect();
        let follow = (!log.done).then(|| self.out().subscribe());
        Some((frames, follow))
    }

    pub fn summary(&self) -> Json {
        json!({
            "id": &*self.id,
            "tool": &*self.tool,
            "status": self.status(),
            "startedAt": self.started_at,
            "endedAt": self.ended_at(),
            "live": self.is_live(),
        })
    }
}

pub fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Waiting => "waiting",
        RunStatus::Succeeded => "succeeded",
        RunStatus::Failed => "failed",
        RunStatus::Stopped => "stopped",
        RunStatus::Cancelled => "cancelled",
    }
}

fn event_name(event: &Event) -> &'static str {
    match event {
        Event::RunStarted { .. } => "runStarted",
        Event::NodeStarted { .. } => "nodeStarted",
        Event::NodeFinished { .. } => "nodeFinished",
        Event::UpstreamProgress { .. } => "upstreamProgress",
        Event::Paused { .. } => "paused",
        Event::Resumed => "resumed",
        Event::RunFinished { .. } => "runFinished",
    }
}

pub fn now_ms() -> i64 {
    mcpflow_store::now_ms()
}
