"""A scripted agent that writes, repairs, runs and saves a graph tool through mcpflow's authoring
tools alone (issue #15, "Must show"), with the official Python MCP SDK.

usage: python authoring-agent.py (stdio|http) MCPFLOW CONFIG DIRECTORY

CONFIG holds only upstreams (`filesystem` serving DIRECTORY, `memory`), `include: ["tools/*.yaml"]`
and `authoring: {save: true}`. The agent knows MCP and JSONata's grammar as any model would, and
nothing of mcpflow's format: every node it writes is built from the fields and templates the
authoring tools answer, and every repair comes from the problems they report. It submits a
broken tool first (a misspelt node type, an unclosed JSONata object), repairs it, runs it
inline, saves it; then a fresh client lists and calls the saved tool, and `mcpflow validate`
checks the config on disk. The authoring session uses the initialize handshake (a session the
server pushes `notifications/tools/list_changed` to); the fresh client lets the SDK pick the era. It prints one JSON summary line; any failed step exits non-zero.
"""

import asyncio
import json
import re
import subprocess
import sys
import threading

from mcp import Client, StdioServerParameters

TOOL = "count_by_extension"


class Fail(Exception):
    pass


def expect(condition, what):
    if not condition:
        raise Fail(what)


async def call(client, name, args):
    """Calls a built-in tool and returns its structured answer (the JSON text when absent)."""
    result = await client.call_tool(name, args)
    answer = result.structured_content
    if answer is None:
        text = "".join(b.text for b in result.content if b.type == "text")
        try:
            answer = json.loads(text)
        except ValueError:
            answer = {"text": text}
    return answer, bool(result.is_error)


