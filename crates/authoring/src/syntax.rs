//! `mcpflow_syntax`: the reference of the graph format and its expression languages, written
//! for a model: a few rules per topic and an example for each. Every example states its exact
//! result, and mcpflow's tests execute every one (JSONata, JSON Logic and `args` through the
//! expression layer the engine uses, tools through the engine with a real upstream), so the
//! reference cannot drift from what runs.
//!
//! Example kinds, by key: `jsonata` (with `context` and optionally `history`), `logic` (with
//! `context`), `args` (with `context`) and `definition` (a whole tool in YAML, with `arguments`);
//! each has `result`. In tool examples, `demo` stands for any upstream server whose `echo` tool
//! answers its arguments as structured content.

use serde_json::{Value, json};

use crate::answer::Answer;
use crate::args::Args;

pub(crate) fn answer(args: &Args<'_>) -> Answer {
    let topics = topics();
    let chosen: Vec<Value> = match args.str("topic") {
        Some(t) => topics.into_iter().filter(|v| v["topic"] == t).collect(),
        None => topics,
    };
    Answer::Ok(json!({
        "topics": chosen,
        "next": "Look up node fields with mcpflow_node_details, try expressions with \
                 mcpflow_test_expression, check a tool with mcpflow_validate_tool, then run it \
                 with mcpflow_run_tool.",
    }))
}

/// Every topic, in reading order.
pub(crate) fn topics() -> Vec<Value> {
    vec![
        graph(),
        nodes(),
        jsonata(),
        history(),
        jsonlogic(),
        args(),
        errors(),
    ]
}

fn graph() -> Value {
    json!({
        "topic": "graph",
        "summary": "A graph tool is a list of nodes run one after another, from the entry node \
                    to the exit node. Each node's output is kept under its id; expressions read \
                    them from the context {nodeId: latest output}.",
        "rules": [
            "A tool has `name` (letters, digits, _ and -), `description`, `inputSchema` (JSON Schema of the arguments, default {type: object}), optional `outputSchema`, and `nodes`.",
            "Exactly one node of type `entry` (its output is the tool's arguments) and one of type `exit` (returns the output of the node that ran just before it).",
            "Every node has a unique `id` and, except exit, `next`: the id of the node to run after it. switch, parallel and foreach route elsewhere too.",
            "In JSONata, `entry.n` and `$.entry.n` both read the entry node's output field `n`. Node ids with `-` need backquotes: `$.`my-node`.x`.",
            "The exit returns its predecessor's output; a falsy one (null, false, 0, \"\") becomes {}. Finish with a transform that builds the result object.",
            "A node can run many times (loops go back with `next` or a switch); the context holds each node's latest output, the history functions the earlier ones.",
            "Submit a tool as an object or as YAML text; check it with mcpflow_validate_tool before running it."
        ],
        "examples": [
            {
                "title": "The smallest useful tool: arguments in, computed object out",
                "definition": "name: double\ndescription: Doubles a number\ninputSchema:\n  type: object\n  properties:\n    n: {type: number}\n  required: [n]\nnodes:\n  - id: entry\n    type: entry\n    next: calc\n  - id: calc\n    type: transform\n    transform:\n      expr: '{\"result\": entry.n * 2}'\n    next: exit\n  - id: exit\n    type: exit\n",
                "arguments": {"n": 21},
                "result": {"result": 42}
            },
            {
                "title": "Calling an upstream tool, then reshaping its output (`demo` stands for a server of mcpServers whose `echo` tool answers its arguments)",
                "definition": "name: greet\ninputSchema:\n  type: object\n  properties:\n    who: {type: string}\nnodes:\n  - id: entry\n    type: entry\n    next: call\n  - id: call\n    type: mcp\n    server: demo\n    tool: echo\n    args:\n      greeting: hello\n      name: {expr: entry.who}\n    next: shape\n  - id: shape\n    type: transform\n    transform:\n      expr: '{\"text\": call.greeting & \", \" & call.name}'\n    next: exit\n  - id: exit\n    type: exit\n",
                "arguments": {"who": "Ada"},
                "result": {"text": "hello, Ada"}
            }
        ]
    })
}

