// The "attachments" scenario (issue 44): what large files cost a replica, and what a store costs a
// comment. PostgreSQL, the built server in production mode:
//   1. memory: one replica on the `filesystem` store; ten clients at once download a 100 MiB
//      attachment through `GET /v1/attachments/{id}`, then ten clients at once upload 100 MiB each
//      through the service's own signed URLs. The replica's RSS before, at its peak (sampled every
//      50 ms) and after, against the target: less than 64 MB of growth;
//   2. price: creating a comment with a 64 KiB inline attachment on a replica on the `s3` store (an
//      S3-compatible server started here: @20minutes/s3rver, corrected as test/helpers/s3-server.ts
//      does) against one on the `database` store, in alternating blocks: latency and the replica's
//      CPU per request.
// `node bench/attachments.mjs [--mib 100] [--clients 10] [--requests 200]`. BENCH_POSTGRES_URL (default
// postgresql://postgres@127.0.0.1:5432/postgres). Writes bench/results/<date>-attachments.md.
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { processCpuMs, systemBusyMs } from "./cpu.mjs";
import { replicaEnv, seedOrganization, startReplica, throwawayDatabase } from "./standalone.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const MiB = 1024 * 1024;
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const quantile = (values, q) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))];
const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;

/** A file of `mib` MiB made of one random MiB (the seed's), repeated with the part number mixed in: its bytes, streamed. */
function fileOf(seed, mib) {
  const block = createHash("sha512").update(String(seed)).digest();
  const base = Buffer.alloc(MiB);
  for (let i = 0; i < MiB; i += block.length) block.copy(base, i);
  const part = (n) => {
    const b = Buffer.from(base);
    b.writeUInt32BE(n, 0);
    return b;
  };
  const sha256 = (() => {
    const hash = createHash("sha256");
    for (let n = 0; n < mib; n++) hash.update(part(n));
    return hash.digest("base64");
  })();
  return {
    size: mib * MiB,
    sha256,
    stream: () =>
      Readable.from(
        (function* () {
          for (let n = 0; n < mib; n++) yield part(n);
        })(),
      ),
  };
}

/** One HTTP exchange: the body streamed in (a Readable) and the answer's body counted, or kept when small. */
function exchange(url, { method = "GET", headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent: false }, (res) => {
      let bytes = 0;
      const chunks = [];
      res.on("data", (chunk) => {
        bytes += chunk.length;
        if (bytes < 1 * MiB) chunks.push(chunk);
      });
      res.on("end", () => resolve({ status: res.statusCode, bytes, text: bytes < MiB ? Buffer.concat(chunks).toString() : "" }));
      res.on("error", reject);
    });
    req.on("error", reject);
    if (body instanceof Readable) body.pipe(req);
    else req.end(body);
  });
}

async function api(base, key, method, pathname, body) {
  const answer = await exchange(`${base}${pathname}`, {
    method,
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (answer.status >= 300) throw new Error(`${method} ${pathname}: ${answer.status} ${answer.text}`);
  return JSON.parse(answer.text);
}

/** Uploads a file through createAttachmentUpload and its URL: the upload's id. */
async function upload(base, key, file, name) {
  const created = await api(base, key, "POST", "/v1/attachment-uploads", {
    fileName: name,
    fileType: "application/pdf",
    size: file.size,
    sha256: file.sha256,
  });
  const put = await exchange(created.uploadUrl, { method: created.method, headers: created.headers, body: file.stream() });
  if (put.status >= 300) throw new Error(`PUT ${created.uploadUrl}: ${put.status} ${put.text}`);
  return created.id;
}

/** The replica's RSS before `work`, its peak while it runs (every 50 ms) and 2 s after it ended. */
async function rssAround(pid, work) {
  await sleep(1_000);
  const before = rssMb(pid);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(pid));
  }, 50);
  const started = Date.now();
  try {
    await work();
  } finally {
    clearInterval(sampler);
  }
  const seconds = (Date.now() - started) / 1000;
  peak = Math.max(peak, rssMb(pid));
  await sleep(2_000);
  return { before, peak, after: rssMb(pid), seconds };
}

