//! `audit list`: the write audit read from the store, as text or JSON.

use super::args::{AuditCommand, Format, StoreArgs};
use super::output::{on_runtime, pretty, write_stderr};

/// Parses `--since`: RFC 3339, or an age before `now` (`24h`, `7d`, `30m`).
pub fn parse_since(text: &str, now: jiff::Timestamp) -> Result<jiff::Timestamp, String> {
    crate::console::audit::parse_time(text, now).map_err(|e| format!("--since {e}"))
}

/// Runs an `audit` command on its own runtime; returns what it prints.
pub fn audit(command: AuditCommand, store: &StoreArgs) -> Result<String, String> {
    on_runtime(audit_list(command, store))
}

/// `audit list`: reads the store and formats the records.
pub async fn audit_list(command: AuditCommand, store: &StoreArgs) -> Result<String, String> {
    use std::fmt::Write as _;
    let AuditCommand::List {
        since,
        tool,
        limit,
        format,
    } = command;
    let since = since
        .map(|s| parse_since(&s, jiff::Timestamp::now()))
        .transpose()?;
    let config = store.config()?;
    let store = crate::store::Store::open(&config)
        .await
        .map_err(|e| e.to_string())?;
    write_stderr(&format!(
        "tool-broker: reading the write audit in {}",
        store.location()
    ));
    let records = store
        .list_audit(&crate::store::audit::AuditQuery { since, tool, limit })
        .await
        .map_err(|e| e.to_string())?;
    let mut out = String::new();
    match format {
        Format::Json => {
            pretty(&mut out, &records);
        }
        Format::Text => {
            for r in &records {
                let _ = writeln!(
                    out,
                    "{:>6} {} {:<12} {:<5} {:<22} {} {} {} args:{} {}ms {}{}{}",
                    r.seq,
                    r.at,
                    r.outcome.as_str(),
                    r.confirmation.as_deref().unwrap_or("-"),
                    r.classification,
                    r.upstream_status.map_or("-".to_string(), |s| s.to_string()),
                    r.key_name,
                    r.tool,
                    r.args_sha256.get(..16).unwrap_or_default(),
                    r.duration_ms,
                    r.trace_id,
                    // With [policy]: the policies that decided it.
                    r.policies
                        .as_ref()
                        .map(|p| format!(" policies:{}", p.join(",")))
                        .unwrap_or_default(),
                    // A priced write: what it was charged.
                    r.cost
                        .iter()
                        .flatten()
                        .map(|(unit, n)| format!(" cost:{n} {unit}"))
                        .collect::<String>()
                );
            }
            let _ = writeln!(out, "{} records", records.len());
        }
    }
    Ok(out)
}
