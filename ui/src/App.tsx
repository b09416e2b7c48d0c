// mcpflow's web UI: graph tools drawn, run from a form and watched live, debugged (breakpoints,
// step, time travel through the history), past runs, waiting sessions, upstreams and the hook
// flows. Routes live in the URL's hash (#/tools/NAME, #/runs/ID, #/sessions/ID,
// #/hooks/UPSTREAM/METHOD), so any view can be linked and reloaded.
import { Suspense, lazy, useCallback, useEffect, useMemo, useState } from "react";
import { api, ENDED } from "./api";
import type { Breakpoint, Graph, GraphNode, Json, RunRecord, RunSummary, Session, ToolSummary, ToolTiming } from "./api";
import { GraphView, fmtMs } from "./GraphView";
import type { Overlay } from "./GraphView";
import { ListBox } from "./ListBox";
import { SchemaForm } from "./SchemaForm";
import { nodeRuns, useRun } from "./useRun";
import { toYaml } from "./yaml";
import { WhoAmI, needs, useCan } from "./auth";

import type { NodeRun } from "./useRun";

type Route = { view: "tools" | "runs" | "sessions" | "upstreams" | "hooks" | "edit" | "new"; id?: string };

function parse(hash: string): Route {
  const [, view, ...rest] = hash.replace(/^#/, "").split("/");
  const id = rest.length ? decodeURIComponent(rest.join("/")) : undefined;
  if (view === "runs" || view === "sessions" || view === "upstreams" || view === "hooks" || view === "edit" || view === "new") return { view, id };
  return { view: "tools", id };
}
export function go(view: Route["view"], id?: string) {
  window.location.hash = `#/${view}${id ? `/${encodeURIComponent(id)}` : ""}`;
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => parse(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parse(window.location.hash));
    window.addEventListener("hashchange", on);
    return () => window.removeEventListener("hashchange", on);
  }, []);
  return route;
}

// The editor is loaded when first opened: a first load of the UI does not carry it.
const EditorView = lazy(() => import("./Editor").then((m) => ({ default: m.EditorView })));
// So is the upstreams view (its list and a tool's schemas).
const UpstreamsPage = lazy(() => import("./Upstreams").then((m) => ({ default: m.UpstreamsPage })));
// And the hook flows (their chains, a hook's script and its trial).
const HooksPage = lazy(() => import("./Hooks").then((m) => ({ default: m.HooksPage })));

const graphs = new Map<string, Promise<Graph>>();
/** A saved tool is drawn anew. */
function forget(tool: string) {
  graphs.delete(tool);
}
function graphOf(tool: string): Promise<Graph> {
  let g = graphs.get(tool);
  if (!g) {
    g = api.graph(tool);
    g.catch(() => graphs.delete(tool));
    graphs.set(tool, g);
  }
  return g;
}
function useGraph(tool: string | undefined) {
  const [graph, setGraph] = useState<Graph | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setGraph(null);
    setError(null);
    if (!tool) return;
    let live = true;
    graphOf(tool)
      .then((g) => live && setGraph(g))
      .catch((e: Error) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [tool]);
  return { graph, error };
}

function typing(e: KeyboardEvent): boolean {
  const t = e.target as HTMLElement | null;
  return !!t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
}

function JsonView(props: { value: Json | undefined; label: string }) {
  return (
    <pre className="json" aria-label={props.label} tabIndex={0}>
      {props.value === undefined ? "undefined" : JSON.stringify(props.value, null, 2)}
    </pre>
  );
}

function Status(props: { status: string | null | undefined }) {
  return <span className={`status st-${props.status ?? "unknown"}`}>{props.status ?? "…"}</span>;
}

function time(ms: number): string {
  return new Date(ms).toLocaleTimeString();
}

type Breakpoints = Record<string, string | null>;

// ---------------------------------------------------------------------------------------------
// Sidebar lists

function ToolList(props: { tools: ToolSummary[]; current?: string; focusSignal: number }) {
  return (
    <ListBox
      focusSignal={props.focusSignal}
      label="Graph tools"
      items={props.tools}
      keyOf={(t) => t.name}
      current={props.current}
      onOpen={(t) => go("tools", t.name)}
      empty="no graph tools"
      render={(t) => (
        <div className="item">
          <div className="item-title">{t.name}</div>
          <div className="item-sub">
            {t.nodes} nodes · {t.description}
          </div>
        </div>
      )}
    />
  );
}

const STATUSES = ["running", "paused", "waiting", "succeeded", "failed", "stopped", "cancelled", "interrupted", "expired"];

