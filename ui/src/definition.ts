// A tool definition being edited: drawn as a Graph (the shape GET /api/tools/{tool}/graph
// gives, derived here because a definition being typed may not compile), and the edits the
// graph makes to it (add, remove, connect, rename a node). Checking is the server's.
import type { Graph, GraphEdge, GraphNode, Json, Problem } from "./api";

export type Obj = { [key: string]: Json };
export interface Definition extends Obj {
  nodes: Json;
}

export function isObj(v: Json | undefined): v is Obj {
  return v !== null && v !== undefined && typeof v === "object" && !Array.isArray(v);
}

export function nodesOf(def: Json | undefined): Obj[] {
  if (!isObj(def) || !Array.isArray(def.nodes)) return [];
  return def.nodes.filter(isObj);
}

function text(v: Obj, key: string): string | undefined {
  const x = v[key];
  return typeof x === "string" ? x : undefined;
}

function label(n: Obj): string {
  switch (n.type) {
    case "mcp":
      return `${text(n, "server") ?? ""}.${text(n, "tool") ?? ""}`;
    case "transform":
      return isObj(n.transform) ? (text(n.transform, "expr") ?? "") : "";
    case "foreach":
      return text(n, "items") ?? "";
    case "call":
      return text(n, "tool") ?? "";
    default:
      return "";
  }
}

/** The nodes reached from `first` without passing `stop`. */
function reach(out: Map<string, string[]>, first: string | undefined, stop: string | undefined): string[] {
  const seen = new Set<string>();
  const order: string[] = [];
  const queue = first ? [first] : [];
  while (queue.length) {
    const n = queue.shift() as string;
    if (n === stop || seen.has(n)) continue;
    seen.add(n);
    queue.push(...(out.get(n) ?? []));
    order.push(n);
  }
  return order;
}

/** The definition drawn as the run API draws a served tool (crates/api/src/graph.rs). */
export function graphOf(def: Json | undefined): Graph {
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const out = new Map<string, string[]>();
  const scopes: { owner: string; branch?: string; first?: string; stop?: string }[] = [];
  const ids = new Set<string>();
  nodesOf(def).forEach((n, j) => {
    const id = text(n, "id") ?? `#${j}`;
    // Two nodes of one id cannot both be drawn; the check reports the duplicate.
    if (ids.has(id)) return;
    ids.add(id);
    const type = text(n, "type") ?? "?";
    const edge = (to: string | undefined, kind: GraphEdge["kind"], extra: Partial<GraphEdge> = {}) => {
      if (!to) return;
      out.set(id, [...(out.get(id) ?? []), to]);
      edges.push({ from: id, to, kind, ...extra });
    };
    if (type === "switch") {
      const conditions = Array.isArray(n.conditions) ? n.conditions : [];
      conditions.forEach((c, k) => {
        if (isObj(c)) edge(text(c, "next"), "condition", { condition: c.rule ?? null, order: k });
      });
      edge(text(n, "next"), "default");
    } else if (type === "parallel") {
      for (const [name, first] of Object.entries(isObj(n.branches) ? n.branches : {})) {
        if (typeof first !== "string") continue;
        edge(first, "branch", { branch: name });
        scopes.push({ owner: id, branch: name, first, stop: text(n, "next") });
      }
      edge(text(n, "next"), "join");
    } else if (type === "foreach") {
      edge(text(n, "body"), "body");
      edge(text(n, "next"), "next");
      scopes.push({ owner: id, first: text(n, "body"), stop: id });
    } else edge(text(n, "next"), "next");
    edge(text(n, "onError"), "onError");
    nodes.push({
      id,
      type,
      label: label(n),
      pointer: `/nodes/${j}`,
      calls: type === "call" ? (text(n, "tool") ?? null) : undefined,
      definition: n,
    });
  });
  const branches: Graph["branches"] = [];
  const foreachBodies: Graph["foreachBodies"] = [];
  for (const s of scopes) {
    const inside = reach(out, s.first, s.stop).filter((x) => ids.has(x));
    if (s.branch !== undefined) branches.push({ parallel: s.owner, branch: s.branch, nodes: inside });
    else foreachBodies.push({ foreach: s.owner, nodes: inside });
  }
  const tool = isObj(def) ? (text(def, "name") ?? "") : "";
  return {
    tool,
    description: isObj(def) ? text(def, "description") : undefined,
    nodes,
    edges,
    branches,
    foreachBodies,
    calls: nodes.filter((n) => n.type === "call").map((n) => ({ from: n.id, tool: n.calls ?? null })),
  };
}

