//! The node types a graph can use, as the catalog teaches them: what each does, the names a
//! model may use for it, and complete example tools with their exact results (mcpflow's tests
//! run every one).

/// One node type of the catalog.
pub(crate) struct NodeType {
    pub name: &'static str,
    pub summary: &'static str,
    /// Other names a model may use for it (lower case, without separators).
    pub aliases: &'static [&'static str],
    /// Complete example tools using it.
    pub examples: &'static [Example],
}

/// A complete tool using a node type, with arguments and the exact result of a run.
pub(crate) struct Example {
    pub title: &'static str,
    pub definition: &'static str,
    /// Another tool the example's config must hold (a `call` node's target), in YAML.
    pub uses: Option<&'static str>,
    pub arguments: &'static str,
    /// For a run that waits: the client's input that continues it (JSON).
    pub continue_with: Option<&'static str>,
    /// The exact result (JSON), after the continuation if there is one.
    pub result: &'static str,
}

const DOUBLE: &str = "name: double\ndescription: Doubles a number\ninputSchema:\n  type: object\n  properties:\n    n: {type: number}\n  required: [n]\nnodes:\n  - id: entry\n    type: entry\n    next: calc\n  - id: calc\n    type: transform\n    transform:\n      expr: '{\"result\": entry.n * 2}'\n    next: exit\n  - id: exit\n    type: exit\n";

