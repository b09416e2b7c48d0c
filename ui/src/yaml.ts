// A JSON value written as YAML, as it reads in a config file (multi-line expressions as block
// scalars, a tool's and a node's keys in the order people write them). The editor's YAML pane
// shows this after a graph edit and the server parses it back (the one YAML parser is the
// loader's), so every scalar is written so that it reads back as the same value: anything a
// plain scalar could misread is single-quoted, or written as JSON (which YAML reads as is) when
// it holds characters single quotes cannot.
import type { Json } from "./api";

const PLAIN = /^[A-Za-z_$./][\w$./ -]*$/;
const RESERVED = /^(true|false|null|yes|no|on|off|y|n|~|-?\d.*|[-+]?\.(inf|nan))$/i;

/** One line of printable characters: YAML's single quotes hold it as is (`'` doubled). */
const QUOTABLE = /^[^\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]*$/;

function scalar(s: string): string {
  if (PLAIN.test(s) && !RESERVED.test(s) && !s.endsWith(" ")) return s;
  // An expression full of double quotes reads better in single ones than escaped.
  return QUOTABLE.test(s) ? `'${s.replace(/'/g, "''")}'` : JSON.stringify(s);
}

/** Whether `s` reads back the same as a literal block scalar (`|` or `|-`). */
function blockable(s: string): boolean {
  if (!s.includes("\n") || /[\r\t]/.test(s) || s.startsWith(" ") || s.startsWith("\n")) return false;
  if (s.endsWith("\n\n")) return false;
  return s.split("\n").every((line) => line === line.trimEnd());
}

function isBlock(v: Json): v is Json[] | { [k: string]: Json } {
  return v !== null && typeof v === "object" && (Array.isArray(v) ? v.length > 0 : Object.keys(v).length > 0);
}

function inline(v: Json): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "[]";
  if (typeof v === "object") return "{}";
  return typeof v === "string" ? scalar(v) : String(v);
}

const FIRST_KEYS = ["name", "id", "type", "title", "description"];
const LAST_KEYS = ["nodes", "next", "onError"];

/** Keys as a person writes them: name/id/type first, nodes and next last. */
function ordered(v: { [k: string]: Json }): [string, Json][] {
  const rank = (k: string) => {
    const first = FIRST_KEYS.indexOf(k);
    if (first >= 0) return first - 100;
    const last = LAST_KEYS.indexOf(k);
    return last >= 0 ? 100 + last : 0;
  };
  return Object.entries(v).sort((a, b) => rank(a[0]) - rank(b[0]));
}

/** The lines of `v`'s entries (or items), indented by `indent`. */
function block(v: Json[] | { [k: string]: Json }, indent: number): string[] {
  const pad = " ".repeat(indent);
  const out: string[] = [];
  const entries: [string | null, Json][] = Array.isArray(v) ? v.map((x) => [null, x]) : ordered(v);
  for (const [key, x] of entries) {
    const prefix = key === null ? `${pad}- ` : `${pad}${scalar(key)}:`;
    if (isBlock(x)) {
      const inner = block(x, indent + 2);
      if (key === null) {
        // A list item's first entry shares the dash's line.
        out.push(prefix + inner[0].slice(indent + 2), ...inner.slice(1));
      } else out.push(prefix, ...inner);
    } else if (typeof x === "string" && blockable(x)) {
      out.push(`${prefix}${key === null ? "" : " "}|${x.endsWith("\n") ? "" : "-"}`);
      for (const line of x.replace(/\n$/, "").split("\n")) out.push(line ? `${pad}  ${line}` : "");
    } else out.push(`${prefix}${key === null ? "" : " "}${inline(x)}`);
  }
  return out;
}

export function toYaml(v: Json): string {
  return isBlock(v) ? block(v, 0).join("\n") : inline(v);
}
