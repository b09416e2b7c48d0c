// The UI under `auth:`: who the page calls the API as, and asking for a key when it must.
// The page's own files are public; the API is not. The first call is GET /api/whoami: a 401
// means a key is needed (or the one given was refused), and the prompt asks for one; it is kept
// for this tab only (sessionStorage) and sent as `Authorization: Bearer` with every request and
// event stream. What the key's scopes do not allow is not offered (the server refuses it anyway):
// editing without `authoring`, running and debugging without `debug`, sessions without
// `sessions`, anything at all without `runs:read`.
import { createContext, useCallback, useContext, useEffect, useState } from "react";
import type { FormEvent, ReactNode } from "react";
import { ApiError, allows, api, apiKey, onUnauthorized, setApiKey } from "./api";
import type { Me } from "./api";

/** Without `auth:` the server answers everyone as the open caller, with every scope. */
const OPEN: Me = { subject: "anonymous", via: "open", key: null, scopes: ["admin"], accessControl: false };

const Ctx = createContext<{ me: Me; signOut: () => void }>({ me: OPEN, signOut: () => {} });

export function useMe(): Me {
  return useContext(Ctx).me;
}

/** Whether the caller may use `scope`. */
export function useCan(scope: string): boolean {
  return allows(useMe(), scope);
}

/** Why something is not offered: the scope it needs. */
export function needs(scope: string): string {
  return `needs the \`${scope}\` scope, which this key does not have`;
}

type Phase = { at: "checking" } | { at: "key"; why?: string } | { at: "in"; me: Me } | { at: "error"; message: string };

export function AuthGate(props: { children: ReactNode }) {
  const [phase, setPhase] = useState<Phase>({ at: "checking" });
  const check = useCallback(async (refused?: string) => {
    try {
      setPhase({ at: "in", me: await api.whoami() });
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        // A key that did not prove anything is forgotten at once.
        const had = apiKey() !== null;
        setApiKey(null);
        setPhase({ at: "key", why: had ? refused ?? `the server refused this key: ${e.message}` : undefined });
      } else {
        setPhase({ at: "error", message: (e as Error).message });
      }
    }
  }, []);
  useEffect(() => {
    // Any later 401 (a key withdrawn, the server restarted with other keys) asks again.
    onUnauthorized((why) => {
      setApiKey(null);
      setPhase({ at: "key", why: `the server asked for a key again: ${why}` });
    });
    void check();
  }, [check]);
  const signOut = useCallback(() => {
    setApiKey(null);
    setPhase({ at: "key" });
  }, []);
  switch (phase.at) {
    case "checking":
      return <div className="empty">connecting…</div>;
    case "error":
      return (
        <div className="empty">
          <div className="error" role="alert">
            {phase.message}
          </div>
          <button onClick={() => void check()}>Try again</button>
        </div>
      );
    case "key":
      return (
        <KeyPrompt
          why={phase.why}
          onKey={(key) => {
            setApiKey(key);
            setPhase({ at: "checking" });
            void check("the server refused this key");
          }}
        />
      );
    case "in":
      return <Ctx.Provider value={{ me: phase.me, signOut }}>{props.children}</Ctx.Provider>;
  }
}

function KeyPrompt(props: { why?: string; onKey: (key: string) => void }) {
  const [key, setKey] = useState("");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (key.trim()) props.onKey(key.trim());
  };
  return (
    <div className="key-page">
      <form className="key-form" aria-label="API key" onSubmit={submit}>
        <h2>
          <span className="brand">mcpflow</span> needs an API key
        </h2>
        <p className="muted">
          This server runs with access control (<code>auth:</code>). Give a key (or a bearer token) it knows: what
          you see and may do follows its scopes. It is kept for this browser tab only and sent with each request,
          never in a URL.
        </p>
        <label className="field">
          <span className="field-name">API key or token</span>
          <input
            type="password"
            name="key"
            autoComplete="off"
            spellCheck={false}
            autoFocus
            value={key}
            onChange={(e) => setKey(e.target.value)}
            placeholder="mcpf_…"
          />
        </label>
        {props.why && (
          <div className="error" role="alert" data-testid="key-refused">
            {props.why}
          </div>
        )}
        <button type="submit" className="primary" disabled={!key.trim()}>
          Use this key
        </button>
        <p className="muted fine">
          Mint one with <code>mcpflow keys new --name NAME --scope runs:read --scope debug</code> (add{" "}
          <code>authoring</code> to edit, <code>sessions</code> for waiting sessions).
        </p>
      </form>
    </div>
  );
}

/** The caller and its scopes, and a way to give another key; nothing without access control. */
export function WhoAmI() {
  const { me, signOut } = useContext(Ctx);
  if (!me.accessControl) return null;
  return (
    <span className="whoami" data-testid="whoami" title={`scopes: ${me.scopes.join(" ") || "none"}`}>
      <span className="muted">as</span> <b>{me.subject}</b> <span className="muted">({me.scopes.join(", ") || "no scope"})</span>
      <button className="small" onClick={signOut} title={apiKey() !== null ? "Forget the key and give another" : "Give a key with more scopes"}>
        {apiKey() !== null ? "Sign out" : "Use a key"}
      </button>
    </span>
  );
}
