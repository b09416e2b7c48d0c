//! The Prometheus series, one registry for the process.
//!
//! Every recording function starts with one atomic load ([`get`]) and returns when metrics
//! are off: no label set is built, nothing allocated. The exposition is OpenMetrics text
//! ([`render`], content type [`CONTENT_TYPE`]), which Prometheus scrapes natively.

use std::borrow::Cow;
use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

static METRICS: OnceLock<Metrics> = OnceLock::new();

/// Turns metrics on for the process (idempotent).
pub fn install() -> &'static Metrics {
    METRICS.get_or_init(Metrics::new)
}

/// The metrics, when they are on.
#[inline]
pub fn get() -> Option<&'static Metrics> {
    METRICS.get()
}

/// The whole exposition, or nothing when metrics are off.
pub fn render() -> Option<String> {
    let metrics = get()?;
    let mut text = String::with_capacity(16 * 1024);
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &metrics.registry);
    Some(text)
}

/// How a request, call or hook ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Answered with a result.
    Ok,
    /// Answered with a tool result whose `isError` is set.
    ToolError,
    /// Answered with a JSON-RPC error, or failed.
    Error,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Error => "error",
        }
    }
}

impl EncodeLabelValue for Outcome {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        std::fmt::Write::write_str(encoder, self.as_str())
    }
}

/// Whose tool a call reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolKind {
    /// A graph tool (or a session companion) of this config.
    Graph,
    /// A tool of a proxied upstream.
    Proxied,
    /// A built-in authoring tool.
    Authoring,
}

impl EncodeLabelValue for ToolKind {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        let text = match self {
            ToolKind::Graph => "graph",
            ToolKind::Proxied => "proxied",
            ToolKind::Authoring => "authoring",
        };
        std::fmt::Write::write_str(encoder, text)
    }
}

/// What a hook did with the traffic it saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookOutcome {
    /// Let it through unchanged.
    Passed,
    /// Rewrote the request or the response.
    Rewrote,
    /// Rejected the request with a message.
    Rejected,
    /// Failed (error, timeout, sandbox limit); the call failed with it when blocking.
    Failed,
}

