-- Sessions of people signed in to the broker's pages: the hub (`kind` 'hub', signed in
-- at the identity provider) and the approval page (`kind` 'approver', signed in with
-- an approver credential). Rows, not sealed cookies, so that signing out ends a session
-- on every replica and an operator can end a user's sessions at once
-- (`tool-broker sessions revoke`). The cookie holds a random id; only its sha256 is
-- stored, so a copy of this table opens no session.
CREATE TABLE sessions (
    id_sha256   TEXT    NOT NULL PRIMARY KEY,
    kind        TEXT    NOT NULL,
    principal   TEXT    NOT NULL,
    claims      TEXT    NOT NULL,
    created_ms  BIGINT  NOT NULL,
    seen_ms     BIGINT  NOT NULL,
    expires_ms  BIGINT  NOT NULL
);
CREATE INDEX sessions_principal ON sessions (principal);
