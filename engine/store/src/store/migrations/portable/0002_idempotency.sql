-- Idempotent writes (decision 009): one row per caller, tool and
-- Idempotency-Key. `pending` while the first call runs; `completed` with the answer it
-- returned (the redacted envelope, as sent). Never an argument value: their sha256.
CREATE TABLE idempotency (
    owner        TEXT    NOT NULL,
    tool         TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    args_sha256  TEXT    NOT NULL,
    state        TEXT    NOT NULL,
    status       INTEGER,
    headers      TEXT,
    envelope     TEXT,
    created_ms   BIGINT  NOT NULL,
    PRIMARY KEY (owner, tool, key)
);
CREATE INDEX idempotency_age ON idempotency (created_ms);