fn nodes() -> Value {
    let types: Vec<Value> = crate::catalog::NODE_TYPES
        .iter()
        .map(|t| json!({"type": t.name, "does": t.summary}))
        .collect();
    json!({
        "topic": "nodes",
        "summary": "Ten node types. Write `type` in lower case exactly as listed; \
                    mcpflow_node_details gives every field and complete examples.",
        "types": types,
        "rules": [
            "Every node accepts `onError` (node id to run when it fails), `optional: true` (record the error as its output and go on), `timeoutMs`; mcp and call nodes also `retry`.",
            "A node's output is read as `<id>` or `$.<id>` by every later expression; a switch's output is the id it routed to.",
            "Loops: route back to an earlier node (a switch deciding when to stop), or map over an array with foreach."
        ],
        "examples": [
            {
                "title": "switch: the first condition whose rule holds picks `next`; else the switch's own `next`",
                "definition": "name: size\ninputSchema: {type: object, properties: {n: {type: number}}}\nnodes:\n  - id: entry\n    type: entry\n    next: route\n  - id: route\n    type: switch\n    conditions:\n      - rule: {\">\": [{var: entry.n}, 100]}\n        next: big\n    next: small\n  - id: big\n    type: transform\n    transform: {expr: '{\"size\": \"big\"}'}\n    next: exit\n  - id: small\n    type: transform\n    transform: {expr: '{\"size\": \"small\", \"n\": entry.n}'}\n    next: exit\n  - id: exit\n    type: exit\n",
                "arguments": {"n": 7},
                "result": {"size": "small", "n": 7}
            },
            {
                "title": "foreach: run a body for every item (here a transform reading `$.each.item`), the outputs collected in order",
                "definition": "name: squares\ninputSchema: {type: object, properties: {values: {type: array}}}\nnodes:\n  - id: entry\n    type: entry\n    next: each\n  - id: each\n    type: foreach\n    items: entry.values\n    body: square\n    next: done\n  - id: square\n    type: transform\n    transform: {expr: 'each.item * each.item'}\n    next: each\n  - id: done\n    type: transform\n    transform: {expr: '{\"squares\": each}'}\n    next: exit\n  - id: exit\n    type: exit\n",
                "arguments": {"values": [1, 2, 3]},
                "result": {"squares": [1, 4, 9]}
            }
        ]
    })
}

fn jsonata() -> Value {
    json!({
        "topic": "jsonata",
        "summary": "JSONata (jsonata.org) is the language of transform `expr`, foreach `items`, script `input` and `{expr}` in args. Its input `$` is the context {nodeId: latest output}.",
        "rules": [
            "Paths: `entry.user.name`. A path that matches nothing is undefined (not an error): an object field holding undefined is left out.",
            "Build objects and arrays literally: `{\"total\": $sum(entry.items.price)}`; keys are quoted strings.",
            "Filter with [condition], map with `.`: `entry.items[price > 10].name`; `$count`, `$sum`, `$max`, `$join`, `$split`, `$keys`, `$string`, `$number` are built in.",
            "A path over an array gives a single value when one item matches: wrap it in [ ] (`[entry.items.name]`) to always get an array.",
            "Blocks bind variables: `( $xs := entry.values; $sum($xs) / $count($xs) )`. Conditions: `a > b ? \"yes\" : \"no\"`. Strings join with `&`.",
            "`=` compares (there is no `==`); `and`, `or`, `not()` are logical; a field name with `-` or a space needs backquotes."
        ],
        "examples": [
            {"title": "Read a field", "jsonata": "entry.user.name", "context": {"entry": {"user": {"name": "Ada"}}}, "result": "Ada"},
            {"title": "Build an object from several nodes", "jsonata": "{\"total\": $sum(order.items.price), \"count\": $count(order.items), \"customer\": entry.customer}", "context": {"entry": {"customer": "c-7"}, "order": {"items": [{"price": 5}, {"price": 12}]}}, "result": {"total": 17, "count": 2, "customer": "c-7"}},
            {"title": "Filter, then map to new objects", "jsonata": "entry.items[qty > 0].{\"name\": name, \"cost\": price * qty}", "context": {"entry": {"items": [{"name": "pen", "price": 2, "qty": 3}, {"name": "ink", "price": 9, "qty": 0}, {"name": "pad", "price": 4, "qty": 1}]}}, "result": [{"name": "pen", "cost": 6}, {"name": "pad", "cost": 4}]},
            {"title": "One match is a single value; [ ] keeps an array", "jsonata": "{\"plain\": entry.items.name, \"array\": [entry.items.name]}", "context": {"entry": {"items": [{"name": "only"}]}}, "result": {"plain": "only", "array": ["only"]}},
            {"title": "Variables in a block, and a condition", "jsonata": "( $xs := entry.values; $avg := $sum($xs) / $count($xs); {\"average\": $avg, \"high\": $avg > 10 ? true : false} )", "context": {"entry": {"values": [4, 8, 30]}}, "result": {"average": 14, "high": true}},
            {"title": "Strings: split, count by a prefix, join", "jsonata": "( $lines := $split(list.text, \"\\n\"); {\"files\": $count($lines[$substring($, 0, 6) = \"[FILE]\"]), \"names\": $join($lines.$substringAfter($, \"] \"), \", \")} )", "context": {"list": {"text": "[FILE] a.txt\n[DIR] src\n[FILE] b.md"}}, "result": {"files": 2, "names": "a.txt, src, b.md"}},
            {"title": "Group and count: an object built with a key expression", "jsonata": "entry.files{$substringAfter($, \".\"): $count($)}", "context": {"entry": {"files": ["a.txt", "b.md", "c.txt"]}}, "result": {"txt": 2, "md": 1}},
            {"title": "A missing field is undefined, so the key disappears", "jsonata": "{\"name\": entry.name, \"nickname\": entry.nickname}", "context": {"entry": {"name": "Ada"}}, "result": {"name": "Ada"}}
        ]
    })
}

