// A form generated from a JSON Schema of an object (a tool's inputSchema, an await's): one field
// per property (text, number, checkbox, a select for an enum, JSON for objects and arrays).
// The server validates again; this only turns the fields into JSON and says what is missing.
import { useId, useState } from "react";
import type { FormEvent, ReactNode } from "react";
import type { Json, Schema } from "./api";

type Prop = { [key: string]: Json };

function kindOf(p: Prop): string {
  if (Array.isArray(p.enum)) return "enum";
  const t = Array.isArray(p.type) ? p.type.find((x) => x !== "null") : p.type;
  return typeof t === "string" ? t : "json";
}

function initialText(p: Prop): string {
  if (p.default === undefined) return "";
  return typeof p.default === "string" ? p.default : JSON.stringify(p.default);
}

export function SchemaForm(props: {
  schema: Schema | undefined;
  submit: string;
  onSubmit: (value: Json) => void | Promise<void>;
  busy?: boolean;
  extra?: ReactNode;
  name: string;
  /** Why this form cannot be sent (a scope the caller lacks); its button is disabled. */
  disabled?: string;
}) {
  const uid = useId();
  const schema = props.schema ?? {};
  const properties = (schema.properties as { [k: string]: Prop } | undefined) ?? {};
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const names = Object.keys(properties);
  const free = names.length === 0;
  const [text, setText] = useState<Record<string, string>>(() =>
    Object.fromEntries(names.map((n) => [n, initialText(properties[n])])),
  );
  const [checked, setChecked] = useState<Record<string, boolean>>(() =>
    Object.fromEntries(names.map((n) => [n, properties[n].default === true])),
  );
  const [raw, setRaw] = useState("{}");
  const [problems, setProblems] = useState<string[]>([]);

  const build = (): { value?: Json; problems: string[] } => {
    if (free) {
      try {
        return { value: JSON.parse(raw || "{}"), problems: [] };
      } catch (e) {
        return { problems: [`not JSON: ${(e as Error).message}`] };
      }
    }
    const out: { [k: string]: Json } = {};
    const bad: string[] = [];
    for (const n of names) {
      const p = properties[n];
      const kind = kindOf(p);
      if (kind === "boolean") {
        out[n] = checked[n] ?? false;
        continue;
      }
      const t = (text[n] ?? "").trim();
      if (t === "") {
        if (required.has(n)) bad.push(`${n} is required`);
        continue;
      }
      if (kind === "integer" || kind === "number") {
        const v = Number(t);
        if (!Number.isFinite(v) || (kind === "integer" && !Number.isInteger(v))) bad.push(`${n} must be ${kind === "integer" ? "an integer" : "a number"}`);
        else out[n] = v;
      } else if (kind === "string") out[n] = text[n];
      else if (kind === "enum") {
        const options = p.enum as Json[];
        out[n] = options.find((o) => JSON.stringify(o) === t || o === t) ?? t;
      } else {
        try {
          out[n] = JSON.parse(t);
        } catch (e) {
          bad.push(`${n}: not JSON (${(e as Error).message})`);
        }
      }
    }
    return { value: out, problems: bad };
  };

  const submit = (ev: FormEvent) => {
    ev.preventDefault();
    if (props.disabled !== undefined) return;
    const { value, problems } = build();
    setProblems(problems);
    if (problems.length === 0 && value !== undefined) void props.onSubmit(value);
  };

  return (
    <form className="schema-form" onSubmit={submit} aria-label={props.name} noValidate>
      {free && (
        <label className="field">
          <span className="field-name">arguments (JSON)</span>
          <textarea rows={4} value={raw} onChange={(e) => setRaw(e.target.value)} spellCheck={false} name="__json" />
        </label>
      )}
      {names.map((n) => {
        const p = properties[n];
        const kind = kindOf(p);
        const id = `${uid}-${n}`;
        const desc = typeof p.description === "string" ? p.description : undefined;
        return (
          <div className="field" key={n}>
            <label htmlFor={id} className="field-name">
              {n}
              {required.has(n) && <span className="req" aria-label="required">*</span>}
              <span className="field-type">{kind === "enum" ? "one of" : kind}</span>
            </label>
            {kind === "boolean" ? (
              <input id={id} name={n} type="checkbox" checked={checked[n] ?? false} onChange={(e) => setChecked({ ...checked, [n]: e.target.checked })} />
            ) : kind === "enum" ? (
              <select id={id} name={n} value={text[n] ?? ""} onChange={(e) => setText({ ...text, [n]: e.target.value })}>
                <option value="">—</option>
                {(p.enum as Json[]).map((o) => (
                  <option key={JSON.stringify(o)} value={typeof o === "string" ? o : JSON.stringify(o)}>
                    {typeof o === "string" ? o : JSON.stringify(o)}
                  </option>
                ))}
              </select>
            ) : kind === "string" || kind === "integer" || kind === "number" ? (
              <input
                id={id}
                name={n}
                type="text"
                inputMode={kind === "string" ? undefined : "decimal"}
                value={text[n] ?? ""}
                placeholder={kind === "string" ? "" : kind}
                onChange={(e) => setText({ ...text, [n]: e.target.value })}
              />
            ) : (
              <textarea id={id} name={n} rows={3} spellCheck={false} value={text[n] ?? ""} placeholder={kind === "array" ? "[ … ] (JSON)" : "{ … } (JSON)"} onChange={(e) => setText({ ...text, [n]: e.target.value })} />
            )}
            {desc && <span className="field-desc">{desc}</span>}
          </div>
        );
      })}
      {props.extra}
      {problems.length > 0 && (
        <ul className="problems" role="alert">
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      <button type="submit" className="primary" disabled={props.busy || props.disabled !== undefined} title={props.disabled}>
        {props.submit}
      </button>
      {props.disabled && (
        <p className="muted" data-testid="form-disabled">
          {props.submit}: {props.disabled}
        </p>
      )}
    </form>
  );
}
