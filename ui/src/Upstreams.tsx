// The upstream MCP servers the config declares and their tools with their schemas
// (GET /api/upstreams): what a graph's `mcp` nodes can call. `#/upstreams/SERVER/TOOL` opens one
// tool: its description, annotations, arguments (from its inputSchema) and both schemas whole.
import { useEffect, useState } from "react";
import { api } from "./api";
import type { Json, Schema, Upstream, UpstreamTool } from "./api";
import { ListBox } from "./ListBox";

let cached: Promise<Upstream[]> | null = null;

/** The upstreams, listed once per page when first `wanted` (listing may start them); `again`
 * lists them anew. */
function useUpstreams(wanted: boolean) {
  const [upstreams, setUpstreams] = useState<Upstream[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [round, setRound] = useState(0);
  useEffect(() => {
    if (!wanted) return;
    let live = true;
    cached ??= api.upstreams();
    const mine = cached;
    mine
      .then((u) => live && (setUpstreams(u), setError(null)))
      .catch((e: Error) => {
        if (cached === mine) cached = null;
        if (live) setError(e.message);
      });
    return () => {
      live = false;
    };
  }, [round, wanted]);
  const again = () => {
    cached = null;
    setUpstreams(null);
    setRound((n) => n + 1);
  };
  return { upstreams, error, again };
}

/** `SERVER/TOOL` (the route's id) and back. */
function upstreamToolId(server: string, tool: string): string {
  return `${server}/${tool}`;
}
function split(id: string): [string, string] {
  const at = id.indexOf("/");
  return at < 0 ? [id, ""] : [id.slice(0, at), id.slice(at + 1)];
}

type Item = { server: string; tool: UpstreamTool };

function UpstreamList(props: { upstreams: Upstream[] | null; error: string | null; current?: string; focusSignal: number; open: (id: string) => void; again: () => void }) {
  const items: Item[] = (props.upstreams ?? []).flatMap((u) => u.tools.map((tool) => ({ server: u.name, tool })));
  const down = (props.upstreams ?? []).filter((u) => u.status !== "connected");
  return (
    <>
      {props.error && <div className="error" role="alert">{props.error}</div>}
      {down.map((u) => (
        <div key={u.name} className="error" data-testid="upstream-down">
          <b>{u.name}</b> unavailable: {u.error}
        </div>
      ))}
      {props.upstreams === null && !props.error && <p className="muted pad">listing the upstreams' tools…</p>}
      <ListBox
        focusSignal={props.focusSignal}
        label="Upstream tools"
        items={items}
        keyOf={(i) => upstreamToolId(i.server, i.tool.name)}
        current={props.current}
        onOpen={(i) => props.open(upstreamToolId(i.server, i.tool.name))}
        empty={props.upstreams === null ? "" : "no upstream servers (mcpServers) in this config"}
        render={(i) => (
          <div className="item">
            <div className="item-title">{i.tool.name}</div>
            <div className="item-sub">
              {i.server}
              {i.tool.description ? ` · ${i.tool.description}` : ""}
            </div>
          </div>
        )}
      />
      <div className="pad">
        <button className="small" onClick={props.again} title="List the upstreams' tools again">
          List again
        </button>
      </div>
    </>
  );
}

function typeOf(p: Json): string {
  if (!p || typeof p !== "object" || Array.isArray(p)) return "any";
  if (Array.isArray(p.enum)) return `one of ${p.enum.map((v) => JSON.stringify(v)).join(", ")}`;
  if (Array.isArray(p.type)) return p.type.join(" | ");
  if (typeof p.type === "string") return p.type === "array" && p.items && typeof p.items === "object" && !Array.isArray(p.items) && typeof p.items.type === "string" ? `array of ${p.items.type}` : p.type;
  return "any";
}

function Arguments(props: { schema: Schema }) {
  const properties = (props.schema.properties ?? {}) as { [k: string]: Json };
  const required = new Set(Array.isArray(props.schema.required) ? (props.schema.required as string[]) : []);
  const names = Object.keys(properties);
  if (names.length === 0) {
    return <p className="muted">{props.schema.additionalProperties === false ? "no arguments" : "any arguments (no properties declared)"}</p>;
  }
  return (
    <table className="args-table" aria-label="Arguments">
      <tbody>
        {names.map((n) => {
          const p = properties[n];
          const desc = p && typeof p === "object" && !Array.isArray(p) && typeof p.description === "string" ? p.description : "";
          return (
            <tr key={n} data-arg={n}>
              <td>
                <code>{n}</code>
                {required.has(n) && <span className="req" aria-label="required">*</span>}
              </td>
              <td className="muted">{typeOf(p)}</td>
              <td>{desc}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function UpstreamToolView(props: { upstreams: Upstream[] | null; id: string }) {
  const [server, name] = split(props.id);
  if (props.upstreams === null) return <div className="empty">listing the upstreams' tools…</div>;
  const upstream = props.upstreams.find((u) => u.name === server);
  const tool = upstream?.tools.find((t) => t.name === name);
  if (!upstream || !tool) return <div className="empty">no tool {name} on an upstream {server}</div>;
  const annotations = Object.entries(tool.annotations ?? {});
  return (
    <div className="main-split single">
      <section className="panel wide upstream-tool" aria-label={`Upstream tool ${tool.name}`}>
        <div className="panel-head">
          <h2>
            {tool.name} <span className="muted">on {upstream.name}</span>
          </h2>
          {tool.title && <p>{tool.title}</p>}
          <p className="muted">{tool.description}</p>
          {upstream.server && (
            <p className="muted fine">
              {upstream.server.name ?? upstream.name} {upstream.server.version ?? ""} · MCP {upstream.server.protocolVersion}
            </p>
          )}
        </div>
        <div className="panel-body">
          <p className="muted">
            In a graph: <code>{`{type: mcp, server: ${upstream.name}, tool: ${tool.name}, args: {…}}`}</code>
          </p>
          {annotations.length > 0 && (
            <div className="chips">
              {annotations.map(([k, v]) => (
                <span key={k} className="chip">
                  {k}: {JSON.stringify(v)}
                </span>
              ))}
            </div>
          )}
          <h4>arguments</h4>
          <Arguments schema={tool.inputSchema} />
          <h4>input schema</h4>
          <pre className="json" aria-label="input schema" tabIndex={0}>
            {JSON.stringify(tool.inputSchema, null, 2)}
          </pre>
          {tool.outputSchema && (
            <>
              <h4>output schema</h4>
              <pre className="json" aria-label="output schema" tabIndex={0}>
                {JSON.stringify(tool.outputSchema, null, 2)}
              </pre>
            </>
          )}
        </div>
      </section>
    </div>
  );
}

/** The whole view: the upstreams' tools beside the one open (`current`, `SERVER/TOOL`). */
export function UpstreamsPage(props: { current?: string; focusSignal: number; open: (id: string) => void }) {
  const { upstreams, error, again } = useUpstreams(true);
  return (
    <>
      <nav className="sidebar" aria-label="Upstream tools list">
        <h2 className="side-title">Upstream tools</h2>
        <UpstreamList upstreams={upstreams} error={error} again={again} current={props.current} focusSignal={props.focusSignal} open={props.open} />
      </nav>
      {props.current ? (
        <UpstreamToolView key={props.current} id={props.current} upstreams={upstreams} />
      ) : (
        <div className="empty">Pick an upstream tool to see its description and schemas.</div>
      )}
    </>
  );
}
