//! Budget spending in the store (docs/budgets.md): a call's estimate is reserved under
//! every budget that binds it in one transaction, or under none; then settled to what
//! the call cost, or released.
//!
//! Every budget's window is checked and charged under its lock: on PostgreSQL a
//! transaction-scoped advisory lock per budget, scope and window, taken in one sorted
//! order so two replicas reserving the same budgets never deadlock, all in one round
//! trip (the `budget_reserve` function of migration 11); on SQLite the database's
//! write lock (`BEGIN IMMEDIATE`). So fifty concurrent calls against a
//! budget with room for ten spend exactly ten, on any number of replicas.
//!
//! Two tables: `budget_spend`, a row per budget a call was charged to (its hold, its
//! units, whether settled), and `budget_usage`, the running total of each budget's
//! window, so a reservation reads one row however many calls the window has seen.
//! Settling and releasing move the total by the difference. A reservation not settled
//! (the broker stopped while the call was upstream) keeps counting at its estimate:
//! the upstream may have done the work.

use super::{Backend, Store, StoreError, on_pool};

/// One budget's window a call is to be charged to.
#[derive(Debug, Clone, Copy)]
pub struct Charge<'a> {
    /// The budget's name.
    pub budget: &'a str,
    /// Who is counted (`user:...`, `key:...`, `role:...`).
    pub scope: &'a str,
    /// The window's start, ms since the epoch.
    pub window_ms: i64,
    /// Units the window holds.
    pub limit: u64,
    /// The unit.
    pub unit: &'a str,
}

/// What a reservation decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reserved {
    /// Charged to every budget (or already was, under this hold).
    Held,
    /// The budget at this index of the charges has no room: `used` units spent and
    /// reserved in its window; nothing was charged anywhere.
    Over {
        /// Index into the charges.
        index: usize,
        /// Units already spent or reserved in the window.
        used: u64,
    },
}

/// One budget's spending in one window, for `tool-broker budget list`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Spending {
    /// The budget.
    pub budget: String,
    /// Who was counted.
    pub scope: String,
    /// The window's start, ms since the epoch.
    pub window_ms: i64,
    /// The unit.
    pub unit: String,
    /// Units spent (settled) and reserved (calls still upstream).
    pub units: u64,
    /// Calls charged.
    pub calls: u64,
    /// The last charge, ms since the epoch.
    pub last_ms: i64,
}