impl EncodeLabelValue for HookOutcome {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        let text = match self {
            HookOutcome::Passed => "passed",
            HookOutcome::Rewrote => "rewrote",
            HookOutcome::Rejected => "rejected",
            HookOutcome::Failed => "failed",
        };
        std::fmt::Write::write_str(encoder, text)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    method: Cow<'static, str>,
    outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    kind: ToolKind,
    outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct UpstreamCallLabels {
    upstream: String,
    method: Cow<'static, str>,
    outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct UpstreamLabels {
    upstream: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RunLabels {
    tool: String,
    status: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct HookLabels {
    hook: String,
    stage: &'static str,
    outcome: HookOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct TransportLabels {
    transport: &'static str,
}

type Timings<L> = Family<L, Histogram, fn() -> Histogram>;

/// Seconds from 1 ms to about 33 s, doubling: a pass-through call, a graph, a slow upstream.
fn seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// Every series mcpflow exposes.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_seconds: Timings<RequestLabels>,
    tool_seconds: Timings<ToolLabels>,
    upstream_seconds: Timings<UpstreamCallLabels>,
    upstream_up: Family<UpstreamLabels, Gauge>,
    upstream_restarts: Family<UpstreamLabels, Counter>,
    runs: Family<RunLabels, Counter>,
    sessions_waiting: Gauge,
    hooks: Family<HookLabels, Counter>,
    hook_seconds: Timings<HookLabels>,
    sandbox_failures: Family<KindLabels, Counter>,
    http_sessions: Family<TransportLabels, Gauge>,
    config_reloads: Family<OutcomeLabels, Counter>,
    audit_dropped: Family<SinkLabels, Counter>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct SinkLabels {
    sink: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

fn timings<L: Clone + std::hash::Hash + Eq>() -> Timings<L> {
    Family::new_with_constructor(seconds as fn() -> Histogram)
}

impl Metrics {
    fn new() -> Metrics {
        let m = Metrics {
            registry: Registry::default(),
            requests: Family::default(),
            request_seconds: timings(),
            tool_seconds: timings(),
            upstream_seconds: timings(),
            upstream_up: Family::default(),
            upstream_restarts: Family::default(),
            runs: Family::default(),
            sessions_waiting: Gauge::default(),
            hooks: Family::default(),
            hook_seconds: timings(),
            sandbox_failures: Family::default(),
            http_sessions: Family::default(),
            config_reloads: Family::default(),
            audit_dropped: Family::default(),
        };
        let mut r = Registry::with_prefix("mcpflow");
        r.register(
            "requests",
            "MCP requests served, by JSON-RPC method and outcome",
            m.requests.clone(),
        );
        r.register(
            "request_duration_seconds",
            "Time to answer an MCP request, by method and outcome",
            m.request_seconds.clone(),
        );
        r.register(
            "tool_call_duration_seconds",
            "Time to answer a tools/call, by tool, kind (graph, proxied, authoring) and outcome",
            m.tool_seconds.clone(),
        );
        r.register(
            "upstream_request_duration_seconds",
            "Time an upstream took to answer a request, by upstream, method and outcome",
            m.upstream_seconds.clone(),
        );
        r.register(
            "upstream_up",
            "1 while the upstream is connected, 0 when its connection is down",
            m.upstream_up.clone(),
        );
        r.register(
            "upstream_restarts",
            "Connections made to an upstream after its previous one was lost",
            m.upstream_restarts.clone(),
        );
        r.register(
            "runs",
            "Graph runs ended, by tool and status (succeeded, failed, stopped, cancelled, waiting)",
            m.runs.clone(),
        );
        r.register(
            "sessions_waiting",
            "Sessions waiting for their client's input, in the store",
            m.sessions_waiting.clone(),
        );
        r.register(
            "hook_runs",
            "Hook runs, by hook, stage (pre, post) and outcome (passed, rewrote, rejected, failed)",
            m.hooks.clone(),
        );
        r.register(
            "hook_duration_seconds",
            "Time a blocking hook held the traffic, by hook, stage and outcome",
            m.hook_seconds.clone(),
        );
        r.register(
            "sandbox_failures",
            "Scripts and hooks the sandbox stopped or that threw, by kind",
            m.sandbox_failures.clone(),
        );
        r.register(
            "http_sessions_open",
            "Open MCP sessions of the HTTP listener, by transport (streamable, sse)",
            m.http_sessions.clone(),
        );
        r.register(
            "config_reloads",
            "Config reloads, by outcome (applied; refused: the new config did not load, the old one kept serving)",
            m.config_reloads.clone(),
        );
        r.register(
            "audit_dropped",
            "Audit lines not written, by sink (file, store): its queue was full or the write failed",
            m.audit_dropped.clone(),
        );
        Metrics { registry: r, ..m }
    }
}

fn secs(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64()
}

/// A JSON-RPC method as a label: the methods of the spec, anything else `other` (a label set
/// per unknown method name a client sends would grow without bound).
pub fn method_label(method: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "server/discover",
        "subscriptions/listen",
        "tasks/get",
        "tasks/list",
        "tasks/result",
        "tasks/cancel",
    ];
    KNOWN
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("other")
}

/// An MCP request answered.
pub fn request(method: &'static str, outcome: Outcome, elapsed: Duration) {
    let Some(m) = get() else { return };
    let labels = RequestLabels {
        method: Cow::Borrowed(method),
        outcome,
    };
    m.requests.get_or_create(&labels).inc();
    m.request_seconds
        .get_or_create(&labels)
        .observe(secs(elapsed));
}

/// A `tools/call` answered.
pub fn tool_call(tool: &str, kind: ToolKind, outcome: Outcome, elapsed: Duration) {
    let Some(m) = get() else { return };
    let labels = ToolLabels {
        tool: tool.to_owned(),
        kind,
        outcome,
    };
    m.tool_seconds.get_or_create(&labels).observe(secs(elapsed));
}

/// A request answered by an upstream (or failed on the way).
pub fn upstream_request(upstream: &str, method: &'static str, outcome: Outcome, elapsed: Duration) {
    let Some(m) = get() else { return };
    let labels = UpstreamCallLabels {
        upstream: upstream.to_owned(),
        method: Cow::Borrowed(method),
        outcome,
    };
    m.upstream_seconds
        .get_or_create(&labels)
        .observe(secs(elapsed));
}

/// An upstream's connection came up (`restart`: it replaces one that was lost) or went down.
pub fn upstream_connection(upstream: &str, up: bool, restart: bool) {
    let Some(m) = get() else { return };
    let labels = UpstreamLabels {
        upstream: upstream.to_owned(),
    };
    m.upstream_up.get_or_create(&labels).set(i64::from(up));
    if up && restart {
        m.upstream_restarts.get_or_create(&labels).inc();
    }
}

/// A graph run ended: `status` is `succeeded`, `failed`, `waiting` or `cancelled`.
pub fn run_ended(tool: &str, status: &'static str) {
    let Some(m) = get() else { return };
    let labels = RunLabels {
        tool: tool.to_owned(),
        status,
    };
    m.runs.get_or_create(&labels).inc();
}

/// The number of sessions waiting, as the store counts them (set before each scrape).
pub fn sessions_waiting(count: u64) {
    let Some(m) = get() else { return };
    m.sessions_waiting
        .set(i64::try_from(count).unwrap_or(i64::MAX));
}

/// A hook ran at `stage` (`pre` or `post`); `elapsed` is how long the traffic waited for it
/// (nothing for a hook that does not block).
pub fn hook(hook: &str, stage: &'static str, outcome: HookOutcome, elapsed: Option<Duration>) {
    let Some(m) = get() else { return };
    let labels = HookLabels {
        hook: hook.to_owned(),
        stage,
        outcome,
    };
    m.hooks.get_or_create(&labels).inc();
    if let Some(elapsed) = elapsed {
        m.hook_seconds.get_or_create(&labels).observe(secs(elapsed));
    }
}

/// A sandboxed script (a hook or a script node) failed: `kind` is `exception`, `time`,
/// `memory`, `stack`, `unsettled`, `input`, `output` (what it returned could not cross),
/// `busy` (its queue was full), `compile` or `internal`.
pub fn sandbox_failure(kind: &'static str) {
    let Some(m) = get() else { return };
    m.sandbox_failures.get_or_create(&KindLabels { kind }).inc();
}

/// A config reload was `applied` or `refused`.
pub fn config_reload(outcome: &'static str) {
    let Some(m) = get() else { return };
    m.config_reloads
        .get_or_create(&OutcomeLabels { outcome })
        .inc();
}

/// `lines` audit lines that `sink` (`file` or `store`) could not take or write.
pub fn audit_dropped(sink: &'static str, lines: u64) {
    let Some(m) = get() else { return };
    m.audit_dropped
        .get_or_create(&SinkLabels { sink })
        .inc_by(lines);
}

/// `open` HTTP sessions of `transport` (`streamable` or `sse`) after one opened or closed.
pub fn http_sessions(transport: &'static str, open: usize) {
    let Some(m) = get() else { return };
    m.http_sessions
        .get_or_create(&TransportLabels { transport })
        .set(i64::try_from(open).unwrap_or(i64::MAX));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_methods_share_one_label() {
        assert_eq!(method_label("tools/call"), "tools/call");
        assert_eq!(method_label("x/made-up-by-a-client"), "other");
    }

    #[test]
    fn the_exposition_names_every_series_once_metrics_are_on() {
        install();
        request("tools/call", Outcome::Ok, Duration::from_millis(3));
        tool_call(
            "add",
            ToolKind::Graph,
            Outcome::ToolError,
            Duration::from_millis(2),
        );
        hook(
            "guard",
            "pre",
            HookOutcome::Rejected,
            Some(Duration::from_micros(40)),
        );
        audit_dropped("file", 2);
        let text = render().unwrap_or_default();
        assert!(
            text.contains("mcpflow_audit_dropped_total{sink=\"file\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("mcpflow_requests_total{method=\"tools/call\",outcome=\"ok\"} 1"),
            "{text}"
        );
        assert!(text.contains("mcpflow_tool_call_duration_seconds_count{tool=\"add\",kind=\"graph\",outcome=\"tool_error\"} 1"), "{text}");
        assert!(
            text.contains(
                "mcpflow_hook_runs_total{hook=\"guard\",stage=\"pre\",outcome=\"rejected\"} 1"
            ),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }
}
