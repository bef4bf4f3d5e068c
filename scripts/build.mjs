// Bundles the server into dist/service.js (dependencies stay external): it starts faster than a
// TypeScript loader and needs nothing but node_modules at run time. dist/server.js, what operators
// run, is a launcher written beside it: it turns on Node's compile cache before the bundle and its
// packages load (the cache then serves their compiled code on the next start: 10 % less time to
// the first answer; NODE_DISABLE_COMPILE_CACHE=1 turns it off), then imports the bundle.
//
// --if-changed: build only when the bundle is not that of the current inputs (what `npm start`
// does, through scripts/start.mjs, in the server's own process). Each build records a SHA-256 of
// its inputs (every file under src/, this script, package.json, tsconfig.json, esbuild's version)
// and of the bundle it wrote in <outdir>/build-inputs.json. Contents, not modification times, say
// whether it changed: a checkout or a copy that keeps the bytes does not rebuild, an edit within the
// same second does. The stamp also keeps each file's size and modification time, as git's index
// does, so that a start whose files all still have theirs skips reading them (a few ms instead of
// 60); a file modified less than two seconds before the stamp was written is read anyway, since
// an edit in the same tick of a coarse clock would leave its time as it was.
import { createHash } from "node:crypto";
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const LAUNCHER = `// Written by scripts/build.mjs: the compile cache first (module.enableCompileCache, in the OS's
// temporary directory; NODE_DISABLE_COMPILE_CACHE=1 turns it off), then the service's bundle.
import module from "node:module";
module.enableCompileCache?.();
await import("./service.js");
`;
const thisScript = fileURLToPath(import.meta.url);
const esbuildPackage = fileURLToPath(new URL("../node_modules/esbuild/package.json", import.meta.url));
// Files the bundle reads beside itself at run time (new URL("./<folder>/", import.meta.url)), copied next to it.
const besideBundle = ["src/modules/evidence-requests/evidence-request-page"].filter((folder) => existsSync(folder));
/** A file's size and modification time are trusted only when it was last modified this long before the stamp. */
const RACY_MS = 2_000;

function filesUnder(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** The build's inputs (relative to the working directory) and outputs in `outdir`, in a fixed order. */
function buildFiles(outdir) {
  const inputs = [...filesUnder("src"), "package.json", "tsconfig.json"].filter((file) => existsSync(file)).sort();
  const outputs = ["service.js", "service.js.map", "server.js"].map((file) => path.join(outdir, file));
  return { inputs, outputs };
}

/** SHA-256 over the build's inputs. */
function inputsDigest(inputs) {
  const hash = createHash("sha256");
  hash.update(readFileSync(thisScript));
  hash.update(existsSync(esbuildPackage) ? JSON.parse(readFileSync(esbuildPackage, "utf8")).version : "no esbuild");
  for (const file of inputs) {
    hash.update(`\0${file.split(path.sep).join("/")}\0`);
    hash.update(readFileSync(file));
  }
  return hash.digest("hex");
}

function outputsDigest(outputs) {
  const hash = createHash("sha256");
  for (const file of outputs) hash.update(readFileSync(file));
  return hash.digest("hex");
}

/** Size and modification time of every file the stamp vouches for (esbuild's package.json stands for its version). */
function statsOf(files) {
  const stats = {};
  for (const file of [...files, thisScript, esbuildPackage]) {
    const stat = statSync(file, { throwIfNoEntry: false });
    stats[file] = stat ? [stat.size, stat.mtimeMs] : null;
  }
  return stats;
}

function readStamp(stampFile) {
  try {
    return JSON.parse(readFileSync(stampFile, "utf8"));
  } catch {
    return null;
  }
}

/** True when every file has the size and time the stamp recorded, none of them close enough to the stamp to be racy. */
function statsVouch(stamp, stats) {
  if (!stamp?.stats || typeof stamp.at !== "number") return false;
  const recorded = Object.keys(stamp.stats);
  if (recorded.length !== Object.keys(stats).length) return false;
  return recorded.every((file) => {
    const [size, mtimeMs] = stats[file] ?? [];
    const was = stamp.stats[file];
    return was && size === was[0] && mtimeMs === was[1] && mtimeMs < stamp.at - RACY_MS;
  });
}

function writeStamp(stampFile, inputs, outputs, files) {
  const stamp = { inputs, outputs, at: Date.now(), stats: statsOf(files) };
  writeFileSync(stampFile, `${JSON.stringify(stamp, null, 2)}\n`);
}

/**
 * Whether `outdir` holds the bundle of the current inputs: by the files' sizes and times when the
 * stamp vouches for them, else by their contents (then the stamp is brought up to date, so that the
 * next start is the quick one).
 */
function isCurrent(outdir) {
  const stampFile = path.join(outdir, "build-inputs.json");
  const { inputs, outputs } = buildFiles(outdir);
  const copied = besideBundle.every((folder) => existsSync(path.join(outdir, path.basename(folder))));
  if (!copied || !outputs.every((file) => existsSync(file))) return false;
  const stamp = readStamp(stampFile);
  const files = [...inputs, ...outputs];
  if (statsVouch(stamp, statsOf(files))) return true;
  const inputsNow = inputsDigest(inputs);
  const outputsNow = outputsDigest(outputs);
  if (stamp?.inputs !== inputsNow || stamp.outputs !== outputsNow) return false;
  writeStamp(stampFile, inputsNow, outputsNow, files);
  return true;
}

/** esbuild's options for the service's bundle (test/unit/start-up.test.ts bundles with them too). */
export function bundleOptions(outdir) {
  return {
    entryPoints: { service: "src/server.ts" },
    outdir,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22.15",
    packages: "external",
    sourcemap: true,
    logLevel: "warning",
  };
}

/** Bundles src/server.ts into `outdir` and writes the launcher and the stamp. */
export async function build(outdir = "dist") {
  const { inputs, outputs } = buildFiles(outdir);
  const inputsNow = inputsDigest(inputs);
  // Imported only when a build runs: loading esbuild is most of what a skipped build would cost.
  const esbuild = await import("esbuild");
  await esbuild.build(bundleOptions(outdir));
  // esbuild's service process would otherwise live as long as the process that built (npm start's server).
  await esbuild.stop?.();
  writeFileSync(path.join(outdir, "server.js"), LAUNCHER);
  for (const folder of besideBundle) cpSync(folder, path.join(outdir, path.basename(folder)), { recursive: true });
  // The map of the bundle that was dist/server.js before the launcher took its name.
  rmSync(path.join(outdir, "server.js.map"), { force: true });
  writeStamp(path.join(outdir, "build-inputs.json"), inputsNow, outputsDigest(outputs), [...inputs, ...outputs]);
}

/** Builds `outdir` unless it already holds the bundle of the current inputs; true when it built. */
export async function buildIfChanged(outdir = "dist") {
  if (isCurrent(outdir)) return false;
  await build(outdir);
  return true;
}

// `node scripts/build.mjs [--outdir=DIR] [--if-changed]`
if (process.argv[1] && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url) {
  const args = process.argv.slice(2);
  // --outdir=DIR: the tests build beside dist/ and rename the bundle into place.
  const outdir = args.find((arg) => arg.startsWith("--outdir="))?.slice("--outdir=".length) ?? "dist";
  if (!args.includes("--if-changed")) await build(outdir);
  else if (await buildIfChanged(outdir)) process.stdout.write(`built ${path.join(outdir, "service.js")}\n`);
}