/** A node of `type` with its required fields filled so that it reads as meant. */
export function skeleton(type: string, id: string): Obj {
  switch (type) {
    case "transform":
      return { id, type, transform: { expr: "$" } };
    case "switch":
      return { id, type, conditions: [] };
    case "mcp":
      return { id, type, server: "", tool: "", args: {} };
    case "call":
      return { id, type, tool: "", args: {} };
    case "foreach":
      return { id, type, items: "entry.items", body: "" };
    case "parallel":
      return { id, type, branches: {} };
    case "await":
      return { id, type, message: "", inputSchema: { type: "object" } };
    case "script":
      return { id, type, input: { expr: "$" }, source: "(input) => input" };
    default:
      return { id, type };
  }
}

export function freshId(def: Json, type: string): string {
  const taken = new Set(nodesOf(def).map((n) => n.id));
  for (let i = 1; ; i++) if (!taken.has(`${type}${i}`)) return `${type}${i}`;
}

function withNodes(def: Obj, nodes: Json[]): Obj {
  return { ...def, nodes };
}

export function addNode(def: Obj, node: Obj): Obj {
  const nodes = Array.isArray(def.nodes) ? def.nodes : [];
  // Before the exit, where a person would write it.
  const exit = nodes.findIndex((n) => isObj(n) && n.type === "exit");
  const at = exit < 0 ? nodes.length : exit;
  return withNodes(def, [...nodes.slice(0, at), node, ...nodes.slice(at)]);
}

export function removeNode(def: Obj, id: string): Obj {
  const nodes = Array.isArray(def.nodes) ? def.nodes : [];
  return withNodes(
    def,
    nodes.filter((n) => !(isObj(n) && n.id === id)),
  );
}

export function replaceNode(def: Obj, index: number, node: Obj): Obj {
  const nodes = Array.isArray(def.nodes) ? [...def.nodes] : [];
  nodes[index] = node;
  return withNodes(def, nodes);
}

/** An edge drawn from `from` to `to`: the node's `next` (a switch's default, a parallel's join). */
export function connect(def: Obj, from: string, to: string): Obj {
  const nodes = Array.isArray(def.nodes) ? def.nodes : [];
  return withNodes(
    def,
    nodes.map((n) => (isObj(n) && n.id === from && n.type !== "exit" ? { ...n, next: to } : n)),
  );
}

/** An edge removed: the field it stands for. */
export function disconnect(def: Obj, edge: GraphEdge): Obj {
  const nodes = Array.isArray(def.nodes) ? def.nodes : [];
  return withNodes(
    def,
    nodes.map((n) => {
      if (!isObj(n) || n.id !== edge.from) return n;
      const copy: Obj = { ...n };
      if (edge.kind === "onError") delete copy.onError;
      else if (edge.kind === "body") delete copy.body;
      else if (edge.kind === "condition" && Array.isArray(copy.conditions)) {
        copy.conditions = copy.conditions.filter((_, k) => k !== edge.order);
      } else if (edge.kind === "branch" && isObj(copy.branches) && edge.branch !== undefined) {
        const branches = { ...copy.branches };
        delete branches[edge.branch];
        copy.branches = branches;
      } else delete copy.next;
      return copy;
    }),
  );
}

/** Node `from` renamed `to`, and every reference to it (next, onError, body, branches, conditions). */
export function renameNode(def: Obj, from: string, to: string): Obj {
  const swap = (v: Json | undefined) => (v === from ? to : v);
  const nodes = Array.isArray(def.nodes) ? def.nodes : [];
  return withNodes(
    def,
    nodes.map((n) => {
      if (!isObj(n)) return n;
      const copy: Obj = { ...n };
      if (copy.id === from) copy.id = to;
      for (const key of ["next", "onError", "body"]) if (key in copy) copy[key] = swap(copy[key]) as Json;
      if (Array.isArray(copy.conditions)) {
        copy.conditions = copy.conditions.map((c) => (isObj(c) ? { ...c, next: swap(c.next) as Json } : c));
      }
      if (isObj(copy.branches)) {
        copy.branches = Object.fromEntries(Object.entries(copy.branches).map(([k, v]) => [k, swap(v) as Json]));
      }
      return copy;
    }),
  );
}

/** The problems of each node (by id), from their paths; the others apply to the whole tool. */
export function problemsByNode(def: Json | undefined, problems: Problem[]): { nodes: Record<string, Problem[]>; tool: Problem[] } {
  const nodes: Record<string, Problem[]> = {};
  const tool: Problem[] = [];
  const list = isObj(def) && Array.isArray(def.nodes) ? def.nodes : [];
  for (const p of problems) {
    const m = /^\/nodes\/(\d+)(\/|$)/.exec(p.path ?? "");
    const n = m ? list[Number(m[1])] : undefined;
    const id = isObj(n) && typeof n.id === "string" ? n.id : undefined;
    if (id !== undefined) (nodes[id] ??= []).push(p);
    else tool.push(p);
  }
  return { nodes, tool };
}
