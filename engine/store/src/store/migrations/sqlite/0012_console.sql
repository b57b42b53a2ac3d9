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
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms     BIGINT NOT NULL,
    before_ms BIGINT NOT NULL,
    removed   BIGINT
);
DROP TRIGGER audit_no_delete;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
WHEN OLD.at_ms >= COALESCE((SELECT max(before_ms) FROM audit_prunes WHERE removed IS NULL), -9223372036854775807)
  OR OLD.at_ms >= (CAST(strftime('%s', 'now') AS INTEGER) - 86400) * 1000
BEGIN SELECT RAISE(ABORT, 'the write audit is append-only: only a retention pruning removes records, and only those older than its bound and a day'); END;
-- The console lists approvals, tasks and jobs newest first across callers, and
-- retention removes them by age.
CREATE INDEX approvals_newest ON approvals (created_ms);
CREATE INDEX tasks_newest ON tasks (created_ms);
CREATE INDEX jobs_by_time ON jobs (submitted_ms);
