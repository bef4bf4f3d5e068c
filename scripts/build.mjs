// Bundles the server into dist/server.js (dependencies stay external): it starts faster than a
// TypeScript loader and needs nothing but node_modules at run time.
import { build } from "esbuild";

await build({
  entryPoints: { server: "src/server.ts" },
  // --outdir=DIR: the tests build beside dist/ and rename the bundle into place.
  outdir: process.argv.find((arg) => arg.startsWith("--outdir="))?.slice("--outdir=".length) ?? "dist",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22.15",
  packages: "external",
  sourcemap: true,
  logLevel: "warning",
});
