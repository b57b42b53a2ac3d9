//! The durable store: what the broker learns outlives one process (decision
//! 009). One interface, two backends that pass one test suite:
//!
//! - **SQLite**, embedded (bundled with the binary), the default: one file under the
//!   data folder (`--data-dir`, default `./data`), created and migrated at start. One
//!   connection per process, WAL journal, so `serve` needs nothing installed. For one
//!   replica: two processes on one file are serialised by SQLite's lock, not shared
//!   state a load balancer can spread over.
//! - **PostgreSQL** (`--database-url postgres://...` or `TOOL_BROKER_DATABASE_URL`): any
//!   number of replicas share it. Limits are counted under a transaction-scoped
//!   advisory lock, so they hold across replicas.
//!
//! Versioned migrations (`migrations/<backend>/NNNN_name.sql`) are embedded in the
//! binary and applied at start under a lock ([`migrate`]), so two replicas starting at
//! once both come up. Keys, bearer tokens and argument values are never stored: jobs
//! are owned by a fingerprint, the audit keeps a sha256 of the canonical arguments.
//!
//! The read path does no store I/O: a proxied read touches the store only when its tool
//! records a job or has a rate limit.
//!
//! May import: the catalog and [`crate::error`]; every stage that keeps state imports it.

pub mod approvals;
pub mod audit;
pub mod audit_query;
pub mod budgets;
pub mod confirmation;
pub mod hub_connections;
pub mod hub_keys;
pub mod idempotency;
pub mod jobs;
pub mod migrate;
pub mod ratelimit;
pub mod sessions;
pub mod tasks;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

/// File name of the SQLite store inside the data folder.
pub const SQLITE_FILE: &str = "tool-broker.sqlite3";

/// Why the store could not be used. Messages never carry a URL or a password: they
/// name the backend and what failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The data folder or the database could not be opened.
    #[error("cannot open the {kind} store: {reason}")]
    Open {
        /// `sqlite` or `postgres`.
        kind: &'static str,
        /// What failed (no secret).
        reason: String,
    },
    /// A migration failed.
    #[error("cannot migrate the {kind} store at migration {version} ({name}): {reason}")]
    Migrate {
        /// `sqlite` or `postgres`.
        kind: &'static str,
        /// Migration version.
        version: i64,
        /// Migration name.
        name: &'static str,
        /// What failed.
        reason: String,
    },
    /// A query failed.
    #[error("the {kind} store failed to {action}: {reason}")]
    Query {
        /// `sqlite` or `postgres`.
        kind: &'static str,
        /// What the broker was doing.
        action: &'static str,
        /// What failed.
        reason: String,
    },
}

/// Which store a deployment uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreConfig {
    /// SQLite in this folder (created when absent).
    Sqlite(PathBuf),
    /// SQLite in memory: one process, gone at exit (tests, and `Broker::new` until a
    /// real store is given).
    Memory,
    /// PostgreSQL at this URL; `schema` (created when absent) isolates test runs.
    Postgres {
        /// `postgres://...`.
        url: String,
        /// A schema to use instead of the URL's default search path.
        schema: Option<String>,
    },
}

impl StoreConfig {
    /// The store `serve` and `audit` use: `--database-url` / `TOOL_BROKER_DATABASE_URL`
    /// when given (it must be `postgres://` or `postgresql://`), else SQLite under the
    /// data folder.
    pub fn choose(database_url: Option<String>, data_dir: &Path) -> Result<Self, String> {
        match database_url.filter(|u| !u.trim().is_empty()) {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(Self::Postgres { url, schema: None })
            }
            Some(_) => Err(
                "the database URL must start with postgres:// or postgresql:// (for SQLite, use --data-dir)"
                    .into(),
            ),
            None => Ok(Self::Sqlite(data_dir.to_path_buf())),
        }
    }
}

