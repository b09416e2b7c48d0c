#!/usr/bin/env python3
"""The soak and abuse driver of bench/soak.sh: mixed load against one `mcpflow serve --http`
on loopback for a fixed time, the server's RSS, fds and threads sampled every second into a
CSV, then a summary table and plots.

Load, one thread per kind (Python's standard library only; matplotlib for the plots):
  graph    `add` over one long-lived session
  proxy    `fx__echo` through the hook; every 50th call is one the hook rejects, every
           --crash-every-th call is `fx__crash`, which kills the upstream mid-call
  durable  `approve` (an upstream call, then an await) and `approve_continue`
  churn    two threads, a new HTTP session per round (initialize, tools/list), then DELETE or
           just dropped; past the config's maxSessions the server evicts the idle longest
  abuse    raw sockets: headers cut off, a body shorter than its Content-Length, a slow
           client, a call to `fx__sleep` abandoned mid-request, a body that is not JSON, a
           body over the limit

Every answer is sorted into ok, expected (what the abuse or the crash should cause) or
unexpected, by kind. After the load, the driver watches the idle server for --cooldown seconds,
then accounts for every churned HTTP session: each one dropped without DELETE is asked (`ping`)
whether it is still open; with --server-log, the sessions the server says it evicted at the cap
are added up. Created = deleted + evicted + still open (+ expired by the idle timeout).
"""

import argparse
import csv
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter

PROTOCOL = "2025-11-25"


class RpcError(Exception):
    """An answer that is not a result: `kind` sorts it."""

    def __init__(self, kind, detail):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


class Session:
    """One Streamable HTTP session over one keep-alive connection."""

    def __init__(self, host, port):
        self.conn = http.client.HTTPConnection(host, port, timeout=30)
        self.sid = None
        self.next_id = 0

    def post(self, message):
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.sid:
            headers["Mcp-Session-Id"] = self.sid
            headers["MCP-Protocol-Version"] = PROTOCOL
        try:
            self.conn.request("POST", "/mcp", json.dumps(message), headers)
            resp = self.conn.getresponse()
            body = resp.read()
        except (OSError, http.client.HTTPException) as e:
            self.conn.close()
            raise RpcError("transport", repr(e)) from e
        return resp, body

    def request(self, method, params):
        self.next_id += 1
        rid = self.next_id
        resp, body = self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        if resp.status >= 400:
            raise RpcError(f"http {resp.status}", body[:200])
        sid = resp.getheader("Mcp-Session-Id")
        if sid:
            self.sid = sid
        for message in messages(resp.getheader("Content-Type", ""), body):
            if message.get("id") == rid:
                if "error" in message:
                    raise RpcError("jsonrpc error", message["error"].get("message", ""))
                return message["result"]
        raise RpcError("no answer", body[:200])

    def initialize(self):
        self.request("initialize", {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "soak", "version": "1"},
        })
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    def call(self, tool, args):
        result = self.request("tools/call", {"name": tool, "arguments": args})
        if result.get("isError"):
            text = " ".join(c.get("text", "") for c in result.get("content", []))
            raise RpcError("tool error", text)
        return result.get("structuredContent")

    def delete(self):
        self.conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": self.sid or ""})
        self.conn.getresponse().read()

    def close(self):
        self.conn.close()


def messages(content_type, body):
    if content_type.startswith("text/event-stream"):
        for line in body.decode("utf-8", "replace").splitlines():
            if line.startswith("data:") and line[5:].strip():
                try:
                    yield json.loads(line[5:])
                except ValueError:
                    pass
    elif body:
        yield json.loads(body)


