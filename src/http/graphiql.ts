import { parse, print } from "graphql";
import type { GraphiQLOptions, Plugin } from "graphql-yoga";
import { errorResponse } from "./error-response.js";

const exampleOperations = `query GetTask($taskId: ID!) {
  task(taskId: $taskId) { id title status description taskTemplateId createdAt updatedAt }
}

query TaskItemStats($entityId: ID!, $entityType: TaskItemEntityType! = vendor) {
  taskItemStats(entityId: $entityId, entityType: $entityType) {
    total
    byStatus { todo in_progress in_review done canceled }
  }
}

mutation CreateComment($entityId: ID!, $entityType: CommentEntityType! = task, $userId: ID) {
  createComment(content: "Evidence reviewed", entityId: $entityId, entityType: $entityType, userId: $userId) {
    id content createdAt
    author { id name email image deactivated }
    attachments { id name type size createdAt }
  }
}

mutation UnlinkDevice($memberId: ID!) {
  unlinkDevice(id: $memberId) {
    id role department jobTitle isActive deviceLabelId
    user { id name email }
  }
}

mutation CreatePolicyVersion($policyId: ID!, $changelog: String) {
  createPolicyVersion(id: $policyId, changelog: $changelog) { versionId version }
}


query TaskPage($taskId: ID!) {
  viewer {
    member { id user { name } }
    permissions
  }
  task(taskId: $taskId) {
    id
    title
    status
    description
    updatedAt
    comments(limit: 10) {
      totalCount
      nextCursor
      items {
        id
        content
        createdAt
        author { id name image member { id role } }
        attachments { id name type size description }
      }
    }
  }
}

query VendorPage($vendorId: ID!) {
  node(id: $vendorId) {
    ... on Vendor {
      id
      name
      description
      taskItemStats {
        total
        byStatus { todo in_progress in_review done canceled }
      }
      taskItems(limit: 20) {
        totalCount
        items { id title status priority }
      }
      comments(limit: 5) {
        totalCount
        items {
          id
          content
          createdAt
          author { name }
        }
      }
    }
  }
}

query PolicyPage($policyId: ID!) {
  policy(id: $policyId) {
    id
    name
    status
    currentVersion { id version content createdAt }
    versions(limit: 10) {
      totalCount
      items {
        id
        version
        status
        changelog
        createdAt
        sourceVersion { version }
      }
    }
    comments(limit: 5) {
      items { id content author { name } }
    }
  }
}

mutation SubmitPolicyVersion($policyId: ID!, $versionId: ID!, $approverId: ID!) {
  submitPolicyVersion(
    id: $policyId
    versionId: $versionId
    approverId: $approverId
  ) {
    id
    version
    status
    approverId
  }
}

mutation ApprovePolicyVersion($policyId: ID!, $versionId: ID!) {
  approvePolicyVersion(id: $policyId, versionId: $versionId) {
    id
    version
    status
    publishedAt
  }
}

mutation RejectPolicyVersion($policyId: ID!, $versionId: ID!, $reason: String!) {
  rejectPolicyVersion(id: $policyId, versionId: $versionId, reason: $reason) {
    id
    version
    status
    rejectionReason
  }
}

query FrameworkPage($frameworkId: ID!) {
  framework(id: $frameworkId) {
    id
    name
    version
    adopted
    readiness { assessable notApplicable unmapped ready partial notReady readyPercent }
    requirements(first: 100, filter: { assessable: true }) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges {
        node {
          id
          ref
          title
          applicability { applicable justification }
          status {
            state
            inheritedFrom { ref framework { name } }
          }
          controls {
            id
            code
            name
            status { state evidenceDueAt }
          }
        }
      }
    }
  }
}
`;

/** GraphiQL's editor shows about 56 characters beside the response pane at 1400 pixels. */
export const graphiqlLineWidth = 56;

/** One argument or variable per line where `name(a, b, ...)` would be wider than the editor. */
function wrapArguments(printed: string): string {
  return printed
    .split("\n")
    .flatMap((line) => {
      const open = line.indexOf("(");
      const close = line.lastIndexOf(")");
      if (line.length <= graphiqlLineWidth || open < 0 || close < open) return [line];
      const indent = /^ */.exec(line)?.[0] ?? "";
      const items: string[] = [];
      let depth = 0;
      let inString = false;
      let start = open + 1;
      for (let i = start; i < close; i++) {
        const c = line[i] as string;
        if (c === '"' && line[i - 1] !== "\\") inString = !inString;
        else if (inString) continue;
        else if ("([{".includes(c)) depth++;
        else if (")]}".includes(c)) depth--;
        else if (c === "," && depth === 0) {
          items.push(line.slice(start, i).trim());
          start = i + 1;
        }
      }
      items.push(line.slice(start, close).trim());
      return [line.slice(0, open + 1), ...items.map((item) => `${indent}  ${item}`), `${indent}${line.slice(close)}`];
    })
    .join("\n");
}

