import { asRecipient, authenticated } from "../../auth/actor.js";
import { EvidenceRequestStatus as EvidenceRequestStatusValues } from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";
import { anyOf, dateBounds, defineConnection, itemsQuery, listArgs, searchField } from "../../graphql/page.schema.js";
import { commonLimits, limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { EvidenceStatus } from "../evidence/evidence.schema.js";
import { evidenceRequestLimits, evidenceRequestList, MAX_REQUEST_FILES } from "./evidence-requests.service.js";

const originOf = (ctx: object): string | undefined => {
  const request = (ctx as { request?: Request }).request;
  return request ? new URL(request.url).origin : undefined;
};

export const EvidenceRequestStatus = builder.enumType(EvidenceRequestStatusValues, {
  name: "EvidenceRequestStatus",
  description: "Where an evidence request stands",
  values: {
    open: { description: "Waiting for the recipient's files; the link works" },
    submitted: { description: "Files sent, waiting for review; the link shows that and takes no more files" },
    accepted: { description: "The team accepted the files; the link no longer works" },
    rejected: {
      description:
        "The team rejected the files and reopened the request: the link takes files again until it expires, and its page shows the reason",
    },
    cancelled: { description: "Cancelled by the team; the link no longer works" },
    expired: { description: "The link passed expiresAt before the files were accepted" },
  },
});

const EvidenceRequest = builder.prismaObject("EvidenceRequest", {
  description:
    "A link sent to someone outside the organization (a vendor, an auditor) to upload evidence for a control or a vendor, without an account.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Evidence request id (erq_...)" }),
    controlId: t.exposeID("controlId", { nullable: true, description: "The control the evidence is for; null for a vendor's" }),
    vendorId: t.exposeID("vendorId", { nullable: true, description: "The vendor the evidence is about; null for a control's" }),
    control: t.relation("control", {
      nullable: true,
      ...graphOnly,
      description: "The control; null for a vendor's. Not in REST answers.",
    }),
    vendor: t.relation("vendor", {
      nullable: true,
      ...graphOnly,
      description: "The vendor; null for a control's. Not in REST answers.",
    }),
    title: t.exposeString("title", { description: "What is asked for, as the recipient reads it" }),
    instructions: t.exposeString("instructions", { nullable: true, description: "Longer instructions; null when none" }),
    recipientEmail: t.exposeString("recipientEmail", { description: "Who the link was sent to" }),
    recipientName: t.exposeString("recipientName", { nullable: true, description: "The recipient's name; null when not given" }),
    dueAt: t.expose("dueAt", { type: "DateTime", description: "When the files are due; a reminder goes 3 days before" }),
    expiresAt: t.expose("expiresAt", { type: "DateTime", description: "When the link stops working" }),
    status: t.expose("status", { type: EvidenceRequestStatus, description: "Where the request stands" }),
    note: t.exposeString("note", { nullable: true, description: "The recipient's note with the last submission" }),
    rejectionReason: t.exposeString("rejectionReason", {
      nullable: true,
      description: "The reason of the last rejection (shown on the page and mailed to the recipient); null when never rejected",
    }),
    openedAt: t.expose("openedAt", { type: "DateTime", nullable: true, description: "When the recipient first opened the link" }),
    submittedAt: t.expose("submittedAt", { type: "DateTime", nullable: true, description: "When files were last submitted" }),
    createdById: t.exposeID("createdById", { nullable: true, description: "Member id of who created it; null for an API key" }),
    createdByApiKeyId: t.exposeID("createdByApiKeyId", {
      nullable: true,
      description: "The API key that created it, if one did",
    }),
    evidence: t.relation("evidence", {
      description: "The evidence items its submissions made, oldest first",
      query: { orderBy: [{ createdAt: "asc" }, { id: "asc" }] },
    }),
    url: t.string({
      nullable: true,
      description:
        "The link to send the recipient (PUBLIC_URL + /requests/<token>): answered once, by createEvidenceRequest and resendEvidenceRequest. The service keeps only a hash of its token and never shows it again: null everywhere else",
      select: {},
      resolve: (request) => (request as { url?: string }).url ?? null,
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When it was created" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When it last changed" }),
  }),
});

const EvidenceRequestConnection = defineConnection("EvidenceRequest", EvidenceRequest);

