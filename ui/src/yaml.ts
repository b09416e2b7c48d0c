// A JSON value written as YAML, to show a node's definition as it reads in a config file
// (multi-line expressions as block scalars). Display only: nothing parses it back.
import type { Json } from "./api";

const PLAIN = /^[A-Za-z_$./][\w$./ -]*$/;
const RESERVED = /^(true|false|null|yes|no|on|off|y|n|~|-?\d.*)$/i;

function scalar(s: string): string {
  return PLAIN.test(s) && !RESERVED.test(s) && !s.endsWith(" ") ? s : JSON.stringify(s);
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

/** The lines of `v`'s entries (or items), indented by `indent`. */
function block(v: Json[] | { [k: string]: Json }, indent: number): string[] {
  const pad = " ".repeat(indent);
  const out: string[] = [];
  const entries: [string | null, Json][] = Array.isArray(v) ? v.map((x) => [null, x]) : Object.entries(v);
  for (const [key, x] of entries) {
    const prefix = key === null ? `${pad}- ` : `${pad}${scalar(key)}:`;
    if (isBlock(x)) {
      const inner = block(x, indent + 2);
      if (key === null) {
        // A list item's first entry shares the dash's line.
        out.push(prefix + inner[0].slice(indent + 2), ...inner.slice(1));
      } else out.push(prefix, ...inner);
    } else if (typeof x === "string" && x.includes("\n")) {
      out.push(`${prefix}${key === null ? "" : " "}|${x.endsWith("\n") ? "" : "-"}`);
      for (const line of x.replace(/\n$/, "").split("\n")) out.push(`${pad}  ${line}`.trimEnd());
    } else out.push(`${prefix}${key === null ? "" : " "}${inline(x)}`);
  }
  return out;
}

export function toYaml(v: Json): string {
  return isBlock(v) ? block(v, 0).join("\n") : inline(v);
}
