-- MCP tasks (the tasks extension of MCP 2026-07-28, SEP-2663): a tool call
-- that waits, run in the background for a client that opted in. `owner` is the caller
-- (key name + upstream key fingerprint, as for jobs); only the owner reads or cancels.
-- `result` is the JSON of the redacted CallToolResult (completed) or of the JSON-RPC
-- error (failed), never a key: the same text the call would have answered.
-- `heartbeat_ms` is renewed by the replica running the call; a working task whose
-- heartbeat stopped lost its replica and is reported failed.
-- A status moves once from working: -> completed | failed | cancelled.
CREATE TABLE tasks (
    id            TEXT    PRIMARY KEY,
    owner         TEXT    NOT NULL,
    tool          TEXT    NOT NULL,
    status        TEXT    NOT NULL,
    result        TEXT,
    created_ms    BIGINT  NOT NULL,
    updated_ms    BIGINT  NOT NULL,
    heartbeat_ms  BIGINT  NOT NULL,
    expires_ms    BIGINT  NOT NULL
);
CREATE INDEX tasks_expiry ON tasks (expires_ms);