fn units(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

const USED: &str =
    "SELECT used FROM budget_usage WHERE budget = $1 AND scope = $2 AND window_ms = $3";

/// Moves the totals of every window `hold` was charged to (and has not settled) by $2.
const MOVE: &str = "UPDATE budget_usage SET used = used + $2 \
                    WHERE (budget, scope, window_ms) IN \
                    (SELECT budget, scope, window_ms FROM budget_spend WHERE hold = $1 AND settled = 0)";

impl Store {
    /// Reserves `cost` units under `hold` in every charge's window, or in none when
    /// one has no room. A hold already reserved (a retry) is not charged again.
    pub async fn reserve_budgets(
        &self,
        hold: &str,
        charges: &[Charge<'_>],
        cost: u64,
        tool: &str,
        now_ms: i64,
    ) -> Result<Reserved, StoreError> {
        let fail = |e: sqlx::Error| self.failed("reserve a budget", &e);
        macro_rules! reserve {
            ($tx:expr) => {{
                let tx = &mut $tx;
                let (known,): (i64,) =
                    sqlx::query_as("SELECT COUNT(*) FROM budget_spend WHERE hold = $1")
                        .bind(hold)
                        .fetch_one(&mut **tx)
                        .await
                        .map_err(fail)?;
                let mut decided = Reserved::Held;
                if known == 0 {
                    for (index, charge) in charges.iter().enumerate() {
                        let used: Option<(i64,)> = sqlx::query_as(USED)
                            .bind(charge.budget)
                            .bind(charge.scope)
                            .bind(charge.window_ms)
                            .fetch_optional(&mut **tx)
                            .await
                            .map_err(fail)?;
                        let used = units(used.map_or(0, |(n,)| n));
                        if used.saturating_add(cost) > charge.limit {
                            decided = Reserved::Over { index, used };
                            break;
                        }
                    }
                }
                if known == 0 && decided == Reserved::Held {
                    for charge in charges {
                        sqlx::query(
                            "INSERT INTO budget_spend (budget, scope, window_ms, hold, unit, units, settled, tool, at_ms) \
                             VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8)",
                        )
                        .bind(charge.budget)
                        .bind(charge.scope)
                        .bind(charge.window_ms)
                        .bind(hold)
                        .bind(charge.unit)
                        .bind(signed(cost))
                        .bind(tool)
                        .bind(now_ms)
                        .execute(&mut **tx)
                        .await
                        .map_err(fail)?;
                        sqlx::query(
                            "INSERT INTO budget_usage (budget, scope, window_ms, used) VALUES ($1, $2, $3, $4) \
                             ON CONFLICT (budget, scope, window_ms) DO UPDATE SET used = budget_usage.used + $4",
                        )
                        .bind(charge.budget)
                        .bind(charge.scope)
                        .bind(charge.window_ms)
                        .bind(signed(cost))
                        .execute(&mut **tx)
                        .await
                        .map_err(fail)?;
                    }
                }
                decided
            }};
        }
        match &self.backend {
            Backend::Sqlite(pool) => {
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(fail)?;
                let decided = reserve!(tx);
                tx.commit().await.map_err(fail)?;
                Ok(decided)
            }
            Backend::Postgres(pool) => {
                // One round trip: `budget_reserve` (migration 11) takes the locks and
                // does what the SQLite transaction does.
                let budgets: Vec<String> = charges.iter().map(|c| c.budget.into()).collect();
                let scopes: Vec<String> = charges.iter().map(|c| c.scope.into()).collect();
                let units_of: Vec<String> = charges.iter().map(|c| c.unit.into()).collect();
                let locks: Vec<i64> = charges
                    .iter()
                    .map(|c| {
                        super::ratelimit::lock_key(&format!(
                            "budget\u{0}{}\u{0}{}\u{0}{}",
                            c.budget, c.scope, c.window_ms
                        ))
                    })
                    .collect();
                let windows: Vec<i64> = charges.iter().map(|c| c.window_ms).collect();
                let limits: Vec<i64> = charges.iter().map(|c| signed(c.limit)).collect();
                let (index, used): (i32, i64) = sqlx::query_as(
                    "SELECT over_index, over_used FROM budget_reserve($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                )
                .bind(hold)
                .bind(budgets)
                .bind(scopes)
                .bind(windows)
                .bind(limits)
                .bind(units_of)
                .bind(locks)
                .bind(signed(cost))
                .bind(tool)
                .bind(now_ms)
                .fetch_one(pool)
                .await
                .map_err(fail)?;
                Ok(match usize::try_from(index) {
                    Ok(index) => Reserved::Over {
                        index,
                        used: units(used),
                    },
                    Err(_) => Reserved::Held,
                })
            }
        }
    }

    /// Settles `hold`, reserved at `estimate`, to what the call cost (in every budget it
    /// was charged to). A hold already settled or released is left as it is.
    pub async fn settle_budgets(
        &self,
        hold: &str,
        estimate: u64,
        cost: u64,
    ) -> Result<(), StoreError> {
        let delta = signed(cost) - signed(estimate);
        self.finish_hold(hold, delta, Some(cost), "settle a budget")
            .await
    }

    /// Gives back what `hold` reserved at `estimate` (the upstream refused the call, or
    /// nothing was sent). A hold already settled is left as it is.
    pub async fn release_budgets(&self, hold: &str, estimate: u64) -> Result<(), StoreError> {
        self.finish_hold(hold, -signed(estimate), None, "release a budget")
            .await
    }

    /// Moves the hold's windows by `delta`, then settles its rows at `cost` or (`None`)
    /// deletes them: one transaction on SQLite, one statement on PostgreSQL.
    async fn finish_hold(
        &self,
        hold: &str,
        delta: i64,
        cost: Option<u64>,
        action: &'static str,
    ) -> Result<(), StoreError> {
        let fail = |e: sqlx::Error| self.failed(action, &e);
        macro_rules! finish {
            ($tx:expr) => {{
                let tx = &mut $tx;
                if delta != 0 {
                    sqlx::query(MOVE)
                        .bind(hold)
                        .bind(delta)
                        .execute(&mut **tx)
                        .await
                        .map_err(fail)?;
                }
                match cost {
                    Some(cost) => sqlx::query(
                        "UPDATE budget_spend SET units = $2, settled = 1 WHERE hold = $1 AND settled = 0",
                    )
                    .bind(hold)
                    .bind(signed(cost))
                    .execute(&mut **tx)
                    .await
                    .map_err(fail)?,
                    None => sqlx::query("DELETE FROM budget_spend WHERE hold = $1 AND settled = 0")
                        .bind(hold)
                        .execute(&mut **tx)
                        .await
                        .map_err(fail)?,
                };
            }};
        }
        match &self.backend {
            Backend::Sqlite(pool) => {
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(fail)?;
                finish!(tx);
                tx.commit().await.map_err(fail)
            }
            // One statement: the rows changed, and the windows moved by what changed.
            Backend::Postgres(pool) => {
                let change = match cost {
                    Some(_) => {
                        "UPDATE budget_spend SET units = $3, settled = 1 WHERE hold = $1 AND settled = 0"
                    }
                    None => "DELETE FROM budget_spend WHERE hold = $1 AND settled = 0 AND $3 = $3",
                };
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "WITH changed AS ({change} RETURNING budget, scope, window_ms) \
                     UPDATE budget_usage AS u SET used = u.used + $2 FROM changed \
                     WHERE u.budget = changed.budget AND u.scope = changed.scope \
                     AND u.window_ms = changed.window_ms AND $2 <> 0"
                )))
                .bind(hold)
                .bind(delta)
                .bind(signed(cost.unwrap_or(0)))
                .execute(pool)
                .await
                .map_err(fail)
                .map(|_| ())
            }
        }
    }

    /// Units spent and reserved in one budget's window.
    pub async fn budget_used(
        &self,
        budget: &str,
        scope: &str,
        window_ms: i64,
    ) -> Result<u64, StoreError> {
        let used: Option<(i64,)> = on_pool!(self, pool => sqlx::query_as(USED)
            .bind(budget)
            .bind(scope)
            .bind(window_ms)
            .fetch_optional(pool)
            .await)
        .map_err(|e| self.failed("read a budget", &e))?;
        Ok(units(used.map_or(0, |(n,)| n)))
    }

    /// Every budget's spending per scope and window with a charge at or after
    /// `since_ms`, newest window first.
    pub async fn budget_spending(&self, since_ms: i64) -> Result<Vec<Spending>, StoreError> {
        type Row = (String, String, i64, String, i64, i64, i64);
        let rows: Vec<Row> = on_pool!(self, pool => sqlx::query_as(
            "SELECT budget, scope, window_ms, MIN(unit), CAST(SUM(units) AS BIGINT), COUNT(*), MAX(at_ms) \
             FROM budget_spend WHERE at_ms >= $1 \
             GROUP BY budget, scope, window_ms ORDER BY window_ms DESC, budget, scope",
        )
        .bind(since_ms)
        .fetch_all(pool)
        .await)
        .map_err(|e| self.failed("list budget spending", &e))?;
        Ok(rows
            .into_iter()
            .map(
                |(budget, scope, window_ms, unit, spent, calls, last_ms)| Spending {
                    budget,
                    scope,
                    window_ms,
                    unit,
                    units: units(spent),
                    calls: units(calls),
                    last_ms,
                },
            )
            .collect())
    }

    /// Deletes the spending history older than `before_ms`: the charges made before
    /// it, and the running totals of windows that ended before it. A window's total
    /// is what reservations read, and no window is longer than 30 days, so a cutoff
    /// at least that far back never touches a window still open. Returns how many
    /// rows went.
    pub async fn prune_budgets(&self, before_ms: i64) -> Result<u64, StoreError> {
        let longest_window_ms = 30 * 24 * 3_600_000;
        let fail = |e: sqlx::Error| self.failed("prune budget history", &e);
        let spend = on_pool!(self, pool => sqlx::query("DELETE FROM budget_spend WHERE at_ms < $1")
            .bind(before_ms)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
        .map_err(fail)?;
        let usage =
            on_pool!(self, pool => sqlx::query("DELETE FROM budget_usage WHERE window_ms < $1")
            .bind(before_ms - longest_window_ms)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
            .map_err(fail)?;
        Ok(spend + usage)
    }
}
