import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomPort } from "./server-process.js";

const haproxyBin = "/usr/sbin/haproxy";

/** Why HAProxy cannot run here (Debian's `haproxy` package; `.ci/run` installs it), or null. */
export function haproxyMissing(): string | null {
  return existsSync(haproxyBin) ? null : `no ${haproxyBin} (apt-get install haproxy)`;
}

/**
 * The HAProxy configuration of docs/production.md (the ```haproxy block), with the test's ports and
 * paths put in for its placeholders: the test runs what operators are told to run.
 */
export function documentedHaproxyConfig(): { config: string; errorFile: string } {
  const page = readFileSync(new URL("../../docs/production.md", import.meta.url), "utf8");
  const config = page.match(/```haproxy\n([\s\S]*?)```/)?.[1];
  const errorFile = page.match(/```http\n([\s\S]*?)```/)?.[1];
  if (!config || !errorFile) throw new Error("docs/production.md has no ```haproxy configuration or ```http error file");
  return { config, errorFile };
}

export type Haproxy = { url: string; port: number; output: () => string; stop(): Promise<void> };

/** HAProxy in the foreground (`-db`) on a free port, in front of `backends` (127.0.0.1 ports). */
export async function startHaproxy(backends: number[], overrides: { inter?: string } = {}): Promise<Haproxy> {
  const dir = mkdtempSync(path.join(tmpdir(), "gateway-haproxy-"));
  // Below the OS's ephemeral range, where no connection of any process can hold it (servers.ts).
  const port = randomPort();
  const { config, errorFile } = documentedHaproxyConfig();
  // The error file is sent as it is: HTTP wants CRLF line ends.
  writeFileSync(path.join(dir, "503.http"), `${errorFile.trimEnd().replace(/\r?\n/g, "\r\n")}\r\n`);
  const servers = backends.map((p, i) => `    server replica${i + 1} 127.0.0.1:${p} check`).join("\n");
  let text = config
    .replace("bind :8080", `bind 127.0.0.1:${port}`)
    .replace("/etc/haproxy/errors/503-json.http", path.join(dir, "503.http"))
    .replace(/^\s*server replica.*$/gm, "")
    .replace(/^(backend .*)$/m, `$1\n${servers}`);
  if (overrides.inter) text = text.replace(/inter \S+/, `inter ${overrides.inter}`);
  const file = path.join(dir, "haproxy.cfg");
  writeFileSync(file, text);
  let output = "";
  const child: ChildProcess = spawn(haproxyBin, ["-f", file, "-db"], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited (${child.exitCode}):\n${output}\n${text}`);
    const answered = await fetch(`${url}/health`).then(
      () => true,
      () => false,
    );
    if (answered) break;
    if (Date.now() > deadline) throw new Error(`haproxy did not listen:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    port,
    output: () => output,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.on("exit", resolve));
        child.kill("SIGKILL");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