#[derive(Debug, Clone)]
enum Backend {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// The store: one pool, migrated.
#[derive(Debug, Clone)]
pub struct Store {
    backend: Backend,
    /// A safe description: `sqlite` with the file path, or `postgres` with the host and
    /// database, never a password.
    location: String,
}

/// Runs `$body` with `$pool` bound to the backend's pool; the SQL is the same for both
/// (`$1`-style parameters, numbered in order of first use, which SQLite also reads).
/// A per-process gate for housekeeping done on the way (pruning what expired): open at
/// most once per period, for one caller at a time.
pub struct Every(std::sync::atomic::AtomicI64);

impl Every {
    /// A gate that has never opened.
    pub const fn new() -> Self {
        Self(std::sync::atomic::AtomicI64::new(0))
    }

    /// Whether the housekeeping is due at `now_ms` (at most once per `period_ms`); the
    /// caller that gets `true` does it.
    pub fn due(&self, now_ms: i64, period_ms: i64) -> bool {
        use std::sync::atomic::Ordering;
        let last = self.0.load(Ordering::Relaxed);
        now_ms - last >= period_ms
            && self
                .0
                .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

impl Default for Every {
    fn default() -> Self {
        Self::new()
    }
}

macro_rules! on_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match &$store.backend {
            crate::store::Backend::Sqlite($pool) => $body,
            crate::store::Backend::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_pool;

impl Store {
    /// Opens (creating and migrating) a store.
    pub async fn open(config: &StoreConfig) -> Result<Self, StoreError> {
        let store = match config {
            StoreConfig::Sqlite(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
                    kind: "sqlite",
                    reason: format!("cannot create the data folder `{}`: {e}", dir.display()),
                })?;
                let file = dir.join(SQLITE_FILE);
                let options = SqliteConnectOptions::new()
                    .filename(&file)
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .busy_timeout(Duration::from_secs(5));
                Self::sqlite(options, format!("sqlite {}", file.display())).await?
            }
            StoreConfig::Memory => {
                let options = SqliteConnectOptions::from_str("sqlite::memory:").map_err(|e| {
                    StoreError::Open {
                        kind: "sqlite",
                        reason: e.to_string(),
                    }
                })?;
                Self::sqlite(options, "sqlite in memory".into()).await?
            }
            StoreConfig::Postgres { url, schema } => Self::postgres(url, schema.as_deref()).await?,
        };
        migrate::run(&store).await?;
        Ok(store)
    }

    /// A second handle on the store `main` opened from `config`, with connections of
    /// its own, for the operator's console: its reads never wait for a call's
    /// connection nor hold one. SQLite: two read-only connections to the file (WAL lets
    /// them read while the writer writes); PostgreSQL: a pool of two whose statements
    /// stop after 10 s. An in-memory store has no second handle: `main` itself.
    pub async fn open_reader(config: &StoreConfig, main: &Store) -> Result<Self, StoreError> {
        match config {
            StoreConfig::Memory => Ok(main.clone()),
            StoreConfig::Sqlite(dir) => {
                let file = dir.join(SQLITE_FILE);
                let options = SqliteConnectOptions::new()
                    .filename(&file)
                    .read_only(true)
                    .busy_timeout(Duration::from_secs(5));
                let pool = SqlitePoolOptions::new()
                    .max_connections(2)
                    .acquire_timeout(Duration::from_secs(10))
                    .connect_with(options)
                    .await
                    .map_err(|e| StoreError::Open {
                        kind: "sqlite",
                        reason: safe_reason(&e),
                    })?;
                Ok(Self {
                    backend: Backend::Sqlite(pool),
                    location: format!("{} (console reader)", main.location),
                })
            }
            StoreConfig::Postgres { url, schema } => {
                let mut settings = vec![("statement_timeout", "10000".to_string())];
                if let Some(schema) = schema {
                    settings.push(("search_path", schema.clone()));
                }
                let pool = pg_pool(pg_options(url)?.options(settings), 2).await?;
                Ok(Self {
                    backend: Backend::Postgres(pool),
                    location: format!("{} (console reader)", main.location),
                })
            }
        }
    }

    async fn sqlite(options: SqliteConnectOptions, location: String) -> Result<Self, StoreError> {
        // One connection: SQLite has one writer; an in-memory database lives as long as
        // its connection, so it is never closed.
        // Switching a new file to WAL takes an exclusive lock that SQLite's busy timeout
        // does not wait for: a process opening the file at the same moment as another
        // (two replicas, a CLI beside `serve`) is told "database is locked". Retried for
        // up to about 5 s; any other error at once.
        let mut attempt = 0;
        let pool = loop {
            let opened = SqlitePoolOptions::new()
                .min_connections(1)
                .max_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .acquire_timeout(Duration::from_secs(10))
                .connect_with(options.clone())
                .await;
            match opened {
                Ok(pool) => break pool,
                Err(sqlx::Error::Database(e))
                    if e.code().as_deref() == Some("5") && attempt < 50 =>
                {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => {
                    return Err(StoreError::Open {
                        kind: "sqlite",
                        reason: e.to_string(),
                    });
                }
            }
        };
        Ok(Self {
            backend: Backend::Sqlite(pool),
            location,
        })
    }

    async fn postgres(url: &str, schema: Option<&str>) -> Result<Self, StoreError> {
        let mut options = pg_options(url)?;
        let location = format!(
            "postgres {}:{}/{}",
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap_or("(default database)")
        );
        if let Some(schema) = schema {
            if !schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(StoreError::Open {
                    kind: "postgres",
                    reason: format!("schema `{schema}` must be letters, digits and `_`"),
                });
            }
            let admin = pg_pool(options.clone(), 1).await?;
            // Under the migration lock: two replicas creating it at once would collide.
            let mut tx = admin.begin().await.map_err(|e| pg_open(&e))?;
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(migrate::PG_LOCK)
                .execute(&mut *tx)
                .await
                .map_err(|e| pg_open(&e))?;
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "CREATE SCHEMA IF NOT EXISTS {schema}"
            )))
            .execute(&mut *tx)
            .await
            .map_err(|e| pg_open(&e))?;
            tx.commit().await.map_err(|e| pg_open(&e))?;
            admin.close().await;
            options = options.options([("search_path", schema)]);
        }
        let pool = pg_pool(options, 8).await?;
        Ok(Self {
            backend: Backend::Postgres(pool),
            location,
        })
    }

    /// `sqlite` or `postgres`.
    pub fn kind(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// Where the store is, safe to log (never a password).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Whether the store answers a trivial query now (readiness).
    pub async fn ping(&self) -> bool {
        on_pool!(self, pool => matches!(
            tokio::time::timeout(Duration::from_secs(2), sqlx::query("SELECT 1").execute(pool)).await,
            Ok(Ok(_))
        ))
    }

    /// Closes the pool: later operations fail (and `/readyz` says so). For shutdown.
    pub async fn close(&self) {
        on_pool!(self, pool => pool.close().await);
    }

    /// A query error, named by what the broker was doing.
    fn failed(&self, action: &'static str, e: &sqlx::Error) -> StoreError {
        StoreError::Query {
            kind: self.kind(),
            action,
            reason: safe_reason(e),
        }
    }
}