/** The S3-compatible server of the tests (test/helpers/s3-server.ts) in a process of its own: its endpoint and bucket. */
async function startS3(cleanups) {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      `const { startS3Server } = await import(${JSON.stringify(path.join(root, "test/helpers/s3-server.ts"))});
       const s3 = await startS3Server();
       process.stdout.write(JSON.stringify({ endpoint: s3.endpoint, bucket: s3.bucket, region: s3.region }) + "\\n");
       process.on("SIGTERM", () => s3.close().then(() => process.exit(0)));`,
    ],
    { cwd: root, stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise((resolve) => child.once("exit", resolve));
  cleanups.push(async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
  });
  const line = await new Promise((resolve, reject) => {
    let text = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      text += chunk;
      if (text.includes("\n")) resolve(text.split("\n")[0]);
    });
    child.once("exit", (code) => reject(new Error(`the S3 server exited (${code}) before it started`)));
  });
  return { ...JSON.parse(line), pid: child.pid };
}

export async function benchAttachments({
  mib = 100,
  clients = 10,
  requests = 200,
  postgresUrl = "postgresql://postgres@127.0.0.1:5432/postgres",
  log = () => {},
}) {
  const cleanups = [];
  try {
    const built = spawnSync("npm", ["run", "--silent", "build"], { cwd: root, stdio: "inherit" });
    if (built.status !== 0) throw new Error("npm run build failed");
    const databaseUrl = await throwawayDatabase(postgresUrl, "bench_attachments", cleanups);
    const baseEnv = replicaEnv(databaseUrl);
    const seed = seedOrganization(baseEnv);
    const key = seed.apiKey;
    const dir = mkdtempSync(path.join(tmpdir(), "bench-attachments-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const common = {
      // As docs/production.md (Memory) recommends: glibc gives large freed buffers back.
      MALLOC_MMAP_THRESHOLD_: "131072",
      ATTACHMENT_URL_SECRET: randomBytes(32).toString("hex"),
    };

    // 1. Memory, on the filesystem store --------------------------------------------------------
    const fs = await startReplica({
      env: baseEnv,
      settings: { ...common, ATTACHMENT_STORE: "filesystem", ATTACHMENT_DIR: path.join(dir, "files") },
      cleanups,
    });
    log(`filesystem replica ${fs.pid}: uploading one ${mib} MiB attachment`);
    const big = fileOf("download", mib);
    const uploadId = await upload(fs.base, key, big, "pentest-report.pdf");
    const comment = await api(fs.base, key, "POST", "/v1/comments", {
      content: "The penetration test report",
      entityId: seed.taskIds[0],
      entityType: "task",
      userId: seed.userIds[0],
      attachments: [{ uploadId }],
    });
    const attachmentId = comment.attachments[0].id;

    log(`${clients} clients downloading it at once`);
    const received = [];
    const downloads = await rssAround(fs.pid, async () => {
      const answers = await Promise.all(
        Array.from({ length: clients }, () =>
          exchange(`${fs.base}/v1/attachments/${attachmentId}`, { headers: { "x-api-key": key } }),
        ),
      );
      for (const a of answers) received.push(a.status === 200 ? a.bytes : -a.status);
    });
    if (received.some((bytes) => bytes !== big.size)) throw new Error(`downloads received ${received.join(", ")} bytes`);

    log(`${clients} clients uploading ${mib} MiB each through the service's URLs`);
    const files = Array.from({ length: clients }, (_, i) => fileOf(`upload-${i}`, mib));
    const uploads = await rssAround(fs.pid, () =>
      Promise.all(files.map((file, i) => upload(fs.base, key, file, `evidence-${i}.pdf`))),
    );

    // 2. The price of a store: s3 against database -------------------------------------------
    log("starting the S3-compatible server and a replica on each of s3 and database");
    const s3 = await startS3(cleanups);
    const onS3 = await startReplica({
      env: baseEnv,
      settings: {
        ...common,
        ATTACHMENT_STORE: "s3",
        S3_BUCKET: s3.bucket,
        S3_REGION: s3.region,
        S3_ENDPOINT: s3.endpoint,
        S3_FORCE_PATH_STYLE: "true",
        AWS_ACCESS_KEY_ID: "S3RVER",
        AWS_SECRET_ACCESS_KEY: "S3RVER",
      },
      cleanups,
    });
    const onDatabase = await startReplica({ env: baseEnv, settings: { ...common, ATTACHMENT_STORE: "database" }, cleanups });
    const inline = randomBytes(64 * 1024).toString("base64");
    const create = (replica) =>
      api(replica.base, key, "POST", "/v1/comments", {
        content: "Screenshot of the access review",
        entityId: seed.taskIds[0],
        entityType: "task",
        userId: seed.userIds[0],
        attachments: [{ fileName: "review.png", fileType: "image/png", fileData: inline }],
      });
    const sides = [
      { name: "s3", replica: onS3, extraPid: s3.pid, ms: [], cpu: 0, extraCpu: 0 },
      { name: "database", replica: onDatabase, ms: [], cpu: 0, extraCpu: 0 },
    ];
    for (const side of sides) for (let i = 0; i < 10; i++) await create(side.replica); // warm-up
    const block = 20;
    const busyBefore = systemBusyMs();
    const wallBefore = Date.now();
    for (let done = 0; done < requests; done += block) {
      // ABBA: each side goes first as often as the other.
      for (const side of (done / block) % 2 ? [...sides].reverse() : sides) {
        const cpu = processCpuMs(side.replica.pid);
        const extra = side.extraPid ? processCpuMs(side.extraPid) : 0;
        for (let i = 0; i < block; i++) {
          const started = performance.now();
          await create(side.replica);
          side.ms.push(performance.now() - started);
        }
        side.cpu += processCpuMs(side.replica.pid) - cpu;
        if (side.extraPid) side.extraCpu += processCpuMs(side.extraPid) - extra;
      }
    }
    const load = (systemBusyMs() - busyBefore) / (Date.now() - wallBefore);

    const growth = (r) => r.peak - r.before;
    const results = {
      downloads,
      uploads,
      price: Object.fromEntries(
        sides.map((s) => [
          s.name,
          {
            p50: median(s.ms),
            p99: quantile(s.ms, 0.99),
            cpuMsPerRequest: s.cpu / s.ms.length,
            storeCpuMsPerRequest: s.extraCpu / s.ms.length,
          },
        ]),
      ),
      machineBusyCores: load,
    };
    const memoryLine = (what, r) =>
      `  ${what}: RSS ${r.before.toFixed(0)} MB before, ${r.peak.toFixed(0)} MB at the peak (+${growth(r).toFixed(0)} MB; target < 64: ${growth(r) < 64 ? "PASS" : "FAIL"}), ${r.after.toFixed(0)} MB 2 s after; ${r.seconds.toFixed(1)} s`;
    const { s3: onS3Price, database: onDbPrice } = results.price;
    const text = [
      `Attachments (bench/attachments.mjs): ${clients} clients, ${mib} MiB each, PostgreSQL, one replica on the filesystem store`,
      memoryLine(`${clients} downloads at once (GET /v1/attachments/{id})`, downloads),
      memoryLine(`${clients} uploads at once (the service's own URLs)`, uploads),
      `  createComment with a 64 KiB inline attachment, ${requests} each, alternating blocks of ${block}:`,
      `    s3:       p50 ${onS3Price.p50.toFixed(1)} ms, p99 ${onS3Price.p99.toFixed(1)} ms, replica CPU ${onS3Price.cpuMsPerRequest.toFixed(2)} ms/request (+ the S3 server's ${onS3Price.storeCpuMsPerRequest.toFixed(2)})`,
      `    database: p50 ${onDbPrice.p50.toFixed(1)} ms, p99 ${onDbPrice.p99.toFixed(1)} ms, replica CPU ${onDbPrice.cpuMsPerRequest.toFixed(2)} ms/request`,
      `    s3 / database, p50: ${(onS3Price.p50 / onDbPrice.p50).toFixed(2)}; CPU: ${(onS3Price.cpuMsPerRequest / onDbPrice.cpuMsPerRequest).toFixed(2)}`,
      `  The machine was busy ${load.toFixed(2)} cores (of 2) on average during the price; the service, PostgreSQL, the S3 server and the clients share them.`,
    ].join("\n");
    return { results, text };
  } finally {
    while (cleanups.length) {
      const cleanup = cleanups.pop();
      await Promise.resolve()
        .then(cleanup)
        .catch(() => {});
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { text } = await benchAttachments({
    mib: arg("mib", 100),
    clients: arg("clients", 10),
    requests: arg("requests", 200),
    postgresUrl: process.env.BENCH_POSTGRES_URL,
    log: (line) => process.stdout.write(`${line}\n`),
  });
  process.stdout.write(`${text}\n`);
  const file = path.join(root, `bench/results/${new Date().toISOString().slice(0, 10)}-attachments.md`);
  mkdirSync(path.dirname(file), { recursive: true });
  const previous = existsSync(file) ? readFileSync(file, "utf8") : "# Attachments (bench/attachments.mjs)\n";
  writeFileSync(
    file,
    `${previous}\n## ${new Date().toISOString()} (node bench/attachments.mjs ${process.argv.slice(2).join(" ")})\n\n\`\`\`\n${text}\n\`\`\`\n`,
  );
  process.exit(0);
}