fn history() -> Value {
    json!({
        "topic": "history",
        "summary": "Functions over the run's history (every node executed so far, in order): what loops and retries need. They work in transform, switch (`var`), foreach, script input and args expressions.",
        "rules": [
            "$previousNode() is the output of the node that ran just before; $previousNode(n) the one n steps back (null when there is none).",
            "$executionCount(\"id\") is how many times node `id` has run so far (0 before its first run, so a node can start a loop).",
            "$nodeExecution(\"id\", i) is the output of its i-th run (0 is the first, -1 the latest, -2 the one before); $nodeExecutions(\"id\") all of them, oldest first.",
            "The context keeps only each node's latest output; use these functions to read earlier ones (e.g. accumulate in a loop)."
        ],
        "examples": [
            {"title": "The output of the node that ran last", "jsonata": "$previousNode()", "history": [{"nodeId": "entry", "output": {"n": 3}}, {"nodeId": "add", "output": {"i": 1}}, {"nodeId": "add", "output": {"i": 2}}], "result": {"i": 2}},
            {"title": "Three steps back", "jsonata": "$previousNode(3)", "history": [{"nodeId": "entry", "output": {"n": 3}}, {"nodeId": "add", "output": {"i": 1}}, {"nodeId": "add", "output": {"i": 2}}], "result": {"n": 3}},
            {"title": "How often a node ran, its first run and all its runs", "jsonata": "{\"runs\": $executionCount(\"add\"), \"first\": $nodeExecution(\"add\", 0).i, \"all\": $nodeExecutions(\"add\").i}", "history": [{"nodeId": "entry", "output": {"n": 3}}, {"nodeId": "add", "output": {"i": 1}}, {"nodeId": "add", "output": {"i": 2}}], "result": {"runs": 2, "first": 1, "all": [1, 2]}},
            {
                "title": "A loop: `add` accumulates from its own previous run until the switch stops it",
                "definition": "name: sum_to_n\ninputSchema: {type: object, properties: {n: {type: integer, minimum: 1}}, required: [n]}\nnodes:\n  - id: entry\n    type: entry\n    next: add\n  - id: add\n    type: transform\n    transform:\n      expr: |\n        $executionCount(\"add\") = 0\n          ? {\"i\": 1, \"sum\": 1}\n          : ( $last := $nodeExecution(\"add\", -1); {\"i\": $last.i + 1, \"sum\": $last.sum + $last.i + 1} )\n    next: more\n  - id: more\n    type: switch\n    conditions:\n      - rule: {\"<\": [{var: add.i}, {var: entry.n}]}\n        next: add\n    next: done\n  - id: done\n    type: transform\n    transform: {expr: '{\"sum\": add.sum, \"steps\": $executionCount(\"add\")}'}\n    next: exit\n  - id: exit\n    type: exit\n",
                "arguments": {"n": 4},
                "result": {"sum": 10, "steps": 4}
            }
        ]
    })
}

fn jsonlogic() -> Value {
    json!({
        "topic": "jsonlogic",
        "summary": "A switch condition's `rule` is JSON Logic (jsonlogic.com): {\"operator\": [operands]}. Its `var` is a JSONata expression over the context, not a dotted path only.",
        "rules": [
            "Comparisons: ==, !=, ===, !==, <, <=, >, >=; logic: and, or, !, !!; also in, cat, +, -, *, /, %, min, max, if, missing.",
            "{\"var\": \"entry.n\"} reads the context with JSONata, so {\"var\": \"$count(list.items)\"} works too; a missing value is null.",
            "Comparisons are JavaScript's loose ones: \"15\" > 10 is true and 3 == \"3\" is true; use === to compare types too.",
            "The condition holds when the rule's result is truthy in JavaScript (not false, 0, \"\", null); conditions are tried in order, the first that holds wins."
        ],
        "examples": [
            {"title": "Compare a field", "logic": {"<": [{"var": "entry.n"}, 10]}, "context": {"entry": {"n": 3}}, "result": true},
            {"title": "Several conditions", "logic": {"and": [{">=": [{"var": "entry.age"}, 18]}, {"==": [{"var": "entry.country"}, "FR"]}]}, "context": {"entry": {"age": 30, "country": "FR"}}, "result": true},
            {"title": "A JSONata expression as `var`", "logic": {">": [{"var": "$count(list.items)"}, 2]}, "context": {"list": {"items": ["a", "b"]}}, "result": false},
            {"title": "Membership", "logic": {"in": ["admin", {"var": "entry.roles"}]}, "context": {"entry": {"roles": ["user", "admin"]}}, "result": true},
            {"title": "Loose equality: a string and a number", "logic": {"==": [{"var": "entry.n"}, "3"]}, "context": {"entry": {"n": 3}}, "result": true},
            {"title": "A missing value is null, and ! of null is true", "logic": {"!": {"var": "entry.done"}}, "context": {"entry": {}}, "result": true}
        ]
    })
}

