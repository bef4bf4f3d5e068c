import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DataDirLockedError, lockDataDir } from "../../src/platform/db/data-dir-lock.js";

const dirs: string[] = [];
function tempDir() {
  const dir = mkdtempSync(path.join(tmpdir(), "lock-"));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe(lockDataDir.name, () => {
  it("refuses a directory held by a live process, naming the directory and the process", async () => {
    const dir = tempDir();
    const holder = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"]);
    try {
      writeFileSync(path.join(dir, "gateway.lock"), String(holder.pid));
      expect(() => lockDataDir(dir)).toThrow(DataDirLockedError);
      expect(() => lockDataDir(dir)).toThrow(new RegExp(`${dir}.*in use by process ${holder.pid}`));
    } finally {
      holder.kill("SIGKILL");
    }
  });

  it("takes over a lock left by a process that died, and releases it", async () => {
    const dir = tempDir();
    const dead = spawn(process.execPath, ["-e", ""]);
    await new Promise((resolve) => dead.on("exit", resolve));
    writeFileSync(path.join(dir, "gateway.lock"), String(dead.pid));
    const release = lockDataDir(dir);
    expect(readFileSync(path.join(dir, "gateway.lock"), "utf8")).toBe(String(process.pid));
    release();
    expect(existsSync(path.join(dir, "gateway.lock"))).toBe(false);
  });
});
