// The list page's query (bench/list-page.mjs's, over a page of 50) on a small organization, for the
// in-process benches (bench/ab-inprocess.mjs, bench/heap-profile.mjs): 60 open tasks written by SQL,
// as the list page's own bench writes its 100,000.

export const LIST_PAGE_QUERY =
  "{ tasks(filter: { status: [todo] }, orderBy: { field: dueDate, direction: asc }, limit: 50) { totalCount items { id title status dueDate } } }";

/** Writes the 60 tasks into the organization through `client` (a connected pg client), ids `tsk_<prefix>…`. */
export async function addListPageTasks(client, organizationId, prefix) {
  const width = 32 - "tsk_".length - prefix.length;
  await client.query(
    `INSERT INTO "Task" ("id", "organizationId", "title", "status", "dueDate", "updatedAt")
     SELECT 'tsk_' || $2 || lpad(n::text, ${width}, '0'), $1, 'Task ' || n, 'todo', DATE '2027-01-01' + n, now()
     FROM generate_series(1, 60) n`,
    [organizationId, prefix],
  );
}

/** The page's request, as a caller with the seed's API key sends it. */
export const listPageRequest = (seed) => ({
  method: "POST",
  path: "/graphql",
  headers: { "x-api-key": seed.apiKey, "content-type": "application/json" },
  body: JSON.stringify({ query: LIST_PAGE_QUERY }),
});
