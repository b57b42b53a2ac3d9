//! Versioned migrations, embedded in the binary and applied at start.
//!
//! Each backend has its own list, the same versions and names in both: a migration
//! whose SQL differs between the dialects has a file per backend (`migrations/sqlite/`,
//! `migrations/postgres/`), one both read the same is written once
//! (`migrations/portable/`). They run in one transaction that first takes a
//! lock, so two replicas starting together serialise: the second finds the versions
//! applied and does nothing. PostgreSQL: a transaction-scoped advisory lock (DDL is
//! transactional there, so a failed migration leaves nothing behind). SQLite:
//! `BEGIN IMMEDIATE`, the database's write lock. Applied versions are recorded in
//! `schema_migrations`; a database that knows a version this binary does not is
//! refused (an older binary must not run against a newer schema).

use super::{Backend, Store, StoreError};

/// One migration: version, name, SQL.
pub type Migration = (i64, &'static str, &'static str);

/// The first migration of each backend (its own dialect).
pub const SQLITE_INITIAL: Migration = (
    1,
    "initial",
    include_str!("migrations/sqlite/0001_initial.sql"),
);
/// See [`SQLITE_INITIAL`].
pub const POSTGRES_INITIAL: Migration = (
    1,
    "initial",
    include_str!("migrations/postgres/0001_initial.sql"),
);

/// Every later migration, written once in SQL both backends read alike, oldest first.
pub const PORTABLE: &[Migration] = &[
    (
        2,
        "idempotency",
        include_str!("migrations/portable/0002_idempotency.sql"),
    ),
    (
        3,
        "webhook_events",
        include_str!("migrations/portable/0003_webhook_events.sql"),
    ),
    (
        4,
        "confirmation",
        include_str!("migrations/portable/0004_confirmation.sql"),
    ),
    (
        5,
        "approvals",
        include_str!("migrations/portable/0005_approvals.sql"),
    ),
    (
        6,
        "tasks",
        include_str!("migrations/portable/0006_tasks.sql"),
    ),
    (
        7,
        "hub_keys",
        include_str!("migrations/portable/0007_hub_keys.sql"),
    ),
    (
        8,
        "sessions",
        include_str!("migrations/portable/0008_sessions.sql"),
    ),
    (
        9,
        "audit_policies",
        include_str!("migrations/portable/0009_audit_policies.sql"),
    ),
    (
        10,
        "budgets",
        include_str!("migrations/portable/0010_budgets.sql"),
    ),
    (
        13,
        "approval_plans",
        include_str!("migrations/portable/0013_approval_plans.sql"),
    ),
    (
        14,
        "hub_connections",
        include_str!("migrations/portable/0014_hub_connections.sql"),
    ),
    (
        15,
        "audit_guards",
        include_str!("migrations/portable/0015_audit_guards.sql"),
    ),
];

/// SQLite's own later migrations.
pub const SQLITE_OWN: &[Migration] = &[
    (
        11,
        "budget_reserve",
        include_str!("migrations/sqlite/0011_budget_reserve.sql"),
    ),
    (
        12,
        "console",
        include_str!("migrations/sqlite/0012_console.sql"),
    ),
];

/// PostgreSQL's own later migrations (the same versions and names as SQLite's).
pub const POSTGRES_OWN: &[Migration] = &[
    (
        11,
        "budget_reserve",
        include_str!("migrations/postgres/0011_budget_reserve.sql"),
    ),
    (
        12,
        "console",
        include_str!("migrations/postgres/0012_console.sql"),
    ),
];

/// A backend's migrations, oldest first: its initial one, the portable ones and its
/// own, by version.
pub fn migrations(initial: Migration, own: &[Migration]) -> Vec<Migration> {
    let mut all: Vec<Migration> = std::iter::once(initial)
        .chain(PORTABLE.iter().copied())
        .chain(own.iter().copied())
        .collect();
    all.sort_by_key(|m| m.0);
    all
}

/// The advisory lock key migrations take on PostgreSQL ("tbmigrat" in ASCII).
pub(super) const PG_LOCK: i64 = 0x7462_6d69_6772_6174;

const TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version    BIGINT PRIMARY KEY,
    name       TEXT   NOT NULL,
    applied_at TEXT   NOT NULL
)";

/// Applies every migration the store has not seen.
pub async fn run(store: &Store) -> Result<(), StoreError> {
    let kind = store.kind();
    let fail = |version: i64, name: &'static str, e: &sqlx::Error| StoreError::Migrate {
        kind,
        version,
        name,
        reason: super::safe_reason(e),
    };
    let now = jiff::Timestamp::now().to_string();
    macro_rules! apply {
        ($tx:expr, $list:expr) => {{
            let tx = &mut $tx;
            sqlx::raw_sql(TABLE)
                .execute(&mut **tx)
                .await
                .map_err(|e| fail(0, "schema_migrations", &e))?;
            let applied: Vec<(i64,)> = sqlx::query_as("SELECT version FROM schema_migrations")
                .fetch_all(&mut **tx)
                .await
                .map_err(|e| fail(0, "schema_migrations", &e))?;
            let known = $list.iter().map(|m| m.0).max().unwrap_or(0);
            if let Some((newer,)) = applied.iter().find(|(v,)| *v > known) {
                return Err(StoreError::Migrate {
                    kind,
                    version: *newer,
                    name: "unknown",
                    reason: format!(
                        "the database was migrated by a newer tool-broker (version {newer}; this one knows up to {known}); run the newer binary"
                    ),
                });
            }
            for (version, name, sql) in $list.iter() {
                if applied.iter().any(|(v,)| v == version) {
                    continue;
                }
                sqlx::raw_sql(*sql)
                    .execute(&mut **tx)
                    .await
                    .map_err(|e| fail(*version, name, &e))?;
                sqlx::query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)")
                    .bind(*version)
                    .bind(*name)
                    .bind(&now)
                    .execute(&mut **tx)
                    .await
                    .map_err(|e| fail(*version, name, &e))?;
                tracing::info!(store = kind, version, name, "store migrated");
            }
        }};
    }
    match &store.backend {
        Backend::Sqlite(pool) => {
            let mut tx = pool
                .begin_with("BEGIN IMMEDIATE")
                .await
                .map_err(|e| fail(0, "lock", &e))?;
            apply!(tx, migrations(SQLITE_INITIAL, SQLITE_OWN));
            tx.commit().await.map_err(|e| fail(0, "commit", &e))?;
        }
        Backend::Postgres(pool) => {
            let mut tx = pool.begin().await.map_err(|e| fail(0, "lock", &e))?;
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(PG_LOCK)
                .execute(&mut *tx)
                .await
                .map_err(|e| fail(0, "lock", &e))?;
            apply!(tx, migrations(POSTGRES_INITIAL, POSTGRES_OWN));
            tx.commit().await.map_err(|e| fail(0, "commit", &e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_backends_know_the_same_versions() {
        let names = |list: &[Migration]| list.iter().map(|m| (m.0, m.1)).collect::<Vec<_>>();
        let (sqlite, postgres) = (
            migrations(SQLITE_INITIAL, SQLITE_OWN),
            migrations(POSTGRES_INITIAL, POSTGRES_OWN),
        );
        assert_eq!(names(&sqlite), names(&postgres));
        for list in [&sqlite, &postgres] {
            for (i, m) in list.iter().enumerate() {
                assert_eq!(m.0, i as i64 + 1, "versions are 1, 2, 3, ... in order");
            }
        }
    }
}
