// One run, live: its detail from GET /api/runs/{id}, then its event stream (SSE, read with
// fetch so that it carries the API key under `auth:`: sse.ts). The stream replays what was
// recorded before following, so a dropped stream is simply opened again: events already seen
// (by their SSE id) are skipped, and the detail is read again.
import { useCallback, useEffect, useReducer, useRef } from "react";
import { api, ENDED } from "./api";
import type { Debug, PausedLine, RunDetail, RunRecord, RunStatus } from "./api";
import { openStream } from "./sse";
import type { SseEvent } from "./sse";

export type NodeState = "pending" | "running" | "paused" | "waiting" | "done" | "failed";

export interface NodeRun {
  state: NodeState;
  executions: number;
  totalMs: number;
  lastError?: string;
}

export interface RunView {
  id: string;
  detail: RunDetail | null;
  status: RunStatus | null;
  records: RunRecord[];
  running: Record<string, number>;
  paused: PausedLine[];
  debug: Debug | null;
  error: string | null;
  streaming: boolean;
  reconnects: number;
}

type Action =
  | { type: "detail"; detail: RunDetail }
  | { type: "events"; list: { name: string; data: Record<string, unknown> }[] }
  | { type: "debug"; debug: Debug; status?: string }
  | { type: "error"; message: string }
  | { type: "streaming"; on: boolean; reconnect?: boolean };

function initial(id: string): RunView {
  return {
    id,
    detail: null,
    status: null,
    records: [],
    running: {},
    paused: [],
    debug: null,
    error: null,
    streaming: false,
    reconnects: 0,
  };
}

/** Puts `add` in its place in `records` (sorted by index, one per index), in place. */
function place(records: RunRecord[], add: RunRecord): void {
  let i = records.length;
  while (i > 0 && records[i - 1].index > add.index) i--;
  if (i > 0 && records[i - 1].index === add.index) records[i - 1] = add;
  else records.splice(i, 0, add);
}

function reduce(s: RunView, a: Action): RunView {
  switch (a.type) {
    case "detail": {
      const d = a.detail;
      const ended = ENDED.includes(d.status) || d.status === "waiting";
      return {
        ...s,
        detail: d,
        status: d.status,
        records: d.history,
        running: ended ? {} : s.running,
        paused: d.debug?.paused ?? (ended ? [] : s.paused),
        debug: d.debug ?? s.debug,
        error: null,
      };
    }
    case "debug":
      // An action's answer can arrive after the events that followed the action (a step's
      // `resumed` and next `paused`): its breakpoints are current, its pauses may not be. The
      // event stream says where the run is paused; without one, the answer does.
      return s.streaming
        ? { ...s, debug: { ...a.debug, paused: s.paused } }
        : { ...s, debug: a.debug, paused: a.debug.paused, status: (a.status as RunStatus) ?? s.status };
    case "error":
      return { ...s, error: a.message };
    case "streaming":
      return { ...s, streaming: a.on, reconnects: s.reconnects + (a.reconnect ? 1 : 0) };
    case "events": {
      // A frame's worth of events at once: the records copied once, not once per event.
      let out: RunView = { ...s, records: [...s.records], running: { ...s.running } };
      for (const { name, data } of a.list) out = apply(out, name, data);
      return out;
    }
  }
}

/** One event on a state whose `records` and `running` this batch owns. */
function apply(s: RunView, name: string, e: Record<string, unknown>): RunView {
  switch (name) {
    case "runStarted":
      return { ...s, status: s.status ?? "running" };
    case "nodeStarted": {
      const node = String(e.nodeId);
      s.running[node] = (s.running[node] ?? 0) + 1;
      return s;
    }
    case "nodeFinished": {
      const record = e.record as RunRecord;
      if (s.running[record.nodeId]) s.running[record.nodeId] -= 1;
      if (!s.running[record.nodeId]) delete s.running[record.nodeId];
      place(s.records, record);
      return s;
    }
    case "paused": {
      const line: PausedLine = {
        index: Number(e.index),
        nodeId: String(e.nodeId),
        reason: String(e.reason ?? ""),
        branch: e.branch as string | undefined,
        item: e.item as number | undefined,
      };
      // One line of execution (the main flow, a branch, an item) pauses at one place.
      const others = s.paused.filter((p) => p.branch !== line.branch || p.item !== line.item);
      return { ...s, status: "paused", paused: [...others, line] };
    }
    case "resumed":
      return { ...s, status: "running", paused: [] };
    case "runFinished":
      return { ...s, status: (e.status as RunStatus) ?? s.status, running: {}, paused: [] };
    default:
      return s;
  }
}

