// A node's fields as a form generated from its type's JSON Schema (the node catalog's, which is
// read from the config's own schema): text for strings (a monospace area for expressions), a
// select for enums and for the ids of other nodes, numbers, yes/no, nested objects as groups,
// lists of objects (a switch's conditions) item by item, and JSON for the rest. Each field shows
// the problems the server found at its path.
import { useEffect, useId, useState } from "react";
import type { Json, Problem, Schema } from "./api";
import { isObj } from "./definition";
import type { Obj } from "./definition";

type S = { [key: string]: Json };

/** Fields that name another node. */
const REFERENCES = new Set(["next", "onError", "body"]);
/** Fields written in JSONata or JavaScript: a monospace area. */
const CODE = new Set(["expr", "items", "source", "condition"]);

function deref(root: S, s: Json | undefined): S {
  let cur: Json | undefined = s;
  for (let i = 0; i < 8 && isObj(cur) && typeof cur.$ref === "string"; i++) {
    const name = cur.$ref.replace(/^#\/\$defs\//, "");
    const defs = isObj(root.$defs) ? root.$defs : {};
    const next: Json | undefined = defs[name];
    if (!isObj(next)) break;
    // Keep the referring schema's own description.
    cur = { ...next, ...(typeof cur.description === "string" ? { description: cur.description } : {}) };
  }
  if (!isObj(cur)) return {};
  // An optional field is `anyOf: [X, {type: null}]`: X.
  for (const key of ["anyOf", "oneOf"]) {
    const options = cur[key];
    if (Array.isArray(options)) {
      const real = options.filter((o) => !(isObj(o) && o.type === "null"));
      if (real.length === 1) return deref(root, { ...real[0] as S, ...(typeof cur.description === "string" ? { description: cur.description } : {}) });
    }
  }
  return cur;
}

function properties(root: S, s: S): { props: [string, S][]; required: Set<string> } {
  const props: [string, S][] = [];
  const required = new Set<string>();
  const seen = new Set<string>();
  const walk = (x: S) => {
    const d = deref(root, x);
    for (const part of Array.isArray(d.allOf) ? d.allOf : []) if (isObj(part)) walk(part);
    if (isObj(d.properties)) {
      for (const [k, v] of Object.entries(d.properties)) {
        if (!seen.has(k) && isObj(v)) {
          seen.add(k);
          props.push([k, v]);
        }
      }
    }
    for (const r of Array.isArray(d.required) ? d.required : []) if (typeof r === "string") required.add(r);
  };
  walk(s);
  return { props, required };
}

function enumOf(s: S): Json[] | undefined {
  if (Array.isArray(s.enum)) return s.enum;
  for (const key of ["oneOf", "anyOf"]) {
    const options = s[key];
    if (Array.isArray(options) && options.length > 0 && options.every((o) => isObj(o) && "const" in o)) {
      return options.map((o) => (o as S).const);
    }
  }
  if ("const" in s) return [s.const];
  return undefined;
}

type Kind = "enum" | "string" | "integer" | "number" | "boolean" | "object" | "list" | "json";

function kindOf(root: S, s: S): Kind {
  if (enumOf(s)) return "enum";
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== "null") : s.type;
  if (t === "string" || t === "integer" || t === "number" || t === "boolean") return t;
  if (t === "object" && properties(root, s).props.length > 0 && !s.additionalProperties) return "object";
  if (t === "array" && isObj(s.items)) {
    const item = deref(root, s.items);
    if (properties(root, item).props.length > 0) return "list";
  }
  return "json";
}

interface FieldProps {
  root: S;
  name: string;
  path: string;
  schema: S;
  value: Json | undefined;
  required: boolean;
  onChange: (v: Json | undefined) => void;
  problems: Problem[];
  ids: string[];
}

function Issues(props: { problems: Problem[]; path: string; exact?: boolean }) {
  const mine = props.problems.filter((p) => (props.exact ? p.path === props.path : p.path === props.path || p.path?.startsWith(`${props.path}/`)));
  if (mine.length === 0) return null;
  return (
    <ul className="field-problems" role="alert">
      {mine.map((p, i) => (
        <li key={i}>
          {p.message}
          {p.at && <pre className="caret">{p.at}</pre>}
        </li>
      ))}
    </ul>
  );
}

