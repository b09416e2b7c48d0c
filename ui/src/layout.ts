// A graph tool laid out top to bottom with dagre: parallel branches and foreach bodies become
// groups (dagre clusters, React Flow parent nodes), switch conditions label their edges.
import dagre from "@dagrejs/dagre";
import type { Edge, Node } from "@xyflow/react";
import type { Graph, GraphEdge, GraphNode, Json } from "./api";

export const NODE_W = 190;
export const NODE_H = 58;
const PAD = 18;
const GROUP_TOP = 26;

export interface FlowNodeData extends Record<string, unknown> {
  node: GraphNode;
}
export interface RoutedData extends Record<string, unknown> {
  points: { x: number; y: number }[];
  labelX?: number;
  labelY?: number;
}
export interface GroupData extends Record<string, unknown> {
  title: string;
  kind: "branch" | "body";
}

interface Scope {
  id: string;
  title: string;
  kind: "branch" | "body";
  owner: string;
  members: Set<string>;
}

/** A JSON Logic rule as a short text: `{"<": [{"var": "a"}, 3]}` → `a < 3`. */
export function logicText(rule: Json | undefined): string {
  if (rule === null || rule === undefined) return "";
  if (typeof rule !== "object") return JSON.stringify(rule);
  if (Array.isArray(rule)) return `[${rule.map(logicText).join(", ")}]`;
  const keys = Object.keys(rule);
  if (keys.length !== 1) return JSON.stringify(rule);
  const op = keys[0];
  const raw = rule[op];
  const args: Json[] = Array.isArray(raw) ? raw : [raw];
  if (op === "var") return String(args[0] ?? "");
  if (op === "!") return `!${logicText(args[0])}`;
  const infix = ["<", "<=", ">", ">=", "==", "===", "!=", "!==", "+", "-", "*", "/", "%", "in"];
  if (infix.includes(op) && args.length === 2) return `${logicText(args[0])} ${op} ${logicText(args[1])}`;
  if ((op === "and" || op === "or") && args.length > 0)
    return args.map((a) => `(${logicText(a)})`).join(op === "and" ? " && " : " || ");
  return `${op}(${args.map(logicText).join(", ")})`;
}

function edgeLabel(e: GraphEdge): string | undefined {
  switch (e.kind) {
    case "condition":
      return logicText(e.condition);
    case "default":
      return "default";
    case "branch":
      return e.branch;
    case "body":
      return "each item";
    case "onError":
      return "on error";
    default:
      return undefined;
  }
}

function scopesOf(graph: Graph): Scope[] {
  const scopes: Scope[] = [];
  for (const b of graph.branches) {
    scopes.push({
      id: `group:${b.parallel}:${b.branch}`,
      title: `${b.parallel} · branch ${b.branch}`,
      kind: "branch",
      owner: b.parallel,
      members: new Set(b.nodes),
    });
  }
  for (const f of graph.foreachBodies) {
    scopes.push({
      id: `group:${f.foreach}:body`,
      title: `${f.foreach} · for each item`,
      kind: "body",
      owner: f.foreach,
      members: new Set(f.nodes),
    });
  }
  return scopes;
}

/** The innermost scope holding `id` (the smallest one), if any. */
function innermost(scopes: Scope[], id: string, except?: string): Scope | undefined {
  let best: Scope | undefined;
  for (const s of scopes) {
    if (s.id === except || !s.members.has(id)) continue;
    if (!best || s.members.size < best.members.size) best = s;
  }
  return best;
}

export function layout(graph: Graph): { nodes: Node[]; edges: Edge[] } {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 36, ranksep: 52, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  const known = new Set(graph.nodes.map((n) => n.id));
  const scopes = scopesOf(graph);
  const parentOf = new Map<string, string>();
  for (const s of scopes) {
    g.setNode(s.id, { paddingTop: GROUP_TOP, paddingLeft: PAD, paddingRight: PAD, paddingBottom: PAD });
  }
  for (const s of scopes) {
    // A group sits inside the scope of the node that owns it (a foreach inside a branch).
    const outer = innermost(scopes, s.owner, s.id);
    if (outer && outer.members.size > s.members.size) {
      g.setParent(s.id, outer.id);
      parentOf.set(s.id, outer.id);
    }
  }
  for (const n of graph.nodes) {
    g.setNode(n.id, { width: NODE_W, height: NODE_H });
    const s = innermost(scopes, n.id);
    if (s) {
      g.setParent(n.id, s.id);
      parentOf.set(n.id, s.id);
    }
  }
  graph.edges.forEach((e, i) => {
    if (known.has(e.from) && known.has(e.to)) {
      const label = edgeLabel(e);
      g.setEdge(e.from, e.to, label ? { label, labelpos: "c", width: Math.min(220, label.length * 6.5 + 12), height: 18 } : {}, `e${i}`);
    }
  });
  dagre.layout(g);

  // dagre gives centres; React Flow wants top-left corners, children relative to their parent.
  const abs = new Map<string, { x: number; y: number; w: number; h: number }>();
  for (const id of g.nodes()) {
    const d = g.node(id);
    if (!d) continue;
    const w = d.width ?? NODE_W;
    const h = d.height ?? NODE_H;
    abs.set(id, { x: (d.x ?? 0) - w / 2, y: (d.y ?? 0) - h / 2, w, h });
  }
  const rel = (id: string) => {
    const a = abs.get(id) ?? { x: 0, y: 0, w: NODE_W, h: NODE_H };
    const p = parentOf.get(id);
    const pa = p ? abs.get(p) : undefined;
    return pa ? { x: a.x - pa.x, y: a.y - pa.y } : { x: a.x, y: a.y };
  };
  const depth = (id: string): number => {
    const p = parentOf.get(id);
    return p ? 1 + depth(p) : 0;
  };

  const nodes: Node[] = [];
  // Parents before children, as React Flow requires.
  const groups = [...scopes].sort((a, b) => depth(a.id) - depth(b.id));
  for (const s of groups) {
    const a = abs.get(s.id);
    nodes.push({
      id: s.id,
      type: "group",
      position: rel(s.id),
      data: { title: s.title, kind: s.kind } satisfies GroupData,
      style: { width: a?.w ?? NODE_W, height: a?.h ?? NODE_H },
      parentId: parentOf.get(s.id),
      selectable: false,
      focusable: false,
      draggable: false,
      className: `group group-${s.kind}`,
    });
  }
  for (const n of graph.nodes) {
    nodes.push({
      id: n.id,
      type: "flow",
      position: rel(n.id),
      data: { node: n } satisfies FlowNodeData,
      parentId: parentOf.get(n.id),
      draggable: false,
      width: NODE_W,
      height: NODE_H,
      ariaLabel: `${n.type} node ${n.id}`,
    });
  }
  // Edges follow dagre's routes (a loop back goes around the nodes it skips, not through them).
  const edges: Edge[] = [];
  graph.edges.forEach((e, i) => {
    if (!known.has(e.from) || !known.has(e.to)) return;
    const routed = g.edge(e.from, e.to, `e${i}`) as { points?: { x: number; y: number }[]; x?: number; y?: number } | undefined;
    edges.push({
      id: `e${i}:${e.from}->${e.to}`,
      source: e.from,
      target: e.to,
      label: edgeLabel(e),
      className: `edge-${e.kind}`,
      type: "routed",
      zIndex: 1,
      focusable: false,
      data: { points: routed?.points ?? [], labelX: routed?.x, labelY: routed?.y } satisfies RoutedData,
    });
  });
  return { nodes, edges };
}
