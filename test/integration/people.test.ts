import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDeviceManagement } from "../../src/modules/members/device-management.js";
import { openFixture } from "../helpers/fixtures.js";
import type { TestApp } from "../helpers/test-app.js";

// Unlinking changes a member for good: each test unlinks members of an organization of its own.
const { t, appWith } = await openFixture({ organizations: 0 });

const unlink = `mutation($id: ID!) { unlinkDevice(id: $id) {
  id organizationId userId role createdAt department jobTitle isActive deviceLabelId
  user { id name email emailVerified image createdAt updatedAt lastLogin }
} }`;

describe("unlink device", () => {
  it("clears the label and removes the member's devices, answering 200 with the member", async () => {
    const org = await t.seedOrg();
    const memberId = org.memberIds[0] as string;
    expect(await t.db.device.count({ where: { memberId } })).toBe(1);
    const res = await t.rest("PATCH", `/v1/people/${memberId}/unlink-device`, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(
      [
        "createdAt",
        "department",
        "deviceLabelId",
        "id",
        "isActive",
        "jobTitle",
        "organizationId",
        "role",
        "user",
        "userId",
      ].sort(),
    );
    expect(res.body).toMatchObject({
      id: memberId,
      organizationId: org.organizationId,
      userId: org.userIds[0],
      role: "owner",
      department: "none",
      jobTitle: null,
      isActive: true,
      deviceLabelId: null,
    });
    expect(Object.keys(res.body.user).sort()).toEqual([
      "createdAt",
      "email",
      "emailVerified",
      "id",
      "image",
      "lastLogin",
      "name",
      "updatedAt",
    ]);
    expect(await t.db.device.count({ where: { memberId } })).toBe(0);
    const audit = await t.db.auditEvent.findFirst({ where: { entityId: memberId, action: "member.device_unlinked" } });
    expect(audit?.data).toMatchObject({ previousDeviceLabelId: 101, devicesRemoved: 1 });
  });

  it("is idempotent: a second call answers 200 with the same member", async () => {
    const org = await t.seedOrg();
    const memberId = org.memberIds[0] as string;
    expect((await t.rest("PATCH", `/v1/people/${memberId}/unlink-device`, { key: org.apiKey })).status).toBe(200);
    const again = await t.rest("PATCH", `/v1/people/${memberId}/unlink-device`, { key: org.apiKey });
    expect(again.status).toBe(200);
    expect(again.body.deviceLabelId).toBeNull();
    expect(await t.db.auditEvent.count({ where: { entityId: memberId, action: "member.device_unlinked" } })).toBe(1);
  });

  it("works over GraphQL", async () => {
    const org = await t.seedOrg();
    const res = await t.gql(unlink, { id: org.memberIds[1] }, { key: org.apiKey });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.unlinkDevice).toMatchObject({
      id: org.memberIds[1],
      deviceLabelId: null,
      isActive: true,
      user: { id: org.userIds[1] },
    });
  });

  it("answers 404 for an unknown member and refuses a body", async () => {
    const org = await t.seedOrg();
    const res = await t.rest("PATCH", "/v1/people/mem_missing/unlink-device", { key: org.apiKey });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("NOT_FOUND");
    const withBody = await t.rest("PATCH", `/v1/people/${org.memberIds[2]}/unlink-device`, {
      key: org.apiKey,
      body: { deviceLabelId: 5 },
    });
    expect(withBody.status).toBe(400);
  });
});

describe("unlink device with a device-management system", () => {
  let withMdm: TestApp;
  let server: Server;
  let failNext = false;
  const calls: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      calls.push(`${req.method} ${req.url} ${req.headers.authorization}`);
      if (failNext) {
        res.writeHead(503).end();
        return;
      }
      if (req.method === "GET") {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ hosts: [{ id: 7 }, { id: 9 }] }));
        return;
      }
      res.writeHead(200).end("{}");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    withMdm = await appWith({ deviceManagement: createDeviceManagement(`http://127.0.0.1:${port}`, "mdm-token") });
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it("reports a failure of the device-management system as 502 and changes nothing", async () => {
    const org = await t.seedOrg();
    failNext = true;
    const memberId = org.memberIds[3] as string;
    const res = await withMdm.rest("PATCH", `/v1/people/${memberId}/unlink-device`, { key: org.apiKey });
    expect(res.status).toBe(502);
    expect(res.body.code).toBe("BAD_GATEWAY");
    expect((await t.db.member.findUniqueOrThrow({ where: { id: memberId } })).deviceLabelId).toBe(104);
    failNext = false;
  });

  it("removes the hosts under the old label, then unlinks", async () => {
    const org = await t.seedOrg();
    calls.length = 0;
    const memberId = org.memberIds[3] as string;
    const res = await withMdm.rest("PATCH", `/v1/people/${memberId}/unlink-device`, { key: org.apiKey });
    expect(res.status).toBe(200);
    expect(calls).toEqual([
      "GET /api/v1/fleet/labels/104/hosts Bearer mdm-token",
      "DELETE /api/v1/fleet/hosts/7 Bearer mdm-token",
      "DELETE /api/v1/fleet/hosts/9 Bearer mdm-token",
    ]);
    const audit = await t.db.auditEvent.findFirst({ where: { entityId: memberId, action: "member.device_unlinked" } });
    expect(audit?.data).toMatchObject({ previousDeviceLabelId: 104, hostsRemoved: 2 });
  });
});