function RunList(props: { tools: ToolSummary[]; current?: string; focusSignal: number }) {
  const [tool, setTool] = useState("");
  const [status, setStatus] = useState("");
  const [runs, setRuns] = useState<RunSummary[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    const load = () =>
      api
        .runs({ tool, status, limit: 200 })
        .then((r) => {
          if (live) {
            setRuns(r);
            setError(null);
          }
        })
        .catch((e: Error) => live && setError(e.message));
    void load();
    const t = window.setInterval(() => document.visibilityState === "visible" && void load(), 2000);
    return () => {
      live = false;
      window.clearInterval(t);
    };
  }, [tool, status, props.current]);
  return (
    <>
      <div className="filters">
        <label>
          tool
          <select value={tool} onChange={(e) => setTool(e.target.value)} aria-label="Filter runs by tool">
            <option value="">all</option>
            {props.tools.map((t) => (
              <option key={t.name}>{t.name}</option>
            ))}
          </select>
        </label>
        <label>
          status
          <select value={status} onChange={(e) => setStatus(e.target.value)} aria-label="Filter runs by status">
            <option value="">all</option>
            {STATUSES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
      </div>
      {error && <div className="error" role="alert">{error}</div>}
      <ListBox
        focusSignal={props.focusSignal}
        label="Runs"
        items={runs}
        keyOf={(r) => r.id}
        current={props.current}
        onOpen={(r) => go("runs", r.id)}
        empty="no runs match"
        render={(r) => (
          <div className="item">
            <div className="item-title">
              <Status status={r.status} /> {r.tool}
            </div>
            <div className="item-sub">
              {time(r.startedAt)}
              {r.endedAt ? ` · ${fmtMs(r.endedAt - r.startedAt)}` : ""} · {r.id.slice(0, 8)}
            </div>
          </div>
        )}
      />
    </>
  );
}

