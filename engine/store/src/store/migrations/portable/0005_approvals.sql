-- Approvals (decision 008, mode `human`): a write a person must approve, bound
-- like a confirmation token to the caller (key name + upstream key fingerprint), the
-- tool, its descriptor hash and the sha256 of its arguments. `preview` is what the
-- approver is shown: the request as the broker would send it, redacted, never a key.
-- A state moves once: pending -> approved | declined; approved -> used (the write ran).
CREATE TABLE approvals (
    id              TEXT    PRIMARY KEY,
    caller          TEXT    NOT NULL,
    key_name        TEXT    NOT NULL,
    tool            TEXT    NOT NULL,
    descriptor_hash TEXT    NOT NULL,
    args_sha256     TEXT    NOT NULL,
    preview         TEXT    NOT NULL,
    state           TEXT    NOT NULL,
    approver        TEXT,
    created_ms      BIGINT  NOT NULL,
    expires_ms      BIGINT  NOT NULL,
    decided_ms      BIGINT
);
