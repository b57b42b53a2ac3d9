//! Budgets on the call path (docs/budgets.md): which budgets bind a call, the
//! reservation made right before its request goes upstream, the settlement after, what
//! a preview shows of each, and whether a call is big enough to need confirmation.
//!
//! A call is charged where its request is sent: a tool that runs others (a hook that
//! submits and polls, a wrapper that dispatches) is charged for the priced requests it
//! sends, never twice for itself.
//!
//! After the call: an answer settles the reservation to the actual cost (what the
//! answer said, else the estimate); an upstream refusal (any 4xx or 5xx answer) or an
//! error before the request went out releases it; a timeout keeps the estimate, since
//! the upstream may have done the work.

use serde_json::json;

use super::Broker;
use super::price::{Priced, Pricing, releases};
use crate::caller::Caller;
use crate::catalog::Tool;
use crate::catalog::costs::Estimate;
use crate::error::{CallError, Classification};
use crate::run::budgets::{Binding, binding, rfc3339};
use crate::run::{Exec, RequestCtx};
use crate::store::budgets::{Charge, Reserved};

/// How long the spending history (`budget list`, the charges behind each window's
/// total) is kept, in days.
pub(super) const HISTORY_DAYS: i64 = 90;
/// How often a replica prunes that history (at most).
const PRUNE_EVERY_MS: i64 = 10 * 60 * 1000;
/// When this process last pruned.
static PRUNED: crate::store::Every = crate::store::Every::new();

/// What a call reserved: released or settled once it is over.
#[derive(Debug)]
pub(super) struct Hold {
    id: String,
    unit: String,
    estimate: u64,
}

/// `budget_exceeded`: which budget, what it holds, what the call costs, when it resets.
fn exceeded(tool: &Tool, bound: &Binding<'_>, used: u64, cost: Option<u64>) -> CallError {
    let b = bound.budget;
    let resets_at = rfc3339(bound.window.1);
    let message = match cost {
        Some(cost) => format!(
            "budget `{}` has {} of {} {} left until {resets_at}; this call of `{}` costs {cost}: nothing was sent",
            b.name,
            b.limit.saturating_sub(used),
            b.limit,
            b.unit,
            tool.full_name
        ),
        None => format!(
            "this call of `{}` cannot be priced in {} (an argument its price reads is absent or in another currency), and budget `{}` counts {}: nothing was sent",
            tool.full_name, b.unit, b.name, b.unit
        ),
    };
    CallError::new(Classification::BudgetExceeded, message).with_details(json!({
        "budget": b.name,
        "unit": b.unit,
        "limit": b.limit,
        "used": used,
        "cost": cost,
        "resetsAt": resets_at,
    }))
}

impl Broker {
    /// Phase 6's reservation: reserves a priced call's estimate under every budget that binds its caller, or
    /// refuses it (`budget_exceeded`) when one has no room or cannot price it. `None`:
    /// no budget binds the call. Called only for a priced call when budgets exist
    /// (boxed there, so an unpriced call's future does not carry this one).
    pub(super) async fn reserve(
        &self,
        tool: &Tool,
        pricing: Pricing<'_>,
        ctx: &RequestCtx<'_>,
        idempotency: Option<&str>,
    ) -> Result<Option<Hold>, CallError> {
        let Pricing { price, estimate } = pricing;
        let now_ms = self.parts.now().as_millisecond();
        let bound = binding(&self.parts.budgets, ctx.caller, Some(&price.unit), now_ms);
        let Some(first) = bound.first() else {
            return Ok(None);
        };
        let Estimate::Units(cost) = estimate else {
            self.parts.metrics.record_budget_refusal(&first.budget.name);
            return Err(exceeded(tool, first, 0, None));
        };
        let id = hold_id(tool, ctx, idempotency);
        let charges: Vec<Charge<'_>> = bound
            .iter()
            .map(|b| Charge {
                budget: &b.budget.name,
                scope: &b.scope,
                window_ms: b.window.0,
                limit: b.budget.limit,
                unit: &b.budget.unit,
            })
            .collect();
        match self
            .parts
            .store
            .reserve_budgets(&id, &charges, cost, &tool.full_name, now_ms)
            .await
        {
            Ok(Reserved::Held) => {
                self.prune_now_and_then(now_ms).await;
                Ok(Some(Hold {
                    id,
                    unit: price.unit.clone(),
                    estimate: cost,
                }))
            }
            Ok(Reserved::Over { index, used }) => {
                let over = &bound[index.min(bound.len() - 1)];
                self.parts.metrics.record_budget_refusal(&over.budget.name);
                tracing::info!(tool = %tool.full_name, budget = %over.budget.name, cost, used, "budget exceeded; nothing sent");
                Err(exceeded(tool, over, used, Some(cost)))
            }
            Err(e) => {
                tracing::error!(error = %e, tool = %tool.full_name, "budget not reserved; the call is refused");
                let mut err = CallError::new(
                    Classification::RateLimited,
                    format!(
                        "`{}` is charged to budget `{}` and the broker cannot check it right now; nothing was sent; retry shortly",
                        tool.full_name, first.budget.name
                    ),
                );
                err.retry_after_seconds = Some(5);
                Err(err)
            }
        }
    }

