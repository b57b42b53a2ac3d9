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

-- A reservation in one round trip (engine/src/store/budgets.rs): the advisory lock of
-- each budget window in sorted order, then every window's room, then the charge of
-- each, or none. Each statement of a volatile function reads what committed before
-- it, so a window's total is read after its lock is held. Returns -1 and 0 when the
-- hold is charged (or already was), else the index (from 0) of the first window
-- without room and what it has used.
CREATE FUNCTION budget_reserve(
    p_hold    TEXT,
    p_budgets TEXT[],
    p_scopes  TEXT[],
    p_windows BIGINT[],
    p_limits  BIGINT[],
    p_units   TEXT[],
    p_locks   BIGINT[],
    p_cost    BIGINT,
    p_tool    TEXT,
    p_at      BIGINT,
    OUT over_index INTEGER,
    OUT over_used  BIGINT
) LANGUAGE plpgsql AS $$
DECLARE
    i      INTEGER;
    n      INTEGER := coalesce(array_length(p_budgets, 1), 0);
    v_used BIGINT;
BEGIN
    over_index := -1;
    over_used := 0;
    PERFORM pg_advisory_xact_lock(k) FROM unnest(p_locks) AS k ORDER BY k;
    IF EXISTS (SELECT 1 FROM budget_spend WHERE hold = p_hold) THEN
        RETURN;
    END IF;
    FOR i IN 1 .. n LOOP
        SELECT u.used INTO v_used FROM budget_usage AS u
         WHERE u.budget = p_budgets[i] AND u.scope = p_scopes[i] AND u.window_ms = p_windows[i];
        v_used := coalesce(v_used, 0);
        IF v_used + p_cost > p_limits[i] THEN
            over_index := i - 1;
            over_used := v_used;
            RETURN;
        END IF;
    END LOOP;
    FOR i IN 1 .. n LOOP
        INSERT INTO budget_spend (budget, scope, window_ms, hold, unit, units, settled, tool, at_ms)
        VALUES (p_budgets[i], p_scopes[i], p_windows[i], p_hold, p_units[i], p_cost, 0, p_tool, p_at);
        INSERT INTO budget_usage AS u (budget, scope, window_ms, used)
        VALUES (p_budgets[i], p_scopes[i], p_windows[i], p_cost)
        ON CONFLICT (budget, scope, window_ms) DO UPDATE SET used = u.used + p_cost;
    END LOOP;
END;
$$;
