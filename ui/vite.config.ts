// The UI is served by `mcpflow serve --http` at /ui from files embedded in the binary
// (crates/api/src/ui.rs); `scripts/ui build` writes them to crates/api/ui-dist.
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

export default defineConfig({
  base: "/ui/",
  plugins: [react()],
  build: {
    outDir: "../crates/api/ui-dist",
    emptyOutDir: true,
    sourcemap: false,
    reportCompressedSize: false,
    // One script and one stylesheet: the whole app is needed on first paint anyway.
    assetsInlineLimit: 0,
    // The main chunk is React, React Flow and dagre (about 500 kB, 157 kB gzipped: README's
    // first-load figure, measured by ui/tests/measure.mjs); the views not every visit needs
    // (the editor, the upstreams) are chunks of their own. Warn past what that should cost.
    chunkSizeWarningLimit: 560,
  },
  server: {
    proxy: { "/api": process.env.MCPFLOW_API ?? "http://127.0.0.1:8080" },
  },
});
