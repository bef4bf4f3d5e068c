import { AUDIT_LINE_COLUMNS, type AuditLineRow, chainHash, GENESIS_HASH, lineOf } from "../audit-chain.js";

/** What a step may do in its migration's transaction (migrate.ts's MigrationTx). */
type StepTx = { query(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]> };

/** Work a migration needs that SQL alone cannot do, run by the migrator right after its SQL, in its transaction. */
export type MigrationStep = (tx: StepTx) => Promise<void>;

const BATCH = 1_000;

/**
 * Gives the audit events an installation already has their sequence and hash, per organization in
 * their order (createdAt, id), and each organization its chain head: SQL has SHA-256 but not RFC
 * 8785, so the hashes are computed here. It runs once, under the migrator's lock, before the next
 * migration makes both columns required and audit events append-only.
 */
async function chainExistingAuditEvents(tx: StepTx): Promise<void> {
  const organizations = await tx.query(`SELECT DISTINCT "organizationId" FROM "AuditEvent" ORDER BY 1`);
  for (const { organizationId } of organizations) {
    let sequence = 0;
    let hash = GENESIS_HASH;
    let after: { createdAt: string; id: string } | undefined;
    for (;;) {
      const rows = (await tx.query(
        `SELECT ${AUDIT_LINE_COLUMNS}, to_char("createdAt", 'YYYY-MM-DD HH24:MI:SS.US') AS "at" FROM "AuditEvent"
         WHERE "organizationId" = $1 ${after ? `AND ("createdAt", "id") > ($2::timestamp, $3)` : ""}
         ORDER BY "createdAt", "id" LIMIT ${BATCH}`,
        after ? [organizationId, after.createdAt, after.id] : [organizationId],
      )) as (AuditLineRow & { at: string })[];
      if (rows.length === 0) break;
      const chained = rows.map((row) => {
        sequence += 1;
        hash = chainHash(hash, { ...lineOf(row), sequence });
        return { id: row.id, sequence, hash };
      });
      await tx.query(
        `UPDATE "AuditEvent" e SET "sequence" = v."sequence", "hash" = v."hash"
         FROM json_to_recordset($1::json) AS v("id" text, "sequence" int, "hash" text) WHERE e."id" = v."id"`,
        [JSON.stringify(chained)],
      );
      const last = rows[rows.length - 1] as AuditLineRow & { at: string };
      after = { createdAt: last.at, id: last.id };
    }
    await tx.query(`INSERT INTO "AuditChainHead" ("organizationId", "sequence", "hash") VALUES ($1, $2, $3)`, [
      organizationId,
      sequence,
      hash,
    ]);
  }
}

/** By migration name. */
export const migrationSteps: Record<string, MigrationStep> = {
  "20261126100000_audit_chain": chainExistingAuditEvents,
};
