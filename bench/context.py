#!/usr/bin/env python3
"""The bytes an agent's context receives, counted on the wire of `mcpflow serve` over stdio.

A measurement, not a test (bench/context.sh runs it). No MCP SDK: a plain JSON-RPC client, so
what is counted is exactly what a client receives. A tool call's answer is counted as its
`result` object in compact JSON (content and structuredContent: what an MCP client hands the
model) and, as a lower bound, as the text of its content blocks alone.

  context.py MCPFLOW DIR FILES   (DIR: where the log files go; run from the repository root)
"""

import json
import os
import random
import subprocess
import sys

PROTOCOL = "2025-11-25"


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def size(value):
    return len(compact(value).encode())


class Client:
    """One `mcpflow serve CONFIG` child, spoken to over stdio."""

    def __init__(self, mcpflow, config, env):
        self.proc = subprocess.Popen(
            [mcpflow, "serve", config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "context-bench", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write((compact(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit(f"context: the server closed its stdout during {method}")
            message = json.loads(line)
            if message.get("id") != self.next_id or "method" in message:
                continue  # notifications (logs, list changes) are not the answer
            if "error" in message:
                sys.exit(f"context: {method} failed: {message['error']}")
            return message["result"]

    def call(self, name, arguments):
        params = {"name": name, "arguments": arguments}
        result = self.request("tools/call", params)
        if result.get("isError"):
            sys.exit(f"context: {name} answered an error: {compact(result)[:400]}")
        return params, result

    def list_tools(self):
        return self.request("tools/list", {})

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def text_of(result):
    return sum(len(c.get("text", "").encode()) for c in result.get("content", []))


def write_logs(directory, count):
    """`count` deterministic log files of 60 lines, about 1 line in 30 an ERROR."""
    rng = random.Random(15)
    levels = ["INFO"] * 25 + ["WARN"] * 4 + ["ERROR"]
    os.makedirs(directory, exist_ok=True)
    for old in os.listdir(directory):
        os.remove(os.path.join(directory, old))
    for n in range(count):
        lines = []
        for i in range(60):
            level = rng.choice(levels)
            lines.append(
                f"2026-11-25T05:{i:02d}:{rng.randrange(60):02d}Z {level:5} service-{n:02d} "
                f"request {rng.randrange(100000):05d} {rng.choice(['GET', 'POST'])} "
                f"/api/v1/items/{rng.randrange(1000)} handled in {rng.randrange(1, 900)} ms"
            )
        with open(os.path.join(directory, f"service-{n:02d}.log"), "w") as f:
            f.write("\n".join(lines) + "\n")


def summarise(texts):
    """What summarise_logs answers, computed by the agent from the files it read."""
    digests = []
    for name, text in texts:
        lines = [l for l in text.split("\n") if l]
        digests.append({"file": name, "lines": len(lines), "errors": sum("ERROR" in l for l in lines)})
    return {
        "files": len(digests),
        "lines": sum(d["lines"] for d in digests),
        "errorLines": sum(d["errors"] for d in digests),
        "filesWithErrors": [d["file"] for d in digests if d["errors"] > 0],
    }


class Tally:
    def __init__(self):
        self.calls = self.sent = self.received = self.text = 0

    def add(self, params, result):
        self.calls += 1
        self.sent += size(params)
        self.received += size(result)
        self.text += text_of(result)


def main():
    mcpflow, directory, files = sys.argv[1], os.path.abspath(sys.argv[2]), int(sys.argv[3])
    write_logs(directory, files)
    env = dict(os.environ, BENCH_DIR=directory)

    # 1. The job, chained by the agent: list, then read every file, each answer in its context.
    client = Client(mcpflow, "bench/configs/context_summary.yaml", env)
    agent = Tally()
    params, listing = client.call("fs__list_directory", {"path": directory})
    agent.add(params, listing)
    names = [l[len("[FILE] "):] for l in listing["structuredContent"]["content"].split("\n") if l.startswith("[FILE] ")]
    texts = []
    for name in names:
        params, read = client.call("fs__read_text_file", {"path": f"{directory}/{name}"})
        agent.add(params, read)
        texts.append((name, read["structuredContent"]["content"]))
    expected = summarise(texts)

    # 2. The same job as one call of the graph tool.
    graph = Tally()
    params, summary = client.call("summarise_logs", {"directory": directory})
    graph.add(params, summary)
    if summary.get("structuredContent") != expected:
        sys.exit(f"context: the graph answered {compact(summary)[:400]}, the agent found {compact(expected)}")
    client.close()

    # 3. tools/list of a gateway over server-everything and server-filesystem, without and
    #    with toolSearch; and what one search and one call through the call tool cost.
    lists = {}
    for label, config in [("all proxied tools", "context_gateway.yaml"), ("toolSearch", "context_gateway_search.yaml")]:
        client = Client(mcpflow, f"bench/configs/{config}", env)
        tools = client.list_tools()
        lists[label] = (len(tools["tools"]), size(tools))
        if label == "toolSearch":
            search = Tally()
            params, found = client.call("mcpflow_find_tool", {"query": "read file", "limit": 3})
            search.add(params, found)
            first = found["structuredContent"]["results"][0]["name"]
            search.add(*client.call("mcpflow_call_tool", {"name": first, "arguments": {"path": f"{directory}/{names[0]}"}}))
        client.close()

    pct = lambda a, b: f"{100 * (1 - b / a):.1f} %"
    print(f"# {files} files, {sum(len(t.encode()) for _, t in texts)} bytes of logs in {directory}")
    print()
    print("| path | calls | bytes sent | bytes received (result JSON) | of which text |")
    print("|---|---:|---:|---:|---:|")
    print(f"| agent chains fs__list_directory + {len(names)} × fs__read_text_file | {agent.calls} | {agent.sent} | {agent.received} | {agent.text} |")
    print(f"| one call of the graph tool summarise_logs | {graph.calls} | {graph.sent} | {graph.received} | {graph.text} |")
    print(f"| reduction | | | {pct(agent.received, graph.received)} | {pct(agent.text, graph.text)} |")
    print()
    print("| tools/list of a gateway over server-everything + server-filesystem | tools | bytes |")
    print("|---|---:|---:|")
    for label, (count, nbytes) in lists.items():
        print(f"| {label} | {count} | {nbytes} |")
    full, searched = lists["all proxied tools"][1], lists["toolSearch"][1]
    print(f"| reduction | | {pct(full, searched)} |")
    print(f"| one mcpflow_find_tool (limit 3) + one mcpflow_call_tool of `{first}`, received | {search.calls} | {search.received} |")


if __name__ == "__main__":
    main()
