-- What each budget has spent per window and principal (docs/budgets.md): one row per
-- budget a call was charged to. A row is reserved at the estimate before the request
-- goes upstream; it is settled (`settled` = 1) when the answer set another figure, and
-- deleted when the upstream refused the call. A row at 0 counts its estimate: the call
-- ran at it, is still upstream, or the broker stopped meanwhile. `scope` is who is counted: `user:<issuer>#<subject>`,
-- `key:<name>`, or `role:<role>` for a shared role budget. No argument values.
CREATE TABLE budget_spend (
    budget    TEXT    NOT NULL,
    scope     TEXT    NOT NULL,
    window_ms BIGINT  NOT NULL,
    hold      TEXT    NOT NULL,
    unit      TEXT    NOT NULL,
    units     BIGINT  NOT NULL,
    settled   INTEGER NOT NULL,
    tool      TEXT    NOT NULL,
    at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (budget, scope, window_ms, hold)
);
CREATE INDEX budget_spend_hold ON budget_spend (hold);
CREATE INDEX budget_spend_time ON budget_spend (at_ms);

-- The write audit's cost column: what a priced write was charged, as JSON
-- (`{"credits": 3}`); NULL for unpriced tools and calls that did not run.
ALTER TABLE audit ADD COLUMN cost TEXT;

-- What each budget's window holds: spent and reserved units per budget, principal and
-- window, kept with every reservation, settlement and release so a reservation reads
-- one row whatever the window has seen.
CREATE TABLE budget_usage (
    budget    TEXT   NOT NULL,
    scope     TEXT   NOT NULL,
    window_ms BIGINT NOT NULL,
    used      BIGINT NOT NULL,
    PRIMARY KEY (budget, scope, window_ms)
);
