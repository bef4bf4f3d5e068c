import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { errorResponse } from "../http/error-response.js";
import { REST_BASE } from "./routes.js";

const DOCS = `${REST_BASE}/docs`;

const require = createRequire(import.meta.url);
const swaggerDir = dirname(require.resolve("swagger-ui-dist/package.json"));
const swaggerVersion = (require("swagger-ui-dist/package.json") as { version: string }).version;

/** The only files served from swagger-ui-dist, with their media types. */
const assets: Record<string, string> = {
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui-bundle.js.map": "application/json",
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui.css.map": "application/json",
  "favicon-32x32.png": "image/png",
};

const initScript = `window.ui = SwaggerUIBundle({
  url: ${JSON.stringify(`${REST_BASE}/openapi.json`)},
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
`;

const asset = (name: string) => `${DOCS}/${name}${name in assets ? `?v=${swaggerVersion}` : ""}`;

const page = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Compliance Workspace Gateway: REST API</title>
    <link rel="icon" type="image/png" href="${asset("favicon-32x32.png")}" />
    <link rel="stylesheet" href="${asset("swagger-ui.css")}" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${asset("swagger-ui-bundle.js")}"></script>
    <script src="${asset("init.js")}"></script>
  </body>
</html>
`;

// Swagger UI sets inline styles, and its "try it out" calls this origin only.
const pageSecurity = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

const cache = new Map<string, Buffer>();

function file(name: string): Buffer {
  let content = cache.get(name);
  if (!content) {
    content = readFileSync(join(swaggerDir, name));
    cache.set(name, content);
  }
  return content;
}

const immutable = { "cache-control": "public, max-age=31536000, immutable", "x-content-type-options": "nosniff" };

/**
 * The human documentation of the REST API (Swagger UI, served from the package: no CDN), or null
 * when `pathname` is not one of its URLs. It needs no credential.
 */
export function docsResponse(method: string, pathname: string): Response | null {
  if (pathname !== DOCS && !pathname.startsWith(`${DOCS}/`)) return null;
  if (method !== "GET" && method !== "HEAD") {
    return errorResponse("METHOD_NOT_ALLOWED", `${method} is not allowed on ${pathname}`, undefined, { allow: "GET, HEAD" });
  }
  const name = pathname.slice(DOCS.length + 1);
  if (name === "" || name === "index.html") {
    return new Response(page, {
      headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", ...pageSecurity },
    });
  }
  if (name === "init.js") {
    return new Response(initScript, {
      headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "no-cache" },
    });
  }
  const type = assets[name];
  if (!type) return errorResponse("NOT_FOUND", `No route ${method} ${pathname}`);
  return new Response(new Uint8Array(file(name)), { headers: { "content-type": type, ...immutable } });
}
