// The hook flows (#/hooks/UPSTREAM/METHOD): for each proxied upstream and method, the chain a
// request takes, Start → pre hooks → the upstream call → post hooks → End, drawn with the
// blocking hooks on the request's path and the fire-and-forget ones beside it. Hooks in the
// hooks file (`authoring.hooksFile`) are edited here: added, reordered, switched on and off,
// their scripts checked by the server as they are typed (a syntax error marked at its line),
// tried on a sample request in the sandbox, saved through the tools' save path (with the file's
// version as opened, so a change on disk is reported), exported and imported as flow files.
// Hooks a person wrote in the config are shown, and tried, but never rewritten.
import { memo, useCallback, useEffect, useMemo, useRef, useState } from "react";
import type { KeyboardEvent } from "react";
import { Background, Handle, MarkerType, Position, ReactFlow, ReactFlowProvider, useReactFlow } from "@xyflow/react";
import type { Edge, Node, NodeProps } from "@xyflow/react";
import { ApiError, api } from "./api";
import { CodePane } from "./CodePane";
import type { HookDef, HookFlows, HookTrial, Json, Problem } from "./api";
import { useCan, needs } from "./auth";
import { ListBox } from "./ListBox";
import { toYaml } from "./yaml";

export const METHODS = ["tools/call", "tools/list"] as const;
type Method = (typeof METHODS)[number];

/** `UPSTREAM/METHOD` (the route's id) and back. */
export function flowId(upstream: string, method: Method): string {
  return `${upstream}/${method}`;
}
function splitFlow(id: string): { upstream: string; method: Method } | null {
  const at = id.indexOf("/");
  const method = id.slice(at + 1);
  if (at < 0 || !(METHODS as readonly string[]).includes(method)) return null;
  return { upstream: id.slice(0, at), method: method as Method };
}

/** Shell-style glob, as the gateway matches `upstream:` and `tool:`. */
function glob(pattern: string, text: string): boolean {
  const re = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`^${re}$`, "s").test(text);
}

/** Whether `hook` runs in the flow of `upstream`'s `method`. */
function inFlow(hook: HookDef, upstream: string, method: Method): boolean {
  return (hook.appliesTo ?? "proxied") !== "graph" && hook.method === method && glob(hook.upstream ?? "*", upstream);
}

const blocking = (h: HookDef) => h.blocking !== false;
const enabled = (h: HookDef) => h.enabled !== false;

/** A hook of the chain: one of the config's own (read-only) or of the hooks file (by index). */
type Placed = { hook: HookDef; editable: boolean; index: number; writtenAt?: string | null };
const keyOf = (p: Placed) => `${p.editable ? "file" : "config"}:${p.index}`;

