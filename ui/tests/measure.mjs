// Size and speed of the web UI (issue #17), a measurement and not a test (nothing is asserted):
//   node ui/tests/measure.mjs PATH/TO/mcpflow
// starts `mcpflow serve --http` on a generated config (a 200-node chain, a 2-node loop) and, in
// Debian's Chromium (playwright-core), reports the bytes a first load transfers, the time until
// every node of the 200-node graph is drawn, and the frames per second while a run of 10,000
// node executions animates.
import { chromium } from "playwright-core";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const bin = process.argv[2];
if (!bin) {
  console.error("usage: node ui/tests/measure.mjs PATH/TO/mcpflow");
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "mcpflow-ui-measure-"));
const chain = ["      - { id: entry, type: entry, next: t1 }"];
for (let i = 1; i <= 198; i++) {
  chain.push(`      - { id: t${i}, type: transform, transform: { expr: '$.entry.n + ${i}' }, next: ${i < 198 ? `t${i + 1}` : "exit"} }`);
}
chain.push("      - { id: exit, type: exit }");
writeFileSync(
  join(dir, "measure.yaml"),
  `version: "1.0"
server: { name: measure, version: "1.0.0" }
executionLimits: { maxNodeExecutions: 100000 }
tools:
  - name: chain200
    description: 200 nodes in a chain
    inputSchema: { type: object, properties: { n: { type: integer } }, required: [n] }
    nodes:
${chain.join("\n")}
  - name: loop
    description: two nodes, n times over
    inputSchema: { type: object, properties: { n: { type: integer } }, required: [n] }
    nodes:
      - { id: entry, type: entry, next: add }
      - { id: add, type: transform, transform: { expr: '$executionCount("add")' }, next: more }
      - id: more
        type: switch
        conditions:
          - rule: { "<": [{ var: "add" }, { var: "entry.n" }] }
            next: add
        next: exit
      - { id: exit, type: exit }
`,
);
const server = spawn(bin, ["serve", join(dir, "measure.yaml"), "--http", "127.0.0.1:0", "--state", join(dir, "state.db")], {
  stdio: ["ignore", "ignore", "pipe"],
});
const base = await new Promise((resolve, reject) => {
  const lines = createInterface({ input: server.stderr });
  lines.on("line", (l) => {
    const m = l.match(/listening on (http:\/\/\S+)\/mcp/);
    if (m) resolve(m[1]);
  });
  server.on("exit", () => reject(new Error("mcpflow exited before listening")));
});

const browser = await chromium.launch({ executablePath: process.env.MCPFLOW_CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Network.enable");
  const sizes = new Map();
  cdp.on("Network.responseReceived", (e) => sizes.set(e.requestId, { url: e.response.url, bytes: 0 }));
  cdp.on("Network.loadingFinished", (e) => {
    const s = sizes.get(e.requestId);
    if (s) s.bytes = e.encodedDataLength;
  });
  const t0 = Date.now();
  await page.goto(`${base}/ui/#/tools/chain200`);
  await page.locator('.graph [data-node="t198"]').waitFor();
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r(null))));
  const drawn = Date.now() - t0;
  const all = [...sizes.values()];
  const assets = all.filter((s) => s.url.includes("/ui/"));
  const sum = (xs) => xs.reduce((a, s) => a + s.bytes, 0);
  console.log(`first load: ${sum(assets)} bytes of UI in ${assets.length} files (${sum(all)} bytes with the API's answers for a 200-node graph)`);
  console.log(`200-node graph: every node drawn ${drawn} ms after the navigation started`);

  const started = await (
    await fetch(`${base}/api/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tool: "loop", args: { n: 5000 }, debug: { pause: true } }),
    })
  ).json();
  const run = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await run.goto(`${base}/ui/#/runs/${started.id}`);
  await run.locator('[aria-label="Run panel"][data-streaming="true"]').waitFor();
  await run.evaluate(() => {
    const w = window;
    w.__frames = 0;
    const f = () => {
      w.__frames++;
      w.__raf = requestAnimationFrame(f);
    };
    f();
    w.__t0 = performance.now();
  });
  await fetch(`${base}/api/runs/${started.id}/resume`, { method: "POST" });
  await run.locator(".panel-head .status").filter({ hasText: "succeeded" }).waitFor({ timeout: 120_000 });
  await run.locator('.graph [data-node="add"]').filter({ hasText: "5001×" }).waitFor({ timeout: 120_000 });
  const r = await run.evaluate(() => {
    const w = window;
    cancelAnimationFrame(w.__raf);
    return { frames: w.__frames, ms: performance.now() - w.__t0 };
  });
  console.log(`a run of 10,004 node executions: ${r.frames} frames in ${r.ms.toFixed(0)} ms (${((r.frames / r.ms) * 1000).toFixed(1)} fps) from resume to every node's final count drawn`);
} finally {
  await browser.close();
  server.kill();
}