    /// Keeps the spending history to [`HISTORY_DAYS`]: at most every ten minutes per
    /// process, on the way to a reservation. A failure is logged and changes nothing
    /// else.
    async fn prune_now_and_then(&self, now_ms: i64) {
        if !PRUNED.due(now_ms, PRUNE_EVERY_MS) {
            return;
        }
        let before = now_ms - HISTORY_DAYS * 24 * 3_600_000;
        match self.parts.store.prune_budgets(before).await {
            Ok(n) if n > 0 => tracing::info!(pruned = n, "budget history pruned"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "budget history not pruned"),
        }
    }

    /// Phase 10 for a request's reservation: settles or releases what it reserved, by how it ended, and counts what was
    /// spent. A store that fails is logged: the call's answer stands.
    ///
    /// A release is awaited (a caller retrying at once finds the room given back). A
    /// settlement to another figure than the estimate is made off the call's path: the
    /// answer does not wait for it, so a priced call pays one store round trip, the
    /// reservation. Until it lands (a round trip later) the window counts the
    /// estimate; if the broker stops first, the estimate stands, as for a call still
    /// upstream.
    pub(super) async fn settle(&self, tool: &Tool, hold: Hold, result: &Result<Exec, CallError>) {
        let spent = match result {
            Ok(exec) => Some(
                exec.cost
                    .as_ref()
                    .and_then(|c| c.actual)
                    .unwrap_or(hold.estimate),
            ),
            Err(e) if releases(e) => None,
            Err(_) => Some(hold.estimate),
        };
        let Some(units) = spent else {
            if let Err(e) = self
                .parts
                .store
                .release_budgets(&hold.id, hold.estimate)
                .await
            {
                tracing::error!(error = %e, tool = %tool.full_name, "budget not released; the reservation stands at its estimate");
            }
            return;
        };
        self.parts
            .metrics
            .record_spent(&hold.unit, &tool.service, units);
        // The estimate stands: the reservation already says so (no round trip).
        if units == hold.estimate {
            return;
        }
        let (store, name) = (self.parts.store.clone(), tool.full_name.clone());
        tokio::spawn(async move {
            if let Err(e) = store.settle_budgets(&hold.id, hold.estimate, units).await {
                tracing::error!(error = %e, tool = %name, "budget not settled; the reservation stands at its estimate");
            }
        });
    }

    /// Whether a call costs more than the `confirm_over` of a budget binding its
    /// caller (so a person, or a bound token, must confirm it).
    pub(super) fn over_confirm_limit(&self, caller: &Caller, priced: Priced<'_>) -> bool {
        let Some((unit, cost)) = priced.units() else {
            return false;
        };
        if self.parts.budgets.iter().all(|b| b.confirm_over.is_none()) {
            return false;
        }
        binding(&self.parts.budgets, caller, Some(unit), 0)
            .iter()
            .any(|b| b.budget.confirm_over.is_some_and(|over| cost > over))
    }
}

/// The id a request's reservation is kept under: derived from the idempotency key it
/// carries when it holds one (a retry finds its own reservation and is not charged
/// again), else random.
fn hold_id(tool: &Tool, ctx: &RequestCtx<'_>, idempotency: Option<&str>) -> String {
    if let Some(key) = idempotency {
        let text = format!("{}\u{0}{key}", tool.full_name);
        return crate::catalog::identity::sha256_hex(text.as_bytes());
    }
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: the trace id and the clock still tell calls apart.
        return format!(
            "{}-{}",
            ctx.trace.id,
            jiff::Timestamp::now().as_nanosecond()
        );
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
