import { resourceUsage } from "node:process";
import { PGlite } from "@electric-sql/pglite";

function m(label, r0, c0, t0) {
  const r = resourceUsage();
  const c = process.cpuUsage(c0);
  console.log(
    label,
    "faults",
    r.minorPageFault - r0.minorPageFault,
    "wall",
    (performance.now() - t0).toFixed(0),
    "cpu",
    ((c.user + c.system) / 1000).toFixed(0),
  );
}
const db = new PGlite();
await db.query("select 1");
console.log(
  (await db.query("show shared_buffers")).rows,
  (await db.query("show wal_buffers")).rows,
  (await db.query("show work_mem")).rows,
);
const dump = await db.dumpDataDir("none");
console.log("dump bytes", dump.size);
await db.close();
const base = [
  "--single",
  "-F",
  "-O",
  "-j",
  "-c",
  "search_path=public",
  "-c",
  "exit_on_error=false",
  "-c",
  "log_checkpoints=false",
  "-c",
  "max_worker_processes=0",
  "-c",
  "max_parallel_workers=0",
  "-c",
  "max_parallel_workers_per_gather=0",
  "-c",
  "io_method=sync",
  "-c",
  "max_parallel_maintenance_workers=0",
];
for (const [label, opts] of [
  ["default", {}],
  ["sb16", { startParams: [...base, "-c", "shared_buffers=16MB"] }],
  ["sb16 mem64", { startParams: [...base, "-c", "shared_buffers=16MB"], initialMemory: 64 * 1024 * 1024 }],
  ["default", {}],
]) {
  const r0 = resourceUsage(),
    c0 = process.cpuUsage(),
    t0 = performance.now();
  const d = new PGlite({ loadDataDir: dump, ...opts });
  await d.query("select 1");
  m(label, r0, c0, t0);
  console.log((await d.query("show shared_buffers")).rows);
  await d.close();
}