class Driver:
    def __init__(self, args):
        self.args = args
        self.host, self.port = args.host, args.port
        self.counts = Counter()  # (kind, outcome) -> n
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.last_crash = 0.0
        self.durable = Counter()
        self.churn = Counter()
        self.abandoned = []  # churned session ids dropped without DELETE

    def count(self, kind, outcome):
        with self.lock:
            self.counts[(kind, outcome)] += 1

    def totals(self):
        with self.lock:
            t = Counter()
            for (_, outcome), n in self.counts.items():
                t[outcome.split(":")[0]] += n
            return t

    def session(self):
        return Session(self.host, self.port).initialize()

    def session_of(self, state):
        """The thread's long-lived session, opened on first use and after a failure."""
        if "session" not in state:
            state["session"] = self.session()
        return state["session"]

    def loop(self, kind, body):
        """Runs `body(state)` until stopped; a broken session is replaced."""
        state = {}
        while not self.stop.is_set():
            try:
                body(state)
            except RpcError as e:
                self.count(kind, f"unexpected:{e.kind}")
                if "session" in state:
                    state.pop("session").close()
                time.sleep(0.2)
            time.sleep(self.args.pause)

    def graph(self, state):
        s = self.session_of(state)
        i = state["i"] = state.get("i", 0) + 1
        out = s.call("add", {"a": i, "b": 1})
        self.count("graph", "ok" if out == {"sum": i + 1} else "unexpected:wrong result")

    def proxy(self, state):
        s = self.session_of(state)
        i = state["i"] = state.get("i", 0) + 1
        if i % self.args.crash_every == 0:
            self.last_crash = time.monotonic()
            try:
                s.call("fx__crash", {})
                self.count("proxy", "unexpected:crash answered")
            except RpcError as e:
                self.count("proxy", f"expected:upstream crashed ({e.kind})")
            return
        x = "forbidden" if i % 50 == 0 else i
        try:
            out = s.call("fx__echo", {"x": x})
        except RpcError as e:
            if x == "forbidden" and "forbidden by the soak hook" in str(e):
                self.count("proxy", "expected:hook rejected")
            elif time.monotonic() - self.last_crash < 5:
                self.count("proxy", f"expected:upstream restarting ({e.kind})")
            else:
                raise
            return
        self.count("proxy", "ok" if out == {"x": x} else "unexpected:wrong result")

    def durable_round(self, state):
        s = self.session_of(state)
        i = state["i"] = state.get("i", 0) + 1
        try:
            started = s.call("approve", {"n": i})
        except RpcError as e:
            # `approve` calls fx__echo: the crash the proxy thread causes can kill it mid-call.
            if e.kind == "tool error" and time.monotonic() - self.last_crash < 5:
                self.count("durable", "expected:upstream crashed (tool error)")
                return
            raise
        if not started or started.get("status") != "waiting":
            self.count("durable", "unexpected:not waiting")
            return
        self.durable["started"] += 1
        out = s.call("approve_continue", {"sessionId": started["sessionId"], "input": {"ok": True}})
        self.durable["continued"] += 1
        self.count("durable", "ok" if out == {"n": i, "ok": True} else "unexpected:wrong result")

    def churn_round(self, state):
        s = self.session()
        with self.lock:
            self.churn["created"] += 1
            n = self.churn["created"]
        try:
            s.request("tools/list", {})
        except RpcError as e:
            # Past the cap, another churn thread's initialize may evict this session first.
            if e.kind == "http 404":
                with self.lock:
                    self.churn["evicted before use"] += 1
                    self.abandoned.append(s.sid)
                s.close()
                self.count("churn", "expected:evicted before use")
                return
            raise
        if n % 2:
            s.delete()
            with self.lock:
                self.churn["deleted"] += 1
        else:
            with self.lock:
                self.churn["abandoned"] += 1
                self.abandoned.append(s.sid)
        s.close()
        self.count("churn", "ok")

    def still_open(self):
        """How many of the abandoned churn sessions still answer a ping (200, not 404)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        open_, other = 0, Counter()
        for sid in self.abandoned:
            headers = {"Content-Type": "application/json",
                       "Accept": "application/json, text/event-stream",
                       "Mcp-Session-Id": sid, "MCP-Protocol-Version": PROTOCOL}
            conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
                         headers)
            resp = conn.getresponse()
            resp.read()
            if resp.status == 200:
                open_ += 1
            elif resp.status != 404:
                other[resp.status] += 1
        conn.close()
        return open_, other

    def abuse(self, state):
        n = state["n"] = state.get("n", 0) + 1
        name, act = ABUSES[n % len(ABUSES)]
        try:
            outcome = act(self)
        except OSError as e:
            outcome = f"unexpected:{type(e).__name__}"
        self.count(f"abuse {name}", outcome)

    def raw(self):
        return socket.create_connection((self.host, self.port), timeout=10)

    def request_head(self, length, sid=None):
        head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                f"Content-Length: {length}\r\n")
        if sid:
            head += f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {PROTOCOL}\r\n"
        return (head + "\r\n").encode()


def status_of(sock):
    data = sock.recv(4096)
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None


def cut_headers(d):
    with d.raw() as s:
        s.sendall(d.request_head(10)[:40])
    return "expected:closed"


def short_body(d):
    with d.raw() as s:
        s.sendall(d.request_head(5000) + b'{"jsonrpc": "2.0", "id": 1')
    return "expected:closed"


def slow_client(d):
    with d.raw() as s:
        for line in d.request_head(10).split(b"\r\n")[:4]:
            s.sendall(line + b"\r\n")
            time.sleep(0.5)
    return "expected:closed"


def vanish_mid_call(d):
    sess = d.session()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "fx__sleep", "arguments": {"ms": 3000}}}).encode()
    with d.raw() as s:
        s.sendall(d.request_head(len(body), sess.sid) + body)
        time.sleep(0.3)
    sess.close()
    return "expected:closed"


def not_json(d):
    sess = d.session()
    body = b"{this is not json"
    with d.raw() as s:
        s.sendall(d.request_head(len(body), sess.sid) + body)
        status = status_of(s)
    sess.delete()
    sess.close()
    return "expected:400" if status == 400 else f"unexpected:status {status}"


def too_large(d):
    body = b" " * (70 * 1024)
    with d.raw() as s:
        s.sendall(d.request_head(len(body)) + body)
        status = status_of(s)
    return "expected:413" if status == 413 else f"unexpected:status {status}"


ABUSES = [("cut headers", cut_headers), ("short body", short_body), ("slow client", slow_client),
          ("vanish mid-call", vanish_mid_call), ("not json", not_json), ("too large", too_large)]


def proc_sample(pid):
    status = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            status[key] = value.split()
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    children = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[1] == str(pid):
                        children += 1
            except (OSError, IndexError):
                pass
    return int(status["VmRSS"][0]), fds, int(status["Threads"][0]), children


def sample_loop(d, pid, rows, phase_of, until):
    start = time.monotonic()
    while not until():
        t = time.monotonic() - start
        try:
            rss, fds, threads, children = proc_sample(pid)
        except (OSError, KeyError):
            break
        totals = d.totals()
        rows.append({"t_s": round(t, 1), "phase": phase_of(), "rss_kb": rss, "fds": fds,
                     "threads": threads, "children": children, "ok": totals["ok"],
                     "expected": totals["expected"], "unexpected": totals["unexpected"]})
        time.sleep(1)


def trend(rows, key):
    """First and last tenth's medians of the loaded phase after warm-up, and the peak."""
    values = [r[key] for r in rows]
    tenth = max(1, len(values) // 10)
    first, last = statistics.median(values[:tenth]), statistics.median(values[-tenth:])
    return first, last, max(values)


def evicted_by_server(path):
    """Sessions the server says its cap closed: its debug line per session when logged
    (`mcpflow_server::http::sessions=debug`, as soak.sh runs it), else the sum of `closed=N`
    of its cap warnings (at most one per 10 s: the last window's count is not in it)."""
    if not path:
        return None
    lines, warned = 0, 0
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if "session cap reached: closing the session idle longest" in line:
                    lines += 1
                elif "HTTP session cap reached" in line:
                    for word in line.split():
                        if word.startswith("closed="):
                            warned += int(word[7:])
    except OSError:
        return None
    return lines or warned


def summary(d, rows, warmup, args, stats, accounting):
    loaded = [r for r in rows if r["phase"] == "load" and r["t_s"] >= warmup]
    idle = [r for r in rows if r["phase"] == "cooldown"]
    base = next((r for r in rows), None)
    out = []
    p = out.append
    p(f"## soak: {args.minutes} min of load, {len(rows)} samples, warm-up {warmup} s")
    p("")
    p("| figure | start | after warm-up | end of load | peak | after cool-down | verdict |")
    p("|---|---|---|---|---|---|---|")
    for key, unit, scale, tolerance in [("rss_kb", "MiB", 1 / 1024, 0.05), ("fds", "", 1, 0.05),
                                        ("threads", "", 1, 0.05), ("children", "", 1, 0)]:
        if not loaded:
            break
        first, last, peak = trend(loaded, key)
        cool = idle[-1][key] if idle else float("nan")
        grew = last > first * (1 + tolerance) + (2 if key != "rss_kb" else 0)
        verdict = "grows" if grew else "flat"
        fmt = (lambda v: f"{v * scale:.1f}") if key == "rss_kb" else (lambda v: f"{v:g}")
        p(f"| {key.replace('_kb', '')} {unit} | {fmt(base[key])} | {fmt(first)} | {fmt(last)} | "
          f"{fmt(peak)} | {fmt(cool)} | {verdict} |")
    p("")
    p("| kind | outcome | count |")
    p("|---|---|---|")
    for (kind, outcome), n in sorted(d.counts.items()):
        p(f"| {kind} | {outcome} | {n} |")
    t = d.totals()
    p("")
    p(f"Totals: {t['ok']} ok, {t['expected']} expected errors, **{t['unexpected']} unexpected**.")
    p(f"Durable sessions: {d.durable['started']} started, {d.durable['continued']} continued; "
      f"the store at the end: {stats}.")
    p(f"HTTP sessions: {d.churn['created']} churned ({d.churn['deleted']} deleted, "
      f"{d.churn['abandoned']} dropped without DELETE, {d.churn['evicted before use']} evicted "
      f"before their tools/list by another churn thread's initialize).")
    p("")
    p(accounting)
    return "\n".join(out)


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("soak: no matplotlib (pip install matplotlib): no plot", file=sys.stderr)
        return
    t = [r["t_s"] for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    axes[0].plot(t, [r["rss_kb"] / 1024 for r in rows])
    axes[0].set_ylabel("RSS (MiB)")
    for key in ("fds", "threads", "children"):
        axes[1].plot(t, [r[key] for r in rows], label=key)
    axes[1].legend()
    axes[1].set_ylabel("count")
    for key in ("ok", "expected", "unexpected"):
        per_s = [b[key] - a[key] for a, b in zip(rows, rows[1:])]
        axes[2].plot(t[1:], per_s, label=key)
    axes[2].set_yscale("symlog")
    axes[2].legend()
    axes[2].set_ylabel("answers per sample (~1 s)")
    axes[2].set_xlabel("seconds")
    end = next((r["t_s"] for r in rows if r["phase"] == "cooldown"), None)
    for ax in axes:
        if end is not None:
            ax.axvline(end, color="grey", linestyle=":")
    fig.suptitle("mcpflow serve --http under soak (dotted: load stops)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="the server's MCP endpoint, http://127.0.0.1:PORT/mcp")
    ap.add_argument("--pid", type=int, required=True, help="the server's process id")
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--warmup", type=float, default=None, help="seconds (default: 10%% of the run, at most 60)")
    ap.add_argument("--cooldown", type=float, default=25, help="idle seconds watched after the load")
    ap.add_argument("--idle-timeout", type=float, default=300, help="the config's session idle timeout, s")
    ap.add_argument("--max-sessions", type=int, default=200, help="the config's http.maxSessions")
    ap.add_argument("--server-log", help="the server's stderr, for its session-cap warnings")
    ap.add_argument("--crash-every", type=int, default=200, help="every Nth proxied call crashes the upstream")
    ap.add_argument("--pause", type=float, default=0.002, help="seconds between one thread's calls")
    ap.add_argument("--out", required=True, help="directory for soak.csv, soak.png, summary.md")
    ap.add_argument("--stats-cmd", help="a shell command printing the store's stats as JSON")
    args = ap.parse_args()
    hostport = args.url.split("//", 1)[1].split("/", 1)[0]
    args.host, port = hostport.rsplit(":", 1)
    args.port = int(port)
    os.makedirs(args.out, exist_ok=True)
    warmup = args.warmup if args.warmup is not None else min(60, args.minutes * 6)

    d = Driver(args)
    rows = []
    phase = ["load"]
    sampler_done = threading.Event()
    sampler = threading.Thread(target=sample_loop, args=(d, args.pid, rows, lambda: phase[0], sampler_done.is_set))
    sampler.start()
    workers = [threading.Thread(target=d.loop, args=(kind, body)) for kind, body in [
        ("graph", d.graph), ("proxy", d.proxy), ("durable", d.durable_round),
        ("churn", d.churn_round), ("churn", d.churn_round), ("abuse", d.abuse)]]
    for w in workers:
        w.start()
    time.sleep(args.minutes * 60)
    d.stop.set()
    for w in workers:
        w.join()
    phase[0] = "cooldown"
    time.sleep(args.cooldown)
    sampler_done.set()
    sampler.join()

    stats = "not asked"
    if args.stats_cmd:
        done = subprocess.run(args.stats_cmd, shell=True, capture_output=True, text=True)
        try:
            s = json.loads(done.stdout)
            stats = f"sessions {json.dumps(s.get('sessions'))}, runs {json.dumps(s.get('runs', s.get('total')))}"
        except ValueError:
            stats = f"stats failed: {done.stderr.strip()[:200]}"
    with open(os.path.join(args.out, "soak.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    open_, other = d.still_open()
    evicted = evicted_by_server(args.server_log)
    # Every session the server created: the churn's, plus one per other thread's session and
    # per abuse that opened one; all but the churn's are either still in use at the end
    # (graph, proxy, durable: 3) or deleted/abandoned by the abuse. The cap's evictions count
    # every kind; the churn's abandoned sessions are the ones asked.
    accounting = (
        f"Session accounting: of {len(d.abandoned)} churned sessions dropped without DELETE, "
        f"{open_} still answer a ping (cap {args.max_sessions}), "
        f"{len(d.abandoned) - open_ - sum(other.values())} are gone (404)"
        + (f", {dict(other)} other statuses" if other else "")
        + (f"; the server logged {evicted} sessions closed by its cap." if evicted is not None else ".")
    )
    if open_ > args.max_sessions or other:
        d.count("accounting", "unexpected:sessions over the cap or unanswered")
    text = summary(d, rows, warmup, args, stats, accounting)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text + "\n")
    plot(rows, os.path.join(args.out, "soak.png"))
    print(text)
    return 1 if d.totals()["unexpected"] else 0


if __name__ == "__main__":
    sys.exit(main())
