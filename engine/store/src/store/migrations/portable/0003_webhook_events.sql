-- Callbacks received at POST /webhooks/<service>, verified. One row per event: a
-- redelivery (same event id) changes nothing. The payload is kept redacted like any
-- upstream answer.
CREATE TABLE webhook_events (
    service     TEXT    NOT NULL,
    event_id    TEXT    NOT NULL,
    job_id      TEXT,
    status      TEXT,
    payload     TEXT    NOT NULL,
    received_at TEXT    NOT NULL,
    PRIMARY KEY (service, event_id)
);
