-- A reservation in one round trip (engine/store/src/store/budgets.rs): the advisory lock of
-- each budget window in sorted order, then every window's room, then the charge of
-- each, or none. Each statement of a volatile function reads what committed before
-- it, so a window's total is read after its lock is held. Returns -1 and 0 when the
-- hold is charged (or already was), else the index (from 0) of the first window
-- without room and what it has used.
CREATE OR REPLACE FUNCTION budget_reserve(
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