def pointer_set(document, pointer, value):
    """Sets the value at a JSON Pointer (RFC 6901) inside document."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("/").split("/")]
    target = document
    for part in parts[:-1]:
        target = target[int(part)] if isinstance(target, list) else target[part]
    last = parts[-1]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value


def pointer_get(document, pointer):
    target = document
    for part in pointer.lstrip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        target = target[int(part)] if isinstance(target, list) else target[part]
    return target


def node_from_schema(details, **values):
    """A node of the type `details` describes: its fixed `type` and every required field given."""
    schema = details["schema"]
    node = {"type": schema["properties"]["type"]["const"]}
    for field in schema.get("required", []):
        if field == "type":
            continue
        expect(field in values, f"node type {node['type']} requires `{field}`, which the agent did not plan")
        node[field] = values.pop(field)
    for field, value in values.items():
        expect(field in schema["properties"], f"node type {node['type']} has no field `{field}`")
        node[field] = value
    return node


async def author(client, directory, report):
    """The authoring loop on one session; returns the repaired, saved definition."""
    tools = {t.name for t in (await client.list_tools()).tools}
    for needed in [
        "mcpflow_syntax",
        "mcpflow_node_details",
        "mcpflow_list_upstream_tools",
        "mcpflow_get_upstream_tool",
        "mcpflow_test_expression",
        "mcpflow_validate_tool",
        "mcpflow_run_tool",
        "mcpflow_save_tool",
    ]:
        expect(needed in tools, f"the server does not list {needed}: {sorted(tools)}")

    # 1. Learn the format.
    syntax, _ = await call(client, "mcpflow_syntax", {})
    topics = {t["topic"]: t for t in syntax["topics"]}
    node_types = [t["type"] for t in topics["nodes"]["types"]]
    jsonata = json.dumps(topics["jsonata"])
    # A tool's keys, as the reference states them.
    graph_rules = json.dumps(topics["graph"]["rules"])
    for key in ["`name`", "`description`", "`inputSchema`", "`nodes`", "`entry`", "`exit`"]:
        expect(key in graph_rules, f"the graph topic does not name {key}")
    # The functions and the group-by form the expression below uses are the reference's own.
    for used in ["$split", "$substring(", "$substringAfter", ": $count($)}", "[FILE]"]:
        expect(used in jsonata, f"the syntax reference does not show {used!r}")
    report["syntaxTopics"] = sorted(topics)

    # 2. Discover the filesystem tool that lists a directory, and what it answers.
    listed, _ = await call(client, "mcpflow_list_upstream_tools", {"server": "filesystem"})
    names = [t["name"] for t in listed["tools"]]
    expect("list_directory" in names, f"no list_directory among {names}")
    report["filesystemTools"] = len(names)
    lister, _ = await call(client, "mcpflow_get_upstream_tool", {"server": "filesystem", "tool": "list_directory"})
    expect(lister["inputSchema"]["required"] == ["path"], f"list_directory's input: {lister['inputSchema']}")
    output_fields = list(lister["outputSchema"]["properties"])
    expect(output_fields == ["content"], f"list_directory's output: {lister['outputSchema']}")
    expect("[FILE]" in lister["description"], "list_directory's description does not say how files are marked")

    # 3. The fields of the node types to use.
    details, _ = await call(client, "mcpflow_node_details", {"types": ["entry", "exit", "mcp", "transform"]})
    by_type = {d["type"]: d for d in details["nodes"]}
    expect(set(by_type) == {"entry", "exit", "mcp", "transform"}, f"node details for {sorted(by_type)}")

    # 4. Write the tool: entry → list (the node template get_upstream_tool answered) → count → exit.
    # The count is the reference's "split, count by a prefix" and "group and count" examples
    # combined; the agent's first draft forgets the `}` of the group-by object, and misspells
    # `transform`.
    list_node = dict(lister["node"])
    list_node["id"] = "list"
    list_node["next"] = "count"
    output = output_fields[0]
    broken_expr = (
        f'( $lines := $split(list.{output}, "\\n"); '
        f'$files := $lines[$substring($, 0, 6) = "[FILE]"].$substringAfter($, "] "); '
        "$files{$substringAfter($, \".\"): $count($) )"
    )
    count_node = node_from_schema(
        by_type["transform"], id="count", transform={"expr": broken_expr}, next="exit"
    )
    count_node["type"] = "transfrom"
    definition = {
        "name": TOOL,
        "description": "Counts the files of a directory by extension",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "the directory"}},
            "required": ["path"],
        },
        "nodes": [
            node_from_schema(by_type["entry"], id="entry", next="list"),
            list_node,
            count_node,
            node_from_schema(by_type["exit"], id="exit"),
        ],
    }

    # 5. Validate, repair from the problems alone, until valid.
    seen, repairs = [], []
    for _ in range(5):
        verdict, _ = await call(client, "mcpflow_validate_tool", {"definition": definition})
        if verdict["valid"]:
            break
        for problem in verdict["problems"]:
            seen.append({k: problem[k] for k in ["path", "message", "fix", "suggestion", "code", "position"] if k in problem})
            repairs.append(await repair(client, definition, problem, node_types))
    else:
        raise Fail(f"still invalid after five rounds: {verdict}")
    report["problems"] = seen
    report["repairs"] = repairs

    # 6. Run it inline on the directory.
    ran, failed = await call(client, "mcpflow_run_tool", {"definition": definition, "arguments": {"path": directory}})
    expect(not failed and ran.get("status") == "succeeded", f"inline run: {ran}")
    report["inline"] = ran["result"]
    report["inlineNodes"] = [h["nodeId"] for h in ran["history"]]

    # 7. Save it; the same session sees it listed.
    saved, failed = await call(client, "mcpflow_save_tool", {"definition": definition})
    expect(not failed and saved.get("saved") == TOOL, f"save: {saved}")
    report["savedFile"] = saved["file"]
    report["listedAfterSave"] = TOOL in {t.name for t in (await client.list_tools()).tools}
    return definition


def notification_method(message):
    """The method of a server notification the SDK hands `message_handler` (None for others)."""
    return getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)


async def repair(client, definition, problem, node_types):
    """Changes `definition` as one problem's message and fix say; returns what it did."""
    path, message = problem["path"], problem["message"]
    wrong = pointer_get(definition, path)
    # A misspelt name: the problem carries the value meant (`suggestion`, also in the message's
    # "did you mean"), one of the choices its fix lists.
    meant = problem.get("suggestion")
    if meant is None:
        found = re.search(r'did you mean "([^"]+)"', message)
        meant = found and found.group(1)
    if meant:
        expect(meant in problem["fix"], f"the suggestion is not among the choices: {problem}")
        if path.endswith("/type"):
            expect(meant in node_types, f"{meant!r} is no node type the syntax reference lists")
        pointer_set(definition, path, meant)
        return {"path": path, "from": wrong, "to": meant, "how": "suggestion" if "suggestion" in problem else "did you mean"}
    # A broken expression: the message says what was expected, `position` where (just past the
    # token found instead); the fix says to try the result with mcpflow_test_expression.
    if "mcpflow_test_expression" in problem["fix"]:
        expected = re.search(r'Expected "([^"]+)", got "([^"]+)"', message)
        expect(expected and "position" in problem, f"no expected token and position to repair from: {problem}")
        at = problem["position"] - len(expected.group(2))
        fixed = wrong[:at] + expected.group(1) + wrong[at:]
        tested, failed = await call(client, "mcpflow_test_expression", {"jsonata": fixed, "context": {}})
        expect(not failed, f"the repaired expression still fails: {tested}")
        pointer_set(definition, path, fixed)
        return {"path": path, "inserted": expected.group(1), "at": at, "code": problem.get("code"), "how": "position"}
    raise Fail(f"no repair known for {problem}")