pub(crate) static NODE_TYPES: &[NodeType] = &[
    NodeType {
        name: "entry",
        summary: "Where every run starts; its output is the tool's arguments. Exactly one per tool.",
        aliases: &["start", "begin", "input", "trigger", "init"],
        examples: &[Example {
            title: "entry straight to exit: the tool answers its arguments",
            definition: "name: echo_args\ninputSchema: {type: object}\nnodes:\n  - id: entry\n    type: entry\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"x": 1, "y": [true]}"#,
            continue_with: None,
            result: r#"{"x": 1, "y": [true]}"#,
        }],
    },
    NodeType {
        name: "exit",
        summary: "Where every run ends; the tool's result is the output of the node that ran just before it (a falsy one becomes {}). Exactly one per tool.",
        aliases: &["end", "return", "output", "finish", "stop", "result"],
        examples: &[Example {
            title: "The exit returns what the transform before it built",
            definition: DOUBLE,
            uses: None,
            arguments: r#"{"n": 21}"#,
            continue_with: None,
            result: r#"{"result": 42}"#,
        }],
    },
    NodeType {
        name: "transform",
        summary: "Computes a value with a JSONata expression over the context {nodeId: output}: reshape, filter, aggregate, build the result.",
        aliases: &[
            "jsonata",
            "expression",
            "expr",
            "compute",
            "set",
            "assign",
            "datatransformation",
            "map",
        ],
        examples: &[Example {
            title: "Totals of an order",
            definition: "name: totals\ninputSchema:\n  type: object\n  properties:\n    items: {type: array, items: {type: object}}\nnodes:\n  - id: entry\n    type: entry\n    next: sum\n  - id: sum\n    type: transform\n    transform:\n      expr: '{\"total\": $sum(entry.items.(price * qty)), \"lines\": $count(entry.items)}'\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"items": [{"price": 2, "qty": 3}, {"price": 10, "qty": 1}]}"#,
            continue_with: None,
            result: r#"{"total": 16, "lines": 2}"#,
        }],
    },
    NodeType {
        name: "mcp",
        summary: "Calls a tool of an upstream MCP server (`server` from mcpServers, `tool`, `args` with {expr} templates); its output is the tool's structuredContent, else its text parsed as JSON, else the text.",
        aliases: &[
            "tool",
            "mcptool",
            "calltool",
            "upstream",
            "action",
            "httprequest",
            "externalaction",
            "api",
        ],
        examples: &[Example {
            title: "Call `echo` of the server `demo` (any server of mcpServers whose `echo` answers its arguments) and reshape the answer",
            definition: "name: greet\ninputSchema:\n  type: object\n  properties:\n    who: {type: string}\nnodes:\n  - id: entry\n    type: entry\n    next: call\n  - id: call\n    type: mcp\n    server: demo\n    tool: echo\n    args:\n      greeting: hello\n      name: {expr: entry.who}\n    next: shape\n  - id: shape\n    type: transform\n    transform:\n      expr: '{\"text\": call.greeting & \", \" & call.name}'\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"who": "Ada"}"#,
            continue_with: None,
            result: r#"{"text": "hello, Ada"}"#,
        }],
    },
    NodeType {
        name: "switch",
        summary: "Routes the run: tries `conditions` (JSON Logic rules) in order and goes to the `next` of the first that holds, else to its own `next`.",
        aliases: &[
            "if",
            "ifelse",
            "condition",
            "conditional",
            "branch",
            "router",
            "route",
            "case",
            "decision",
            "filter",
        ],
        examples: &[Example {
            title: "Pick a branch by a number",
            definition: "name: size\ninputSchema: {type: object, properties: {n: {type: number}}}\nnodes:\n  - id: entry\n    type: entry\n    next: route\n  - id: route\n    type: switch\n    conditions:\n      - rule: {\">\": [{var: entry.n}, 100]}\n        next: big\n    next: small\n  - id: big\n    type: transform\n    transform: {expr: '{\"size\": \"big\"}'}\n    next: exit\n  - id: small\n    type: transform\n    transform: {expr: '{\"size\": \"small\", \"n\": entry.n}'}\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"n": 700}"#,
            continue_with: None,
            result: r#"{"size": "big"}"#,
        }],
    },
    NodeType {
        name: "parallel",
        summary: "Runs named `branches` concurrently (each a chain of nodes that ends by routing to `next`, the join) and outputs {branch: last output of that branch}.",
        aliases: &["fork", "concurrent", "join", "merge", "fanout", "split"],
        examples: &[Example {
            title: "Two computations at once, joined",
            definition: "name: both\ninputSchema: {type: object, properties: {n: {type: number}}}\nnodes:\n  - id: entry\n    type: entry\n    next: fan\n  - id: fan\n    type: parallel\n    branches:\n      double: dbl\n      square: sq\n    next: done\n  - id: dbl\n    type: transform\n    transform: {expr: 'entry.n * 2'}\n    next: done\n  - id: sq\n    type: transform\n    transform: {expr: 'entry.n * entry.n'}\n    next: done\n  - id: done\n    type: transform\n    transform: {expr: '{\"double\": fan.double, \"square\": fan.square}'}\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"n": 3}"#,
            continue_with: None,
            result: r#"{"double": 6, "square": 9}"#,
        }],
    },
    NodeType {
        name: "foreach",
        summary: "Runs a `body` chain for every item of the array `items` (JSONata), several at a time; inside, $.<foreach id> is {item, index}; its output is the body's results in order.",
        aliases: &[
            "loop", "each", "for", "iterate", "mapitems", "batch", "forall",
        ],
        examples: &[Example {
            title: "Square every number",
            definition: "name: squares\ninputSchema: {type: object, properties: {values: {type: array}}}\nnodes:\n  - id: entry\n    type: entry\n    next: each\n  - id: each\n    type: foreach\n    items: entry.values\n    body: square\n    next: done\n  - id: square\n    type: transform\n    transform: {expr: 'each.item * each.item'}\n    next: each\n  - id: done\n    type: transform\n    transform: {expr: '{\"squares\": each}'}\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"values": [1, 2, 3]}"#,
            continue_with: None,
            result: r#"{"squares": [1, 4, 9]}"#,
        }],
    },
    NodeType {
        name: "call",
        summary: "Runs another graph tool of this config (`tool`, with `args` as in an mcp node) as a sub-run; its output is that tool's result.",
        aliases: &[
            "subgraph",
            "subtool",
            "subworkflow",
            "invoke",
            "run",
            "graph",
        ],
        examples: &[Example {
            title: "Reuse the saved tool `double` twice",
            definition: "name: quadruple\ninputSchema: {type: object, properties: {n: {type: number}}, required: [n]}\nnodes:\n  - id: entry\n    type: entry\n    next: once\n  - id: once\n    type: call\n    tool: double\n    args: {n: {expr: entry.n}}\n    next: twice\n  - id: twice\n    type: call\n    tool: double\n    args: {n: {expr: once.result}}\n    next: shape\n  - id: shape\n    type: transform\n    transform: {expr: '{\"result\": twice.result}'}\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: Some(DOUBLE),
            arguments: r#"{"n": 5}"#,
            continue_with: None,
            result: r#"{"result": 20}"#,
        }],
    },
    NodeType {
        name: "await",
        summary: "Pauses the run until the client sends input (checked against `inputSchema`): the call answers a session to continue with <tool>_continue; the input becomes this node's output. Needs a store.",
        aliases: &[
            "wait",
            "pause",
            "ask",
            "human",
            "humanintheloop",
            "approval",
            "elicit",
            "prompt",
        ],
        examples: &[Example {
            title: "Ask for approval, then answer with the decision",
            definition: "name: approve\ninputSchema: {type: object, properties: {amount: {type: number}}}\nnodes:\n  - id: entry\n    type: entry\n    next: ask\n  - id: ask\n    type: await\n    message: {expr: '\"Approve a payment of \" & $string(entry.amount) & \"?\"'}\n    inputSchema:\n      type: object\n      properties: {approved: {type: boolean}}\n      required: [approved]\n    next: done\n  - id: done\n    type: transform\n    transform: {expr: '{\"approved\": ask.approved, \"amount\": entry.amount}'}\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"amount": 12}"#,
            continue_with: Some(r#"{"approved": true}"#),
            result: r#"{"approved": true, "amount": 12}"#,
        }],
    },
    NodeType {
        name: "script",
        summary: "Runs a JavaScript function in a sandbox (no I/O, memory and CPU limits): `source` is `(input) => result`; `input` is a JSONata expression (default: the whole context).",
        aliases: &["javascript", "js", "code", "function", "lambda", "python"],
        examples: &[Example {
            title: "Sum in JavaScript",
            definition: "name: js_sum\ninputSchema: {type: object, properties: {values: {type: array}}}\nnodes:\n  - id: entry\n    type: entry\n    next: sum\n  - id: sum\n    type: script\n    input: {expr: entry.values}\n    source: '(values) => ({total: values.reduce((a, b) => a + b, 0)})'\n    next: exit\n  - id: exit\n    type: exit\n",
            uses: None,
            arguments: r#"{"values": [1, 2, 3]}"#,
            continue_with: None,
            result: r#"{"total": 6}"#,
        }],
    },
];