function useSessions(current: string | undefined, allowed: boolean) {
  const [sessions, setSessions] = useState<Session[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(
    () =>
      api
        .sessions()
        .then((s) => {
          setSessions(s);
          setLoaded(true);
          setError(null);
        })
        .catch((e: Error) => setError(e.message)),
    [],
  );
  useEffect(() => {
    if (!allowed) return;
    void load();
    const t = window.setInterval(() => document.visibilityState === "visible" && void load(), 3000);
    return () => window.clearInterval(t);
  }, [load, current, allowed]);
  return { sessions, loaded, error, load };
}

function SessionList(props: { sessions: Session[]; current?: string; error: string | null; focusSignal: number }) {
  return (
    <>
      {props.error && <div className="error" role="alert">{props.error}</div>}
      <ListBox
        focusSignal={props.focusSignal}
        label="Waiting sessions"
        items={props.sessions}
        keyOf={(s) => s.id}
        current={props.current}
        onOpen={(s) => go("sessions", s.id)}
        empty="no session is waiting"
        render={(s) => (
          <div className="item">
            <div className="item-title">
              <Status status={s.status} /> {s.tool}
            </div>
            <div className="item-sub">
              at {s.nodeId} · since {time(s.createdAt)}
            </div>
          </div>
        )}
      />
    </>
  );
}

// ---------------------------------------------------------------------------------------------
// Panels

function Tabs<T extends string>(props: { tabs: [T, string][]; current: T; onChange: (t: T) => void }) {
  return (
    <div className="tabs" role="tablist">
      {props.tabs.map(([key, title]) => (
        <button
          key={key}
          role="tab"
          aria-selected={props.current === key}
          className={props.current === key ? "tab on" : "tab"}
          onClick={() => props.onChange(key)}
        >
          {title}
        </button>
      ))}
    </div>
  );
}

function NodePanel(props: {
  node: GraphNode;
  breakpoints: Breakpoints;
  setBreakpoint: (node: string, condition: string | null | undefined) => void;
  run?: NodeRun;
  records?: RunRecord[];
}) {
  const { node } = props;
  const canDebug = useCan("debug");
  const has = node.id in props.breakpoints;
  const [condition, setCondition] = useState(props.breakpoints[node.id] ?? "");
  useEffect(() => setCondition(props.breakpoints[node.id] ?? ""), [node.id, props.breakpoints]);
  const mine = (props.records ?? []).filter((r) => r.nodeId === node.id);
  const last = mine[mine.length - 1];
  return (
    <section className="node-panel" aria-label={`Node ${node.id}`}>
      <h3>
        <span className={`type-dot t-${node.type}`} /> {node.id} <span className="muted">{node.type}</span>
      </h3>
      <div className="kv">
        <span>in the YAML</span>
        <code data-testid="yaml-position" title={node.position?.file}>
          {node.position ? `${node.position.file.split("/").pop()}:${node.position.line}:${node.position.col}` : node.pointer}
        </code>
        <span>pointer</span>
        <code>{node.pointer}</code>
        {node.calls && (
          <>
            <span>calls</span>
            <a href={`#/tools/${encodeURIComponent(node.calls)}`}>{node.calls}</a>
          </>
        )}
        {node.type === "mcp" && typeof node.definition?.server === "string" && typeof node.definition?.tool === "string" && (
          <>
            <span>upstream</span>
            <a href={`#/upstreams/${encodeURIComponent(`${node.definition.server}/${node.definition.tool}`)}`} title="The upstream tool's description and schemas">
              {node.definition.server} · {node.definition.tool}
            </a>
          </>
        )}
        {props.run && (
          <>
            <span>this run</span>
            <span>
              {props.run.state}
              {props.run.executions > 0 && ` · ${props.run.executions}× · ${fmtMs(props.run.totalMs)}`}
            </span>
          </>
        )}
      </div>
      <form
        className="bp-form"
        onSubmit={(e) => {
          e.preventDefault();
          props.setBreakpoint(node.id, condition.trim() || null);
        }}
      >
        <label>
          breakpoint condition (JSONata, optional)
          <input value={condition} onChange={(e) => setCondition(e.target.value)} placeholder="e.g. $.add.i >= 3" name="condition" spellCheck={false} disabled={!canDebug} />
        </label>
        <div className="row">
          <button type="submit" disabled={!canDebug} title={canDebug ? undefined : `Breakpoints ${needs("debug")}`}>
            {has ? "Update breakpoint" : "Set breakpoint"}
          </button>
          {has && (
            <button type="button" onClick={() => props.setBreakpoint(node.id, undefined)}>
              Clear breakpoint
            </button>
          )}
        </div>
      </form>
      {last?.error && (
        <>
          <h4>error</h4>
          <pre className="json err" data-testid="node-error">{last.error}</pre>
        </>
      )}
      {last && last.output !== undefined && (
        <>
          <h4>last output</h4>
          <JsonView value={last.output} label="last output" />
        </>
      )}
      <h4>definition</h4>
      <pre className="json" aria-label="definition" tabIndex={0}>
        {toYaml(node.definition ?? null)}
      </pre>
    </section>
  );
}

function Empty(props: { children: React.ReactNode }) {
  return <div className="empty">{props.children}</div>;
}

// ---------------------------------------------------------------------------------------------
// Tool view: the graph, a node's definition, and the form that runs it.

/** How many of a tool's nodes are marked slowest (those that took any time at all). */
const SLOWEST = 3;

/** Where the tool's time goes over its recent ended runs (`GET /api/tools/{tool}/timing`). */
function useTiming(tool: string) {
  const [timing, setTiming] = useState<ToolTiming | null>(null);
  useEffect(() => {
    let live = true;
    setTiming(null);
    api
      .timing(tool)
      .then((t) => live && setTiming(t))
      .catch(() => live && setTiming(null));
    return () => {
      live = false;
    };
  }, [tool]);
  const slow = useMemo(() => {
    const out: Record<string, { rank: number; meanMs: number }> = {};
    (timing?.nodes ?? [])
      .filter((n) => n.totalMs > 0)
      .slice(0, SLOWEST)
      .forEach((n, i) => (out[n.node] = { rank: i + 1, meanMs: n.meanMsPerRun }));
    return out;
  }, [timing]);
  return { timing, slow };
}

function SlowestNodes(props: { timing: ToolTiming | null; slow: Record<string, { rank: number }> }) {
  const t = props.timing;
  if (!t || t.runs === 0) return null;
  const total = t.nodes.reduce((sum, n) => sum + n.meanMsPerRun, 0);
  return (
    <section aria-label="Where the time goes">
      <h4>
        where the time goes · last {t.runs} run{t.runs === 1 ? "" : "s"}
      </h4>
      <table className="timing-table slow-table" data-testid="slow-table">
        <tbody>
          {t.nodes.slice(0, 8).map((n) => (
            <tr key={n.node} className={props.slow[n.node] ? "slow" : undefined} data-node={n.node}>
              <td>{n.node}</td>
              <td>{fmtMs(n.meanMsPerRun)}/run</td>
              <td>{total > 0 ? `${Math.round((100 * n.meanMsPerRun) / total)}%` : "–"}</td>
              <td title="longest single execution">max {fmtMs(n.maxMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function ToolView(props: { tool: string; breakpoints: Breakpoints; setBreakpoint: (tool: string, node: string, c: string | null | undefined) => void }) {
  const { graph, error } = useGraph(props.tool);
  const { timing, slow } = useTiming(props.tool);
  const canEdit = useCan("authoring");
  const canDebug = useCan("debug");
  const [selected, setSelected] = useState<string | null>(null);
  const [tab, setTab] = useState<"run" | "node">("run");
  const [pause, setPause] = useState(false);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  useEffect(() => {
    setSelected(null);
    setTab("run");
  }, [props.tool]);
  const overlay: Overlay = useMemo(() => ({ runs: {}, breakpoints: props.breakpoints, selected, active: false, slow }), [props.breakpoints, selected, slow]);
  const select = (id: string | null) => {
    setSelected(id);
    if (id) setTab("node");
  };
  useSelectionKeys(selected, select, (node) => canDebug && props.setBreakpoint(props.tool, node, node in props.breakpoints ? undefined : null));
  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      if (canEdit && e.key === "e" && !typing(e) && !e.ctrlKey && !e.metaKey && !e.altKey) go("edit", props.tool);
    };
    window.addEventListener("keydown", on);
    return () => window.removeEventListener("keydown", on);
  }, [props.tool, canEdit]);
  if (error) return <Empty>{error}</Empty>;
  if (!graph) return <Empty>loading {props.tool}…</Empty>;
  const node = graph.nodes.find((n) => n.id === selected);
  const bps: Breakpoint[] = Object.entries(props.breakpoints).map(([node, condition]) => ({ node, condition }));
  const start = async (args: Json) => {
    setBusy(true);
    setFailure(null);
    try {
      const started = await api.start(props.tool, args, { pause, breakpoints: bps });
      go("runs", started.id);
    } catch (e) {
      setFailure((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="main-split">
      <GraphView graph={graph} overlay={overlay} onSelect={select} />
      <aside className="panel" aria-label="Tool panel">
        <div className="panel-head">
          <h2>
            {graph.tool}
            {canEdit ? (
              <a className="button push" href={`#/edit/${encodeURIComponent(graph.tool)}`} title="Edit this tool (e)">
                Edit
              </a>
            ) : (
              <span className="button push off" aria-disabled="true" title={`Editing ${needs("authoring")}`}>
                Edit
              </span>
            )}
          </h2>
          <p className="muted">{graph.description}</p>
        </div>
        <Tabs tabs={[["run", "Run"], ["node", "Node"]]} current={tab} onChange={setTab} />
        <div className="panel-body">
          {tab === "run" ? (
            <>
              <SchemaForm
                key={graph.tool}
                name={`Run ${graph.tool}`}
                schema={graph.inputSchema}
                submit={pause ? "Debug (start paused)" : "Run"}
                busy={busy}
                onSubmit={start}
                disabled={canDebug ? undefined : `running a tool from here ${needs("debug")} (every run started here can be debugged)`}
                extra={
                  <div className="debug-options">
                    <label className="check">
                      <input type="checkbox" checked={pause} onChange={(e) => setPause(e.target.checked)} name="pause" /> pause before the first node
                    </label>
                    <div className="muted">
                      {bps.length === 0 ? "no breakpoints (select a node to set one)" : `breakpoints: ${bps.map((b) => b.node + (b.condition ? ` if ${b.condition}` : "")).join(", ")}`}
                    </div>
                  </div>
                }
              />
              {failure && <div className="error" role="alert">{failure}</div>}
              <SlowestNodes timing={timing} slow={slow} />
            </>
          ) : node ? (
            <NodePanel node={node} breakpoints={props.breakpoints} setBreakpoint={(n, c) => props.setBreakpoint(props.tool, n, c)} />
          ) : (
            <p className="muted">Select a node (click, or Tab to it and press Enter) to see its definition.</p>
          )}
        </div>
      </aside>
    </div>
  );
}

/** Escape clears the selection, `b` toggles a breakpoint on the selected node. */
function useSelectionKeys(selected: string | null, select: (id: string | null) => void, toggle: (node: string) => void) {
  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      if (typing(e) || e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === "Escape" && selected) select(null);
      if (e.key === "b" && selected) toggle(selected);
    };
    window.addEventListener("keydown", on);
    return () => window.removeEventListener("keydown", on);
  });
}

// ---------------------------------------------------------------------------------------------
// Run view: a run on its tool's graph, live or past, with the debugger and the timeline.

function RunView(props: { id: string }) {
  const { view, refresh, setDebug } = useRun(props.id);
  const canDebug = useCan("debug");
  const tool = view.detail?.tool;
  const { graph, error: graphError } = useGraph(tool);
  const [selected, setSelected] = useState<string | null>(null);
  const [tab, setTab] = useState<"run" | "timeline" | "node">("run");
  const [at, setAt] = useState<number | null>(null);
  const [context, setContext] = useState<{ index: number | null; context: Json } | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  useEffect(() => {
    setSelected(null);
    setTab("run");
    setAt(null);
    setContext(null);
  }, [props.id]);

  const runs = useMemo(() => nodeRuns(view), [view]);
  const breakpoints: Breakpoints = useMemo(
    () => Object.fromEntries((view.debug?.breakpoints ?? []).map((b) => [b.node, b.condition ?? null])),
    [view.debug],
  );
  const live = view.status === "running" || view.status === "paused";
  const debuggable = live && canDebug;
  const ended = view.status !== null && (ENDED.includes(view.status) || view.status === "waiting");
  const overlay: Overlay = useMemo(() => ({ runs, breakpoints, selected, active: true, ended }), [runs, breakpoints, selected, ended]);

  const act = useCallback(
    async (action: "pause" | "resume" | "step" | "stop") => {
      setActionError(null);
      try {
        const answer = await api.action(props.id, action);
        setDebug(answer.debug, answer.status);
      } catch (e) {
        setActionError((e as Error).message);
      }
    },
    [props.id, setDebug],
  );
  const setBreakpoint = async (node: string, condition: string | null | undefined) => {
    setActionError(null);
    try {
      if (condition === undefined) await api.clearBreakpoint(props.id, node);
      else await api.setBreakpoint(props.id, node, condition ?? undefined);
      const detail = await api.run(props.id);
      if (detail.debug) setDebug(detail.debug, detail.status);
    } catch (e) {
      setActionError((e as Error).message);
    }
  };
  const showContext = useCallback(
    async (index: number | null) => {
      setAt(index);
      try {
        setContext(await api.context(props.id, index ?? undefined));
      } catch (e) {
        setContext({ index, context: { error: (e as Error).message } });
      }
    },
    [props.id],
  );

  // Debugger keys, as in browsers' devtools: F8 resume, F10 step, F6 pause, Shift+F8 stop.
  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      if (!debuggable) return;
      const key = e.shiftKey && e.key === "F8" ? "stop" : ({ F8: "resume", F10: "step", F6: "pause" } as Record<string, "resume" | "step" | "pause">)[e.key];
      if (key) {
        e.preventDefault();
        void act(key);
      }
    };
    window.addEventListener("keydown", on);
    return () => window.removeEventListener("keydown", on);
  }, [debuggable, act]);
  const select = (id: string | null) => {
    setSelected(id);
    if (id) setTab("node");
  };
  useSelectionKeys(selected, select, (node) => debuggable && void setBreakpoint(node, node in breakpoints ? undefined : null));

  if (view.error && !view.detail) return <Empty>{view.error}</Empty>;
  if (!view.detail) return <Empty>loading run {props.id}…</Empty>;
  const d = view.detail;
  const node = graph?.nodes.find((n) => n.id === selected);
  const paused = view.paused;
  const duration = d.endedAt ? d.endedAt - d.startedAt : undefined;
  const failedAt = d.error?.nodeId ?? view.records.find((r) => r.error)?.nodeId;

  return (
    <div className="main-split">
      {graph ? <GraphView graph={graph} overlay={overlay} onSelect={select} /> : <Empty>{graphError ?? "loading graph…"}</Empty>}
      <aside className="panel" aria-label="Run panel" data-streaming={view.streaming} data-reconnects={view.reconnects}>
        <div className="panel-head">
          <h2>
            <a href={`#/tools/${encodeURIComponent(d.tool)}`}>{d.tool}</a> <Status status={view.status} />
          </h2>
          <p className="muted">
            run <code data-testid="run-id">{d.id}</code> · {time(d.startedAt)}
            {duration !== undefined && ` · ${fmtMs(duration)}`}
            {view.streaming ? " · live" : ""}
          </p>
          {live && !canDebug && <p className="muted">live · pause, step and stop {needs("debug")}</p>}
          {debuggable && (
            <div className="debugbar" role="toolbar" aria-label="Debugger">
              <button onClick={() => void act("pause")} disabled={view.status === "paused"} title="Pause (F6)">
                Pause
              </button>
              <button onClick={() => void act("step")} disabled={view.status !== "paused"} title="Step one node (F10)">
                Step
              </button>
              <button onClick={() => void act("resume")} disabled={view.status !== "paused"} title="Resume (F8)">
                Resume
              </button>
              <button onClick={() => void act("stop")} className="danger" title="Stop (Shift+F8)">
                Stop
              </button>
            </div>
          )}
          {paused.length > 0 && (
            <p className="paused-at" data-testid="paused-at">
              paused before{" "}
              {paused.map((p) => (
                <span key={`${p.nodeId}/${p.branch}/${p.item}`}>
                  <b>{p.nodeId}</b> ({p.reason}
                  {p.branch ? `, branch ${p.branch}` : ""}
                  {p.item !== undefined ? `, item ${p.item}` : ""}){" "}
                </span>
              ))}
            </p>
          )}
          {actionError && <div className="error" role="alert">{actionError}</div>}
        </div>
        <Tabs
          tabs={[
            ["run", "Run"],
            ["timeline", `Timeline (${view.records.length})`],
            ["node", "Node"],
          ]}
          current={tab}
          onChange={setTab}
        />
        <div className="panel-body">
          {tab === "run" && (
            <>
              {d.status === "waiting" && d.waiting && (
                <WaitingForm
                  sessionId={d.waiting.sessionId}
                  node={d.waiting.nodeId}
                  message={d.waiting.message}
                  schema={d.waiting.inputSchema}
                  onDone={(runId) => (runId === props.id ? void refresh() : go("runs", runId))}
                />
              )}
              {failedAt && (
                <p className="failed-at" data-testid="failed-at">
                  failed at <b>{failedAt}</b>
                </p>
              )}
              {d.error !== undefined && (
                <>
                  <h4>error</h4>
                  <JsonView value={d.error as Json} label="run error" />
                </>
              )}
              {d.result !== undefined && (
                <>
                  <h4>result</h4>
                  <JsonView value={d.result} label="result" />
                </>
              )}
              <h4>time per node</h4>
              <table className="timing-table">
                <tbody>
                  {Object.entries(runs)
                    .filter(([, t]) => t.executions > 0)
                    .sort((a, b) => b[1].totalMs - a[1].totalMs)
                    .map(([n, t]) => (
                      <tr key={n}>
                        <td>{n}</td>
                        <td>{t.executions}×</td>
                        <td>{fmtMs(t.totalMs)}</td>
                      </tr>
                    ))}
                </tbody>
              </table>
              {d.args !== undefined && (
                <>
                  <h4>arguments</h4>
                  <JsonView value={d.args} label="arguments" />
                </>
              )}
            </>
          )}
          {tab === "timeline" && (
            <Timeline records={view.records} at={at} onPick={showContext} canNow={view.status === "paused"} context={context} />
          )}
          {tab === "node" &&
            (node ? (
              <NodePanel node={node} breakpoints={breakpoints} setBreakpoint={(n, c) => (live ? void setBreakpoint(n, c) : setActionError("breakpoints apply to a live run; set them on the tool before running it"))} run={runs[node.id]} records={view.records} />
            ) : (
              <p className="muted">Select a node to see its definition, timing and output.</p>
            ))}
        </div>
      </aside>
    </div>
  );
}

/** At most this many steps are listed at once; any other is reached by its number. */
const SHOWN_STEPS = 300;

function Timeline(props: {
  records: RunRecord[];
  at: number | null;
  canNow: boolean;
  onPick: (index: number | null) => void;
  context: { index: number | null; context: Json } | null;
}) {
  const [jump, setJump] = useState("");
  const many = props.records.length > SHOWN_STEPS;
  // The steps around the one picked, else the latest.
  const shown = useMemo(() => {
    if (!many) return props.records;
    const i = props.at === null ? -1 : props.records.findIndex((r) => r.index === props.at);
    const end = i < 0 ? props.records.length : Math.min(props.records.length, Math.max(SHOWN_STEPS, i + SHOWN_STEPS / 2));
    return props.records.slice(end - SHOWN_STEPS, end);
  }, [props.records, props.at, many]);
  return (
    <div className="timeline">
      {many && (
        <form
          className="row jump"
          onSubmit={(e) => {
            e.preventDefault();
            const n = Number(jump);
            if (Number.isInteger(n) && n >= 0) props.onPick(n);
          }}
        >
          <span className="muted">
            {props.records.length} steps, {SHOWN_STEPS} listed
          </span>
          <input value={jump} onChange={(e) => setJump(e.target.value)} placeholder="step #" aria-label="Go to step" inputMode="numeric" />
          <button type="submit">Go</button>
        </form>
      )}
      <ListBox
        label="History"
        items={shown}
        keyOf={(r) => String(r.index)}
        current={props.at === null ? null : String(props.at)}
        onOpen={(r) => props.onPick(r.index)}
        empty="no node has finished yet"
        render={(r) => (
          <div className={`tl-row${r.error ? " tl-failed" : ""}`}>
            <span className="tl-index">#{r.index}</span>
            <span className={`type-dot t-${r.type}`} />
            <span className="tl-node">{r.nodeId}</span>
            {r.parent && <span className="muted">{r.parent.branch ? `[${r.parent.branch}]` : r.parent.item !== undefined ? `[${r.parent.item}]` : ""}</span>}
            <span className="tl-ms">{fmtMs(r.durationMs)}</span>
          </div>
        )}
      />
      {props.canNow && (
        <button onClick={() => props.onPick(null)} className="now">
          Context the paused node reads
        </button>
      )}
      {props.context && (
        <section aria-label="Context" data-testid="context">
          <h4>context {props.context.index === null ? "now" : `after step #${props.context.index}`}</h4>
          <JsonView value={props.context.context} label="context" />
        </section>
      )}
    </div>
  );
}

function WaitingForm(props: { sessionId: string; node: string; message?: Json; schema?: Json; onDone: (runId: string) => void }) {
  const canContinue = useCan("sessions");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [answer, setAnswer] = useState<Json | null>(null);
  const submit = async (input: Json) => {
    setBusy(true);
    setError(null);
    try {
      const r = await api.continueSession(props.sessionId, input);
      setAnswer(r as unknown as Json);
      props.onDone(r.runId);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="waiting" aria-label="Continue the session">
      <h4>waiting at {props.node}</h4>
      {props.message !== undefined && <p className="message">{typeof props.message === "string" ? props.message : JSON.stringify(props.message)}</p>}
      {answer === null && <SchemaForm
        key={props.sessionId}
        name="Session input"
        schema={(props.schema ?? undefined) as Record<string, Json> | undefined}
        submit="Continue"
        busy={busy}
        onSubmit={submit}
        disabled={canContinue ? undefined : `continuing a session ${needs("sessions")}`}
      />}
      {error && <div className="error" role="alert">{error}</div>}
      {answer !== null && (
        <>
          <h4>answer</h4>
          <JsonView value={answer} label="continue answer" />
        </>
      )}
    </section>
  );
}

function SessionView(props: { session: Session | undefined; loaded: boolean; id: string; reload: () => void }) {
  // The session as first seen: once continued or cancelled it leaves the list, and what became
  // of it stays here.
  const [seen, setSeen] = useState<Session | undefined>(props.session);
  useEffect(() => {
    if (props.session) setSeen(props.session);
  }, [props.session]);
  const s = seen;
  const canAct = useCan("sessions");
  const [done, setDone] = useState<string | null>(null);
  const [cancelled, setCancelled] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (!s && !props.loaded) return <Empty>loading session {props.id}…</Empty>;
  if (!s) return <Empty>session {props.id} is not waiting (it may have been continued, cancelled or expired)</Empty>;
  const cancel = async () => {
    setError(null);
    try {
      await api.cancelSession(s.id);
      setCancelled(true);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      props.reload();
    }
  };
  const run = <a href={`#/runs/${encodeURIComponent(s.runId)}`}>open the run</a>;
  return (
    <div className="main-split single">
      <aside className="panel wide" aria-label="Session panel">
        <div className="panel-head">
          <h2>
            session of {s.tool} <Status status={cancelled ? "cancelled" : done ? "continued" : s.status} />
          </h2>
          <p className="muted">
            <code>{props.id}</code>
            {" "}
            · run <a href={`#/runs/${encodeURIComponent(s.runId)}`}>{s.runId.slice(0, 8)}</a> · expires {time(s.expiresAt)}
          </p>
        </div>
        <div className="panel-body">
          {!cancelled && (
            <WaitingForm
              sessionId={s.id}
              node={s.nodeId}
              schema={s.inputSchema}
              onDone={(runId) => {
                setDone(runId);
                props.reload();
              }}
            />
          )}
          {done && (
            <p>
              continued: <a href={`#/runs/${encodeURIComponent(done)}`}>open the run</a>
            </p>
          )}
          {cancelled && (
            <p data-testid="session-cancelled">
              cancelled: the run will not go on · {run}
            </p>
          )}
          {error && <div className="error" role="alert">{error}</div>}
          {!done && !cancelled && (
            <button className="danger" onClick={() => void cancel()} disabled={!canAct} title={canAct ? undefined : `Cancelling ${needs("sessions")}`}>
              Cancel the session
            </button>
          )}
        </div>
      </aside>
    </div>
  );
}

// ---------------------------------------------------------------------------------------------

export function App() {
  const route = useRoute();
  const [tools, setTools] = useState<ToolSummary[]>([]);
  const [toolsError, setToolsError] = useState<string | null>(null);
  const [bps, setBps] = useState<Record<string, Breakpoints>>({});
  const [focusList, setFocusList] = useState(0);
  const canRead = useCan("runs:read");
  const canSessions = useCan("sessions");
  const canEdit = useCan("authoring");
  const sessions = useSessions(route.view === "sessions" ? route.id : undefined, canSessions);

  const loadTools = useCallback(
    (first: boolean) =>
      api
        .tools()
        .then((t) => {
          setTools(t);
          setToolsError(null);
          if (first && parse(window.location.hash).view === "tools" && !parse(window.location.hash).id && t.length > 0) go("tools", t[0].name);
        })
        .catch((e: Error) => setToolsError(e.message)),
    [],
  );
  useEffect(() => {
    if (canRead) void loadTools(true);
  }, [loadTools, canRead]);
  const saved = (tool: string) => {
    forget(tool);
    void loadTools(false);
  };

  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      if (typing(e) || e.ctrlKey || e.metaKey || e.altKey) return;
      const view = ({ "1": "tools", "2": "runs", "3": "sessions", "4": "upstreams", "5": "hooks" } as Record<string, Route["view"]>)[e.key];
      if (view) {
        e.preventDefault();
        go(view);
        setFocusList((n) => n + 1);
      }
    };
    window.addEventListener("keydown", on);
    return () => window.removeEventListener("keydown", on);
  }, []);

  const setBreakpoint = (tool: string, node: string, condition: string | null | undefined) =>
    setBps((all) => {
      const mine = { ...(all[tool] ?? {}) };
      if (condition === undefined) delete mine[node];
      else mine[node] = condition;
      return { ...all, [tool]: mine };
    });

  const views: [Route["view"], string, string][] = [
    ["tools", "Tools", "1"],
    ["runs", "Runs", "2"],
    ...(canSessions ? [["sessions", `Sessions${sessions.sessions.length ? ` (${sessions.sessions.length})` : ""}`, "3"] as [Route["view"], string, string]] : []),
    ["upstreams", "Upstreams", "4"],
    ["hooks", "Hooks", "5"],
  ];
  const title = route.view === "runs" ? "Runs" : route.view === "sessions" ? "Waiting sessions" : "Graph tools";
  const editing = route.view === "edit" || route.view === "new";
  return (
    <div className="app">
      <header className="top">
        <span className="brand">mcpflow</span>
        <nav aria-label="Views">
          {views.map(([v, label, key]) => (
            <a key={v} href={`#/${v}`} className={route.view === v || (editing && v === "tools") ? "nav on" : "nav"} aria-current={route.view === v ? "page" : undefined} title={`${label} (${key})`}>
              {label}
            </a>
          ))}
        </nav>
        <span className="keys muted">1–5 views · ↑↓ Enter lists · Tab/Enter nodes · b breakpoint · e edit · F6 F8 F10 debug</span>
        <WhoAmI />
      </header>
      <div className="body">
        {!editing && route.view !== "upstreams" && route.view !== "hooks" && <nav className="sidebar" aria-label={title}>
          <h2 className="side-title">
            {title}
            {route.view === "tools" && canEdit && (
              <a className="button small push" href="#/new" title="A new graph tool from a template">
                New tool
              </a>
            )}
          </h2>
          {toolsError && <div className="error" role="alert">{toolsError}</div>}
          {route.view === "tools" && <ToolList tools={tools} current={route.id} focusSignal={focusList} />}
          {route.view === "runs" && <RunList tools={tools} current={route.id} focusSignal={focusList} />}
          {route.view === "sessions" && <SessionList sessions={sessions.sessions} current={route.id} error={sessions.error} focusSignal={focusList} />}
        </nav>}
        <main className="main">
          {!canRead && <Empty>Every view here reads runs and graphs, which {needs("runs:read")}.</Empty>}
          {canRead && route.view === "tools" &&
            (route.id ? (
              <ToolView key={route.id} tool={route.id} breakpoints={bps[route.id] ?? {}} setBreakpoint={setBreakpoint} />
            ) : (
              <Empty>Pick a graph tool.</Empty>
            ))}
          {editing && !canEdit && <Empty>Editing {needs("authoring")}.</Empty>}
          {canRead && editing && canEdit && (
            <Suspense fallback={<Empty>loading the editor…</Empty>}>
              {route.view === "edit" && (route.id ? <EditorView key={`edit/${route.id}`} tool={route.id} onSaved={saved} /> : <Empty>Pick a tool to edit.</Empty>)}
              {route.view === "new" && <EditorView key={`new/${route.id ?? ""}`} template={route.id} onSaved={saved} />}
            </Suspense>
          )}
          {canRead && route.view === "runs" && (route.id ? <RunView key={route.id} id={route.id} /> : <Empty>Pick a run, or run a tool from its page.</Empty>)}
          {canRead && route.view === "upstreams" && (
            <Suspense fallback={<Empty>loading the upstreams view…</Empty>}>
              <UpstreamsPage current={route.id} focusSignal={focusList} open={(id) => go("upstreams", id)} />
            </Suspense>
          )}
          {canRead && route.view === "hooks" && (
            <Suspense fallback={<Empty>loading the hook flows…</Empty>}>
              <HooksPage current={route.id} focusSignal={focusList} open={(id) => go("hooks", id)} />
            </Suspense>
          )}
          {route.view === "sessions" && !canSessions && <Empty>Waiting sessions: this view {needs("sessions")}.</Empty>}
          {canSessions && route.view === "sessions" &&
            (route.id ? (
              <SessionView key={route.id} id={route.id} loaded={sessions.loaded} session={sessions.sessions.find((s) => s.id === route.id)} reload={() => void sessions.load()} />
            ) : (
              <Empty>{sessions.sessions.length ? "Pick a waiting session to continue it." : "No session is waiting."}</Empty>
            ))}
        </main>
      </div>
    </div>
  );
}

export { ENDED };