export function JsonField(props: { id: string; name: string; value: Json | undefined; onChange: (v: Json | undefined) => void }) {
  const shown = props.value === undefined ? "" : JSON.stringify(props.value, null, 2);
  const [text, setText] = useState(shown);
  const [bad, setBad] = useState<string | null>(null);
  // An outside change (undo, a YAML edit) replaces what is typed unless it means the same.
  useEffect(() => {
    let same = false;
    try {
      same = JSON.stringify(text.trim() ? JSON.parse(text) : undefined) === JSON.stringify(props.value);
    } catch {
      same = false;
    }
    if (!same) {
      setText(shown);
      setBad(null);
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shown]);
  return (
    <>
      <textarea
        id={props.id}
        name={props.name}
        rows={Math.min(8, Math.max(2, text.split("\n").length))}
        spellCheck={false}
        value={text}
        placeholder="JSON"
        onChange={(e) => {
          setText(e.target.value);
          if (!e.target.value.trim()) {
            setBad(null);
            props.onChange(undefined);
            return;
          }
          try {
            props.onChange(JSON.parse(e.target.value));
            setBad(null);
          } catch (err) {
            setBad(`not JSON yet: ${(err as Error).message}`);
          }
        }}
      />
      {bad && <span className="field-desc bad">{bad}</span>}
    </>
  );
}

function Field(props: FieldProps) {
  const uid = useId();
  const id = `${uid}-${props.name}`;
  const s = deref(props.root, props.schema);
  const kind = kindOf(props.root, s);
  const desc = typeof s.description === "string" ? s.description : undefined;
  const leaf = props.name.split(".").pop() ?? props.name;
  const head = (
    <label htmlFor={id} className="field-name">
      {leaf}
      {props.required && <span className="req" aria-label="required">*</span>}
      <span className="field-type">{kind === "json" ? "JSON" : kind}</span>
    </label>
  );
  const set = (v: Json | undefined) => props.onChange(v === "" ? undefined : v);
  let input: React.ReactNode;
  if (kind === "object" || kind === "list") {
    return (
      <fieldset className="field group-field">
        <legend className="field-name">
          {leaf}
          {props.required && <span className="req" aria-label="required">*</span>}
        </legend>
        {desc && <span className="field-desc">{desc}</span>}
        {kind === "object" ? (
          <Fields {...props} schema={s} value={isObj(props.value) ? props.value : {}} onChange={(v) => set(Object.keys(v).length ? v : undefined)} prefix={props.name} />
        ) : (
          <ListField {...props} schema={s} />
        )}
        <Issues problems={props.problems} path={props.path} exact />
      </fieldset>
    );
  }
  if (REFERENCES.has(leaf) && (kind === "string" || kind === "json")) {
    const v = typeof props.value === "string" ? props.value : "";
    input = (
      <select id={id} name={props.name} value={v} onChange={(e) => set(e.target.value)}>
        <option value="">—</option>
        {v && !props.ids.includes(v) && <option value={v}>{v} (no such node)</option>}
        {props.ids.map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
    );
  } else if (kind === "enum") {
    const options = enumOf(s) ?? [];
    input = (
      <select id={id} name={props.name} value={props.value === undefined ? "" : JSON.stringify(props.value)} onChange={(e) => set(e.target.value ? (JSON.parse(e.target.value) as Json) : undefined)}>
        <option value="">—</option>
        {options.map((o) => (
          <option key={JSON.stringify(o)} value={JSON.stringify(o)}>
            {typeof o === "string" ? o : JSON.stringify(o)}
          </option>
        ))}
      </select>
    );
  } else if (kind === "boolean") {
    input = (
      <select id={id} name={props.name} value={props.value === undefined ? "" : String(props.value)} onChange={(e) => set(e.target.value === "" ? undefined : e.target.value === "true")}>
        <option value="">—</option>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  } else if (kind === "integer" || kind === "number") {
    input = (
      <input
        id={id}
        name={props.name}
        inputMode="decimal"
        value={props.value === undefined || props.value === null ? "" : String(props.value)}
        onChange={(e) => {
          const t = e.target.value.trim();
          const n = Number(t);
          set(t === "" ? undefined : Number.isFinite(n) ? n : t);
        }}
      />
    );
  } else if (kind === "string") {
    const v = typeof props.value === "string" ? props.value : props.value === undefined ? "" : JSON.stringify(props.value);
    input = CODE.has(leaf) ? (
      <textarea id={id} name={props.name} className="code" rows={Math.min(8, Math.max(2, v.split("\n").length))} spellCheck={false} value={v} onChange={(e) => set(e.target.value)} />
    ) : (
      <input id={id} name={props.name} value={v} spellCheck={false} onChange={(e) => set(e.target.value)} />
    );
  } else {
    input = <JsonField id={id} name={props.name} value={props.value} onChange={set} />;
  }
  return (
    <div className="field">
      {head}
      {input}
      {desc && <span className="field-desc">{desc}</span>}
      <Issues problems={props.problems} path={props.path} />
    </div>
  );
}

function ListField(props: FieldProps) {
  const items = Array.isArray(props.value) ? props.value : [];
  const itemSchema = deref(props.root, props.schema.items as S);
  const setItems = (next: Json[]) => props.onChange(next);
  return (
    <div className="list-field">
      {items.map((item, k) => (
        <div className="list-item" key={k}>
          <div className="list-item-head">
            <span className="muted">#{k + 1}</span>
            <button type="button" className="small" onClick={() => setItems(items.filter((_, i) => i !== k))} aria-label={`Remove ${props.name} ${k + 1}`}>
              remove
            </button>
          </div>
          <Fields
            {...props}
            schema={itemSchema}
            path={`${props.path}/${k}`}
            prefix={`${props.name}.${k}`}
            value={isObj(item) ? item : {}}
            onChange={(v) => setItems(items.map((x, i) => (i === k ? v : x)))}
          />
        </div>
      ))}
      <button type="button" className="small" onClick={() => setItems([...items, {}])} aria-label={`Add to ${props.name}`}>
        + add
      </button>
    </div>
  );
}

function Fields(props: Omit<FieldProps, "value" | "onChange" | "name" | "required"> & { value: Obj; onChange: (v: Obj) => void; prefix?: string; skip?: Set<string> }) {
  const { props: fields, required } = properties(props.root, props.schema);
  return (
    <>
      {fields
        .filter(([k]) => !props.skip?.has(k))
        .map(([k, schema]) => (
          <Field
            key={k}
            root={props.root}
            name={props.prefix ? `${props.prefix}.${k}` : k}
            path={`${props.path}/${k}`}
            schema={schema}
            value={props.value[k]}
            required={required.has(k)}
            problems={props.problems}
            ids={props.ids}
            onChange={(v) => {
              const next: Obj = { ...props.value };
              if (v === undefined) delete next[k];
              else next[k] = v;
              props.onChange(next);
            }}
          />
        ))}
    </>
  );
}

/** The form of one node: its own fields, then the options every node takes. */
export function NodeForm(props: {
  schema: Schema | undefined;
  node: Obj;
  pointer: string;
  problems: Problem[];
  ids: string[];
  common: string[];
  onChange: (node: Obj) => void;
}) {
  const root = (props.schema ?? {}) as S;
  const common = new Set(props.common);
  const own = new Set(properties(root, root).props.map(([k]) => k).filter((k) => !common.has(k)));
  const skipOwn = new Set(["type", ...common]);
  const skipCommon = new Set(["type", ...own]);
  if (!props.schema) return <p className="muted">No schema for this node type.</p>;
  return (
    <form className="schema-form node-form" aria-label={`Fields of ${String(props.node.id ?? "")}`} onSubmit={(e) => e.preventDefault()}>
      <Issues problems={props.problems} path={props.pointer} exact />
      <Fields root={root} schema={root} path={props.pointer} value={props.node} onChange={props.onChange} problems={props.problems} ids={props.ids} skip={skipOwn} />
      <details className="options">
        <summary>options ({props.common.join(", ")})</summary>
        <Fields root={root} schema={root} path={props.pointer} value={props.node} onChange={props.onChange} problems={props.problems} ids={props.ids} skip={skipCommon} />
      </details>
    </form>
  );
}
