//! `budget list`: what each budget has spent, per caller and window, read from the
//! store every replica shares (docs/budgets.md).

use super::args::{BudgetCommand, Format, StoreArgs};
use super::audit::parse_since;
use super::output::{on_runtime, pretty, write_stderr};
use crate::run::budgets::rfc3339;

/// Runs a `budget` command on its own runtime; returns what it prints.
pub fn budget(command: BudgetCommand, store: &StoreArgs) -> Result<String, String> {
    on_runtime(run(command, store))
}

async fn run(command: BudgetCommand, store: &StoreArgs) -> Result<String, String> {
    use std::fmt::Write as _;
    let BudgetCommand::List { since, format } = command;
    let since_ms = since
        .map(|s| parse_since(&s, jiff::Timestamp::now()))
        .transpose()?
        .map_or(0, |t| t.as_millisecond());
    let store = crate::store::Store::open(&store.config()?)
        .await
        .map_err(|e| e.to_string())?;
    write_stderr(&format!(
        "tool-broker: reading budget spending in {}",
        store.location()
    ));
    let rows = store
        .budget_spending(since_ms)
        .await
        .map_err(|e| e.to_string())?;
    let mut out = String::new();
    match format {
        Format::Json => {
            let rows: Vec<serde_json::Value> = rows
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "budget": r.budget,
                        "scope": r.scope,
                        "windowStart": rfc3339(r.window_ms),
                        "unit": r.unit,
                        "units": r.units,
                        "calls": r.calls,
                        "lastCharge": rfc3339(r.last_ms),
                    })
                })
                .collect();
            pretty(&mut out, &rows);
        }
        Format::Text => {
            for r in &rows {
                let _ = writeln!(
                    out,
                    "{:<24} {:<40} window {} {:>8} {:<10} {:>6} calls, last {}",
                    r.budget,
                    r.scope,
                    rfc3339(r.window_ms),
                    r.units,
                    r.unit,
                    r.calls,
                    rfc3339(r.last_ms)
                );
            }
            let _ = writeln!(out, "{} budget window(s)", rows.len());
        }
    }
    Ok(out)
}
