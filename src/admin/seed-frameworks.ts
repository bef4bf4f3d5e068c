import type { Actor } from "../auth/actor.js";
import { permissions } from "../auth/permissions.js";
import type { Services } from "../modules/services.js";
import type { Db } from "../platform/db/database.js";
import type { SeedResult } from "./seed.js";

/** The shipped framework the demo organization adopts. */
export const DEMO_FRAMEWORK_KEY = "soc2-tsc-2017";

export type FrameworkDemo = { frameworkId: string; controlIds: string[] };

/**
 * The demo organization's readiness for SOC 2, made as a team would make it: SOC 2 adopted,
 * processing integrity not applicable (with the reason), and four controls owned by the admin,
 * mapped to criteria and backed by the demo's policies and tasks: two ready (a published policy,
 * a task done), two not (a task in progress, a task to do and evidence a year old at most that
 * nobody has added yet). Every step through the services, with the demo key as the actor: the
 * audit trail, the controls' recorded states and the owner's notifications are what the API makes.
 * Only the first start of an empty embedded database runs it (server.ts); the test suite's seeds do
 * not, so their organizations start without frameworks.
 */
export async function seedFrameworkDemo(db: Db, services: Services, demo: SeedResult): Promise<FrameworkDemo> {
  const actor: Actor = {
    kind: "apiKey",
    organizationId: demo.organizationId,
    userId: null,
    apiKeyId: demo.apiKeyId,
    permissions: new Set(permissions),
    requestId: "seed",
  };
  /** What each service call reads back: the id alone. */
  const idOnly = { select: { id: true } };
  const framework = await db.framework.findFirstOrThrow({
    where: { key: DEMO_FRAMEWORK_KEY, organizationId: null },
    select: { id: true },
  });
  const requirements = new Map(
    (await db.requirement.findMany({ where: { frameworkId: framework.id }, select: { id: true, ref: true } })).map((r) => [
      r.ref,
      r.id,
    ]),
  );
  const requirement = (ref: string) => {
    const id = requirements.get(ref);
    if (!id) throw new Error(`The shipped ${DEMO_FRAMEWORK_KEY} has no requirement ${ref}`);
    return id;
  };
  await services.frameworks.adopt(actor, framework.id, idOnly);
  for (const ref of ["PI1.1", "PI1.2", "PI1.3", "PI1.4", "PI1.5"]) {
    await services.frameworks.setApplicability(
      actor,
      requirement(ref),
      { applicable: false, justification: "Out of scope: the service processes no transactions for its customers" },
      idOnly,
    );
  }
  const [informationSecurity, acceptableUse] = demo.policyIds as [string, string];
  const [accessReview, keyRotation, incidentPlan] = demo.taskIds as [string, string, string];
  const controls: {
    code: string;
    name: string;
    refs: string[];
    evidenceEveryDays?: number;
    policyIds?: string[];
    taskIds?: string[];
  }[] = [
    {
      code: "AC-01",
      name: "Quarterly access review",
      refs: ["CC6.2", "CC6.3"],
      policyIds: [informationSecurity],
      taskIds: [accessReview],
    },
    {
      code: "CR-01",
      name: "Encryption key rotation",
      refs: ["CC6.1", "CC6.7"],
      evidenceEveryDays: 365,
      taskIds: [keyRotation],
    },
    { code: "IR-01", name: "Incident response plan", refs: ["CC7.3", "CC7.4"], taskIds: [incidentPlan] },
    { code: "HR-01", name: "Acceptable use of company devices", refs: ["CC2.2", "CC5.3"], policyIds: [acceptableUse] },
  ];
  const controlIds: string[] = [];
  for (const { refs, policyIds, taskIds, ...fields } of controls) {
    const control = await services.controls.create(actor, { ...fields, ownerId: demo.memberIds[1] }, idOnly);
    await services.controls.map(actor, control.id, refs.map(requirement), idOnly);
    await services.controls.link(actor, control.id, { policyIds, taskIds }, idOnly);
    controlIds.push(control.id);
  }
  return { frameworkId: framework.id, controlIds };
}