fn args() -> Value {
    json!({
        "topic": "args",
        "summary": "An mcp node's `args` (and a call node's) is the tool's arguments as literal JSON, where an object whose only key is `expr` is replaced by the value of that JSONata expression.",
        "rules": [
            "{\"expr\": \"entry.path\"} is evaluated; anything else is sent as written, so the string \"$.entry.path\" is sent literally.",
            "An `expr` object must have no other key; expressions can sit at any depth, in objects and arrays.",
            "An expression that is undefined drops its object key (an array item becomes null). `args` may itself be one {\"expr\"} producing the whole object.",
            "The rendered arguments must be an object matching the upstream tool's input schema (mcpflow_get_upstream_tool shows it)."
        ],
        "examples": [
            {"title": "Literal values next to expressions", "args": {"path": {"expr": "entry.directory"}, "recursive": false}, "context": {"entry": {"directory": "/tmp/docs"}}, "result": {"path": "/tmp/docs", "recursive": false}},
            {"title": "Expressions inside arrays, building strings", "args": {"paths": [{"expr": "entry.dir & \"/a.txt\""}, "fixed.txt"]}, "context": {"entry": {"dir": "/data"}}, "result": {"paths": ["/data/a.txt", "fixed.txt"]}},
            {"title": "An undefined value drops its key", "args": {"query": {"expr": "entry.q"}, "limit": {"expr": "entry.limit"}}, "context": {"entry": {"q": "rust"}}, "result": {"query": "rust"}},
            {"title": "The whole arguments as one expression", "args": {"expr": "{\"path\": entry.dir, \"depth\": entry.depth + 1}"}, "context": {"entry": {"dir": "src", "depth": 1}}, "result": {"path": "src", "depth": 2}},
            {"title": "Plain strings are never evaluated", "args": {"text": "$.entry.x"}, "context": {"entry": {"x": 1}}, "result": {"text": "$.entry.x"}}
        ]
    })
}

fn errors() -> Value {
    json!({
        "topic": "errors",
        "summary": "When a node fails for good, `onError: <node id>` routes the run there instead of failing it; that node reads the error object as $.<failing node id>: {message, code, nodeId, attempts, kind}. `optional: true` records the same object as the node's output and continues with `next`.",
        "rules": [
            "kind is one of expression, toolError (the upstream answered isError), upstream (unreachable, crashed), timeout, script, declined.",
            "`retry: {maxAttempts: 3}` on mcp and call nodes retries timeouts and transport failures (add toolError to `retryOn` for tool errors) with exponential backoff, before onError applies.",
            "Stops, cancellations and execution limits are never routed: they end the run.",
            "Without onError or optional, a failing node fails the tool call with a message naming the node."
        ],
        "examples": [
            {
                "title": "onError: the handler reads the failure as $.<failing node id>",
                "definition": "name: guarded\ninputSchema: {type: object}\nnodes:\n  - id: entry\n    type: entry\n    next: risky\n  - id: risky\n    type: transform\n    transform: {expr: '$error(\"out of stock\")'}\n    onError: recover\n    next: exit\n  - id: recover\n    type: transform\n    transform: {expr: '{\"failed\": risky.nodeId, \"kind\": risky.kind, \"code\": risky.code, \"why\": risky.message}'}\n    next: exit\n  - id: exit\n    type: exit\n",
                "arguments": {},
                "result": {"failed": "risky", "kind": "expression", "code": "D3137", "why": "out of stock [D3137 at 7]"}
            },
            {
                "title": "optional: the error object becomes the node's output and the run goes on",
                "definition": "name: tolerant\ninputSchema: {type: object}\nnodes:\n  - id: entry\n    type: entry\n    next: parse\n  - id: parse\n    type: transform\n    transform: {expr: '$number(\"not a number\")'}\n    optional: true\n    next: report\n  - id: report\n    type: transform\n    transform: {expr: '{\"ok\": $not($exists(parse.kind)), \"kind\": parse.kind}'}\n    next: exit\n  - id: exit\n    type: exit\n",
                "arguments": {},
                "result": {"ok": false, "kind": "expression"}
            }
        ]
    })
}
