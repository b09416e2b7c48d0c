// A graph tool drawn with React Flow: node type by shape and colour, run state by border and
// animation, per-node timing and breakpoints on the nodes themselves.
import { memo, useEffect, useMemo, useState } from "react";
import type { KeyboardEvent } from "react";
import { Background, BaseEdge, Controls, Handle, Position, ReactFlow, useReactFlow, ReactFlowProvider, getSmoothStepPath, MarkerType } from "@xyflow/react";
import type { Connection, EdgeProps, Node, NodeProps } from "@xyflow/react";
import type { Graph, GraphEdge } from "./api";
import { layout } from "./layout";
import type { FlowNodeData, GroupData, RoutedData } from "./layout";
import type { NodeRun } from "./useRun";

export interface Overlay {
  runs: Record<string, NodeRun>;
  breakpoints: Record<string, string | null>;
  selected: string | null;
  /** A run is shown: a node without a state is pending (the run goes on) or skipped (it ended). */
  active: boolean;
  ended?: boolean;
  /** The tool's slowest nodes over its recent runs: rank (1 = slowest) and mean time per run. */
  slow?: Record<string, { rank: number; meanMs: number }>;
}

interface Drawn extends FlowNodeData {
  run?: NodeRun;
  breakpoint: boolean;
  condition: string | null;
  idle?: "pending" | "skipped";
  /** In the editor: handles to connect, and what the server found wrong with the node. */
  editable?: boolean;
  problem?: string;
  slow?: { rank: number; meanMs: number };
}

/** What the editor adds to a drawn graph. */
export interface Editing {
  onConnect: (from: string, to: string) => void;
  onDeleteNode: (id: string) => void;
  onDeleteEdge: (edge: GraphEdge) => void;
  /** The first problem of each node that has one. */
  problems: Record<string, string>;
  /** A change of it fits the view again (not every edit of a field should). */
  fitKey: string;
}

function fmtMs(ms: number): string {
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}
export { fmtMs };

const FlowNode = memo(function FlowNode(props: NodeProps) {
  const { node, run, breakpoint: bp, condition: cond, idle, editable, problem, slow } = props.data as Drawn;
  const state = run?.state ?? idle;
  return (
    <div
      className={`fnode-wrap${problem ? " has-problem" : ""}`}
      data-node={node.id}
      data-state={state ?? ""}
      data-problem={problem ?? undefined}
      data-slow={slow?.rank}
      title={problem ?? run?.lastError ?? node.label}
    >
      <Handle type="target" position={Position.Top} isConnectable={!!editable} />
      {problem && <span className="problem-mark" aria-label={`problem: ${problem}`}>!</span>}
      {bp && <span className={`bp${cond ? " bp-cond" : ""}`} title={cond ? `breaks when ${cond}` : "breakpoint"} aria-label="breakpoint" />}
      <div className={`fnode t-${node.type}${state ? ` s-${state}` : ""}${props.selected ? " selected" : ""}`}>
      <div className="fnode-head">
        <span className="fnode-type">{node.type}</span>
        <span className="fnode-id">{node.id}</span>
      </div>
      {(node.label || node.type === "call") && <div className="fnode-label">{node.type === "call" ? `→ ${node.calls ?? node.label}` : node.label}</div>}
      {slow && (
        <div className="fnode-slow" title={`slowest #${slow.rank} over the recent runs: ${fmtMs(slow.meanMs)} per run on average`}>
          slow #{slow.rank} · {fmtMs(slow.meanMs)}/run
        </div>
      )}
      {run && (
        <div className="fnode-run">
          <span className="state-chip">{state}</span>
          {run.executions > 0 && (
            <span className="timing">
              {run.executions > 1 ? `${run.executions}× · ` : ""}
              {fmtMs(run.totalMs)}
            </span>
          )}
        </div>
      )}
      </div>
      <Handle type="source" position={Position.Bottom} isConnectable={!!editable && node.type !== "exit"} />
    </div>
  );
});

function GroupNode(props: NodeProps) {
  const d = props.data as GroupData;
  return <div className="group-title">{d.title}</div>;
}

/** A smooth path through dagre's points (Catmull-Rom turned into cubic Béziers). */
function through(points: { x: number; y: number }[]): string {
  let d = `M${points[0].x},${points[0].y}`;
  for (let i = 0; i < points.length - 1; i++) {
    const p0 = points[Math.max(0, i - 1)];
    const p1 = points[i];
    const p2 = points[i + 1];
    const p3 = points[Math.min(points.length - 1, i + 2)];
    const c1 = { x: p1.x + (p2.x - p0.x) / 6, y: p1.y + (p2.y - p0.y) / 6 };
    const c2 = { x: p2.x - (p3.x - p1.x) / 6, y: p2.y - (p3.y - p1.y) / 6 };
    d += ` C${c1.x},${c1.y} ${c2.x},${c2.y} ${p2.x},${p2.y}`;
  }
  return d;
}

