// The graph editor (#/edit/TOOL, #/new): the tool drawn from its definition, its YAML beside it
// and the selected node's fields as a form, all three kept in step. A graph or form edit
// rewrites the YAML; a YAML edit is parsed by the server (the loader's parser) and redraws the
// graph, and YAML that does not parse is shown as an error while the graph keeps its last good
// state. Every change is checked by the server as it is typed (the authoring tools' checks) and
// each problem is shown on the node it belongs to. Undo and redo; save through the authoring
// tools' save path, with the version of the file as opened so a change on disk is reported.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { ApiError, api } from "./api";
import type { Authoring, Json, NodeTypeDoc, Problem } from "./api";
import { addNode, connect, disconnect, freshId, graphOf, isObj, nodesOf, problemsByNode, removeNode, renameNode, replaceNode, skeleton } from "./definition";
import type { Obj } from "./definition";
import { GraphView } from "./GraphView";
import type { Editing, Overlay } from "./GraphView";
import { JsonField, NodeForm } from "./NodeForm";
import { CodePane } from "./CodePane";
import { toYaml } from "./yaml";

let authoring: Promise<Authoring> | null = null;
function authoringInfo(): Promise<Authoring> {
  authoring ??= api.authoring().catch((e: Error) => {
    authoring = null;
    throw e;
  });
  return authoring;
}

/** One state of the document: the definition the graph shows, the text the YAML pane shows. */
interface Doc {
  def: Obj | null;
  text: string;
}

/** Edits of one field within this long are one step of undo. */
const COALESCE_MS = 1200;
const CHECK_DELAY_MS = 250;
const ADDABLE = ["transform", "switch", "mcp", "call", "foreach", "parallel", "await", "script"];

/** A file of tools (`tools:` with one item, as a save writes it) read as that one tool's text. */
export function toolText(file: string): string {
  const lines = file.replace(/\r\n/g, "\n").split("\n");
  const at = lines.findIndex((l) => l.trim() === "tools:");
  if (at < 0) return file;
  const rest = lines.slice(at + 1);
  while (rest.length && !rest[0].trim()) rest.shift();
  if (!rest[0]?.startsWith("  - ")) return file;
  const out = [rest[0].slice(4)];
  for (const line of rest.slice(1)) {
    if (!line.trim()) out.push("");
    else if (line.startsWith("    ")) out.push(line.slice(4));
    else return file;
  }
  return out.join("\n");
}

function useHistory(initial: Doc) {
  const [state, setState] = useState({ doc: initial, past: [] as Doc[], future: [] as Doc[], key: "", at: 0 });
  const commit = useCallback((doc: Doc, key: string) => {
    setState((s) => {
      const now = Date.now();
      const merge = key !== "" && key === s.key && now - s.at < COALESCE_MS;
      return { doc, past: merge ? s.past : [...s.past.slice(-199), s.doc], future: [], key, at: now };
    });
  }, []);
  /** The definition the current text parses to: no step of its own. */
  const parsed = useCallback((text: string, def: Obj) => {
    setState((s) => (s.doc.text === text ? { ...s, doc: { ...s.doc, def } } : s));
  }, []);
  const undo = useCallback(() => {
    setState((s) => (s.past.length ? { doc: s.past[s.past.length - 1], past: s.past.slice(0, -1), future: [s.doc, ...s.future], key: "", at: 0 } : s));
  }, []);
  const redo = useCallback(() => {
    setState((s) => (s.future.length ? { doc: s.future[0], past: [...s.past, s.doc], future: s.future.slice(1), key: "", at: 0 } : s));
  }, []);
  return { ...state, commit, parsed, undo, redo };
}

