import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    // One copy of graphql: otherwise errors from the other copy fail `instanceof` and are masked as 500s.
    alias: [{ find: /^graphql$/, replacement: "graphql/index.js" }],
  },
  test: {
    include: ["test/**/*.test.ts"],
    // Migrates once for the run; createTestApp() gives each file a copy.
    globalSetup: ["test/helpers/global-setup.ts"],
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
