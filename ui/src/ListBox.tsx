// A keyboard-navigable list: one tab stop, arrows/Home/End move, Enter or click opens.
import { useEffect, useRef, useState } from "react";
import type { KeyboardEvent, ReactNode } from "react";

export function ListBox<T>(props: {
  label: string;
  items: T[];
  keyOf: (item: T) => string;
  render: (item: T) => ReactNode;
  current?: string | null;
  onOpen: (item: T) => void;
  empty?: ReactNode;
  /** Changes when the list should take the focus (a key switched to its view). */
  focusSignal?: number;
}) {
  const refs = useRef<(HTMLLIElement | null)[]>([]);
  const currentIndex = props.items.findIndex((i) => props.keyOf(i) === props.current);
  const [focus, setFocus] = useState(Math.max(0, currentIndex));
  useEffect(() => {
    if (currentIndex >= 0) setFocus(currentIndex);
  }, [currentIndex]);
  const at = Math.min(focus, Math.max(0, props.items.length - 1));
  // Take the focus when asked, as soon as there is an item to focus.
  const wanted = useRef(0);
  useEffect(() => {
    if (props.focusSignal && props.focusSignal !== wanted.current && props.items.length > 0) {
      wanted.current = props.focusSignal;
      refs.current[at]?.focus();
    }
  }, [props.focusSignal, props.items.length, at]);

  const move = (to: number) => {
    const i = Math.max(0, Math.min(props.items.length - 1, to));
    setFocus(i);
    refs.current[i]?.focus();
  };
  const onKey = (e: KeyboardEvent) => {
    const keys: Record<string, () => void> = {
      ArrowDown: () => move(at + 1),
      ArrowUp: () => move(at - 1),
      Home: () => move(0),
      End: () => move(props.items.length - 1),
      Enter: () => props.items[at] !== undefined && props.onOpen(props.items[at]),
    };
    const f = keys[e.key];
    if (f) {
      e.preventDefault();
      f();
    }
  };
  if (props.items.length === 0) return <div className="list-empty">{props.empty ?? "nothing yet"}</div>;
  return (
    <ul className="listbox" role="listbox" aria-label={props.label} onKeyDown={onKey}>
      {props.items.map((item, i) => {
        const key = props.keyOf(item);
        return (
          <li
            key={key}
            ref={(el) => {
              refs.current[i] = el;
            }}
            role="option"
            aria-selected={key === props.current}
            tabIndex={i === at ? 0 : -1}
            data-key={key}
            onClick={() => {
              setFocus(i);
              props.onOpen(item);
            }}
          >
            {props.render(item)}
          </li>
        );
      })}
    </ul>
  );
}
