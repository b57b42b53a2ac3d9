-- Jobs callers submitted through the broker (imagegen generations, agent tasks, media
-- jobs), owned by a fingerprint of the caller, never a key.
CREATE TABLE jobs (
    service      TEXT   NOT NULL,
    owner        TEXT   NOT NULL,
    id           TEXT   NOT NULL,
    tool         TEXT   NOT NULL,
    status       TEXT,
    submitted_at TEXT   NOT NULL,
    submitted_ms BIGINT NOT NULL,
    updated_at   TEXT,
    PRIMARY KEY (service, owner, id)
);
CREATE INDEX jobs_newest ON jobs (service, owner, submitted_ms);

-- Requests counted against a tool's rate limit, per caller (sliding window log).
CREATE TABLE rate_hits (
    key   TEXT   NOT NULL,
    at_ms BIGINT NOT NULL
);
CREATE INDEX rate_hits_window ON rate_hits (key, at_ms);

-- The write audit: one row per executed, refused or declined write. No argument
-- values, no keys: a sha256 of the canonical arguments.
CREATE TABLE audit (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    at              TEXT    NOT NULL,
    at_ms           BIGINT  NOT NULL,
    key_name        TEXT    NOT NULL,
    tool            TEXT    NOT NULL,
    descriptor_hash TEXT    NOT NULL,
    catalog_version TEXT    NOT NULL,
    args_sha256     TEXT    NOT NULL,
    outcome         TEXT    NOT NULL,
    upstream_status INTEGER,
    classification  TEXT    NOT NULL,
    trace_id        TEXT    NOT NULL,
    duration_ms     BIGINT  NOT NULL
);
CREATE INDEX audit_by_time ON audit (at_ms);
CREATE INDEX audit_by_tool ON audit (tool, at_ms);
-- Append-only, also for anyone holding the file: rows are never changed or removed.
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the write audit is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the write audit is append-only'); END;
