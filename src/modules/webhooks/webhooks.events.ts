/** Every event type an endpoint may subscribe to: the audit actions, and the test message. */
export const webhookEventTypes: Record<string, string> = {
  "api_key.created": "An operator created an API key",
  "api_key.revoked": "An operator revoked an API key",
  "comment.created": "A comment was written",
  "comment.updated": "A comment's text was changed",
  "comment.deleted": "A comment was deleted (object is null)",
  "control.created": "A control was created",
  "control.updated": "A control was changed",
  "control.deleted": "A control was deleted with its maps, links and evidence (object is null)",
  "control.mapped": "A control was mapped to requirements",
  "control.unmapped": "A control's map to a requirement was removed",
  "control.linked": "Policies or tasks were linked to a control",
  "control.unlinked": "Links of a control to policies or tasks were removed",
  "control.status_changed": "A control's readiness changed (a write, or evidence expiring): from, to and the reasons",
  "evidence.added": "Evidence was added to a control or vendor (data.sha256: the file's SHA-256)",
  "evidence.accepted": "Submitted evidence was accepted",
  "evidence.rejected": "Submitted evidence was rejected",
  "evidence.deleted": "Evidence was deleted with its file (object is null)",
  "framework.adopted": "The organization adopted a framework",
  "framework.imported": "The organization imported a framework of its own",
  "framework.mappings_imported":
    "The organization imported a mapping set between frameworks (object is its source framework when that is the organization's own)",
  "framework.withdrawn": "The organization withdrew a framework's adoption",
  "evidence_request.created": "An evidence request was created for a control or a vendor",
  "evidence_request.sent":
    "An evidence request's link was issued to its recipient (at creation and at each resend); never the link itself",
  "evidence_request.opened": "The recipient first opened an evidence request's link (data.actorEmail)",
  "evidence_request.submitted": "The recipient submitted files through the link (data.actorEmail; each file's sha256)",
  "evidence_request.accepted": "An evidence request's submitted evidence was accepted",
  "evidence_request.rejected": "An evidence request's submitted evidence was rejected and the request reopened",
  "evidence_request.cancelled": "An evidence request was cancelled: its link stopped working",
  "evidence_request.expired": "An evidence request's link passed its expiry before the evidence was accepted",
  "member.created": "A member was added",
  "member.updated": "A member was changed",
  "member.device_unlinked": "A member's device was unlinked",
  "notification_preferences.updated": "A member changed their notification preferences",
  "policy.created": "A policy was created",
  "policy.updated": "A policy was changed",
  "policy.version_created": "A draft version of a policy was created",
  "policy.version_submitted": "A policy version was submitted for review",
  "policy.version_approved": "A policy version was approved and published",
  "policy.version_rejected": "A policy version was rejected",
  "requirement.applicability_set": "A requirement was marked applicable or not applicable (the statement of applicability)",
  "risk.created": "A risk was created",
  "risk.updated": "A risk was changed",
  "task.created": "A task was created",
  "task.updated": "A task was changed",
  "task_item.created": "A task item was created",
  "task_item.updated": "A task item was changed",
  "task_item.deleted": "A task item was deleted (object is null)",
  "vendor.created": "A vendor was created",
  "vendor.updated": "A vendor was changed",
  "webhook_endpoint.created": "A webhook endpoint was created",
  "webhook_endpoint.updated": "A webhook endpoint was changed",
  "webhook_endpoint.deleted": "A webhook endpoint was deleted (object is null)",
  "webhook_endpoint.secret_rotated": "A webhook endpoint's signing secret was rotated",
  "webhook_endpoint.disabled": "A webhook endpoint was disabled after a 410 or its failure window",
  "webhook.test": "A test message (sendTestWebhook); sent whatever the endpoint's type filter",
};

/** Whether `filter` (a type, or a prefix ending in `.*`) names a known type or family of types. */
export function isKnownTypeFilter(filter: string): boolean {
  const family = /^([a-z_]+(?:\.[a-z_]+)*\.)\*$/.exec(filter)?.[1];
  if (family) return Object.keys(webhookEventTypes).some((type) => type.indexOf(family) === 0);
  return Object.hasOwn(webhookEventTypes, filter);
}

/** The filters that select `type`: itself and `<prefix>.*` for each of its dotted prefixes. */
export function filtersMatching(type: string): string[] {
  const filters = [type];
  for (let i = type.indexOf("."); i !== -1; i = type.indexOf(".", i + 1)) filters.push(`${type.slice(0, i)}.*`);
  return filters;
}
