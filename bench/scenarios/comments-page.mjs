// A page of 50 comments with their authors and attachments (REST), on the first task.

/** 50 comments on the first task, the four members taking turns as authors, each with one attachment; through the API. */
async function createPageComments(base, seed) {
  for (let i = 0; i < 50; i++) {
    const response = await fetch(`${base}/v1/comments`, {
      method: "POST",
      headers: { "x-api-key": seed.apiKey, "content-type": "application/json" },
      body: JSON.stringify({
        content: `Evidence note ${i + 1}: reviewed the control and attached the export.`,
        entityId: seed.taskIds[0],
        entityType: "task",
        userId: seed.userIds[i % seed.userIds.length],
        attachments: [
          {
            fileName: `evidence-${i + 1}.txt`,
            fileType: "text/plain",
            fileData: Buffer.from(`evidence ${i + 1}\n`).toString("base64"),
          },
        ],
      }),
    });
    const text = await response.text();
    if (response.status !== 201) throw new Error(`creating the page's comments: ${response.status} ${text}`);
  }
}

/** @type {import("./index.mjs").Scenario} */
export default {
  id: "comments-page",
  order: 50,
  label: "50 comments + authors + attachments",
  floor:
    "one query: the task row, `LATERAL` the 51 newest comments (keyset order `createdAt, id`) joined to member, user and attachments; rows grouped in JavaScript, `nextCursor` as the service encodes it",
  async setup({ base, seed, log }) {
    const t = performance.now();
    await createPageComments(base, seed);
    log(`created 50 comments with attachments in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  },
  request: ({ seed }) => ({
    method: "GET",
    path: `/v1/comments?entityId=${seed.taskIds[0]}&entityType=task&limit=50`,
    headers: { "x-api-key": seed.apiKey },
    deterministic: true,
  }),
};
