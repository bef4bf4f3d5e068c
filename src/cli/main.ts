import { EXIT_FAILED, runCli } from "./run.js";

/** Operator CLI: `npm run --silent cli -- <command> [options] [--json]`; `--help` lists the commands. */

let code: number;
try {
  code = await runCli(process.argv.slice(2), {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    env: process.env,
  });
} catch (error) {
  process.stderr.write(`error: unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  code = EXIT_FAILED;
}

// Let buffered output reach a pipe before exiting; the database is already closed.
await new Promise((resolve) => process.stdout.write("", resolve));
await new Promise((resolve) => process.stderr.write("", resolve));
process.exit(code);
