// The web UI in a real browser (Debian's Chromium, driven by playwright-core; no downloaded
// browser), against a real `mcpflow serve --http` on crates/mcpflow/tests/ui_browser.yaml.
// crates/mcpflow/tests/ui_browser.rs starts the server and runs this script:
//   node ui/tests/browser.mjs BASE_URL SCREENSHOT_DIR
// Exit 0 when every step held; otherwise the failing step, the page's console errors and a
// screenshot (failure.png) in SCREENSHOT_DIR.
import { chromium } from "playwright-core";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { join } from "node:path";

const [server, shots] = process.argv.slice(2);
if (!server || !shots) {
  console.error("usage: node browser.mjs BASE_URL SCREENSHOT_DIR");
  process.exit(2);
}

// The browser reaches the server through a TCP relay, so that a test can cut the page's
// connections (an event stream dropping mid-run) and let it connect again.
const target = new URL(server);
const sockets = new Set();
let down = false;
const relay = createServer((client) => {
  if (down) return client.destroy();
  const upstream = createConnection({ host: target.hostname, port: Number(target.port) });
  for (const s of [client, upstream]) {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
  }
  client.pipe(upstream).pipe(client);
  client.on("close", () => upstream.destroy());
  upstream.on("close", () => client.destroy());
});
await new Promise((resolve) => relay.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${relay.address().port}`;
function cut() {
  down = true;
  for (const s of sockets) s.destroy();
}
function reconnectable() {
  down = false;
}
mkdirSync(shots, { recursive: true });
const executablePath = process.env.MCPFLOW_CHROMIUM || "/usr/bin/chromium";
// Generous for a loaded 2-core machine; a step that holds finishes long before.
const WAIT = 20_000;

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
context.setDefaultTimeout(WAIT);
const page = await context.newPage();
const problems = [];
// While the test itself has cut the page's network, the browser's own notes of the failed
// requests are expected; nothing else is.
let offline = false;
// A refusal the test provokes on purpose (a save racing a change on disk: 409): Chromium notes
// every failed request as a console error; that one, and only while it is expected, is not one.
let refusal = null;
page.on("console", (m) => {
  if (m.type() !== "error") return;
  if (refusal && m.text().includes(`status of ${refusal}`)) return;
  if (offline && /ERR_CONNECTION_RESET|ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|ERR_CONNECTION_CLOSED|ERR_SOCKET_NOT_CONNECTED|ERR_INCOMPLETE_CHUNKED_ENCODING|Failed to fetch/.test(m.text())) return;
  problems.push(`console error: ${m.text()}`);
});
page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
// Chromium's console line for a failed request has no URL: note them here to say which.
page.on("response", (r) => {
  if (r.status() >= 400) console.log(`http ${r.status()}: ${r.request().method()} ${r.url()} (during: ${current})`);
});

let current = "start";
async function step(name, body) {
  current = name;
  const started = Date.now();
  await body();
  console.log(`ok: ${name} (${Date.now() - started} ms)`);
}
async function shot(name) {
  const path = join(shots, `${name}.png`);
  await page.screenshot({ path });
  console.log(`screenshot: ${path}`);
}
async function expectText(locator, text) {
  await locator.filter({ hasText: text }).first().waitFor({ state: "visible" });
}
const node = (id) => page.locator(`.graph [data-node="${id}"]`);
async function nodeState(id, state) {
  await page.locator(`.graph [data-node="${id}"][data-state="${state}"]`).waitFor({ state: "visible" });
}
// Under `--auth` the test's own calls carry the full key.
let testKey = null;
async function api(method, path, body) {
  const r = await fetch(`${server}${path}`, {
    method,
    headers: { ...(body ? { "content-type": "application/json" } : {}), ...(testKey ? { authorization: `Bearer ${testKey}` } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await r.json();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
}
async function runId() {
  await page.waitForURL(/#\/runs\/[^/]+$/);
  return decodeURIComponent(page.url().split("#/runs/")[1]);
}

// `--graphs NAME`: only open the UI on this server's config and draw every graph tool (the
// example configs), with a screenshot of each.
const graphsOnly = process.argv[4] === "--graphs" ? process.argv[5] ?? "config" : null;
// `--edit DIR`: the config's directory, whose tools/ the editor saves into (the race step
// changes a tool's file there behind the editor's back).
const editDir = process.argv[4] === "--edit" ? process.argv[5] : null;
// `--auth READ_ONLY_KEY FULL_KEY`: the server runs under `auth:` with these two keys (scopes
// `runs:read`, and `admin`): the UI asks for a key and offers what its scopes allow.
const authKeys = process.argv[4] === "--auth" ? { reader: process.argv[5], full: process.argv[6] } : null;

async function finish(failed) {
  await browser.close();
  relay.close();
  process.exit(failed ? 1 : 0);
}
async function failed(e) {
  console.error(`FAILED at step: ${current}\n${e instanceof Error ? e.stack ?? e.message : e}`);
  if (problems.length) console.error(`the page reported:\n${problems.join("\n")}`);
  await page.screenshot({ path: join(shots, "failure.png") }).catch(() => {});
  console.error(`screenshot: ${join(shots, "failure.png")}`);
  await finish(true);
}

if (authKeys) {
  try {
    // Every request the page makes: none may carry a key in its URL, and its event streams
    // must carry the key in their header.
    const requests = [];
    page.on("request", (r) => requests.push({ url: r.url(), headers: r.allHeaders().catch(() => ({})) }));
    const keyForm = page.locator('form[aria-label="API key"]');
    const useKey = async (key) => {
      await keyForm.locator('[name="key"]').fill(key);
      await keyForm.getByRole("button", { name: "Use this key" }).click();
    };

    await step("auth: the page loads without a key and asks for one", async () => {
      // The API's 401s while no key is given are expected (Chromium notes each as an error).
      refusal = 401;
      const response = await page.goto(`${base}/ui/`);
      if (!response || response.status() !== 200) throw new Error(`GET /ui/ answered ${response?.status()}`);
      await keyForm.waitFor();
      await shot("13-key-prompt");
    });

    await step("auth: a key the server does not know is refused, and asked for again", async () => {
      await useKey("mcpf_0000000000000000000000000000000000000000000000000000000000000000");
      await expectText(page.getByTestId("key-refused"), "refused");
      await keyForm.waitFor();
    });

    testKey = authKeys.full;
    const past = await api("POST", "/api/runs", { tool: "sum_to_n", args: { n: 2 } });
    for (let i = 0; i < 200; i++) {
      if ((await api("GET", `/api/runs/${past.id}`)).status === "succeeded") break;
      await new Promise((r) => setTimeout(r, 50));
    }

    await step("auth: a read-only key sees graphs and runs, and is offered no edit, run, debug or session", async () => {
      await useKey(authKeys.reader);
      // From here on, any refusal is a failure: the UI must not call what the key may not.
      refusal = null;
      await page.waitForURL(/#\/tools\/sum_to_n$/);
      for (const id of ["entry", "add", "more", "done", "exit"]) await node(id).waitFor();
      await expectText(page.getByTestId("whoami"), "reader");
      await expectText(page.getByTestId("whoami"), "runs:read");
      // Editing: the Edit link is disabled, `e` goes nowhere, no New tool, the editor's route says why.
      await page.locator('.panel-head [aria-disabled="true"]', { hasText: "Edit" }).waitFor();
      if (await page.getByRole("link", { name: "Edit", exact: true }).count()) throw new Error("an Edit link is offered to a read-only key");
      if (await page.getByRole("link", { name: "New tool" }).count()) throw new Error("New tool is offered to a read-only key");
      await page.locator("body").press("e");
      await page.waitForTimeout(300);
      if (!/#\/tools\/sum_to_n$/.test(page.url())) throw new Error(`e opened ${page.url()}`);
      // Running (from here, always debuggable) needs `debug`.
      const form = page.locator('form[aria-label="Run sum_to_n"]');
      if (!(await form.getByRole("button", { name: "Run" }).isDisabled())) throw new Error("Run is enabled for a read-only key");
      await expectText(form.getByTestId("form-disabled"), "debug");
      await node("more").click();
      if (!(await page.locator("form.bp-form").getByRole("button", { name: "Set breakpoint" }).isDisabled())) throw new Error("breakpoints are offered to a read-only key");
      // No sessions view.
      if (await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: /Sessions/ }).count()) throw new Error("Sessions is offered to a read-only key");
      await shot("14-read-only");
      await page.goto(`${base}/ui/#/edit/greeting`);
      await expectText(page.locator(".empty"), "authoring");
      // A past run opens, without the debugger.
      await page.goto(`${base}/ui/#/runs/${encodeURIComponent(past.id)}`);
      await expectText(page.locator(".panel-head .status"), "succeeded");
      for (const id of ["entry", "add", "more", "done", "exit"]) await nodeState(id, "done");
      if (await page.getByRole("toolbar", { name: "Debugger" }).count()) throw new Error("the debugger is offered to a read-only key");
    });

    await step("auth: with a full key a tool runs and its events arrive live over the stream", async () => {
      await page.getByRole("button", { name: "Sign out" }).click();
      await keyForm.waitFor();
      await useKey(authKeys.full);
      await expectText(page.getByTestId("whoami"), "admin");
      await page.goto(`${base}/ui/#/tools/sum_to_n`);
      await page.getByRole("link", { name: "Edit", exact: true }).waitFor();
      const form = page.locator('form[aria-label="Run sum_to_n"]');
      await form.locator('[name="n"]').fill("2");
      await form.locator('[name="pause"]').check();
      await form.getByRole("button", { name: "Debug (start paused)" }).click();
      const id = await runId();
      await expectText(page.getByTestId("paused-at"), "entry (pause)");
      await page.locator('[aria-label="Run panel"][data-streaming="true"]').waitFor();
      // A step from outside the page: only the event stream can tell the page of it.
      await api("POST", `/api/runs/${id}/step`);
      await expectText(page.getByTestId("paused-at"), "add (step)");
      await expectText(page.getByRole("tab", { name: /Timeline/ }), "Timeline (1)");
      await nodeState("entry", "done");
      await nodeState("add", "paused");
      const panel = page.locator('[aria-label="Run panel"]');
      if ((await panel.getAttribute("data-reconnects")) !== "0") throw new Error("the stream had to be opened again");
      await shot("15-full-key-live");
      await page.getByRole("button", { name: "Resume" }).click();
      await expectText(page.locator(".panel-head .status"), "succeeded");
      for (const n of ["entry", "add", "more", "done", "exit"]) await nodeState(n, "done");
      await expectText(page.locator('[aria-label="result"]'), '"sum": 3');
      const streams = requests.filter((r) => /\/api\/runs\/[^/]+\/events/.test(r.url));
      if (streams.length === 0) throw new Error("no event stream was opened");
      for (const r of streams) {
        const authorization = (await r.headers).authorization;
        if (authorization !== `Bearer ${authKeys.full}`) throw new Error(`an event stream without the key: ${r.url}`);
      }
      for (const key of [authKeys.reader, authKeys.full]) {
        const leaked = requests.find((r) => r.url.includes(key) || r.url.includes(encodeURIComponent(key)));
        if (leaked) throw new Error(`a key in a URL: ${leaked.url}`);
      }
      const stored = await page.evaluate(() => [Object.keys(localStorage).length, Object.keys(sessionStorage)]);
      if (stored[0] !== 0) throw new Error("the key was kept beyond the tab (localStorage)");
    });

    await step("the page fits 1280×800 without scrolling the document", async () => {
      const size = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.scrollHeight]);
      if (size[0] > 1280 || size[1] > 800) throw new Error(`the page is ${size[0]}×${size[1]}`);
    });
    if (problems.length) throw new Error(`the page reported:\n${problems.join("\n")}`);
    console.log("browser: all steps passed");
  } catch (e) {
    await failed(e);
  }
  await finish(false);
}
if (graphsOnly) {
  try {
    const { tools } = await api("GET", "/api/tools");
    await step(`${graphsOnly}: the UI opens`, async () => {
      await page.goto(`${base}/ui/`);
      if (tools.length) await page.waitForURL(/#\/tools\/.+/);
    });
    for (const tool of tools) {
      await step(`${graphsOnly}: ${tool.name} is drawn`, async () => {
        const graph = await api("GET", `/api/tools/${encodeURIComponent(tool.name)}/graph`);
        await page.goto(`${base}/ui/#/tools/${encodeURIComponent(tool.name)}`);
        for (const n of graph.nodes) await node(n.id).waitFor();
        const form = page.locator(`form[aria-label="Run ${tool.name}"]`);
        await form.waitFor();
        for (const name of Object.keys(graph.inputSchema?.properties ?? {})) await form.locator(`[name="${name}"]`).waitFor();
        await shot(`${graphsOnly}-${tool.name}`);
      });
    }
    if (problems.length) throw new Error(`the page reported:\n${problems.join("\n")}`);
    console.log("browser: all steps passed");
  } catch (e) {
    console.error(`FAILED at step: ${current}\n${e instanceof Error ? e.stack ?? e.message : e}`);
    if (problems.length) console.error(`the page reported:\n${problems.join("\n")}`);
    await page.screenshot({ path: join(shots, "failure.png") }).catch(() => {});
    await browser.close();
    relay.close();
    process.exit(1);
  }
  await browser.close();
  relay.close();
  process.exit(0);
}

try {
  await step("the UI opens on the first tool and draws its graph", async () => {
    const response = await page.goto(`${base}/ui/`);
    if (!response || response.status() !== 200) throw new Error(`GET /ui/ answered ${response?.status()}`);
    await page.waitForURL(/#\/tools\/sum_to_n$/);
    for (const id of ["entry", "add", "more", "done", "exit"]) await node(id).waitFor();
    // The switch's condition labels its edge; the default edge says so.
    await expectText(page.locator(".react-flow__edge-text"), "add.i < entry.n");
    await expectText(page.locator(".react-flow__edge-text"), "default");
    // Shape and colour by type.
    const switchClip = await node("more").locator(".fnode").evaluate((el) => getComputedStyle(el).clipPath);
    if (!switchClip.startsWith("polygon")) throw new Error(`a switch is drawn as a hexagon, got clip-path ${switchClip}`);
    await shot("01-tool-graph");
  });

  await step("groups: parallel branches and a foreach body", async () => {
    await page.goto(`${base}/ui/#/tools/fan`);
    await node("l1").waitFor();
    for (const title of ["both · branch left", "both · branch right", "each · for each item"]) {
      await expectText(page.locator(".group-title"), title);
    }
    // A branch's node is drawn inside its group.
    const inside = await page.evaluate(() => {
      const group = [...document.querySelectorAll(".react-flow__node-group")].find((g) => g.textContent?.includes("branch left"));
      const n = document.querySelector('.react-flow__node[data-id="l1"]');
      if (!group || !n) return false;
      const a = group.getBoundingClientRect();
      const b = n.getBoundingClientRect();
      return b.left >= a.left && b.right <= a.right && b.top >= a.top && b.bottom <= a.bottom;
    });
    if (!inside) throw new Error("node l1 is not drawn inside the group of branch left");
    await shot("02-groups");
  });

  await step("a node's definition and its place in the YAML, chosen with the keyboard", async () => {
    await page.goto(`${base}/ui/#/tools/sum_to_n`);
    await node("add").waitFor();
    // Tab into the graph's nodes, then Enter selects the focused one.
    await page.locator('.react-flow__node[data-id="add"]').focus();
    await page.keyboard.press("Enter");
    const where = page.getByTestId("yaml-position");
    await expectText(where, "ui_browser.yaml:");
    await expectText(page.locator('[aria-label="definition"]'), "$executionCount");
    await shot("03-node");
  });

  await step("run a tool from its form and see every node reach its state", async () => {
    await page.goto(`${base}/ui/#/tools/sum_to_n`);
    await page.getByRole("tab", { name: "Run" }).click();
    const form = page.locator('form[aria-label="Run sum_to_n"]');
    await form.locator('[name="n"]').fill("3");
    await form.getByRole("button", { name: "Run" }).click();
    await runId();
    for (const id of ["entry", "add", "more", "done", "exit"]) await nodeState(id, "done");
    await expectText(page.locator(".panel-head .status"), "succeeded");
    await expectText(page.locator('[aria-label="result"]'), '"sum": 6');
    // Per-node timing: the loop's nodes ran three times.
    await expectText(node("add"), "3×");
    await shot("04-run");
  });

  let debugRun;
  await step("a conditional breakpoint, two steps, and the context at step 2 in the timeline", async () => {
    await page.goto(`${base}/ui/#/tools/sum_to_n`);
    await node("more").click();
    const bp = page.locator("form.bp-form");
    await bp.locator('[name="condition"]').fill("$.add.i >= 2");
    await bp.getByRole("button", { name: "Set breakpoint" }).click();
    await page.locator('.graph [data-node="more"] .bp').waitFor();
    await page.getByRole("tab", { name: "Run" }).click();
    const form = page.locator('form[aria-label="Run sum_to_n"]');
    await form.locator('[name="n"]').fill("4");
    await form.getByRole("button", { name: "Run" }).click();
    debugRun = await runId();
    // entry, add (i=1), more, add (i=2): then the breakpoint's condition holds before `more`.
    await expectText(page.getByTestId("paused-at"), "more (breakpoint)");
    await nodeState("more", "paused");
    await expectText(page.getByRole("tab", { name: /Timeline/ }), "Timeline (4)");
    // Step with the button, then with F10.
    await page.getByRole("button", { name: "Step" }).click();
    await expectText(page.getByRole("tab", { name: /Timeline/ }), "Timeline (5)");
    await expectText(page.getByTestId("paused-at"), "add (step)");
    await page.keyboard.press("F10");
    await expectText(page.getByRole("tab", { name: /Timeline/ }), "Timeline (6)");
    await expectText(page.getByTestId("paused-at"), "more");
    await page.getByRole("tab", { name: /Timeline/ }).click();
    await page.locator('[aria-label="History"] [data-key="2"]').click();
    const ctx = page.getByTestId("context");
    await expectText(ctx, "after step #2");
    const text = await ctx.locator(".json").innerText();
    const context = JSON.parse(text);
    if (context.entry?.n !== 4 || context.add?.i !== 1 || context.add?.sum !== 1) {
      throw new Error(`the context after step 2 is entry n=4 and add's first output, got ${text}`);
    }
    await shot("05-debug-timeline");
    // Clear the breakpoint on the live run, then resume (F8) to the end.
    await node("more").click();
    await page.locator("form.bp-form").getByRole("button", { name: "Clear breakpoint" }).click();
    await page.locator('.graph [data-node="more"] .bp').waitFor({ state: "detached" });
    await page.keyboard.press("F8");
    await expectText(page.locator(".panel-head .status"), "succeeded");
    await page.getByRole("tab", { name: "Run" }).click();
    await expectText(page.locator('[aria-label="result"]'), '"sum": 10');
  });

  await step("a run's view reconnects when its event stream drops, and catches up", async () => {
    const started = await api("POST", "/api/runs", { tool: "sum_to_n", args: { n: 2 }, debug: { pause: true } });
    await page.goto(`${base}/ui/#/runs/${encodeURIComponent(started.id)}`);
    await expectText(page.getByTestId("paused-at"), "entry (pause)");
    const panel = page.locator('[aria-label="Run panel"]');
    await page.locator('[aria-label="Run panel"][data-streaming="true"]').waitFor();
    // The page's connections are cut and it cannot connect; the run goes on meanwhile (a step
    // from outside the page).
    offline = true;
    cut();
    await page.locator('[aria-label="Run panel"][data-streaming="false"]').waitFor();
    await api("POST", `/api/runs/${started.id}/step`);
    for (let i = 0; i < 200; i++) {
      const run = await api("GET", `/api/runs/${started.id}`);
      if (run.debug?.paused?.[0]?.nodeId === "add") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    reconnectable();
    // Back online: the stream is opened again and its replay brings what was missed.
    await page.locator('[aria-label="Run panel"][data-streaming="true"]').waitFor();
    await expectText(page.getByTestId("paused-at"), "add (step)");
    await expectText(page.getByRole("tab", { name: /Timeline/ }), "Timeline (1)");
    offline = false;
    const reconnects = Number(await panel.getAttribute("data-reconnects"));
    if (!(reconnects >= 1)) throw new Error(`the view did not reconnect (data-reconnects=${reconnects})`);
    await page.getByRole("button", { name: "Resume" }).click();
    await expectText(page.locator(".panel-head .status"), "succeeded");
    for (const id of ["entry", "add", "more", "done", "exit"]) await nodeState(id, "done");
  });

  await step("continue an await session from its form", async () => {
    await page.goto(`${base}/ui/#/tools/order`);
    const form = page.locator('form[aria-label="Run order"]');
    await form.locator('[name="item"]').selectOption("tea");
    await form.getByRole("button", { name: "Run" }).click();
    const id = await runId();
    await expectText(page.locator(".panel-head .status"), "waiting");
    await expectText(page.locator(".waiting"), "How many tea?");
    // The sessions view lists it; its form is the await's inputSchema.
    await page.keyboard.press("3");
    await page.waitForURL(/#\/sessions$/);
    await page.locator('[aria-label="Waiting sessions"] [role="option"]:focus').waitFor();
    await page.keyboard.press("Enter");
    await page.waitForURL(/#\/sessions\/.+/);
    const input = page.locator('form[aria-label="Session input"]');
    await input.locator('[name="quantity"]').fill("3");
    await shot("06-session");
    await input.getByRole("button", { name: "Continue" }).click();
    await expectText(page.locator('[aria-label="continue answer"]'), '"total": 13.5');
    await page.getByRole("link", { name: "open the run" }).click();
    await page.waitForURL(new RegExp(`#/runs/${id}$`));
    await expectText(page.locator(".panel-head .status"), "succeeded");
    for (const n of ["start", "quantity", "price", "exit"]) await nodeState(n, "done");
  });

  await step("a past failed run opens with its failing node", async () => {
    const started = await api("POST", "/api/runs", { tool: "checked", args: { value: -1 } });
    for (let i = 0; i < 200; i++) {
      const run = await api("GET", `/api/runs/${started.id}`);
      if (run.status === "failed") break;
      if (run.status !== "running") throw new Error(`run ${started.id} ended ${run.status}, not failed`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await page.goto(`${base}/ui/#/runs`);
    await page.getByLabel("Filter runs by status").selectOption("failed");
    const row = page.locator(`[aria-label="Runs"] [data-key="${started.id}"]`);
    await row.waitFor();
    await row.click();
    await page.waitForURL(new RegExp(`#/runs/${started.id}$`));
    await nodeState("reject", "failed");
    await nodeState("sign", "done");
    await expectText(page.getByTestId("failed-at"), "reject");
    await expectText(page.locator('[aria-label="run error"]'), "negative values are refused");
    await shot("07-failed-run");
  });

  await step("the runs list, with the keyboard", async () => {
    await page.goto(`${base}/ui/#/tools/sum_to_n`);
    await node("add").waitFor();
    await page.keyboard.press("2");
    await page.waitForURL(/#\/runs$/);
    await page.locator('[aria-label="Runs"] [role="option"]').nth(1).waitFor();
    await page.locator('[aria-label="Runs"] [role="option"]:focus').waitFor();
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Enter");
    await page.waitForURL(/#\/runs\/.+/);
    await page.locator(".panel-head .status").waitFor();
    await shot("08-runs");
  });

  await step("the slowest nodes of a tool over its recent runs are marked", async () => {
    const timing = await api("GET", "/api/tools/sum_to_n/timing");
    if (timing.runs < 3) throw new Error(`the earlier steps ended runs of sum_to_n: ${JSON.stringify(timing)}`);
    const expected = timing.nodes.filter((n) => n.totalMs > 0).slice(0, 3).map((n) => n.node);
    if (expected.length === 0) throw new Error(`no node took any time: ${JSON.stringify(timing)}`);
    await page.goto(`${base}/ui/#/tools/sum_to_n`);
    await expectText(page.getByTestId("slow-table"), expected[0]);
    await expectText(page.locator('[aria-label="Where the time goes"] h4'), `last ${timing.runs} runs`);
    for (const [i, id] of expected.entries()) {
      await page.locator(`.graph [data-node="${id}"][data-slow="${i + 1}"]`).waitFor();
      await expectText(node(id), `slow #${i + 1}`);
    }
    const marked = await page.locator(".graph [data-slow]").count();
    if (marked !== expected.length) throw new Error(`${marked} nodes marked slow, expected ${expected.join(", ")}`);
    await shot("16-slowest");
  });

  await step("the upstreams' tools with their schemas, from the keyboard", async () => {
    await page.goto(`${base}/ui/#/tools/sum_to_n`);
    await node("add").waitFor();
    await page.keyboard.press("4");
    await page.waitForURL(/#\/upstreams$/);
    const row = page.locator('[aria-label="Upstream tools"] [data-key="fixture/echo_text"]');
    await row.waitFor();
    await page.locator('[aria-label="Upstream tools"] [role="option"]:focus').waitFor();
    await row.click();
    await page.waitForURL(/#\/upstreams\/fixture%2Fecho_text$/);
    const view = page.locator('[aria-label="Upstream tool echo_text"]');
    await expectText(view, "as one plain text block");
    const arg = view.locator('[data-arg="text"]');
    await expectText(arg, "string");
    await arg.locator(".req").waitFor();
    await expectText(view.locator('[aria-label="input schema"]'), '"required"');
    await shot("17-upstreams");
  });

  if (editDir) {
    const status = page.getByTestId("edit-status");
    const yaml = page.getByRole("textbox", { name: "YAML", exact: true });
    const edge = (from, to) => page.locator(`.react-flow__edge[data-id$=":${from}->${to}"]`);
    // The graph is fitted to the view again, animated, after a change of shape: a handle's box
    // is read once it has stopped moving (a fixed pause was too short on a loaded machine).
    async function settledBox(locator) {
      let last = await locator.boundingBox();
      for (let i = 0; i < 50; i++) {
        await page.waitForTimeout(100);
        const now = await locator.boundingBox();
        if (now && last && now.x === last.x && now.y === last.y) return now;
        last = now;
      }
      return last;
    }
    async function connectNodes(from, to) {
      const a = await settledBox(page.locator(`.react-flow__node[data-id="${from}"] .react-flow__handle.source`));
      const b = await settledBox(page.locator(`.react-flow__node[data-id="${to}"] .react-flow__handle.target`));
      if (!a || !b) throw new Error(`no handles to connect ${from} to ${to}`);
      await page.mouse.move(a.x + a.width / 2, a.y + a.height / 2);
      await page.mouse.down();
      await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 15 });
      await page.mouse.up();
      await edge(from, to).waitFor({ state: "attached" });
    }
    async function fits() {
      const size = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.scrollHeight]);
      if (size[0] > 1280 || size[1] > 800) throw new Error(`the page is ${size[0]}×${size[1]}`);
    }
    async function saved() {
      await page.getByRole("button", { name: "Save", exact: true }).click();
      await expectText(page.getByTestId("saved"), "served now");
    }

    await step("edit: a saved tool opens in the editor, its YAML beside its graph", async () => {
      await page.goto(`${base}/ui/#/tools/greeting`);
      await node("hello").waitFor();
      // The tool's Edit link, or `e` from the keyboard.
      await page.getByRole("link", { name: "Edit", exact: true }).waitFor();
      await page.keyboard.press("e");
      await page.waitForURL(/#\/edit\/greeting$/);
      await node("hello").waitFor();
      await expectText(status, "valid");
      if (!(await yaml.inputValue()).includes("name: greeting")) throw new Error("the YAML pane does not show the tool");
      await fits();
    });

    await step("edit: add a transform, connect it, a broken expression marked on its node, fixed, saved", async () => {
      await page.locator(".add-bar").getByRole("button", { name: "transform" }).click();
      await node("transform1").waitFor();
      // Not connected yet: the server's check marks it.
      await page.locator('.graph [data-node="transform1"][data-problem]').waitFor();
      await connectNodes("hello", "transform1");
      await connectNodes("transform1", "exit");
      await page.locator('.graph [data-node="transform1"]:not([data-problem])').waitFor();
      if (!(await yaml.inputValue()).includes("next: transform1")) throw new Error("the YAML does not follow the graph");
      await node("transform1").click();
      const form = page.locator('form[aria-label="Fields of transform1"]');
      const expr = form.locator('[name="transform.expr"]');
      await expr.fill('{"shout": $uppercase(hello.text) & }');
      await page.locator('.graph [data-node="transform1"][data-problem]').waitFor();
      await form.locator(".field-problems").waitFor();
      await expectText(status, "problem");
      if (!(await page.getByRole("button", { name: "Save", exact: true }).isDisabled())) throw new Error("an invalid tool can be saved");
      await shot("09-edit");
      await expr.fill('{"shout": $uppercase(hello.text)}');
      await page.locator('.graph [data-node="transform1"]:not([data-problem])').waitFor();
      await expectText(status, "valid");
      await page.getByTestId("unsaved").waitFor();
      await saved();
      await page.getByTestId("unsaved").waitFor({ state: "detached" });
      // Served with the change.
      const graph = await api("GET", "/api/tools/greeting/graph");
      if (!graph.nodes.some((n) => n.id === "transform1")) throw new Error("the saved tool is not served");
      const started = await api("POST", "/api/runs", { tool: "greeting", args: { who: "ada" } });
      let run;
      for (let i = 0; i < 200; i++) {
        run = await api("GET", `/api/runs/${started.id}`);
        if (run.status !== "running") break;
        await new Promise((r) => setTimeout(r, 50));
      }
      if (run?.result?.shout !== "HELLO ADA") throw new Error(`the saved tool answered ${JSON.stringify(run)}`);
    });

    await step("edit: YAML and graph in step; a YAML edit that does not parse is an error and keeps the graph", async () => {
      const good = await yaml.inputValue();
      await yaml.fill(good.replace("$uppercase(hello.text)", "$lowercase(hello.text)"));
      await expectText(node("transform1"), "$lowercase");
      await page.getByRole("button", { name: "Undo" }).click();
      await expectText(node("transform1"), "$uppercase");
      await yaml.fill(good.replace("nodes:", "nodes: [\n  - {id: broken"));
      const err = page.getByTestId("yaml-error");
      await expectText(err, "line");
      await node("transform1").waitFor();
      await node("hello").waitFor();
      if (!(await page.getByRole("button", { name: "Save", exact: true }).isDisabled())) throw new Error("unparsed YAML can be saved");
      await shot("10-yaml-error");
      await page.getByRole("button", { name: "Undo" }).click();
      await err.waitFor({ state: "detached" });
      if ((await yaml.inputValue()) !== good) throw new Error("undo did not bring the YAML back");
      await expectText(status, "valid");
    });

    await step("edit: a save racing a change on disk is refused with a clear message", async () => {
      const file = join(editDir, "tools", "greeting.yaml");
      const byHand = readFileSync(file, "utf8").replace("Greets someone", "Greets someone (edited by hand)");
      writeFileSync(file, byHand);
      await page.getByRole("tab", { name: "Tool" }).click();
      await page.locator('form[aria-label="Tool fields"] [name="description"]').fill("Greets someone, loudly");
      await expectText(status, "valid");
      refusal = 409;
      await page.getByRole("button", { name: "Save", exact: true }).click();
      await expectText(page.getByTestId("save-error"), "changed on disk since it was opened");
      refusal = null;
      await shot("11-save-conflict");
      if (readFileSync(file, "utf8") !== byHand) throw new Error("the change on disk was overwritten");
      // Opened again as it is on disk, the change made there shows.
      await page.getByRole("button", { name: "Open the version on disk" }).click();
      await page.getByTestId("save-error").waitFor({ state: "detached" });
      await expectText(status, "valid");
      if (!(await yaml.inputValue()).includes("edited by hand")) throw new Error("the tool was not opened again from disk");
    });

    await step("edit: a new tool from a template, saved, exported and imported", async () => {
      await page.goto(`${base}/ui/#/tools/greeting`);
      await page.getByRole("link", { name: "New tool" }).click();
      await page.waitForURL(/#\/new$/);
      await expectText(status, "valid");
      // Deleting in the graph, and undo: a node added then deleted with the keyboard, an edge
      // selected and deleted, then brought back.
      await page.locator(".add-bar").getByRole("button", { name: "switch" }).click();
      await node("switch1").waitFor();
      await page.locator('.react-flow__node[data-id="switch1"]').focus();
      await page.keyboard.press("Delete");
      await node("switch1").waitFor({ state: "detached" });
      // A straight edge has no box to click: click half way between the handles it joins.
      const from = await settledBox(page.locator('.react-flow__node[data-id="shape"] .react-flow__handle.source'));
      const to = await settledBox(page.locator('.react-flow__node[data-id="exit"] .react-flow__handle.target'));
      if (!from || !to) throw new Error("no handles around the edge shape → exit");
      await page.mouse.click((from.x + to.x + from.width) / 2, (from.y + from.height + to.y) / 2);
      // Selected by the click, then given the keyboard's focus as the node above was: the key
      // went nowhere when the focus stayed elsewhere (seen on a loaded machine).
      await page.locator('.react-flow__edge.selected[data-id$=":shape->exit"]').waitFor({ state: "attached" });
      await edge("shape", "exit").focus();
      await page.keyboard.press("Delete");
      await edge("shape", "exit").waitFor({ state: "detached" });
      if ((await yaml.inputValue()).includes("next: exit")) throw new Error("the deleted edge is still in the YAML");
      await page.getByRole("button", { name: "Undo" }).click();
      await edge("shape", "exit").waitFor({ state: "attached" });
      await expectText(status, "valid");
      await page.getByRole("tab", { name: "Tool" }).click();
      await page.locator('form[aria-label="Tool fields"] [name="name"]').fill("from_template");
      await expectText(status, "valid");
      await saved();
      await shot("12-new-tool");
      const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export" }).click()]);
      if (download.suggestedFilename() !== "from_template.yaml") throw new Error(`exported as ${download.suggestedFilename()}`);
      const exported = readFileSync(await download.path(), "utf8");
      if (!exported.includes("name: from_template")) throw new Error(`the export is not the tool: ${exported}`);
      const file = join(shots, "imported_tool.yaml");
      writeFileSync(file, exported.replace("name: from_template", "name: imported_tool"));
      await page.locator('input[type="file"]').setInputFiles(file);
      await expectText(page.getByTestId("saved"), "imported");
      await expectText(status, "valid");
      if (!(await yaml.inputValue()).includes("name: imported_tool")) throw new Error("the import is not in the editor");
      await saved();
      const { tools } = await api("GET", "/api/tools");
      for (const t of ["from_template", "imported_tool"]) if (!tools.some((x) => x.name === t)) throw new Error(`${t} is not served`);
      await fits();
    });
  }

  if (editDir) {
    const chain = page.locator(".hook-chain");
    const hookNode = (id) => chain.locator(`.hnode[data-hook="${id}"]`);
    const hooksStatus = page.getByTestId("hooks-status");
    const hooksFile = join(editDir, "hooks.yaml");
    // A call of the fixture's echo_text through the gateway (the REST face is an MCP call of
    // /mcp: the handler, the gateway and its hooks).
    const echo = (text) => api("POST", "/rest/v1/tools/fixture__echo_text/call", { text });
    async function saveHooks() {
      await page.getByRole("button", { name: "Save", exact: true }).click();
      await expectText(page.getByTestId("hooks-saved"), "served now");
      await page.getByTestId("hooks-unsaved").waitFor({ state: "detached" });
    }
    async function fits() {
      const size = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.scrollHeight]);
      if (size[0] > 1280 || size[1] > 800) throw new Error(`the page is ${size[0]}×${size[1]}`);
    }
    async function x(id) {
      const box = await hookNode(id).boundingBox();
      if (!box) throw new Error(`hook ${id} is not drawn`);
      return box;
    }

    await step("hooks: a pre hook added to a proxied upstream's flow, its script marked, tried on a sample, saved, and a call through the gateway is rejected by it", async () => {
      const before = await echo("shout");
      if (before.isError) throw new Error(`before any hook a shout passes: ${JSON.stringify(before)}`);
      await page.goto(`${base}/ui/#/tools/sum_to_n`);
      await node("add").waitFor();
      await page.keyboard.press("5");
      await page.waitForURL(/#\/hooks\/fixture%2Ftools%2Fcall$/);
      await chain.locator('.hnode[data-kind="call"]').waitFor();
      await chain.locator('.hnode[data-kind="start"]').waitFor();
      await page.getByRole("button", { name: "Add pre hook" }).click();
      await hookNode("pre1").waitFor();
      // Drawn between Start and the upstream call.
      const [start, pre1, call] = [await chain.locator('.hnode[data-kind="start"]').boundingBox(), await x("pre1"), await chain.locator('.hnode[data-kind="call"]').boundingBox()];
      if (!(start.x < pre1.x && pre1.x < call.x)) throw new Error("pre1 is not drawn between Start and the upstream call");
      const panel = page.locator('[aria-label="Hook pre1"]');
      const script = panel.getByRole("textbox", { name: "Script" });
      // A syntax error, marked by the server's check at its line.
      await script.fill("(ctx) => {\n  return ctx.request.params.arguments.text === 'shout'\n    ? {reject: 'no shouting here'\n}");
      await page.locator('.script-pane .gl.bad').waitFor();
      await expectText(page.getByTestId("hook-problems"), "line ");
      await chain.locator('.hnode.has-problem[data-hook="pre1"]').waitFor();
      await expectText(hooksStatus, "problem");
      if (!(await page.getByRole("button", { name: "Save", exact: true }).isDisabled())) throw new Error("a hook with a syntax error can be saved");
      if (!(await panel.getByRole("button", { name: "Try" }).isDisabled())) throw new Error("a hook with a syntax error can be tried");
      await shot("18-hook-error");
      await script.fill("(ctx) => ctx.request.params.arguments.text === 'shout'\n  ? {reject: 'no shouting here'}\n  : undefined");
      await chain.locator('.hnode[data-hook="pre1"]:not(.has-problem)').waitFor();
      await expectText(hooksStatus, "valid");
      // Tried on a sample in the sandbox: the verdict a served hook would give.
      const sample = panel.getByRole("textbox", { name: "Sample request" });
      await sample.fill(JSON.stringify({ name: "echo_text", arguments: { text: "shout" } }));
      await panel.getByRole("button", { name: "Try" }).click();
      await expectText(page.getByTestId("trial"), "rejected: no shouting here");
      await expectText(page.getByTestId("trial"), "the call would be refused");
      await shot("19-hook-try");
      await sample.fill(JSON.stringify({ name: "echo_text", arguments: { text: "calm" } }));
      await panel.getByRole("button", { name: "Try" }).click();
      await page.locator('[data-testid="trial"][data-outcome="passed"]').waitFor();
      // Nothing is served before the save.
      if ((await echo("shout")).isError) throw new Error("an unsaved hook rejected a call");
      await saveHooks();
      if (!readFileSync(hooksFile, "utf8").includes("no shouting here")) throw new Error("the hook is not in the hooks file");
      const after = await echo("shout");
      if (!after.isError || !JSON.stringify(after).includes("no shouting here")) throw new Error(`the saved hook did not reject the call: ${JSON.stringify(after)}`);
      const calm = await echo("calm");
      if (calm.isError) throw new Error(`the saved hook rejected a calm call: ${JSON.stringify(calm)}`);
      await fits();
    });

    await step("hooks: a second hook made fire-and-forget, moved before the first, switched off; a save racing a change on disk refused", async () => {
      await page.getByRole("button", { name: "Add pre hook" }).click();
      await hookNode("pre2").waitFor();
      const panel = page.locator('[aria-label="Hook pre2"]');
      await panel.locator('[name="blocking"]').uncheck();
      // Fire-and-forget: drawn off the request's path, below it.
      await chain.locator('.hnode.h-background[data-hook="pre2"]').waitFor();
      if (!((await x("pre2")).y > (await x("pre1")).y + 20)) throw new Error("a fire-and-forget hook is drawn on the request's path");
      await panel.getByRole("button", { name: "Move earlier" }).click();
      for (let i = 0; i < 50 && !((await x("pre2")).x < (await x("pre1")).x); i++) await page.waitForTimeout(100);
      if (!((await x("pre2")).x < (await x("pre1")).x)) throw new Error("pre2 did not move before pre1");
      await page.locator('[aria-label="Hook pre2"] [name="enabled"]').uncheck();
      await chain.locator('.hnode.h-off[data-hook="pre2"]').waitFor();
      await expectText(hooksStatus, "valid");
      await saveHooks();
      const file = readFileSync(hooksFile, "utf8");
      if (!(file.indexOf("id: pre2") >= 0 && file.indexOf("id: pre2") < file.indexOf("id: pre1"))) throw new Error(`pre2 is not saved before pre1:\n${file}`);
      if (!file.includes("blocking: false") || !file.includes("enabled: false")) throw new Error(`pre2's switches are not saved:\n${file}`);
      await shot("20-hook-flow");
      // A change on disk behind the editor's back: the next save is refused, the change kept.
      const byHand = `${file}# edited by hand\n`;
      writeFileSync(hooksFile, byHand);
      await hookNode("pre1").click();
      await page.locator('[aria-label="Hook pre1"] [name="tool"]').fill("echo_*");
      await expectText(hooksStatus, "valid");
      refusal = 409;
      await page.getByRole("button", { name: "Save", exact: true }).click();
      await expectText(page.getByTestId("hooks-save-error"), "changed on disk since it was opened");
      refusal = null;
      if (readFileSync(hooksFile, "utf8") !== byHand) throw new Error("the change on disk was overwritten");
      await page.getByRole("button", { name: "Open the version on disk" }).click();
      await page.getByTestId("hooks-save-error").waitFor({ state: "detached" });
      await page.getByTestId("hooks-unsaved").waitFor({ state: "detached" });
    });

    await step("hooks: the flow exported as a file and imported into it, checked before it joins; a broken flow file refused", async () => {
      const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export" }).click()]);
      if (download.suggestedFilename() !== "hooks-fixture-tools-call.yaml") throw new Error(`exported as ${download.suggestedFilename()}`);
      const exported = readFileSync(await download.path(), "utf8");
      if (!exported.includes("hooks:") || !exported.includes("id: pre1") || !exported.includes("no shouting here")) throw new Error(`the export is not the flow:\n${exported}`);
      const broken = join(shots, "broken-flow.yaml");
      writeFileSync(broken, exported.replace("? {reject: 'no shouting here'}", "? {reject: 'no shouting here'"));
      await page.locator('input[aria-label="Import a hook flow file"]').setInputFiles(broken);
      await expectText(page.getByTestId("hooks-save-error"), "was not imported");
      await expectText(page.getByTestId("hooks-save-error"), "/hooks/");
      if (await page.getByTestId("hooks-unsaved").count()) throw new Error("a refused import changed the flow");
      const file = join(shots, "imported-flow.yaml");
      writeFileSync(file, exported.replaceAll("id: pre1", "id: imported1").replaceAll("id: pre2", "id: imported2"));
      await page.locator('input[aria-label="Import a hook flow file"]').setInputFiles(file);
      await expectText(page.getByTestId("hooks-saved"), "imported 2 hooks");
      await hookNode("imported1").waitFor();
      await hookNode("imported2").waitFor();
      await expectText(hooksStatus, "valid");
      await saveHooks();
      const saved = readFileSync(hooksFile, "utf8");
      for (const id of ["pre1", "pre2", "imported1", "imported2"]) if (!saved.includes(`id: ${id}`)) throw new Error(`${id} is not saved:\n${saved}`);
      const after = await echo("shout");
      if (!after.isError) throw new Error("the flow no longer rejects a shout");
      await fits();
    });
  }

  await step("a waiting session cancelled from its view", async () => {
    const started = await api("POST", "/api/runs", { tool: "order", args: { item: "cake" } });
    let sessionId;
    for (let i = 0; i < 200 && !sessionId; i++) {
      const run = await api("GET", `/api/runs/${started.id}`);
      sessionId = run.waiting?.sessionId;
      if (!sessionId) await new Promise((r) => setTimeout(r, 50));
    }
    if (!sessionId) throw new Error("the order run did not wait");
    await page.goto(`${base}/ui/#/sessions/${encodeURIComponent(sessionId)}`);
    await page.locator('form[aria-label="Session input"] [name="quantity"]').waitFor();
    await page.getByRole("button", { name: "Cancel the session" }).click();
    await expectText(page.getByTestId("session-cancelled"), "cancelled");
    await page.locator('form[aria-label="Session input"]').waitFor({ state: "detached" });
    await page.getByRole("link", { name: "open the run" }).click();
    await page.waitForURL(new RegExp(`#/runs/${started.id}$`));
    await expectText(page.locator(".panel-head .status"), "cancelled");
    const { sessions } = await api("GET", "/api/sessions?status=waiting");
    if (sessions.some((s) => s.id === sessionId)) throw new Error("the cancelled session is still waiting");
    const { runs } = await api("GET", "/api/runs?status=cancelled");
    if (!runs.some((r) => r.id === started.id)) throw new Error("the runs list does not say the run was cancelled");
  });

  await step("the page fits 1280×800 without scrolling the document", async () => {
    const size = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.scrollHeight]);
    if (size[0] > 1280 || size[1] > 800) throw new Error(`the page is ${size[0]}×${size[1]}`);
  });

  if (problems.length) throw new Error(`the page reported:\n${problems.join("\n")}`);
  if (debugRun === undefined) throw new Error("the debug step did not run");
  console.log("browser: all steps passed");
} catch (e) {
  console.error(`FAILED at step: ${current}\n${e instanceof Error ? e.stack ?? e.message : e}`);
  if (problems.length) console.error(`the page reported:\n${problems.join("\n")}`);
  await page.screenshot({ path: join(shots, "failure.png") }).catch(() => {});
  console.error(`screenshot: ${join(shots, "failure.png")}`);
  await browser.close();
relay.close();
  process.exit(1);
}
await browser.close();
relay.close();
