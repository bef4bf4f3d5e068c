// The long form of the read path's differential harness (issue 46, item 3): thousands of generated
// documents, each answered through today's path and the reference with every credential, compared
// byte for byte. `node scripts/differential.mjs [documents, default 2000]`; TEST_DATABASE=postgres
// for PostgreSQL. It runs test/integration/differential.test.ts in its long form.
import { spawnSync } from "node:child_process";

const documents = process.argv[2] ?? "2000";
const run = spawnSync("npx", ["vitest", "run", "test/integration/differential.test.ts"], {
  stdio: "inherit",
  env: { ...process.env, DIFFERENTIAL_DOCUMENTS: documents },
});
process.exit(run.status ?? 1);
