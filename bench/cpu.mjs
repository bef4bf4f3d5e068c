// CPU accounting from Linux /proc, shared by the bench's scenarios: a process's CPU time, that of
// every PostgreSQL server process (the database's own work, not noise), and how busy the whole
// machine was (to tell how much of it other processes took).
import { readdirSync, readFileSync } from "node:fs";

export const CLK_TCK = 100;

/** CPU time (user + system) of a process so far, in ms; 0 once it is gone. */
export function processCpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** CPU time so far of every PostgreSQL server process, by pid. */
export function postgresCpuMs() {
  const byPid = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() === "postgres") byPid.set(entry, processCpuMs(entry));
    } catch {}
  }
  return byPid;
}

/** PostgreSQL's CPU between two `postgresCpuMs()` readings, in ms: a backend that started meanwhile counts whole, one that ended meanwhile is left out. */
export function postgresCpuSince(before, after = postgresCpuMs()) {
  let ms = 0;
  for (const [pid, total] of after) ms += total - (before.get(pid) ?? 0);
  return ms;
}

/** CPU time all cores have spent busy (not idle, not waiting for I/O) since boot, in ms. */
export function systemBusyMs() {
  const v = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  return ((total - v[3] - v[4]) * 1000) / CLK_TCK;
}

/** CPU time of this process so far (user + system), in ms. */
export function ownCpuMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * How many cores the machine's other processes kept busy while `work` ran: all cores' busy time
 * (/proc/stat) less this process's and `ownPids`' (the servers a bench started), over the wall time.
 */
export async function otherCoresDuring(work, ownPids = []) {
  const wall = performance.now();
  const busy = systemBusyMs();
  const own = ownCpuMs();
  const children = ownPids.map(processCpuMs);
  await work();
  const ownUsed = ownCpuMs() - own + ownPids.reduce((sum, pid, i) => sum + processCpuMs(pid) - children[i], 0);
  return Math.max(0, (systemBusyMs() - busy - ownUsed) / (performance.now() - wall));
}
