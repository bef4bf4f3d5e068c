-- Every event has its place in the chain now (previous migration's step).
ALTER TABLE "AuditEvent" ALTER COLUMN "hash" SET NOT NULL,
ALTER COLUMN "sequence" SET NOT NULL;

-- CreateIndex
CREATE INDEX "AuditEvent_organizationId_sequence_id_idx" ON "AuditEvent"("organizationId", "sequence", "id");

-- Append-only: UPDATE, DELETE and TRUNCATE of audit events raise, except the DELETE of the
-- operator's retention purge, which sets audit.purge for its own transaction (SET LOCAL) and
-- records what it removed in a signed checkpoint.
CREATE FUNCTION "audit_event_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('audit.purge', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'audit events are append-only: % of "AuditEvent" refused', TG_OP
    USING ERRCODE = 'insufficient_privilege', HINT = 'Old events are removed by the retention purge only (docs/audit.md).';
END;
$$;

CREATE TRIGGER "AuditEvent_append_only" BEFORE UPDATE OR DELETE ON "AuditEvent"
  FOR EACH ROW EXECUTE FUNCTION "audit_event_append_only"();

CREATE TRIGGER "AuditEvent_no_truncate" BEFORE TRUNCATE ON "AuditEvent"
  FOR EACH STATEMENT EXECUTE FUNCTION "audit_event_append_only"();
