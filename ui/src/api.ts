// The run API (crates/api/openapi.json), as the UI uses it.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type Schema = { [key: string]: Json };

export interface ToolSummary {
  name: string;
  description: string;
  nodes: number;
}

export interface GraphNode {
  id: string;
  type: string;
  label: string;
  pointer: string;
  position?: { file: string; line: number; col: number };
  calls?: string | null;
  definition?: { [key: string]: Json };
}

export interface GraphEdge {
  from: string;
  to: string;
  kind: "next" | "condition" | "default" | "branch" | "join" | "body" | "onError";
  condition?: Json;
  order?: number;
  branch?: string;
}

export interface Graph {
  tool: string;
  description?: string;
  inputSchema?: Schema;
  nodes: GraphNode[];
  edges: GraphEdge[];
  branches: { parallel: string; branch: string; nodes: string[] }[];
  foreachBodies: { foreach: string; nodes: string[] }[];
  calls: { from: string; tool: string | null }[];
}

/** An upstream MCP server and its tools, as `mcp` nodes call them. */
export interface UpstreamTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Schema;
  outputSchema?: Schema;
  annotations?: { [key: string]: Json };
}
export interface Upstream {
  name: string;
  status: "connected" | "unavailable";
  error?: string;
  server?: { name?: string | null; version?: string | null; protocolVersion?: string };
  tools: UpstreamTool[];
}

/** Where a tool's time goes over its recent ended runs, the slowest node first. */
export interface ToolTiming {
  tool: string;
  runs: number;
  nodes: { node: string; runs: number; executions: number; totalMs: number; meanMsPerRun: number; maxMs: number }[];
}

export type RunStatus =
  | "running"
  | "paused"
  | "waiting"
  | "succeeded"
  | "failed"
  | "stopped"
  | "cancelled"
  | "interrupted"
  | "expired";

export interface RunSummary {
  id: string;
  tool: string;
  status: RunStatus;
  startedAt: number;
  endedAt?: number | null;
  live: boolean;
}

export interface Breakpoint {
  node: string;
  condition?: string | null;
}

export interface PausedLine {
  index: number;
  nodeId: string;
  reason: string;
  branch?: string;
  item?: number;
}

export interface Debug {
  breakpoints: Breakpoint[];
  paused: PausedLine[];
  stopped: boolean;
}

export interface RunRecord {
  index: number;
  nodeId: string;
  type: string;
  startTime: number;
  endTime: number;
  durationMs: number;
  input?: Json;
  output?: Json;
  error?: string;
  attempts?: number;
  parent?: { node: string; index?: number; branch?: string; item?: number };
}

export interface Waiting {
  sessionId: string;
  runId: string;
  nodeId: string;
  message?: Json;
  inputSchema?: Schema;
  expiresAt?: number;
}

export interface RunDetail extends RunSummary {
  args?: Json;
  result?: Json;
  error?: { nodeId?: string; message?: string; kind?: string; code?: string } & { [k: string]: Json };
  waiting?: Waiting;
  debug?: Debug;
  historyComplete: boolean;
  history: RunRecord[];
  timing: { mainFlowMs: number; nodes: { [node: string]: { executions: number; totalMs: number } } };
}

export interface Session {
  id: string;
  runId: string;
  tool: string;
  nodeId: string;
  status: string;
  inputSchema?: Schema;
  createdAt: number;
  expiresAt: number;
}

/** A problem of a tool definition, at a JSON pointer into it (`/nodes/2/transform/expr`). */
export interface Problem {
  path?: string;
  elsewhere?: string;
  message: string;
  fix?: string;
  line?: number;
  column?: number;
  code?: string;
  position?: number;
  at?: string;
}

export interface NodeTypeDoc {
  type: string;
  does: string;
  fields: { name: string; required: boolean; type: Json; description?: string; default?: Json }[];
  schema?: Schema;
  examples?: { title: string; definition: string }[];
}