const evidenceRequestListArgs = listArgs("EvidenceRequest", evidenceRequestList, {
  description: "Which evidence requests a list shows.",
  fields: (t) => ({
    status: t.field({
      type: [EvidenceRequestStatus],
      required: { list: false, items: true },
      ...anyOf("Only requests in these statuses"),
    }),
    controlId: t.idList({ required: { list: false, items: true }, ...anyOf("Only requests for these controls") }),
    vendorId: t.idList({ required: { list: false, items: true }, ...anyOf("Only requests for these vendors") }),
    dueBefore: t.field({ type: "DateTime", description: "Only requests due strictly before this instant" }),
    dueAfter: t.field({ type: "DateTime", description: "Only requests due strictly after this instant" }),
    ...dateBounds(t, "requests", true),
    search: searchField(t, "title or recipient e-mail"),
  }),
});

const targetNote =
  "Needs `control:update` for a control's request, `vendor:update` for a vendor's; another organization's request is 404.";

builder.queryField("evidenceRequests", (t) =>
  t.field({
    type: EvidenceRequestConnection,
    nullable: true,
    description:
      "The organization's evidence requests, filtered and sorted (default newest first), with their totalCount: controls' with `control:read`, vendors' with `vendor:read` (either is needed). Over GraphQL a refused list is null with its error; REST answers 403.",
    args: evidenceRequestListArgs,
    resolve: (_root, args, ctx, info) =>
      ctx.services.evidenceRequests.list(authenticated(ctx), args, itemsQuery(ctx, info, "EvidenceRequest")),
  }),
);

builder.queryField("evidenceRequest", (t) =>
  t.prismaField({
    type: "EvidenceRequest",
    nullable: true,
    description:
      "An evidence request by id (never its link). Needs `control:read` for a control's, `vendor:read` for a vendor's. Over GraphQL a missing or refused request is null with its error; REST answers 404 or 403.",
    args: { id: t.arg.id({ required: true, ...limited("The evidence request id", commonLimits.id) }) },
    resolve: (query, _root, args, ctx) => ctx.services.evidenceRequests.get(authenticated(ctx), args.id, query),
  }),
);

