//! `sessions revoke` and `sessions list`: the signed-in sessions of the hub and the
//! approval page, read and ended in the store every replica shares.

use super::args::{SessionsCommand, StoreArgs};
use super::output::{on_runtime, write_stderr};

/// Runs a `sessions` command on its own runtime; returns what it prints.
pub fn sessions(command: SessionsCommand, store: &StoreArgs) -> Result<String, String> {
    on_runtime(run(command, store))
}

async fn run(command: SessionsCommand, store: &StoreArgs) -> Result<String, String> {
    use std::fmt::Write as _;
    let store = crate::store::Store::open(&store.config()?)
        .await
        .map_err(|e| e.to_string())?;
    match command {
        SessionsCommand::Revoke { user } => {
            if user.trim().is_empty() {
                return Err(
                    "--user is empty: name a user (`<issuer>#<subject>`) or an approver".into(),
                );
            }
            write_stderr(&format!(
                "tool-broker: ending the sessions of `{user}` in {}",
                store.location()
            ));
            let ended = store
                .end_sessions_of(&user)
                .await
                .map_err(|e| e.to_string())?;
            tracing::info!(user = %user, ended, "sessions revoked by an operator");
            Ok(format!("ended {ended} session(s) of {user}\n"))
        }
        SessionsCommand::List { limit } => {
            let now = jiff::Timestamp::now();
            let rows = store
                .list_sessions(now.as_millisecond(), limit)
                .await
                .map_err(|e| e.to_string())?;
            let mut out = String::new();
            let at = |ms: i64| {
                jiff::Timestamp::from_millisecond(ms)
                    .map(|t| t.to_string())
                    .unwrap_or_default()
            };
            for r in &rows {
                let _ = writeln!(
                    out,
                    "{:<9} {:<50} started {} last used {}",
                    r.kind,
                    r.caller,
                    at(r.created_ms),
                    at(r.seen_ms)
                );
            }
            let _ = writeln!(out, "{} session(s)", rows.len());
            Ok(out)
        }
    }
}