export interface Authoring {
  save: { allowed: boolean; why?: string };
  catalog: { nodeTypes: NodeTypeDoc[]; commonOptions: string[] };
  templates: { id: string; title: string; definition: string }[];
}

export interface ToolSource {
  tool: string;
  definition: { [key: string]: Json };
  text?: string | null;
  writtenAt?: string | null;
  readOnly?: string | null;
  version: string | null;
}

export interface Checked {
  valid: boolean;
  definition?: Json;
  problems: Problem[];
  warnings: Problem[];
}

export interface Saved {
  saved: string;
  file: string;
  created: boolean;
  version: string;
  tools: string[];
}

/** One hook, as in the config's `hooks:` (the keys the editor reads; others are kept as they are). */
export interface HookDef {
  id: string;
  method: "tools/call" | "tools/list";
  phase: "pre" | "post";
  appliesTo?: "proxied" | "graph" | "all";
  upstream?: string;
  tool?: string;
  script?: string;
  graphTool?: string;
  blocking?: boolean;
  onHookError?: "closed" | "open";
  timeoutMs?: number;
  enabled?: boolean;
  [key: string]: Json | undefined;
}

/** The hooks of the config on disk (GET /api/hooks). */
export interface HookFlows {
  save: { allowed: boolean; why?: string };
  file: string | null;
  version: string | null;
  upstreams: string[];
  graphTools: string[];
  hooks: { hook: HookDef; editable: boolean; writtenAt?: string | null }[];
}

/** What a hook made of a sample request (POST /api/hooks/try). */
export interface HookTrial {
  outcome: "passed" | "rewrote" | "rejected" | "failed";
  message?: string;
  rejects: boolean;
  blocking: boolean;
  params: Json;
  response?: Json;
  logs: { level: string; message: string }[];
  cpuMs: number;
}

export class ApiError extends Error {
  constructor(
    public status: number,
    message: string,
    public code?: string,
    public problems?: Problem[],
  ) {
    super(message);
  }
}

// Under `auth:` the API asks for a credential: the key a person typed in, kept for this tab only
// (sessionStorage: gone when the tab closes, never in a URL) and sent as `Authorization: Bearer`.
const KEY = "mcpflow.apiKey";

