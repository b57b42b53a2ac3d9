//! Which budgets bind a caller, and what each holds now (docs/budgets.md): read by the
//! call driver (reservations, previews) and by `portal.get_budget`.

use crate::answer::envelope::Room;
use crate::caller::Caller;
use crate::config::budgets::{Binds, Budget};

use super::Parts;

/// A budget binding one call: whom it counts and its window now.
#[derive(Debug)]
pub struct Binding<'b> {
    /// The budget.
    pub budget: &'b Budget,
    /// Who is counted: `user:<issuer>#<subject>`, `key:<name>` or `role:<role>`.
    pub scope: String,
    /// The window holding now: its start and when it resets (ms since the epoch).
    pub window: (i64, i64),
}

/// Who a caller is counted as on its own: `user:<issuer>#<subject>` or
/// `key:<name>`.
pub fn own_scope(caller: &Caller) -> String {
    match &caller.user {
        Some(u) => format!("user:{}#{}", u.issuer, u.subject),
        None => format!("key:{}", caller.name),
    }
}

/// The budgets binding `caller` (in `unit`, or in any unit), in the config's order.
pub fn binding<'b>(
    budgets: &'b [Budget],
    caller: &Caller,
    unit: Option<&str>,
    now_ms: i64,
) -> Vec<Binding<'b>> {
    let user = caller
        .user
        .as_ref()
        .map(|u| format!("{}#{}", u.issuer, u.subject));
    budgets
        .iter()
        .filter(|b| unit.is_none_or(|u| b.unit == u))
        .filter_map(|budget| {
            let own = || own_scope(caller);
            let scope = match &budget.binds {
                Binds::EachUser => user.is_some().then(own),
                Binds::EachKey => user.is_none().then(own),
                Binds::Role { role, shared } => caller.roles.iter().any(|r| r == role).then(|| {
                    if *shared {
                        format!("role:{role}")
                    } else {
                        own()
                    }
                }),
                Binds::User(id) => (user.as_deref() == Some(id.as_str())).then(own),
                Binds::Key(name) => (user.is_none() && caller.name == *name).then(own),
            }?;
            Some(Binding {
                budget,
                scope,
                window: budget.window.around(now_ms),
            })
        })
        .collect()
}

/// RFC 3339 of ms since the epoch.
pub fn rfc3339(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(|_| ms.to_string(), |t| t.to_string())
}

/// What each budget binding `caller` (in `unit`, or all) holds now and, given a
/// call's estimate, would hold after it. A budget the store cannot read is left out
/// (logged).
pub async fn standing(
    parts: &Parts,
    caller: &Caller,
    unit: Option<&str>,
    estimate: Option<u64>,
) -> Vec<Room> {
    let now_ms = parts.now().as_millisecond();
    let mut rooms = Vec::new();
    for bound in binding(&parts.budgets, caller, unit, now_ms) {
        let used = match parts
            .store
            .budget_used(&bound.budget.name, &bound.scope, bound.window.0)
            .await
        {
            Ok(used) => used,
            Err(e) => {
                tracing::error!(error = %e, budget = %bound.budget.name, "budget not read");
                continue;
            }
        };
        let remaining = bound.budget.limit.saturating_sub(used);
        let after = remaining.checked_sub(estimate.unwrap_or(0));
        rooms.push(Room {
            name: bound.budget.name.clone(),
            unit: bound.budget.unit.clone(),
            limit: bound.budget.limit,
            used,
            remaining,
            would_remain: after.unwrap_or(0),
            fits: after.is_some(),
            resets_at: rfc3339(bound.window.1),
        });
    }
    rooms
}

/// Budgets as `portal.get_budget` and `GET /hub/budget` answer them: name, unit, limit,
/// used, remaining, resetsAt.
pub fn as_json(rooms: &[Room]) -> Vec<serde_json::Value> {
    rooms
        .iter()
        .map(|r| {
            serde_json::json!({
                "name": r.name,
                "unit": r.unit,
                "limit": r.limit,
                "used": r.used,
                "remaining": r.remaining,
                "resetsAt": r.resets_at,
            })
        })
        .collect()
}
