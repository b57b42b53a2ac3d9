-- The hub (decision 012): each user's upstream key per service. `sealed` is
-- the key under AES-256-GCM with the deployment's vault key (`vault_key_env`), a random
-- nonce per record, and associated data binding issuer, subject and service: a row
-- copied to another user or service does not open. `key_id` names the vault key that
-- sealed it (`vault rekey` re-seals the others). The key itself is never stored.
CREATE TABLE hub_keys (
    issuer      TEXT    NOT NULL,
    subject     TEXT    NOT NULL,
    service     TEXT    NOT NULL,
    sealed      TEXT    NOT NULL,
    key_id      TEXT    NOT NULL,
    set_ms      BIGINT  NOT NULL,
    PRIMARY KEY (issuer, subject, service)
);
