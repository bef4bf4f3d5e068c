import { authorize } from "../../auth/actor.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { Db } from "../../platform/db/database.js";
import { readRows } from "../../platform/db/row-by-id.js";
import { BadUserInputError, ConflictError, NotFoundError } from "../../platform/errors.js";
import type { OwnRouteHandlers } from "../../rest/own-routes.js";
import { csvField, textStream } from "../audit/audit.export.js";
import { type RequirementState, requirementStatesSql } from "./frameworks.readiness.js";
import { visibleFrameworks } from "./frameworks.service.js";

/**
 * The statement of applicability (contract section 16): an adopted framework's assessable
 * requirements in catalog order, each with whether it applies, why, the controls that meet it and
 * its state now. Streamed in batches read at the pace of the reader (the audit export's stream and
 * CSV neutralising), so memory stays flat for a catalog of any size.
 */

const { sql } = Prisma;

export const soaFormats = ["json", "csv"] as const;
export type SoaFormat = (typeof soaFormats)[number];

export const SOA_COLUMNS = ["ref", "title", "applicable", "justification", "controls", "state"] as const;

export type SoaLine = {
  ref: string;
  title: string;
  applicable: boolean;
  justification: string | null;
  controls: string[];
  state: RequirementState;
};

/** Requirements read per statement. */
const BATCH = 500;

export function soaRequest(query: URLSearchParams): { format: SoaFormat } {
  const unknown = [...query.keys()].filter((key) => key !== "format");
  if (unknown.length) {
    throw new BadUserInputError(
      `Unknown query parameter ${unknown[0]}`,
      unknown.map((path) => ({ path, message: "unknown parameter" })),
    );
  }
  const format = query.get("format") ?? "json";
  if (!(soaFormats as readonly string[]).includes(format)) {
    throw new BadUserInputError(`format is one of ${soaFormats.join(", ")}`, [{ path: "format", message: "json or csv" }]);
  }
  return { format: format as SoaFormat };
}

/** The statement's lines, a batch at a time, all at the same instant. */
async function* soaLines(db: Db, organizationId: string, frameworkId: string, now: Date): AsyncGenerator<SoaLine[]> {
  let after = -1;
  for (;;) {
    const rows = await readRows<SoaLine & { position: number }>(
      db,
      sql`WITH "page" AS (
          SELECT r."id", r."ref", r."title", r."position" FROM "Requirement" r
          WHERE r."frameworkId" = ${frameworkId} AND r."assessable" AND r."position" > ${after}::int
          ORDER BY r."position" LIMIT ${BATCH}::int
        )
        SELECT p."ref", p."title", p."position",
          COALESCE(a."applicable", TRUE) AS "applicable", a."justification",
          COALESCE((SELECT array_agg(c."code" ORDER BY c."code") FROM "ControlRequirement" cr JOIN "Control" c ON c."id" = cr."controlId"
                    WHERE cr."organizationId" = ${organizationId} AND cr."requirementId" = p."id"), ARRAY[]::text[]) AS "controls",
          s."state"
        FROM "page" p
        JOIN (${requirementStatesSql(organizationId, now, sql`r."id" IN (SELECT "id" FROM "page")`)}) s ON s."requirementId" = p."id"
        LEFT JOIN "RequirementApplicability" a ON a."organizationId" = ${organizationId} AND a."requirementId" = p."id"
        ORDER BY p."position"`,
    );
    if (rows.length === 0) return;
    yield rows.map(({ position: _position, ...line }) => line);
    if (rows.length < BATCH) return;
    after = (rows[rows.length - 1] as { position: number }).position;
  }
}

/** The statement as a byte stream: a JSON array, or CSV with a header row. */
export function soaStream(
  db: Db,
  organizationId: string,
  framework: { id: string; key: string },
  format: SoaFormat,
  now = new Date(),
): { body: ReadableStream<Uint8Array>; contentType: string; filename: string } {
  async function* chunks(): AsyncGenerator<string> {
    let first = true;
    if (format === "csv") yield `${SOA_COLUMNS.join(",")}\r\n`;
    else yield "[";
    for await (const lines of soaLines(db, organizationId, framework.id, now)) {
      if (format === "csv") {
        yield lines
          .map(
            (line) =>
              `${SOA_COLUMNS.map((key) => csvField(key === "controls" ? line.controls.join(" ") : line[key])).join(",")}\r\n`,
          )
          .join("");
      } else {
        yield lines
          .map((line) => {
            const text = `${first ? "\n" : ",\n"}${JSON.stringify(line)}`;
            first = false;
            return text;
          })
          .join("");
      }
    }
    if (format === "json") yield "\n]\n";
  }
  return {
    body: textStream(chunks()),
    contentType: format === "csv" ? "text/csv; charset=utf-8" : "application/json; charset=utf-8",
    filename: `statement-of-applicability-${framework.key.replace(/[^A-Za-z0-9._-]/g, "_")}.${format}`,
  };
}

/** The REST facade's own route for the statement (routes.ts, ownRestRoutes). */
export function frameworkRestHandlers(db: Db): Pick<OwnRouteHandlers, "getStatementOfApplicability"> {
  return {
    async getStatementOfApplicability({ url, auth, requestId, params }) {
      const actor = authorize({ auth, requestId }, "framework:read");
      const { format } = soaRequest(url.searchParams);
      const id = params.id as string;
      const framework = await db.framework.findFirst({
        where: { id, ...visibleFrameworks(actor.organizationId) },
        select: {
          id: true,
          key: true,
          adoptions: { where: { organizationId: actor.organizationId }, select: { frameworkId: true } },
        },
      });
      if (!framework) throw new NotFoundError("Framework", id);
      if (framework.adoptions.length === 0) {
        throw new ConflictError("The framework is not adopted: a statement of applicability is of an adopted framework");
      }
      const { body, contentType, filename } = soaStream(db, actor.organizationId, framework, format);
      return new Response(body, {
        headers: {
          "content-type": contentType,
          "content-disposition": `attachment; filename="${filename}"`,
          "cache-control": "no-store",
        },
      });
    },
  };
}