/**
 * What GraphiQL opens with: the five operations of the specification, the three screens (a task,
 * a vendor and a policy page, one request each) and the policy review, ready to run. Printed by
 * graphql-js (one field per line) with long argument lists wrapped, so that no line runs past the
 * editor's width.
 */
export const graphiqlExamples = `# Put your API key in the Headers tab:
#   {"X-API-Key": "cwk_..."}
# Pick an operation with the run button's menu,
# and fill in the Variables tab.

${wrapArguments(print(parse(exampleOperations)))}
`;

const ASSETS = "/graphiql";

type GraphiQLBundle = typeof import("@graphql-yoga/render-graphiql/graphiql");

/** GraphiQL's scripts and styles, shipped in @graphql-yoga/render-graphiql, served by us: no CDN. */
const assetFiles: Record<string, { type: string; content: (bundle: GraphiQLBundle) => string | Uint8Array }> = {
  "graphiql.js": { type: "text/javascript; charset=utf-8", content: (b) => b.js },
  "graphiql.css": { type: "text/css; charset=utf-8", content: (b) => b.css },
  "editor.worker.js": { type: "text/javascript; charset=utf-8", content: (b) => b.editorWorkerService },
  "json.worker.js": { type: "text/javascript; charset=utf-8", content: (b) => b.jsonWorker },
  "graphql.worker.js": { type: "text/javascript; charset=utf-8", content: (b) => b.graphqlWorker },
  "favicon.ico": {
    type: "image/x-icon",
    content: (b) => Buffer.from(b.favicon.slice(b.favicon.indexOf(",") + 1), "base64"),
  },
};

let bundle: Promise<GraphiQLBundle> | undefined;
// About 9 MB of text: loaded on the first request for it, never when GraphiQL is off.
const loadBundle = () => {
  bundle ??= import("@graphql-yoga/render-graphiql/graphiql");
  return bundle;
};

const escapeHtml = (text: string) => text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
// JSON inside <script>: no "</script>" or "<!--" can end or change the element.
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, "\\u003c");

/**
 * Yoga's GraphiQL page with its assets from our own server instead of unpkg.com. Monaco needs its
 * workers as same-origin URLs: they are fetched and handed over as blob URLs, as Yoga's page does.
 */
export function renderLocalGraphiQL(options: GraphiQLOptions): string {
  const title = escapeHtml(options.title ?? "GraphiQL");
  const workers = {
    editorWorkerService: `${ASSETS}/editor.worker.js`,
    json: `${ASSETS}/json.worker.js`,
    graphql: `${ASSETS}/graphql.worker.js`,
  };
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>${title}</title>
    <link rel="icon" href="${ASSETS}/favicon.ico" />
    <link rel="stylesheet" href="${ASSETS}/graphiql.css" />
  </head>
  <body id="body" class="no-focus-outline">
    <noscript>You need to enable JavaScript to run this app.</noscript>
    <div id="root">Loading ${title}...</div>
    <script>
      const workerUrls = ${scriptJson(workers)};
      const workers = {};
      const prepareWorkers = () =>
        Promise.all(
          Object.entries(workerUrls).map(async ([label, url]) => {
            const source = await (await fetch(url)).text();
            workers[label] = URL.createObjectURL(new Blob([source], { type: "application/javascript" }));
          }),
        );
      self.MonacoEnvironment = { globalAPI: false, getWorkerUrl: (_moduleId, label) => workers[label] };
    </script>
    <script src="${ASSETS}/graphiql.js"></script>
    <script>
      prepareWorkers().finally(() => YogaGraphiQL.renderYogaGraphiQL(document.getElementById("root"), ${scriptJson(options)}));
    </script>
  </body>
</html>
`;
}

/** Serves GraphiQL's assets at /graphiql/...; only installed while GraphiQL is on. */
export function useGraphiQLAssets(): Plugin {
  const encoded = new Map<object, Uint8Array<ArrayBuffer>>();
  return {
    async onRequest({ request, url, endResponse }) {
      if (!url.pathname.startsWith(`${ASSETS}/`)) return;
      const name = url.pathname.slice(ASSETS.length + 1);
      // Own names only: `__proto__` or `constructor` must not find Object.prototype's members.
      const file = Object.hasOwn(assetFiles, name) ? assetFiles[name] : undefined;
      if (!file || (request.method !== "GET" && request.method !== "HEAD")) {
        endResponse(errorResponse("NOT_FOUND", `No file ${url.pathname}`));
        return;
      }
      let content = encoded.get(file);
      if (!content) {
        const raw = file.content(await loadBundle());
        content = typeof raw === "string" ? new TextEncoder().encode(raw) : new Uint8Array(raw);
        encoded.set(file, content);
      }
      endResponse(
        new Response(content, {
          headers: { "content-type": file.type, "cache-control": "public, max-age=3600", "x-content-type-options": "nosniff" },
        }),
      );
    },
  };
}