builder.mutationField("createEvidenceRequest", (t) =>
  t.prismaField({
    type: "EvidenceRequest",
    description: `Ask someone outside the organization for evidence of a control or about a vendor (exactly one of controlId and vendorId): answers the request with its \`url\`, once. The recipient is e-mailed the link (when e-mail is configured), and reminded 3 days before dueAt. ${targetNote}`,
    args: {
      controlId: t.arg.id({ ...limited("The control the evidence is for; not with vendorId", commonLimits.id) }),
      vendorId: t.arg.id({ ...limited("The vendor the evidence is about; not with controlId", commonLimits.id) }),
      title: t.arg.string({ required: true, ...limited("What is asked for", evidenceRequestLimits.title) }),
      instructions: t.arg.string(limited("Longer instructions for the recipient", evidenceRequestLimits.instructions)),
      recipientEmail: t.arg.string({ required: true, ...limited("Who gets the link", evidenceRequestLimits.recipientEmail) }),
      recipientName: t.arg.string(limited("The recipient's name", evidenceRequestLimits.recipientName)),
      dueAt: t.arg({
        type: "DateTime",
        required: true,
        description: "When the files are due: in the future, at most 90 days ahead",
      }),
      expiresAt: t.arg({
        type: "DateTime",
        description: "When the link stops working: not before dueAt, at most 90 days ahead; default dueAt + 7 days",
      }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.evidenceRequests.create(authenticated(ctx), args, query, originOf(ctx)),
  }),
);

builder.mutationField("cancelEvidenceRequest", (t) =>
  t.prismaField({
    type: "EvidenceRequest",
    description: `Cancel a request that is open, submitted or rejected: its link stops working at once; evidence already sent stays. ${targetNote}`,
    args: { id: t.arg.id({ required: true, ...limited("The evidence request id", commonLimits.id) }) },
    resolve: (query, _root, args, ctx) => ctx.services.evidenceRequests.cancel(authenticated(ctx), args.id, query),
  }),
);

builder.mutationField("resendEvidenceRequest", (t) =>
  t.prismaField({
    type: "EvidenceRequest",
    description: `A new link for an open or rejected request, answered once as \`url\` and e-mailed to the recipient; the old link stops working at once. ${targetNote}`,
    args: { id: t.arg.id({ required: true, ...limited("The evidence request id", commonLimits.id) }) },
    resolve: (query, _root, args, ctx) => ctx.services.evidenceRequests.resend(authenticated(ctx), args.id, query, originOf(ctx)),
  }),
);

// The recipient's page ------------------------------------------------------------------------

const EvidenceRequestFile = builder
  .objectRef<{ name: string; type: string; size: number; sha256: string; status: string; sentAt: Date }>("EvidenceRequestFile")
  .implement({
    description: "A file the recipient already sent through the link.",
    fields: (t) => ({
      name: t.exposeString("name", { description: "The file name" }),
      type: t.exposeString("type", { description: "The media type" }),
      size: t.exposeInt("size", { description: "Size in bytes" }),
      sha256: t.exposeString("sha256", { description: "SHA-256 of the bytes, lowercase hex" }),
      status: t.field({ type: EvidenceStatus, description: "Where its review stands", resolve: (f) => f.status as never }),
      sentAt: t.expose("sentAt", { type: "DateTime", description: "When it was submitted" }),
    }),
  });

type CurrentShape = {
  organizationName: string;
  title: string;
  instructions: string | null;
  dueAt: Date;
  expiresAt: Date;
  status: string;
  rejectionReason: string | null;
  submittedAt: Date | null;
  files: { name: string; type: string; size: number; sha256: string; status: string; sentAt: Date }[];
};

export const CurrentEvidenceRequest = builder.objectRef<CurrentShape>("CurrentEvidenceRequest").implement({
  description: "An evidence request as its recipient sees it on the link's page: nothing of the organization but its name.",
  fields: (t) => ({
    organizationName: t.exposeString("organizationName", { description: "Who asks" }),
    title: t.exposeString("title", { description: "What is asked for" }),
    instructions: t.exposeString("instructions", { nullable: true, description: "Longer instructions; null when none" }),
    dueAt: t.expose("dueAt", { type: "DateTime", description: "When the files are due" }),
    expiresAt: t.expose("expiresAt", { type: "DateTime", description: "When the link stops working" }),
    status: t.field({
      type: EvidenceRequestStatus,
      description: "open or rejected: files are taken; submitted: they await review",
      resolve: (r) => r.status as never,
    }),
    rejectionReason: t.exposeString("rejectionReason", {
      nullable: true,
      description: "Why the last files were rejected, while the request is rejected; null otherwise",
    }),
    submittedAt: t.expose("submittedAt", { type: "DateTime", nullable: true, description: "When files were last submitted" }),
    files: t.field({
      type: [EvidenceRequestFile],
      description: "The files already sent, oldest first",
      resolve: (r) => r.files,
    }),
  }),
});

builder.queryField("currentEvidenceRequest", (t) =>
  t.field({
    type: CurrentEvidenceRequest,
    description: `The request whose link token the call carries (X-Evidence-Request-Token), as its recipient sees it; the first call is recorded as evidence_request.opened. Only this, createAttachmentUpload (at most ${MAX_REQUEST_FILES} files) and submitEvidenceRequest take that token; any other credential is 401 here.`,
    resolve: (_root, _args, ctx) => ctx.services.evidenceRequests.current(asRecipient(ctx)),
  }),
);

builder.mutationField("submitEvidenceRequest", (t) =>
  t.field({
    type: CurrentEvidenceRequest,
    description: `Send the files uploaded through the link (createAttachmentUpload with the same token, their bytes in the store) with an optional note: each becomes a submitted evidence item of the control or vendor, the request becomes submitted and its creator is notified. Takes only X-Evidence-Request-Token; 409 while the files already sent await review.`,
    args: {
      uploadIds: t.arg.idList({
        required: true,
        ...limited("The uploads to send, made through this link and not yet submitted", evidenceRequestLimits.uploadIds),
      }),
      note: t.arg.string(limited("A note for the team", evidenceRequestLimits.note)),
    },
    resolve: (_root, args, ctx) => ctx.services.evidenceRequests.submit(asRecipient(ctx), args),
  }),
);

builder.mutationField("acceptEvidenceRequest", (t) =>
  t.prismaField({
    type: "EvidenceRequest",
    description: `Accept a submitted request: every item it submitted that awaits review is accepted (as acceptEvidence does, which can make the control ready) and the link stops working. ${targetNote}`,
    args: { id: t.arg.id({ required: true, ...limited("The evidence request id", commonLimits.id) }) },
    resolve: (query, _root, args, ctx) => ctx.services.evidenceRequests.accept(authenticated(ctx), args.id, query),
  }),
);

builder.mutationField("rejectEvidenceRequest", (t) =>
  t.prismaField({
    type: "EvidenceRequest",
    description: `Reject a submitted request: every item it submitted that awaits review is rejected with the reason, the request becomes \`rejected\` (reopened: the same link takes files again until it expires) and the recipient is mailed the reason. ${targetNote}`,
    args: {
      id: t.arg.id({ required: true, ...limited("The evidence request id", commonLimits.id) }),
      reason: t.arg.string({ required: true, ...limited("Why, as the recipient will read it", evidenceRequestLimits.reason) }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.evidenceRequests.reject(authenticated(ctx), args.id, args.reason, query),
  }),
);