/** Each node's state and timing, from the records and what is running or paused now. */
export function nodeRuns(view: RunView): Record<string, NodeRun> {
  const out: Record<string, NodeRun> = {};
  for (const r of view.records) {
    const n = (out[r.nodeId] ??= { state: "done", executions: 0, totalMs: 0 });
    n.executions += 1;
    n.totalMs += r.durationMs;
    if (r.error) {
      n.state = "failed";
      n.lastError = r.error;
    } else if (n.state !== "failed") n.state = "done";
  }
  for (const [node, count] of Object.entries(view.running)) {
    if (count > 0) (out[node] ??= { state: "running", executions: 0, totalMs: 0 }).state = "running";
  }
  for (const p of view.paused) {
    (out[p.nodeId] ??= { state: "paused", executions: 0, totalMs: 0 }).state = "paused";
  }
  // A waiting run waits at its await node, for a session's input.
  const waitingAt = view.status === "waiting" ? view.detail?.waiting?.nodeId : undefined;
  if (waitingAt) (out[waitingAt] ??= { state: "waiting", executions: 0, totalMs: 0 }).state = "waiting";
  // A run that failed outside any record (a limit, a timeout) names its node in the error.
  const failedAt = view.status === "failed" ? view.detail?.error?.nodeId : undefined;
  if (failedAt) {
    const n = (out[failedAt] ??= { state: "failed", executions: 0, totalMs: 0 });
    n.state = "failed";
    n.lastError ??= view.detail?.error?.message;
  }
  return out;
}

export function useRun(id: string) {
  const [view, dispatch] = useReducer(reduce, id, initial);
  const lastSeq = useRef(0);

  const refresh = useCallback(async () => {
    try {
      dispatch({ type: "detail", detail: await api.run(id) });
    } catch (e) {
      dispatch({ type: "error", message: (e as Error).message });
    }
  }, [id]);

  useEffect(() => {
    let source: { close: () => void } | null = null;
    let closed = false;
    let retry: number | undefined;
    lastSeq.current = 0;

    // Events are applied once per frame, however many arrive in it.
    let queue: { name: string; data: Record<string, unknown> }[] = [];
    let frame: number | undefined;
    let timer: number | undefined;
    const flush = () => {
      if (frame !== undefined) cancelAnimationFrame(frame);
      window.clearTimeout(timer);
      frame = timer = undefined;
      if (queue.length === 0) return;
      const list = queue;
      queue = [];
      dispatch({ type: "events", list });
    };
    const enqueue = (name: string, data: Record<string, unknown>) => {
      queue.push({ name, data });
      if (frame === undefined) {
        frame = requestAnimationFrame(flush);
        // A hidden page gets no frames: flush anyway.
        timer = window.setTimeout(flush, 200);
      }
    };

    const NAMES = ["runStarted", "nodeStarted", "nodeFinished", "paused", "resumed", "runFinished", "joined", "gap", "end"];
    const handle = (m: SseEvent) => {
      const name = m.name;
      if (!NAMES.includes(name)) return;
      const seq = Number(m.id);
      if (m.id && Number.isFinite(seq)) {
        if (seq <= lastSeq.current) return; // already seen before a reconnect
        lastSeq.current = seq;
      }
      let data: Record<string, unknown>;
      try {
        data = JSON.parse(m.data);
      } catch {
        return;
      }
      if (name === "end") {
        flush();
        stop();
        void refresh();
        return;
      }
      enqueue(name, data);
      if (name === "runFinished" || name === "joined" || name === "gap") {
        flush();
        void refresh();
      }
    };

    const stop = () => {
      closed = true;
      source?.close();
      source = null;
      dispatch({ type: "streaming", on: false });
    };

    const open = (again: boolean) => {
      if (closed) return;
      const stream = openStream(`/api/runs/${encodeURIComponent(id)}/events`, {
        onOpen: () => dispatch({ type: "streaming", on: true, reconnect: again }),
        onEvent: handle,
        onError: () => {
          // The stream dropped (or the run is not live any more): read the run again and,
          // unless it has ended, open the stream again; its replay catches up on what was
          // missed.
          if (source === stream) source = null;
          dispatch({ type: "streaming", on: false });
          if (closed) return;
          void api
            .run(id)
            .then((detail) => {
              dispatch({ type: "detail", detail });
              if (!closed && !ENDED.includes(detail.status) && detail.status !== "waiting") {
                retry = window.setTimeout(() => open(true), 500);
              }
            })
            .catch((e: Error) => {
              dispatch({ type: "error", message: e.message });
              if (!closed) retry = window.setTimeout(() => open(true), 2000);
            });
        },
      });
      source = stream;
    };

    void api
      .run(id)
      .then((detail) => {
        if (closed) return;
        dispatch({ type: "detail", detail });
        if (!ENDED.includes(detail.status) && detail.status !== "waiting") open(false);
      })
      .catch((e: Error) => dispatch({ type: "error", message: e.message }));

    return () => {
      closed = true;
      window.clearTimeout(retry);
      window.clearTimeout(timer);
      if (frame !== undefined) cancelAnimationFrame(frame);
      source?.close();
    };
  }, [id, refresh]);

  const setDebug = useCallback((debug: Debug, status?: string) => dispatch({ type: "debug", debug, status }), []);
  return { view, refresh, setDebug };
}
