-- The operator's console reads the write audit by who, which tool, which outcome, newest
-- first (docs/console.md): an index per filter, each ordered by position.
CREATE INDEX audit_by_key ON audit (key_name, seq);
CREATE INDEX audit_by_tool_seq ON audit (tool, seq);
CREATE INDEX audit_by_outcome ON audit (outcome, seq);
-- Retention (`audit_retention_days`): the audit stays append-only except for a pruning
-- the broker records here. A record may be removed only while a pruning row is open
-- (`removed` NULL, inside the pruning's own transaction) and only when it is older than
-- that pruning's bound and over a day old; every other change is refused as before.
CREATE TABLE audit_prunes (
    id        BIGSERIAL PRIMARY KEY,
    at_ms     BIGINT NOT NULL,
    before_ms BIGINT NOT NULL,
    removed   BIGINT
);
-- The pruning table is named in the audit table's own schema, whatever the session's
-- search_path.
CREATE OR REPLACE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    gate BIGINT;
BEGIN
    IF TG_OP = 'DELETE' THEN
        EXECUTE format('SELECT max(before_ms) FROM %I.audit_prunes WHERE removed IS NULL', TG_TABLE_SCHEMA)
            INTO gate;
        IF gate IS NOT NULL
           AND OLD.at_ms < gate
           AND OLD.at_ms < (extract(epoch FROM now()) * 1000)::bigint - 86400000 THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'the write audit is append-only: only a retention pruning removes records, and only those older than its bound and a day';
END;
$$;
-- The console lists approvals, tasks and jobs newest first across callers, and
-- retention removes them by age.
CREATE INDEX approvals_newest ON approvals (created_ms);
CREATE INDEX tasks_newest ON tasks (created_ms);
CREATE INDEX jobs_by_time ON jobs (submitted_ms);
