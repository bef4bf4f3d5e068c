// What `npm start` runs, with the Node flags of the service: builds dist/ when src/ changed since
// the last build (scripts/build.mjs), then starts the built service in this same process, one Node
// start instead of two. `node dist/server.js` starts the service without the check.
import path from "node:path";
import { pathToFileURL } from "node:url";
import { buildIfChanged } from "./build.mjs";

if (await buildIfChanged("dist")) process.stdout.write(`built ${path.join("dist", "service.js")}\n`);
await import(pathToFileURL(path.resolve("dist", "server.js")).href);
