-- Accounts connected to the hub by OAuth (decision 020): one row per user and service.
-- `sealed` holds the access and refresh tokens together, under AES-256-GCM with the
-- vault key and associated data binding issuer, subject and service (as hub_keys);
-- a refresh writes the new pair in one statement, so a rotated refresh token is never
-- stored apart from its access token. `state` is `connected` or `reconnect` (the
-- provider refused the refresh token). `lease_holder` and `lease_until` are the
-- refresh lease: one replica refreshes a connection at a time; `version` counts
-- refreshes so a waiting replica sees one land.
CREATE TABLE hub_connections (
    issuer        TEXT    NOT NULL,
    subject       TEXT    NOT NULL,
    service       TEXT    NOT NULL,
    sealed        TEXT    NOT NULL,
    key_id        TEXT    NOT NULL,
    account       TEXT,
    scopes        TEXT    NOT NULL,
    expires_ms    BIGINT,
    state         TEXT    NOT NULL,
    set_ms        BIGINT  NOT NULL,
    refreshed_ms  BIGINT,
    version       BIGINT  NOT NULL,
    lease_holder  TEXT,
    lease_until   BIGINT,
    PRIMARY KEY (issuer, subject, service)
);

-- Authorization flows under way: `id` is the `state` parameter (256 random bits), taken
-- once by the callback. The row names the user and the hub session that started it
-- (the SHA-256 of the session's id) and holds the PKCE verifier sealed.
CREATE TABLE hub_oauth_flows (
    id            TEXT    NOT NULL PRIMARY KEY,
    issuer        TEXT    NOT NULL,
    subject       TEXT    NOT NULL,
    service       TEXT    NOT NULL,
    session       TEXT    NOT NULL,
    sealed        TEXT    NOT NULL,
    expires_ms    BIGINT  NOT NULL
);

-- The broker's own client at an authorization server it registered at (RFC 7591), one
-- per service and server, shared by every replica: `sealed` is the client secret under
-- the vault key (NULL for a public client), `auth_method` how it is sent.
CREATE TABLE hub_oauth_clients (
    service       TEXT    NOT NULL,
    issuer        TEXT    NOT NULL,
    client_id     TEXT    NOT NULL,
    sealed        TEXT,
    auth_method   TEXT    NOT NULL,
    key_id        TEXT    NOT NULL,
    registered_ms BIGINT  NOT NULL,
    PRIMARY KEY (service, issuer)
);
