// Text beside a graph (a tool's YAML, a hook's script): a plain textarea with line numbers (no
// editor library; the bundle stays small), the lines the server placed problems on marked in
// the gutter.
import { useRef } from "react";
import type { Problem } from "./api";

export function CodePane(props: {
  text: string;
  onChange: (text: string) => void;
  problems: Problem[];
  readOnly?: boolean;
  /** The textarea's accessible label and form name. */
  label: string;
  name: string;
  className?: string;
}) {
  const gutter = useRef<HTMLPreElement>(null);
  const lines = props.text.split("\n").length;
  const marked = new Map<number, string>();
  // A parser that stopped at the end may place its error one line past the text.
  for (const p of props.problems) if (p.line) marked.set(Math.min(p.line, lines), p.message);
  return (
    <div className={props.className ?? "yaml-pane"}>
      <pre className="gutter" ref={gutter} aria-hidden="true">
        {Array.from({ length: lines }, (_, i) => (
          <span key={i} className={marked.has(i + 1) ? "gl bad" : "gl"} title={marked.get(i + 1)} data-line={i + 1}>
            {i + 1}
            {"\n"}
          </span>
        ))}
      </pre>
      <textarea
        aria-label={props.label}
        name={props.name}
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
