//! Phase 3's price: what a call's arguments make of its tool's price (docs/budgets.md),
//! worked out once per tool run, refused when the call holds more items than the price
//! allows; and `meta.cost` once the call is over, by what it was charged.

use serde_json::{Map, Value, json};

use super::Broker;
use crate::answer::envelope::Cost;
use crate::catalog::Tool;
use crate::catalog::costs::{Estimate, Price, Reading, TooMany};
use crate::error::{CallError, Classification};
use crate::run::Exec;

impl Broker {
    /// A call's estimated cost by its tool's price, if it has one; a call with more
    /// items than its price allows is refused before anything is sent.
    pub(super) fn estimate<'p>(
        &'p self,
        tool: &Tool,
        args: &Map<String, Value>,
    ) -> Result<Priced<'p>, CallError> {
        let Some(price) = self.parts.costs.price(&self.parts.catalog, tool) else {
            return Ok(Priced(None));
        };
        match price.estimate(args) {
            Ok(estimate) => Ok(Priced(Some(Pricing { price, estimate }))),
            Err(TooMany { pointer, max }) => Err(CallError::validation(format!(
                "`{}` takes at most {max} items in `{pointer}` a call; split the call",
                tool.full_name
            ))
            .with_details(json!([{ "pointer": pointer, "keyword": "maxItems", "message": format!("at most {max} items a call") }]))),
        }
    }
}

/// Whether what reserved a call's budgets is given back: nothing was sent, or the
/// upstream refused the call (any 4xx or 5xx answer). A timeout keeps it.
pub(super) fn releases(err: &CallError) -> bool {
    match err.upstream_status {
        Some(status) => (400..600).contains(&status),
        None => err.classification != Classification::UpstreamTimeout,
    }
}

/// A priced call's price and estimate.
#[derive(Clone, Copy)]
pub(super) struct Pricing<'p> {
    /// The tool's price.
    pub(super) price: &'p Price,
    /// What the call's arguments make of it.
    pub(super) estimate: Estimate,
}

/// A call's price and estimate, when its tool has one: worked out once per tool run.
#[derive(Clone, Copy)]
pub(super) struct Priced<'p>(pub(super) Option<Pricing<'p>>);

impl<'p> Priced<'p> {
    /// The unit and units of a priced estimate (`None`: unpriced, or not priceable).
    pub(super) fn units(self) -> Option<(&'p String, u64)> {
        let p = self.0?;
        Some((&p.price.unit, p.estimate.units()?))
    }

    /// `meta.cost` with the estimate and what the call was charged (`None`: nothing
    /// settled, as for a preview); `None` for an unpriced tool.
    fn cost(self, actual: impl FnOnce(Option<u64>) -> Option<u64>) -> Option<Box<Cost>> {
        let p = self.0?;
        let estimate = p.estimate.units();
        Some(Box::new(Cost {
            unit: p.price.unit.as_str().into(),
            estimate,
            actual: actual(estimate),
            budgets: Vec::new(),
        }))
    }

    /// `exec` with its `meta.cost`: the estimate and, unless it was a preview, what the
    /// call is charged (what the answer said of it, or the estimate).
    pub(super) fn charge(self, mut exec: Exec) -> Exec {
        if self.0.is_none() {
            return exec;
        }
        let reading = exec.cost_reading.take().unwrap_or(Reading::Estimate);
        let dry_run = exec.dry_run;
        exec.cost = self.cost(|estimate| match (dry_run, estimate, reading) {
            (true, ..) => None,
            (false, Some(n), reading) => Some(reading.apply(n)),
            (false, None, Reading::Figure(n)) => Some(n),
            (false, None, Reading::Nothing) => Some(0),
            (false, None, Reading::Estimate) => None,
        });
        exec
    }

    /// `meta.cost` of a call that failed: its estimate, and what it was charged:
    /// nothing when nothing was sent or the upstream refused it (the reservation was
    /// released), the estimate when no answer came in time (kept).
    pub(super) fn failed(self, err: &CallError) -> Option<Box<Cost>> {
        let released = releases(err);
        self.cost(|estimate| if released { Some(0) } else { estimate })
    }
}