function download(name: string, text: string) {
  const url = URL.createObjectURL(new Blob([text.endsWith("\n") ? text : `${text}\n`], { type: "application/yaml" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = `${name || "tool"}.yaml`;
  document.body.append(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 1000);
}

interface Opened {
  doc: Doc;
  /** The tool's name on disk and its file's version when opened; null for a new tool. */
  original: string | null;
  base: string | null;
  readOnly: string | null;
  writtenAt: string | null;
}

export function EditorView(props: { tool?: string; template?: string; onSaved: (tool: string) => void }) {
  const [info, setInfo] = useState<Authoring | null>(null);
  const [opened, setOpened] = useState<Opened | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Opening the tool again (after a save refused because it changed on disk).
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    let live = true;
    setOpened(null);
    Promise.all([authoringInfo(), props.tool ? api.source(props.tool) : Promise.resolve(null)])
      .then(([a, source]) => {
        if (!live) return;
        setInfo(a);
        if (source) {
          setOpened({
            doc: { def: source.definition, text: source.text ?? toYaml(source.definition) },
            original: source.tool,
            base: source.version,
            readOnly: source.readOnly ?? null,
            writtenAt: source.writtenAt ?? null,
          });
        } else {
          const t = a.templates.find((x) => x.id === props.template) ?? a.templates[0];
          setOpened({ doc: { def: null, text: t?.definition ?? "name: new_tool\nnodes: []\n" }, original: null, base: null, readOnly: null, writtenAt: null });
        }
      })
      .catch((e: Error) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [props.tool, props.template, generation]);
  if (error) return <div className="empty">{error}</div>;
  if (!info || !opened) return <div className="empty">loading the editor…</div>;
  return (
    <Editor
      key={`${props.tool ?? ""}/${props.template ?? ""}/${generation}`}
      info={info}
      opened={opened}
      onSaved={props.onSaved}
      reopen={props.tool ? () => setGeneration((g) => g + 1) : undefined}
    />
  );
}

function Editor(props: { info: Authoring; opened: Opened; onSaved: (tool: string) => void; reopen?: () => void }) {
  const h = useHistory(props.opened.doc);
  const { doc } = h;
  const [original, setOriginal] = useState(props.opened.original);
  const [base, setBase] = useState(props.opened.base);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [checkedText, setCheckedText] = useState<string | null>(null);
  const [parseError, setParseError] = useState<Problem | null>(null);
  const [checkError, setCheckError] = useState<string | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [tab, setTab] = useState<"node" | "tool" | "problems">("node");
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<{ message: string; changed: boolean } | null>(null);
  const [savedNote, setSavedNote] = useState<string | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  // The text as last opened or saved: anything else is an unsaved change.
  const [savedText, setSavedText] = useState(props.opened.original ? props.opened.doc.text : null);
  const dirty = doc.text !== savedText;
  useEffect(() => {
    if (!dirty) return;
    // Closing or reloading the page would lose the edits: the browser asks first.
    const on = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener("beforeunload", on);
    return () => window.removeEventListener("beforeunload", on);
  }, [dirty]);

  // Checked by the server as it is typed; an answer for text no longer shown is dropped.
  const current = useRef(doc.text);
  current.current = doc.text;
  useEffect(() => {
    const text = doc.text;
    const t = window.setTimeout(() => {
      api
        .check(text)
        .then((r) => {
          if (current.current !== text) return;
          setCheckError(null);
          setCheckedText(text);
          if (r.definition === null || r.definition === undefined) {
            setParseError(r.problems[0] ?? { message: "the YAML does not parse" });
            setProblems(r.problems);
            return;
          }
          setParseError(null);
          setProblems(r.problems);
          if (isObj(r.definition)) h.parsed(text, r.definition);
        })
        .catch((e: Error) => current.current === text && setCheckError(e instanceof ApiError && e.status === 403 ? `checking needs the authoring scope: ${e.message}` : e.message));
    }, CHECK_DELAY_MS);
    return () => window.clearTimeout(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [doc.text]);

  const def = doc.def;
  const graph = useMemo(() => graphOf(def ?? undefined), [def]);
  const byNode = useMemo(() => problemsByNode(def ?? undefined, parseError ? [] : problems), [def, problems, parseError]);
  const nodes = nodesOf(def ?? undefined);
  const ids = nodes.map((n) => (typeof n.id === "string" ? n.id : "")).filter(Boolean);
  const name = isObj(def) && typeof def.name === "string" ? def.name : "";
  const index = nodes.findIndex((n) => n.id === selected);
  const node = index >= 0 ? nodes[index] : undefined;
  const types = props.info.catalog.nodeTypes;
  const docOf = (type: Json | undefined): NodeTypeDoc | undefined => types.find((t) => t.type === type);

  const edit = (next: Obj, key = "") => {
    setSavedNote(null);
    h.commit({ def: next, text: toYaml(next) }, key);
  };
  const editing: Editing = useMemo(
    () => ({
      onConnect: (from, to) => def && edit(connect(def, from, to)),
      onDeleteNode: (id) => {
        if (!def) return;
        edit(removeNode(def, id));
        setSelected(null);
      },
      onDeleteEdge: (e) => def && edit(disconnect(def, e)),
      problems: Object.fromEntries(Object.entries(byNode.nodes).map(([id, ps]) => [id, ps[0].message])),
      // A new shape is fitted to the view; an edit of a field is not.
      fitKey: `${graph.nodes.map((n) => n.id).join(",")}|${graph.edges.map((e) => `${e.from}>${e.to}`).join(",")}`,
    }),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [def, byNode, graph],
  );
  const overlay: Overlay = useMemo(() => ({ runs: {}, breakpoints: {}, selected, active: false }), [selected]);

  const add = (type: string) => {
    if (!def) return;
    const id = freshId(def, type);
    edit(addNode(def, skeleton(type, id)));
    setSelected(id);
    setTab("node");
  };

  const checked = checkedText === doc.text;
  const newName = name !== original;
  const whyNot = !props.info.save.allowed
    ? props.info.save.why ?? "saving is not allowed here"
    : parseError
      ? "the YAML does not parse"
      : !checked
        ? "checking…"
        : problems.length > 0
          ? `${problems.length} problem${problems.length === 1 ? "" : "s"} to fix first`
          : props.opened.readOnly && !newName
            ? props.opened.readOnly
            : null;

  const save = async () => {
    setSaving(true);
    setSaveError(null);
    setSavedNote(null);
    try {
      const saved = await api.save(doc.text, newName ? null : base);
      setBase(saved.version);
      setOriginal(saved.saved);
      setSavedText(doc.text);
      setSavedNote(`saved to ${saved.file}; served now`);
      props.onSaved(saved.saved);
    } catch (e) {
      const err = e as ApiError;
      if (err.problems) setProblems(err.problems);
      setSaveError({ message: err.message, changed: err.code === "changed_on_disk" });
    } finally {
      setSaving(false);
    }
  };

  const importFile = async (file: File) => {
    const text = toolText(await file.text());
    setOriginal(null);
    setBase(null);
    setSavedNote(`imported ${file.name}: checked before it can be saved as a new tool`);
    h.commit({ def: doc.def, text }, "");
  };

  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA")) return;
      if (!(e.ctrlKey || e.metaKey) || e.altKey) return;
      const k = e.key.toLowerCase();
      if (k === "z" && !e.shiftKey) {
        e.preventDefault();
        h.undo();
      } else if (k === "y" || (k === "z" && e.shiftKey)) {
        e.preventDefault();
        h.redo();
      } else if (k === "s") {
        e.preventDefault();
        if (!whyNot && !saving) void save();
      }
    };
    window.addEventListener("keydown", on);
    return () => window.removeEventListener("keydown", on);
  });

  const nodeDoc = node ? docOf(node.type) : undefined;
  return (
    <div className="editor">
      <div className="edit-bar" role="toolbar" aria-label="Editor">
        <h2 className="edit-title">
          {original ? (
            <a href={`#/tools/${encodeURIComponent(original)}`} title="Back to the tool">
              {name || original}
            </a>
          ) : (
            <span>{name || "new tool"}</span>
          )}
          {newName && <span className="muted"> (new)</span>}
          {dirty && (
            <span className="dirty" title="unsaved changes" data-testid="unsaved">
              {" "}
              ●
            </span>
          )}
        </h2>
        <button onClick={h.undo} disabled={h.past.length === 0} title="Undo (Ctrl+Z)">
          Undo
        </button>
        <button onClick={h.redo} disabled={h.future.length === 0} title="Redo (Ctrl+Y)">
          Redo
        </button>
        <button onClick={() => fileInput.current?.click()} title="Open a tool's YAML file as a new tool">
          Import
        </button>
        <input
          ref={fileInput}
          type="file"
          accept=".yaml,.yml,.json,text/yaml,application/yaml"
          hidden
          aria-label="Import a tool file"
          onChange={(e) => {
            const f = e.target.files?.[0];
            e.target.value = "";
            if (f) void importFile(f);
          }}
        />
        <button onClick={() => download(name, doc.text)} title="Download this tool's YAML">
          Export
        </button>
        <button className="primary" onClick={() => void save()} disabled={!!whyNot || saving} title={whyNot ?? "Save (Ctrl+S)"}>
          {saving ? "Saving…" : "Save"}
        </button>
        <span className="edit-status muted" data-testid="edit-status">
          {whyNot ?? "valid"}
        </span>
      </div>
      <div className="edit-bar add-bar" role="toolbar" aria-label="Add a node">
        <span className="muted">add</span>
        {ADDABLE.map((t) => (
          <button key={t} className={`small add-${t}`} onClick={() => add(t)} disabled={!def} title={docOf(t)?.does}>
            <span className={`type-dot t-${t}`} /> {t}
          </button>
        ))}
      </div>
      {(saveError || savedNote || checkError || props.opened.readOnly) && (
        <div className="edit-notes">
          {saveError && (
            <div className="error" role="alert" data-testid="save-error">
              {saveError.message}
              {saveError.changed && props.reopen && !newName && (
                <button className="small push-left" onClick={props.reopen} title="Discard your edits and open the tool as it is on disk now">
                  Open the version on disk
                </button>
              )}
            </div>
          )}
          {savedNote && (
            <div className="note" data-testid="saved">
              {savedNote}
            </div>
          )}
          {checkError && <div className="error" role="alert">{checkError}</div>}
          {props.opened.readOnly && !newName && (
            <div className="note">
              {props.opened.writtenAt ? `written at ${props.opened.writtenAt}: ` : ""}
              {props.opened.readOnly}
            </div>
          )}
        </div>
      )}
      <div className="edit-split">
        {def ? (
          <GraphView graph={graph} overlay={overlay} onSelect={(id) => {
            setSelected(id);
            if (id) setTab("node");
          }} edit={editing} />
        ) : (
          <div className="empty">{parseError ? "the YAML does not parse yet" : "reading the YAML…"}</div>
        )}
        <section className="yaml-col" aria-label="Tool YAML">
          <CodePane
            label="YAML"
            name="yaml"
            text={doc.text}
            problems={parseError ? [parseError] : problems}
            onChange={(text) => {
              setSavedNote(null);
              h.commit({ def: doc.def, text }, "yaml");
            }}
          />
          {parseError && (
            <div className="error yaml-error" role="alert" data-testid="yaml-error">
              {parseError.line ? `line ${parseError.line}, column ${parseError.column}: ` : ""}
              {parseError.message}
              <br />
              <span className="muted">the graph shows the last YAML that parsed</span>
            </div>
          )}
        </section>
        <aside className="panel edit-panel" aria-label="Editor panel">
          <div className="tabs" role="tablist">
            {(
              [
                ["node", "Node"],
                ["tool", "Tool"],
                ["problems", `Problems (${problems.length})`],
              ] as const
            ).map(([k, title]) => (
              <button key={k} role="tab" aria-selected={tab === k} className={tab === k ? "tab on" : "tab"} onClick={() => setTab(k)}>
                {title}
              </button>
            ))}
          </div>
          <div className="panel-body">
            {tab === "node" &&
              (node && def ? (
                <>
                  <h3>
                    <span className={`type-dot t-${String(node.type)}`} /> {String(node.id)} <span className="muted">{String(node.type)}</span>
                    <button className="small danger push" onClick={() => editing.onDeleteNode(String(node.id))} title="Delete the node (Delete)">
                      Delete node
                    </button>
                  </h3>
                  {nodeDoc && <p className="node-doc">{nodeDoc.does}</p>}
                  <NodeForm
                    key={`${index}`}
                    schema={nodeDoc?.schema}
                    node={node}
                    pointer={`/nodes/${index}`}
                    problems={byNode.nodes[String(node.id)] ?? []}
                    ids={ids.filter((i) => i !== node.id)}
                    common={props.info.catalog.commonOptions}
                    onChange={(next) => {
                      let d = replaceNode(def, index, next);
                      if (typeof next.id === "string" && next.id !== node.id && typeof node.id === "string") {
                        d = renameNode(d, node.id, next.id);
                        setSelected(next.id);
                      }
                      edit(d, `node:${index}`);
                    }}
                  />
                  {nodeDoc?.examples && nodeDoc.examples.length > 0 && (
                    <details className="examples">
                      <summary>examples of {nodeDoc.type} nodes</summary>
                      {nodeDoc.examples.map((ex) => (
                        <div key={ex.title}>
                          <h4>{ex.title}</h4>
                          <pre className="json">{ex.definition}</pre>
                        </div>
                      ))}
                    </details>
                  )}
                </>
              ) : (
                <p className="muted">Select a node to edit its fields, or add one. Connect two nodes by dragging from the bottom of one to the top of the other; select a node or an edge and press Delete to remove it.</p>
              ))}
            {tab === "tool" && def && <ToolFields def={def} onChange={(d) => edit(d, "tool")} problems={byNode.tool} />}
            {tab === "problems" && (
              <ProblemList
                problems={problems}
                def={def}
                onPick={(id) => {
                  setSelected(id);
                  setTab("node");
                }}
              />
            )}
          </div>
        </aside>
      </div>
    </div>
  );
}

function ToolFields(props: { def: Obj; onChange: (d: Obj) => void; problems: Problem[] }) {
  const set = (key: string, v: Json | undefined) => {
    const next = { ...props.def };
    if (v === undefined || v === "") delete next[key];
    else next[key] = v;
    props.onChange(next);
  };
  return (
    <form className="schema-form" aria-label="Tool fields" onSubmit={(e) => e.preventDefault()}>
      <label className="field">
        <span className="field-name">name</span>
        <input name="name" value={typeof props.def.name === "string" ? props.def.name : ""} onChange={(e) => set("name", e.target.value)} spellCheck={false} />
      </label>
      <label className="field">
        <span className="field-name">description</span>
        <textarea name="description" rows={2} value={typeof props.def.description === "string" ? props.def.description : ""} onChange={(e) => set("description", e.target.value)} />
      </label>
      <div className="field">
        <label className="field-name" htmlFor="tool-input-schema">
          inputSchema (JSON Schema)
        </label>
        <JsonField id="tool-input-schema" name="inputSchema" value={props.def.inputSchema} onChange={(v) => set("inputSchema", v)} />
      </div>
      {props.problems.length > 0 && (
        <ul className="field-problems" role="alert">
          {props.problems.map((p, i) => (
            <li key={i}>
              {p.path && p.path !== "/" ? <code>{p.path}</code> : null} {p.message}
            </li>
          ))}
        </ul>
      )}
    </form>
  );
}

function ProblemList(props: { problems: Problem[]; def: Obj | null; onPick: (id: string) => void }) {
  if (props.problems.length === 0) return <p className="muted">No problems: the tool passes every check.</p>;
  const nodes = nodesOf(props.def ?? undefined);
  return (
    <ul className="problem-list" aria-label="Problems">
      {props.problems.map((p, i) => {
        const m = /^\/nodes\/(\d+)/.exec(p.path ?? "");
        const id = m ? nodes[Number(m[1])]?.id : undefined;
        return (
          <li key={i}>
            {typeof id === "string" ? (
              <button className="link" onClick={() => props.onPick(id)}>
                {id}
              </button>
            ) : (
              <code>{p.path ?? p.elsewhere ?? "/"}</code>
            )}{" "}
            {p.line ? <span className="muted">line {p.line} </span> : null}
            {p.message}
            {p.fix && <div className="muted fix">{p.fix}</div>}
          </li>
        );
      })}
    </ul>
  );
}
