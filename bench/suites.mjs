// The standalone measurements `npm run bench` runs after its scenarios, in this order. Each is a
// file of bench/ that runs alone too (`npx node bench/<file>.mjs`) and exports a `suite`:
//   id         its name in the output
//   resultKey  where its result goes in bench/results.json (a `text` in it is printed at the end)
//   skip       the variable that skips it when "0"
//   runs       (settings) => whether this run's settings call for it (databases, A/B mode)
//   missing    optional: () => why it cannot run here (a missing program), or null
//   run        (settings, log) => its result
// Adding one: export `suite` from the file and add it below (bench/README.md, "Adding a scenario").
import { suite as auditChain } from "./audit-chain.mjs";
import { suite as listPage } from "./list-page.mjs";
import { suite as notifications } from "./notifications.mjs";
import { suite as pgbouncer } from "./pgbouncer.mjs";
import { suite as trustedDocuments } from "./trusted-documents.mjs";
import { suite as webhooks } from "./webhooks.mjs";

// Streams (bench/streams.mjs: 10,000 open streams) and the soak (bench/soak.mjs: ten minutes) take
// minutes each and run alone.
export const suites = [pgbouncer, notifications, listPage, auditChain, webhooks, trustedDocuments];