/// The text of an error without anything that could carry a connection string.
fn safe_reason(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(db) => db.message().to_string(),
        sqlx::Error::Configuration(_) => "the store configuration is invalid".into(),
        sqlx::Error::Io(io) => format!("I/O error: {}", io.kind()),
        sqlx::Error::Tls(_) => "TLS error".into(),
        sqlx::Error::PoolTimedOut => "no connection within 10 s".into(),
        sqlx::Error::PoolClosed => "the pool is closed".into(),
        other => other.to_string(),
    }
}

/// A PostgreSQL URL's connect options. The URL's text never reaches a message: sqlx's
/// parse errors can quote it.
fn pg_options(url: &str) -> Result<PgConnectOptions, StoreError> {
    PgConnectOptions::from_str(url).map_err(|_| StoreError::Open {
        kind: "postgres",
        reason:
            "the database URL does not parse; write postgres://user[:password]@host[:port]/database"
                .into(),
    })
}

/// A pool of at most `connections` that waits up to 10 s for one.
async fn pg_pool(options: PgConnectOptions, connections: u32) -> Result<PgPool, StoreError> {
    PgPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options)
        .await
        .map_err(|e| pg_open(&e))
}

fn pg_open(e: &sqlx::Error) -> StoreError {
    StoreError::Open {
        kind: "postgres",
        reason: safe_reason(e),
    }
}

/// Milliseconds since the Unix epoch.
pub fn millis(t: jiff::Timestamp) -> i64 {
    t.as_millisecond()
}
