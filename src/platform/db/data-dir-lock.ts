import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";

export class DataDirLockedError extends Error {}

/** Whether a process of this id runs (one of another user's counts). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * PGlite has no locking of its own: two processes writing one data directory corrupt it. The lock
 * file holds the owner's pid, so a lock left by a killed process is taken over at once instead of
 * after a staleness timeout.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const lockPath = path.join(dataDir, "gateway.lock");
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(lockPath, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(lockPath, "utf8") === String(process.pid)) unlinkSync(lockPath);
        } catch {
          // already gone
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = Number.parseInt(readFileSync(lockPath, "utf8"), 10);
      if (Number.isInteger(owner) && owner !== process.pid && isRunning(owner)) {
        throw new DataDirLockedError(
          `The embedded database in ${path.resolve(dataDir)} is in use by process ${owner}. ` +
            "Stop that process first, use another DATA_DIR, or set DATABASE_URL to use PostgreSQL.",
        );
      }
      try {
        unlinkSync(lockPath);
      } catch {
        // another process removed it first; try again
      }
    }
  }
  throw new DataDirLockedError(`Could not lock ${path.resolve(dataDir)}`);
}