async def fresh_client(connect, directory, report):
    """A client that has never seen the authoring session: lists and calls the saved tool."""
    async with connect() as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        expect(TOOL in listed, f"a fresh client does not list {TOOL}: {sorted(listed)}")
        report["freshClientListed"] = True
        report["freshDescription"] = listed[TOOL].description
        result = await client.call_tool(TOOL, {"path": directory})
        expect(not result.is_error, f"calling {TOOL}: {result}")
        report["counts"] = result.structured_content


def serve_http(mcpflow, config):
    """`mcpflow serve CONFIG --http 127.0.0.1:0`; returns the process and the URL it printed."""
    proc = subprocess.Popen(
        [mcpflow, "serve", config, "--http", "127.0.0.1:0", "--authoring"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr:
        found = re.search(r"listening on (http://\S+/mcp)", line)
        if found:
            # Keep draining stderr so the server never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, found.group(1)
    proc.wait()
    raise Fail(f"mcpflow serve --http exited ({proc.returncode}) without printing its address")


async def main():
    transport, mcpflow, config, directory = sys.argv[1:5]
    report = {"transport": transport}
    notified = []

    async def on_message(message):
        method = notification_method(message)
        if method:
            notified.append(method)

    server = None
    if transport == "stdio":
        def connect(**kw):
            return Client(StdioServerParameters(command=mcpflow, args=["serve", config, "--authoring"]), **kw)
    elif transport == "http":
        server, url = serve_http(mcpflow, config)

        def connect(**kw):
            return Client(url, **kw)
    else:
        raise Fail(f"unknown transport {transport!r} (stdio, http)")
    try:
        async with connect(message_handler=on_message, mode="legacy") as client:
            await author(client, directory, report)
            # The save's notification may trail its answer by a moment.
            for _ in range(40):
                if "notifications/tools/list_changed" in notified:
                    break
                await asyncio.sleep(0.05)
        report["notified"] = sorted(set(notified))
        await fresh_client(connect, directory, report)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    checked = subprocess.run([mcpflow, "validate", config], capture_output=True, text=True)
    report["validate"] = {"exit": checked.returncode, "out": checked.stdout.strip()}
    expect(checked.returncode == 0, f"mcpflow validate: {checked.stdout}{checked.stderr}")
    print(json.dumps(report))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Fail as e:
        print(f"authoring-agent: {e}", file=sys.stderr)
        sys.exit(1)
