// The tool's YAML beside its graph: a plain textarea with line numbers (no editor library; the
// bundle stays small), the lines the server placed problems on marked in the gutter.
import { useRef } from "react";
import type { Problem } from "./api";

export function YamlPane(props: { text: string; onChange: (text: string) => void; problems: Problem[]; readOnly?: boolean }) {
  const gutter = useRef<HTMLPreElement>(null);
  const lines = props.text.split("\n").length;
  const marked = new Map<number, string>();
  for (const p of props.problems) if (p.line) marked.set(p.line, p.message);
  return (
    <div className="yaml-pane">
      <pre className="gutter" ref={gutter} aria-hidden="true">
        {Array.from({ length: lines }, (_, i) => (
          <span key={i} className={marked.has(i + 1) ? "gl bad" : "gl"} title={marked.get(i + 1)}>
            {i + 1}
            {"\n"}
          </span>
        ))}
      </pre>
      <textarea
        aria-label="YAML"
        name="yaml"
        spellCheck={false}
        wrap="off"
        value={props.text}
        readOnly={props.readOnly}
        onChange={(e) => props.onChange(e.target.value)}
        onScroll={(e) => {
          if (gutter.current) gutter.current.scrollTop = e.currentTarget.scrollTop;
        }}
      />
    </div>
  );
}