function RoutedEdge(props: EdgeProps) {
  const data = props.data as RoutedData | undefined;
  const points = data?.points ?? [];
  let path: string;
  let labelX = data?.labelX;
  let labelY = data?.labelY;
  if (points.length >= 2) {
    path = through(points);
  } else {
    const [p, x, y] = getSmoothStepPath(props);
    path = p;
    labelX ??= x;
    labelY ??= y;
  }
  return (
    <BaseEdge
      id={props.id}
      path={path}
      markerEnd={props.markerEnd}
      label={props.label}
      labelX={labelX}
      labelY={labelY}
      labelBgPadding={[4, 2]}
      labelBgBorderRadius={3}
    />
  );
}

const nodeTypes = { flow: FlowNode, group: GroupNode };
const edgeTypes = { routed: RoutedEdge };

type Props = { graph: Graph; overlay: Overlay; onSelect: (id: string | null) => void; edit?: Editing };

function Inner(props: Props) {
  const { nodes: laid, edges: routed } = useMemo(() => layout(props.graph), [props.graph]);
  const flow = useReactFlow();
  const edit = props.edit;
  const [edgeSelected, setEdgeSelected] = useState<string | null>(null);
  const edges = useMemo(() => (edit ? routed.map((e) => ({ ...e, selected: e.id === edgeSelected, focusable: true })) : routed), [routed, edit, edgeSelected]);
  // Overlay changes re-render the nodes: a new data object per node whose look changed.
  const nodes: Node[] = useMemo(
    () =>
      laid.map((n) =>
        n.type === "flow"
          ? {
              ...n,
              // Edges are drawn over the nodes (over groups); in the editor the nodes' handles
              // must be above the edges' ends to start a connection.
              ...(edit ? { zIndex: 2 } : {}),
              selected: props.overlay.selected === n.id,
              data: {
                ...(n.data as FlowNodeData),
                run: props.overlay.runs[n.id],
                breakpoint: n.id in props.overlay.breakpoints,
                condition: props.overlay.breakpoints[n.id] ?? null,
                idle: props.overlay.active ? (props.overlay.ended ? "skipped" : "pending") : undefined,
                editable: !!edit,
                problem: edit?.problems[n.id],
                slow: props.overlay.slow?.[n.id],
              } satisfies Drawn,
            }
          : n,
      ),
    [laid, props.overlay, edit],
  );
  const fit = edit ? edit.fitKey : laid;
  useEffect(() => {
    const t = window.setTimeout(() => void flow.fitView({ padding: 0.12, maxZoom: 1.1 }), 30);
    return () => window.clearTimeout(t);
  }, [fit, flow]);

  /** The graph's edge behind a drawn one (layout numbers them `e<index>:`). */
  const edgeOf = (id: string): GraphEdge | undefined => props.graph.edges[Number(/^e(\d+):/.exec(id)?.[1] ?? -1)];

  const onKeyDown = (e: KeyboardEvent) => {
    if (edit && (e.key === "Delete" || e.key === "Backspace") && !(e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement)) {
      const edge = edgeSelected ? edgeOf(edgeSelected) : undefined;
      if (edge) {
        e.preventDefault();
        setEdgeSelected(null);
        edit.onDeleteEdge(edge);
      } else if (props.overlay.selected) {
        e.preventDefault();
        edit.onDeleteNode(props.overlay.selected);
      }
      return;
    }
    // Tab moves between nodes (React Flow makes them focusable); Enter or Space selects one.
    if (e.key !== "Enter" && e.key !== " ") return;
    const el = (e.target as HTMLElement).closest(".react-flow__node") as HTMLElement | null;
    const id = el?.dataset.id;
    if (id && !id.startsWith("group:")) {
      e.preventDefault();
      props.onSelect(id);
    }
  };

  return (
    <div className="graph" onKeyDown={onKeyDown} data-tool={props.graph.tool}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        defaultEdgeOptions={{ markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16 } }}
        nodesDraggable={false}
        nodesConnectable={!!edit}
        edgesFocusable={!!edit}
        elementsSelectable
        deleteKeyCode={null}
        onConnect={(c: Connection) => edit && c.source && c.target && edit.onConnect(c.source, c.target)}
        onEdgeClick={(_, e) => edit && setEdgeSelected(e.id)}
        onNodeClick={(_, n) => {
          setEdgeSelected(null);
          if (n.type === "flow") props.onSelect(n.id);
        }}
        onPaneClick={() => {
          setEdgeSelected(null);
          props.onSelect(null);
        }}
        minZoom={0.2}
        maxZoom={2}
        fitView
      >
        <Background gap={24} size={1} />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}

export function GraphView(props: Props) {
  return (
    <ReactFlowProvider>
      <Inner {...props} />
    </ReactFlowProvider>
  );
}