function download(name: string, text: string) {
  const url = URL.createObjectURL(new Blob([text.endsWith("\n") ? text : `${text}\n`], { type: "application/yaml" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 1000);
}

const TEMPLATE: Record<"pre" | "post", string> = {
  pre: `(ctx) => {
  // ctx.request.params is {name, arguments}; ctx.metadata has serverName, toolName, caller.
  // Return nothing to let the call through, {reject: "why"} to refuse it,
  // or ctx with ctx.request.params changed to rewrite it.
  return undefined;
}`,
  post: `(ctx) => {
  // ctx.response is the upstream's complete result; return ctx with it changed to rewrite it,
  // {reject: "why"} to turn it into an error, or nothing to pass it on.
  return undefined;
}`,
};

/** The server's check of each hook, keyed by its JSON, asked a moment after it stops changing. */
function useChecks(hooks: HookDef[]) {
  const [checked, setChecked] = useState<Record<string, Problem[]>>({});
  const known = useRef(checked);
  known.current = checked;
  const asked = useRef(new Set<string>());
  useEffect(() => {
    const keys = [...new Set(hooks.map((h) => JSON.stringify(h)))].filter((k) => !(k in known.current) && !asked.current.has(k));
    if (keys.length === 0) return;
    // Asked once typing pauses; an answer is kept under the hook it checked, so one that
    // arrives after further typing is simply not the current hook's.
    const t = window.setTimeout(() => {
      for (const k of keys) {
        asked.current.add(k);
        api
          .checkHook(JSON.parse(k) as HookDef)
          .then((r) => setChecked((c) => ({ ...c, [k]: r.problems })))
          .catch((e: Error) => setChecked((c) => ({ ...c, [k]: [{ message: `not checked: ${e.message}` }] })));
      }
    }, 250);
    return () => window.clearTimeout(t);
  }, [hooks]);
  return useCallback((hook: HookDef): Problem[] | undefined => checked[JSON.stringify(hook)], [checked]);
}

// ---------------------------------------------------------------------------------------------
// The chain, drawn

type ChainData = {
  kind: "start" | "end" | "call" | "hook";
  title: string;
  sub: string;
  hookId?: string;
  blocking?: boolean;
  on?: boolean;
  problem?: string;
  readOnly?: boolean;
};

const ChainNode = memo(function ChainNode(props: NodeProps) {
  const d = props.data as ChainData;
  const cls = [
    "hnode",
    `h-${d.kind}`,
    d.kind === "hook" && !d.blocking ? "h-background" : "",
    d.kind === "hook" && !d.on ? "h-off" : "",
    d.problem ? "has-problem" : "",
    props.selected ? "selected" : "",
  ].join(" ");
  return (
    <div className={cls} data-hook={d.hookId} data-kind={d.kind} title={d.problem ?? d.sub}>
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <Handle id="below" type="source" position={Position.Bottom} isConnectable={false} />
      {d.problem && <span className="problem-mark" aria-label={`problem: ${d.problem}`}>!</span>}
      <div className="hnode-head">
        {d.kind === "hook" && <span className="hnode-kind">{d.blocking ? "blocking" : "fire & forget"}</span>}
        {d.kind === "hook" && !d.on && <span className="hnode-kind off">off</span>}
        {d.readOnly && <span className="hnode-kind" title="written in the config by a person: shown, never rewritten">config</span>}
      </div>
      <div className="hnode-title">{d.title}</div>
      <div className="hnode-sub">{d.sub}</div>
      <Handle id="right" type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});
const nodeTypes = { chain: ChainNode };

const COL = 190;
const ROW = 100;

function chainOf(upstream: string, method: Method, pre: Placed[], post: Placed[], problems: (p: Placed) => string | undefined, selected: string | null) {
  const nodes: Node[] = [];
  const edges: Edge[] = [];
  let col = 0;
  let last = "start";
  const put = (id: string, data: ChainData, row: number) => {
    nodes.push({ id, type: "chain", position: { x: col * COL, y: row * ROW }, data, selected: id === selected, focusable: true });
    col += 1;
  };
  const link = (from: string, to: string, side = false) =>
    edges.push({
      id: `${from}->${to}`,
      source: from,
      target: to,
      sourceHandle: side ? "below" : "right",
      className: side ? "h-edge-side" : undefined,
      animated: side,
      markerEnd: { type: MarkerType.ArrowClosed, width: 14, height: 14 },
    });
  put("start", { kind: "start", title: "Start", sub: `${method} from a client` }, 0);
  const hooks = (list: Placed[]) => {
    for (const p of list) {
      const id = keyOf(p);
      const h = p.hook;
      const onPath = blocking(h) && enabled(h);
      const what = h.script !== undefined ? "script" : `graph tool ${h.graphTool ?? ""}`;
      put(
        id,
        {
          kind: "hook",
          title: h.id,
          sub: `${h.tool && method === "tools/call" ? `tool ${h.tool} · ` : ""}${what}`,
          hookId: h.id,
          blocking: blocking(h),
          on: enabled(h),
          problem: problems(p),
          readOnly: !p.editable,
        },
        onPath ? 0 : 1,
      );
      if (onPath) {
        link(last, id);
        last = id;
      } else if (enabled(h)) link(last, id, true);
    }
  };
  hooks(pre);
  put("call", { kind: "call", title: upstream, sub: `the upstream's ${method}` }, 0);
  link(last, "call");
  last = "call";
  hooks(post);
  put("end", { kind: "end", title: "End", sub: "the answer to the client" }, 0);
  link(last, "end");
  return { nodes, edges };
}

function ChainInner(props: { upstream: string; method: Method; pre: Placed[]; post: Placed[]; problems: (p: Placed) => string | undefined; selected: string | null; onSelect: (key: string | null) => void }) {
  const { nodes, edges } = useMemo(
    () => chainOf(props.upstream, props.method, props.pre, props.post, props.problems, props.selected),
    [props.upstream, props.method, props.pre, props.post, props.problems, props.selected],
  );
  const flow = useReactFlow();
  const shape = nodes.map((n) => `${n.id}@${n.position.x},${n.position.y}`).join(" ");
  useEffect(() => {
    const t = window.setTimeout(() => void flow.fitView({ padding: 0.15, maxZoom: 1 }), 30);
    return () => window.clearTimeout(t);
  }, [shape, flow]);
  const hookKey = (id: string | undefined) => (id && (id.startsWith("file:") || id.startsWith("config:")) ? id : null);
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key !== "Enter" && e.key !== " ") return;
    const el = (e.target as HTMLElement).closest(".react-flow__node") as HTMLElement | null;
    const key = hookKey(el?.dataset.id);
    if (key) {
      e.preventDefault();
      props.onSelect(key);
    }
  };
  return (
    <div className="graph hook-chain" onKeyDown={onKeyDown} aria-label={`Hook flow of ${props.upstream} ${props.method}`}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable
        deleteKeyCode={null}
        onNodeClick={(_, n) => props.onSelect(hookKey(n.id))}
        onPaneClick={() => props.onSelect(null)}
        minZoom={0.2}
        maxZoom={1.5}
        fitView
      >
        <Background gap={24} size={1} />
      </ReactFlow>
    </div>
  );
}

function Chain(props: Parameters<typeof ChainInner>[0]) {
  return (
    <ReactFlowProvider>
      <ChainInner {...props} />
    </ReactFlowProvider>
  );
}

// ---------------------------------------------------------------------------------------------
// One hook: its fields, its script, a trial

function sampleFor(hook: HookDef): string {
  if (hook.method === "tools/list") return "{}";
  const tool = hook.tool && !/[*?]/.test(hook.tool) ? hook.tool : "TOOL";
  return JSON.stringify({ name: tool, arguments: {} }, null, 2);
}

function TrialPanel(props: { hook: HookDef; upstream: string; valid: boolean }) {
  const canTry = useCan("authoring");
  const [params, setParams] = useState(() => sampleFor(props.hook));
  const [response, setResponse] = useState('{"content": [{"type": "text", "text": "hello"}], "isError": false}');
  const [trial, setTrial] = useState<HookTrial | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const post = props.hook.phase === "post";
  const run = async () => {
    setBusy(true);
    setError(null);
    setTrial(null);
    try {
      const parsed = (text: string, what: string): Json => {
        try {
          return JSON.parse(text) as Json;
        } catch (e) {
          throw new Error(`the sample ${what} is not JSON: ${(e as Error).message}`);
        }
      };
      setTrial(
        await api.tryHook({
          hook: props.hook,
          upstream: props.upstream,
          params: parsed(params, "request"),
          ...(post ? { response: parsed(response, "response") } : {}),
        }),
      );
    } catch (e) {
      const problems = e instanceof ApiError ? e.problems : undefined;
      setError(problems?.length ? problems.map((p) => p.message).join("\n") : (e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const verdict = (t: HookTrial): string => {
    const effect = !t.blocking
      ? "fire-and-forget: what it answers is ignored, the call goes on"
      : t.rejects
        ? "the call would be refused"
        : t.outcome === "failed"
          ? "the call would go on (onHookError: open)"
          : "the call goes on";
    const what = t.outcome === "rejected" ? `rejected: ${t.message ?? ""}` : t.outcome === "failed" ? `failed: ${t.message ?? ""}` : t.outcome;
    return `${what} · ${effect}`;
  };
  return (
    <section className="trial-panel" aria-label="Try the hook">
      <h4>try it on a sample {post ? "call" : "request"}</h4>
      <label className="field">
        <span className="field-name">request params (JSON)</span>
        <textarea name="sample" aria-label="Sample request" rows={4} spellCheck={false} value={params} onChange={(e) => setParams(e.target.value)} />
      </label>
      {post && (
        <label className="field">
          <span className="field-name">response (JSON)</span>
          <textarea name="sample-response" aria-label="Sample response" rows={3} spellCheck={false} value={response} onChange={(e) => setResponse(e.target.value)} />
        </label>
      )}
      <div className="row">
        <button onClick={() => void run()} disabled={busy || !props.valid || !canTry} title={canTry ? (props.valid ? "Run the hook once in the sandbox" : "Fix the hook's problems first") : `Trying ${needs("authoring")}`}>
          {busy ? "Trying…" : "Try"}
        </button>
      </div>
      {error && <div className="error" role="alert" data-testid="trial-error">{error}</div>}
      {trial && (
        <div className={`trial v-${trial.rejects ? "refused" : "through"}`} data-testid="trial" data-outcome={trial.outcome}>
          <b>{verdict(trial)}</b>
          {trial.outcome === "rewrote" && (
            <pre className="json" aria-label="after the hook">
              {JSON.stringify(post ? trial.response : trial.params, null, 2)}
            </pre>
          )}
          {trial.logs.length > 0 && (
            <pre className="json" aria-label="console">
              {trial.logs.map((l) => `${l.level}: ${l.message}`).join("\n")}
            </pre>
          )}
          <span className="muted fine">{trial.cpuMs.toFixed(1)} ms of CPU in the sandbox</span>
        </div>
      )}
    </section>
  );
}

function HookPanel(props: {
  placed: Placed;
  upstream: string;
  method: Method;
  problems: Problem[] | undefined;
  canMove: { earlier: boolean; later: boolean };
  change: (h: HookDef) => void;
  move: (by: -1 | 1) => void;
  remove: () => void;
}) {
  const { hook } = props.placed;
  const canEdit = useCan("authoring");
  const readOnly = !props.placed.editable || !canEdit;
  const set = (patch: Partial<HookDef>) => {
    const next: HookDef = { ...hook, ...patch };
    for (const [k, v] of Object.entries(patch)) if (v === undefined) delete next[k];
    props.change(next);
  };
  const scriptProblems = (props.problems ?? []).filter((p) => p.path === "/script" || p.line !== undefined);
  const others = (props.problems ?? []).filter((p) => !scriptProblems.includes(p));
  return (
    <aside className="panel hook-panel" aria-label={`Hook ${hook.id}`}>
      <div className="panel-head">
        <h2>
          {hook.id} <span className="muted">{hook.phase} hook</span>
        </h2>
        <p className="muted fine">
          {props.placed.editable ? "in the hooks file: saved from here" : `written at ${props.placed.writtenAt ?? "the config"}: shown, never rewritten`}
        </p>
      </div>
      <div className="panel-body">
        <fieldset className="hook-form" disabled={readOnly}>
          <label className="field">
            <span className="field-name">id</span>
            <input name="id" value={hook.id} onChange={(e) => set({ id: e.target.value })} spellCheck={false} />
          </label>
          <div className="row">
            <label className="field grow">
              <span className="field-name">phase</span>
              <select name="phase" value={hook.phase} onChange={(e) => set({ phase: e.target.value as "pre" | "post" })}>
                <option value="pre" title="may rewrite or reject the request">pre: before the call</option>
                <option value="post" title="may rewrite the response">post: after the call</option>
              </select>
            </label>
            {props.method === "tools/call" && (
              <label className="field grow">
                <span className="field-name">tool (glob)</span>
                <input name="tool" value={hook.tool ?? ""} placeholder="*" onChange={(e) => set({ tool: e.target.value || undefined })} spellCheck={false} />
              </label>
            )}
          </div>
          <label className="check">
            <input type="checkbox" name="blocking" checked={blocking(hook)} onChange={(e) => set({ blocking: e.target.checked ? undefined : false })} />
            blocking: the request waits for it (else fire-and-forget, after the fact)
          </label>
          <label className="check">
            <input type="checkbox" name="enabled" checked={enabled(hook)} onChange={(e) => set({ enabled: e.target.checked ? undefined : false })} />
            enabled
          </label>
          <div className="row">
            <label className="field grow">
              <span className="field-name">on a failure</span>
              <select name="onHookError" value={hook.onHookError ?? "closed"} onChange={(e) => set({ onHookError: e.target.value === "closed" ? undefined : "open" })}>
                <option value="closed">closed: fail the request</option>
                <option value="open">open: let it through</option>
              </select>
            </label>
            <label className="field grow">
              <span className="field-name">CPU budget (ms)</span>
              <input name="timeoutMs" inputMode="numeric" value={hook.timeoutMs ?? ""} placeholder="100" onChange={(e) => set({ timeoutMs: e.target.value ? Number(e.target.value) : undefined })} />
            </label>
          </div>
          {hook.graphTool !== undefined ? (
            <p className="note">runs the graph tool <b>{hook.graphTool}</b> with the hook's context as its arguments</p>
          ) : (
            <div className="field">
              <span className="field-name">script</span>
              <CodePane
                label="Script"
                name="script"
                className="yaml-pane script-pane"
                text={hook.script ?? ""}
                onChange={(script) => set({ script })}
                problems={scriptProblems}
                readOnly={readOnly}
              />
            </div>
          )}
        </fieldset>
        {(props.problems?.length ?? 0) > 0 && (
          <ul className="problem-list field-problems" data-testid="hook-problems">
            {[...scriptProblems, ...others].map((p, i) => (
              <li key={i}>
                {p.line !== undefined ? `line ${p.line}, column ${p.column ?? 1}: ` : ""}
                {p.message}
              </li>
            ))}
          </ul>
        )}
        {props.placed.editable && canEdit && (
          <div className="row">
            <button onClick={() => props.move(-1)} disabled={!props.canMove.earlier} title="Run it before the hook in front of it">
              Move earlier
            </button>
            <button onClick={() => props.move(1)} disabled={!props.canMove.later} title="Run it after the hook behind it">
              Move later
            </button>
            <button className="danger push" onClick={props.remove}>
              Delete
            </button>
          </div>
        )}
        {hook.graphTool === undefined && <TrialPanel key={`${props.placed.editable}:${props.placed.index}`} hook={hook} upstream={props.upstream} valid={props.problems !== undefined && props.problems.length === 0} />}
      </div>
    </aside>
  );
}

// ---------------------------------------------------------------------------------------------
// The page

function FlowList(props: { flows: HookFlows | null; fileHooks: HookDef[]; current?: string; focusSignal: number; open: (id: string) => void }) {
  const all = [...(props.flows?.hooks.filter((h) => !h.editable).map((h) => h.hook) ?? []), ...props.fileHooks];
  const items = (props.flows?.upstreams ?? []).flatMap((upstream) =>
    METHODS.map((method) => ({ id: flowId(upstream, method), upstream, method, count: all.filter((h) => inFlow(h, upstream, method)).length })),
  );
  return (
    <ListBox
      focusSignal={props.focusSignal}
      label="Hook flows"
      items={items}
      keyOf={(i) => i.id}
      current={props.current}
      onOpen={(i) => props.open(i.id)}
      empty={props.flows ? "nothing is proxied (proxy.upstreams): hooks run on proxied traffic" : ""}
      render={(i) => (
        <div className="item">
          <div className="item-title">
            {i.upstream} <span className="muted">{i.method}</span>
          </div>
          <div className="item-sub">{i.count === 0 ? "no hooks" : `${i.count} hook${i.count === 1 ? "" : "s"}`}</div>
        </div>
      )}
    />
  );
}

export function HooksPage(props: { current?: string; focusSignal: number; open: (id: string) => void }) {
  const canEdit = useCan("authoring");
  const [flows, setFlows] = useState<HookFlows | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [fileHooks, setFileHooks] = useState<HookDef[]>([]);
  const [base, setBase] = useState<string | null>(null);
  const [dirty, setDirty] = useState(false);
  const [selected, setSelected] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<{ message: string; conflict: boolean; problems?: Problem[] } | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);

  const load = useCallback(async () => {
    try {
      const f = await api.hooks();
      setFlows(f);
      setFileHooks(f.hooks.filter((h) => h.editable).map((h) => h.hook));
      setBase(f.version);
      setDirty(false);
      setLoadError(null);
      setSaveError(null);
    } catch (e) {
      setLoadError((e as Error).message);
    }
  }, []);
  useEffect(() => {
    void load();
  }, [load]);

  const flow = props.current ? splitFlow(props.current) : null;
  // The first flow opens by itself.
  useEffect(() => {
    if (!props.current && flows?.upstreams.length) props.open(flowId(flows.upstreams[0], "tools/call"));
  }, [props.current, flows, props]);
  useEffect(() => setSelected(null), [props.current]);

  const problemsOf = useChecks(fileHooks);
  const configHooks: Placed[] = useMemo(
    () => (flows?.hooks ?? []).map((h, i) => ({ ...h, index: i })).filter((h) => !h.editable).map((h) => ({ hook: h.hook, editable: false, index: h.index, writtenAt: h.writtenAt })),
    [flows],
  );
  const placed: Placed[] = useMemo(() => [...configHooks, ...fileHooks.map((hook, index) => ({ hook, editable: true, index }))], [configHooks, fileHooks]);
  const chain = useMemo(() => (flow ? placed.filter((p) => inFlow(p.hook, flow.upstream, flow.method)) : []), [placed, flow?.upstream, flow?.method]);
  const pre = useMemo(() => chain.filter((p) => p.hook.phase === "pre"), [chain]);
  const post = useMemo(() => chain.filter((p) => p.hook.phase === "post"), [chain]);
  const firstProblem = useCallback((p: Placed) => (p.editable ? problemsOf(p.hook)?.[0]?.message : undefined), [problemsOf]);
  const current = chain.find((p) => keyOf(p) === selected) ?? null;

  const edit = (next: HookDef[], select?: string | null) => {
    setFileHooks(next);
    setDirty(true);
    setNote(null);
    setSaveError(null);
    if (select !== undefined) setSelected(select);
  };
  const ids = new Set(placed.map((p) => p.hook.id));
  const fresh = (stem: string) => {
    let n = 1;
    while (ids.has(`${stem}${n}`)) n += 1;
    return `${stem}${n}`;
  };
  const add = (phase: "pre" | "post") => {
    if (!flow) return;
    const hook: HookDef = { id: fresh(phase), method: flow.method, phase, upstream: flow.upstream, script: TEMPLATE[phase] };
    edit([...fileHooks, hook], `file:${fileHooks.length}`);
  };
  /** The file index of the editable hook of the same phase next to `at` in this flow's chain. */
  const neighbour = (at: Placed, by: -1 | 1): number | null => {
    const same = chain.filter((p) => p.editable && p.hook.phase === at.hook.phase);
    const i = same.findIndex((p) => p.index === at.index);
    return same[i + by]?.index ?? null;
  };
  const move = (at: Placed, by: -1 | 1) => {
    const other = neighbour(at, by);
    if (other === null) return;
    const next = [...fileHooks];
    [next[at.index], next[other]] = [next[other], next[at.index]];
    edit(next, `file:${other}`);
  };

  const problemCount = fileHooks.reduce((n, h) => n + (problemsOf(h)?.length ?? 0), 0);
  const checking = fileHooks.some((h) => problemsOf(h) === undefined);
  const whyNot = !flows
    ? "loading…"
    : !flows.save.allowed
      ? flows.save.why ?? "saving is not allowed here"
      : !canEdit
        ? `saving hooks ${needs("authoring")}`
        : checking
          ? "checking…"
          : problemCount > 0
            ? `${problemCount} problem${problemCount === 1 ? "" : "s"}`
            : null;

  const save = async () => {
    setSaving(true);
    setSaveError(null);
    try {
      const saved = await api.saveHooks(fileHooks, base);
      const keep = selected;
      await load();
      setSelected(keep);
      setNote(`saved ${saved.hooks} hook${saved.hooks === 1 ? "" : "s"} to ${saved.file}; served now`);
    } catch (e) {
      const conflict = e instanceof ApiError && e.status === 409;
      setSaveError({ message: (e as Error).message, conflict, problems: e instanceof ApiError ? e.problems : undefined });
    } finally {
      setSaving(false);
    }
  };

  const exportFlow = () => {
    if (!flow) return;
    const hooks = chain.map((p) => p.hook) as unknown as Json[];
    download(`hooks-${flow.upstream}-${flow.method.replace("/", "-")}.yaml`, `# A hook flow of mcpflow: ${flow.upstream} ${flow.method}\n${toYaml({ hooks })}`);
  };
  const importFlow = async (file: File) => {
    if (!flow) return;
    setNote(null);
    setSaveError(null);
    try {
      const checked = await api.checkFlow(await file.text());
      if (!checked.valid || !checked.hooks) {
        setSaveError({ message: `${file.name} was not imported: it does not pass the checks`, conflict: false, problems: checked.problems });
        return;
      }
      const taken = new Set(ids);
      const imported = checked.hooks.map((h) => {
        let id = h.id;
        for (let n = 2; taken.has(id); n++) id = `${h.id}-${n}`;
        taken.add(id);
        // Into this flow: its upstream and method, whatever the file's were.
        return { ...h, id, upstream: flow.upstream, method: flow.method };
      });
      edit([...fileHooks, ...imported], imported.length ? `file:${fileHooks.length}` : undefined);
      setNote(`imported ${imported.length} hook${imported.length === 1 ? "" : "s"} from ${file.name}: checked; save to serve them`);
    } catch (e) {
      setSaveError({ message: (e as Error).message, conflict: false });
    }
  };

  useEffect(() => {
    const on = (e: globalThis.KeyboardEvent) => {
      if (!(e.ctrlKey || e.metaKey) || e.altKey || e.key.toLowerCase() !== "s") return;
      e.preventDefault();
      if (!whyNot && dirty && !saving) void save();
    };
    window.addEventListener("keydown", on);
    return () => window.removeEventListener("keydown", on);
  });

  return (
    <>
      <nav className="sidebar" aria-label="Hook flows">
        <h2 className="side-title">Hook flows</h2>
        {loadError && <div className="error" role="alert">{loadError}</div>}
        <FlowList flows={flows} fileHooks={fileHooks} current={props.current} focusSignal={props.focusSignal} open={props.open} />
        {flows && (
          <p className="muted fine pad">
            {flows.file ? (
              <>
                saved to <code>{flows.file.split("/").pop()}</code>
              </>
            ) : (
              "no hooks file: add `hooksFile: hooks.yaml` under `authoring:` to save hooks"
            )}
          </p>
        )}
      </nav>
      {!flow ? (
        <div className="empty">{flows && flows.upstreams.length === 0 ? "Nothing is proxied: hooks run on the traffic of proxy.upstreams." : "Pick a hook flow."}</div>
      ) : (
        <div className="editor hooks-editor">
          <div className="edit-bar" role="toolbar" aria-label="Hook flow">
            <h2 className="edit-title">
              {flow.upstream} <span className="muted">{flow.method}</span>
              {dirty && (
                <span className="dirty" title="unsaved changes" data-testid="hooks-unsaved">
                  {" "}
                  ●
                </span>
              )}
            </h2>
            <button onClick={() => add("pre")} disabled={!canEdit || !flows?.save.allowed} title="A hook before the upstream call">
              Add pre hook
            </button>
            <button onClick={() => add("post")} disabled={!canEdit || !flows?.save.allowed} title="A hook after the upstream call">
              Add post hook
            </button>
            <button onClick={() => fileInput.current?.click()} disabled={!canEdit || !flows?.save.allowed} title="Add the hooks of a flow file to this flow">
              Import
            </button>
            <input
              ref={fileInput}
              type="file"
              accept=".yaml,.yml,.json,text/yaml,application/yaml"
              hidden
              aria-label="Import a hook flow file"
              onChange={(e) => {
                const f = e.target.files?.[0];
                e.target.value = "";
                if (f) void importFlow(f);
              }}
            />
            <button onClick={exportFlow} disabled={chain.length === 0} title="Download this flow's hooks as a file">
              Export
            </button>
            <button className="primary" onClick={() => void save()} disabled={!!whyNot || !dirty || saving} title={whyNot ?? (dirty ? "Save (Ctrl+S)" : "nothing to save")}>
              {saving ? "Saving…" : "Save"}
            </button>
            <span className="edit-status muted" data-testid="hooks-status">
              {whyNot ?? "valid"}
            </span>
          </div>
          {(note || saveError) && (
            <div className="edit-notes">
              {note && <div className="note" data-testid="hooks-saved">{note}</div>}
              {saveError && (
                <div className="error" role="alert" data-testid="hooks-save-error">
                  {saveError.message}
                  {saveError.problems && saveError.problems.length > 0 && (
                    <ul className="problem-list">
                      {saveError.problems.map((p, i) => (
                        <li key={i}>
                          <code>{p.path}</code> {p.line !== undefined ? `line ${p.line}, column ${p.column ?? 1}: ` : ""}
                          {p.message}
                        </li>
                      ))}
                    </ul>
                  )}
                  {saveError.conflict && (
                    <div className="row">
                      <button onClick={() => void load()}>Open the version on disk</button>
                    </div>
                  )}
                </div>
              )}
            </div>
          )}
          <div className="edit-split">
            <Chain upstream={flow.upstream} method={flow.method} pre={pre} post={post} problems={firstProblem} selected={selected} onSelect={setSelected} />
            {current ? (
              <HookPanel
                key={keyOf(current)}
                placed={current}
                upstream={flow.upstream}
                method={flow.method}
                problems={current.editable ? problemsOf(current.hook) : []}
                canMove={{ earlier: neighbour(current, -1) !== null, later: neighbour(current, 1) !== null }}
                change={(h) => edit(fileHooks.map((x, i) => (i === current.index ? h : x)))}
                move={(by) => move(current, by)}
                remove={() => edit(fileHooks.filter((_, i) => i !== current.index), null)}
              />
            ) : (
              <aside className="panel hook-panel" aria-label="Hook flow help">
                <div className="panel-body">
                  <p className="muted">
                    A request to <b>{flow.upstream}</b> passes the blocking <b>pre</b> hooks in order, then the upstream's {flow.method}, then the blocking <b>post</b> hooks. Fire-and-forget hooks (drawn below the path) run after the fact and change nothing.
                  </p>
                  <p className="muted">Select a hook to edit or try it, or add one.</p>
                </div>
              </aside>
            )}
          </div>
        </div>
      )}
    </>
  );
}
