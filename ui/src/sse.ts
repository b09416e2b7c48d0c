// A Server-Sent Events stream read with fetch and the response body's reader, not EventSource:
// EventSource cannot send an Authorization header, and under `auth:` the run API's streams need
// one (a key in the URL would end up in logs). The format is the one the server writes
// (https://html.spec.whatwg.org/multipage/server-sent-events.html): `event:`, `data:` and `id:`
// fields, events separated by a blank line, `:` comments (keep-alives) ignored.
import { ApiError, authHeaders, notifyUnauthorized } from "./api";

export interface SseEvent {
  name: string;
  id: string;
  data: string;
}

export interface SseHandlers {
  /** The response arrived and is an event stream. */
  onOpen: () => void;
  onEvent: (e: SseEvent) => void;
  /** The stream ended or failed (not called after `close`). */
  onError: (e: Error) => void;
}

/** Splits a stream's text into events; holds a partial event until its blank line arrives. */
export class SseParser {
  private buffer = "";
  private name = "";
  private data: string[] = [];
  private id = "";

  push(text: string, emit: (e: SseEvent) => void): void {
    this.buffer += text;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      // A lone `\r` at the end may be the first half of `\r\n`: wait for the next chunk.
      if (!m || (m[0] === "\r" && m.index === this.buffer.length - 1)) return;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line, emit);
    }
  }

  private line(line: string, emit: (e: SseEvent) => void): void {
    if (line === "") {
      if (this.data.length > 0) emit({ name: this.name || "message", id: this.id, data: this.data.join("\n") });
      this.name = "";
      this.data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.name = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id" && !value.includes("\0")) this.id = value;
  }
}

/** Opens the stream at `path` with the API's credential; `close()` ends it quietly. */
export function openStream(path: string, handlers: SseHandlers): { close: () => void } {
  const abort = new AbortController();
  let closed = false;
  const fail = (e: Error) => {
    if (!closed) {
      closed = true;
      handlers.onError(e);
    }
  };
  void (async () => {
    const response = await fetch(path, {
      headers: { ...authHeaders(), accept: "text/event-stream" },
      signal: abort.signal,
      cache: "no-store",
    });
    if (!response.ok || !response.body) {
      const text = await response.text().catch(() => "");
      let message = `${response.status} ${text}`;
      try {
        message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? message;
      } catch {
        // not JSON: the status and text say it
      }
      if (response.status === 401) notifyUnauthorized(message);
      throw new ApiError(response.status, message);
    }
    if (closed) return;
    handlers.onOpen();
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const parser = new SseParser();
    for (;;) {
      const { done, value } = await reader.read();
      if (closed) return;
      if (done) break;
      parser.push(decoder.decode(value, { stream: true }), (e) => {
        if (!closed) handlers.onEvent(e);
      });
    }
    fail(new Error("the event stream ended"));
  })().catch((e: unknown) => fail(e instanceof Error ? e : new Error(String(e))));
  return {
    close: () => {
      closed = true;
      abort.abort();
    },
  };
}
