-- Confirmation (decision 008). `seal_keys`: the broker-held HMAC keys that seal
-- confirmation tokens, shared by every replica; a new key is added when the newest is a
-- day old, and older keys stay so tokens in flight still open. `spent_tokens`: the id
-- of every token used, so a token runs one write across replicas; rows past their
-- expiry no longer matter and may be deleted.
CREATE TABLE seal_keys (
    kid        TEXT    PRIMARY KEY,
    secret     TEXT    NOT NULL,
    created_ms BIGINT  NOT NULL
);

CREATE TABLE spent_tokens (
    id         TEXT    PRIMARY KEY,
    expires_ms BIGINT  NOT NULL
);

-- Who confirmed each audited write: `flag` or `bound` (later the approver's name).
ALTER TABLE audit ADD COLUMN confirmation TEXT;
