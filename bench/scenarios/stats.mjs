// Task item statistics of a vendor (REST).

/** @type {import("./index.mjs").Scenario} */
export default {
  id: "stats",
  order: 40,
  label: "task item stats",
  floor:
    "one grouped query: `count(*) ... GROUP BY status` of the vendor's task items, driven by the vendor row so that a missing vendor is a 404",
  request: ({ seed }) => ({
    method: "GET",
    path: `/v1/task-management/stats?entityId=${seed.vendorIds[0]}&entityType=vendor`,
    headers: { "x-api-key": seed.apiKey },
    deterministic: true,
  }),
};