export function apiKey(): string | null {
  try {
    return window.sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function setApiKey(key: string | null): void {
  try {
    if (key) window.sessionStorage.setItem(KEY, key);
    else window.sessionStorage.removeItem(KEY);
  } catch {
    // Storage refused (a privacy mode): the key lasts as long as the page.
  }
  memoryKey = key;
}
let memoryKey: string | null = null;

/** The headers every request of the API carries: the key, when there is one. */
export function authHeaders(): Record<string, string> {
  const key = apiKey() ?? memoryKey;
  return key ? { authorization: `Bearer ${key}` } : {};
}

// Who is told when the API answers 401 (the key was refused, or is needed): the app asks again.
let unauthorized: (why: string) => void = () => {};
export function onUnauthorized(f: (why: string) => void): void {
  unauthorized = f;
}
export function notifyUnauthorized(why: string): void {
  unauthorized(why);
}

async function call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = authHeaders();
  const init: RequestInit = { method, headers, signal };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    headers["content-type"] = "application/json";
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  if (!response.ok) {
    const err = (parsed as { error?: { message?: string; code?: string; problems?: Problem[] } } | null)?.error;
    const error = new ApiError(response.status, err?.message ?? `${response.status} ${text}`, err?.code, err?.problems);
    if (response.status === 401 && path !== "/api/whoami") notifyUnauthorized(error.message);
    throw error;
  }
  return parsed as T;
}

/** Who the caller is (`GET /api/whoami`): what the UI offers follows its scopes. */
export interface Me {
  subject: string;
  via: "open" | "anonymous" | "apiKey" | "jwt";
  key: string | null;
  scopes: string[];
  accessControl: boolean;
}

/** Whether `me` may use `scope` (directly, or through `admin`). */
export function allows(me: Me, scope: string): boolean {
  return me.scopes.includes(scope) || me.scopes.includes("admin");
}

const enc = encodeURIComponent;

export const api = {
  whoami: () => call<Me>("GET", "/api/whoami"),
  tools: () => call<{ tools: ToolSummary[] }>("GET", "/api/tools").then((r) => r.tools),
  graph: (tool: string) => call<Graph>("GET", `/api/tools/${enc(tool)}/graph`),
  upstreams: () => call<{ upstreams: Upstream[] }>("GET", "/api/upstreams").then((r) => r.upstreams),
  timing: (tool: string) => call<ToolTiming>("GET", `/api/tools/${enc(tool)}/timing`),
  runs: (filter: { tool?: string; status?: string; limit?: number }) => {
    const q = new URLSearchParams();
    if (filter.tool) q.set("tool", filter.tool);
    if (filter.status) q.set("status", filter.status);
    q.set("limit", String(filter.limit ?? 100));
    return call<{ runs: RunSummary[] }>("GET", `/api/runs?${q}`).then((r) => r.runs);
  },
  run: (id: string) => call<RunDetail>("GET", `/api/runs/${enc(id)}`),
  start: (tool: string, args: Json, debug?: { pause?: boolean; breakpoints?: Breakpoint[] }) =>
    call<{ id: string; status: string; debug: Debug }>("POST", "/api/runs", { tool, args, debug }),
  context: (id: string, index?: number) =>
    call<{ index: number | null; context: Json; pausedAt?: { index: number; nodeId: string } }>(
      "GET",
      `/api/runs/${enc(id)}/context${index === undefined ? "" : `?index=${index}`}`,
    ),
  action: (id: string, action: "pause" | "resume" | "step" | "stop") =>
    call<{ id: string; status: string; debug: Debug }>("POST", `/api/runs/${enc(id)}/${action}`),
  setBreakpoint: (id: string, node: string, condition?: string) =>
    call<unknown>(
      "PUT",
      `/api/runs/${enc(id)}/breakpoints/${enc(node)}`,
      condition ? { condition } : {},
    ),
  clearBreakpoint: (id: string, node: string) =>
    call<unknown>("DELETE", `/api/runs/${enc(id)}/breakpoints/${enc(node)}`),
  sessions: () => call<{ sessions: Session[] }>("GET", "/api/sessions?status=waiting").then((r) => r.sessions),
  continueSession: (id: string, input: Json) =>
    call<{ runId: string; tool: string; status: string; result?: Json; error?: Json; waiting?: Waiting }>(
      "POST",
      `/api/sessions/${enc(id)}/continue`,
      { input },
    ),
  cancelSession: (id: string) => call<unknown>("POST", `/api/sessions/${enc(id)}/cancel`),
  authoring: () => call<Authoring>("GET", "/api/authoring"),
  source: (tool: string) => call<ToolSource>("GET", `/api/tools/${enc(tool)}/source`),
  check: (definition: string, signal?: AbortSignal) => call<Checked>("POST", "/api/authoring/check", { definition }, signal),
  save: (definition: string, base: string | null) => call<Saved>("POST", "/api/authoring/save", { definition, base }),
  hooks: () => call<HookFlows>("GET", "/api/hooks"),
  checkHook: (hook: HookDef, signal?: AbortSignal) =>
    call<{ valid: boolean; problems: Problem[] }>("POST", "/api/hooks/check", { hook }, signal),
  checkFlow: (flow: string) => call<{ valid: boolean; problems: Problem[]; hooks?: HookDef[] }>("POST", "/api/hooks/check", { flow }),
  tryHook: (body: { hook: HookDef; upstream: string; params?: Json; response?: Json }) => call<HookTrial>("POST", "/api/hooks/try", body),
  saveHooks: (hooks: HookDef[], base: string | null) =>
    call<{ file: string; created: boolean; version: string; hooks: number; tools: string[] }>("POST", "/api/hooks/save", { hooks, base }),
};

export const ENDED: RunStatus[] = ["succeeded", "failed", "stopped", "cancelled", "interrupted", "expired"];
