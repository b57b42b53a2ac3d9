//! The policy stage of a call (docs/policy.md): after the key or role fields allowed the
//! tool and before anything is confirmed or sent, Cedar decides the call on its
//! validated arguments. A tool run inside another (`portal.call_read_tool`, a hook's
//! step) is decided too, under the same set.

use serde_json::{Map, Value, json};

use super::Broker;
use crate::caller::Principal;
use crate::catalog::Tool;
use crate::config::WriteConfirmation;
use crate::confirm::flag::{Decision as Flagged, decide};
use crate::error::{CallError, Classification};
use crate::policy::{Confirm, Decision, Policies, Unreadable};

impl Broker {
    /// The door's decision, allowed or not: the arguments validated (and replaced by
    /// their validated form, defaults applied), then decided. `Ok(None)` without
    /// `[policy]`.
    pub(super) fn door_policy(
        &self,
        policies: Option<&Policies>,
        tool: &Tool,
        principal: &Principal,
        arguments: &mut Option<Value>,
    ) -> Result<Option<Decision>, CallError> {
        let Some(policies) = policies else {
            return Ok(None);
        };
        let prepared = super::args::prepare(tool, arguments.take())?;
        let dry_run = matches!(
            decide(tool, &prepared, &self.catalog.rules.confirmation),
            Ok(Flagged::Preview(_))
        );
        let decision = self.decision(policies, tool, principal, &prepared, dry_run)?;
        *arguments = Some(Value::Object(prepared));
        Ok(Some(decision))
    }

    /// A tool run inside the door's (a portal read, a hook's step), decided on its
    /// validated arguments unless the door decided it already: refused unless allowed.
    pub(super) fn inner_policy(
        &self,
        tool: &Tool,
        ctx: &crate::run::RequestCtx<'_>,
        arguments: &Map<String, Value>,
        dry_run: bool,
    ) -> Result<(), CallError> {
        let Some(policies) = ctx.policies.as_deref() else {
            return Ok(());
        };
        if ctx.decided == Some(tool.full_name.as_str()) {
            return Ok(());
        }
        let decision = self.decision(policies, tool, ctx.principal, arguments, dry_run)?;
        if decision.allowed {
            Ok(())
        } else {
            Err(refusal(tool, &decision))
        }
    }

    fn decision(
        &self,
        policies: &Policies,
        tool: &Tool,
        principal: &Principal,
        arguments: &Map<String, Value>,
        dry_run: bool,
    ) -> Result<Decision, CallError> {
        let cost =
            self.costs
                .price(&self.catalog, tool)
                .and_then(|p| match p.estimate(arguments) {
                    Ok(crate::catalog::costs::Estimate::Units(n)) => Some((p.unit.as_str(), n)),
                    _ => None,
                });
        policies
            .decide(tool, principal, arguments, (dry_run, cost), self.now())
            .map_err(|Unreadable(pointer)| unreadable(tool, &pointer))
    }
}

/// The principal a permit's `@confirm` makes stricter, when it does: the mode can only
/// rise (flag < bound < human), never fall.
pub(super) fn raised(principal: &Principal, confirm: Option<Confirm>) -> Option<Principal> {
    let wanted = match confirm? {
        Confirm::Bound => WriteConfirmation::Bound,
        Confirm::Human => WriteConfirmation::Human,
    };
    raise_to(principal, wanted)
}

/// The principal with its confirmation mode raised to `wanted`, when that is stricter
/// than its own.
pub(super) fn raise_to(principal: &Principal, wanted: WriteConfirmation) -> Option<Principal> {
    let rank = |m: WriteConfirmation| match m {
        WriteConfirmation::Flag => 0,
        WriteConfirmation::Bound => 1,
        WriteConfirmation::Human => 2,
    };
    (rank(wanted) > rank(principal.confirmation)).then(|| Principal {
        confirmation: wanted,
        ..principal.clone()
    })
}

/// `forbidden` with `details.reason = "policy"` and the determining policies' ids; no
/// argument value.
pub(super) fn refusal(tool: &Tool, decision: &Decision) -> CallError {
    let message = match decision.policies.as_slice() {
        [] => format!(
            "no policy permits this call of `{}`; ask the broker's operator which policy should",
            tool.full_name
        ),
        [one] => format!("policy `{one}` forbids this call of `{}`", tool.full_name),
        many => format!(
            "policies {} forbid this call of `{}`",
            many.iter()
                .map(|id| format!("`{id}`"))
                .collect::<Vec<_>>()
                .join(", "),
            tool.full_name
        ),
    };
    CallError::new(Classification::Forbidden, message)
        .with_details(json!({ "reason": "policy", "policies": decision.policies }))
}

/// An argument whose value policies cannot read (an integer beyond 64 bits): the call
/// is refused rather than decided as if the argument were absent.
fn unreadable(tool: &Tool, pointer: &str) -> CallError {
    CallError::validation(format!(
        "an argument of `{}` is outside what this deployment's policies can read (a whole number beyond 64 bits); see `details`",
        tool.full_name
    ))
    .with_details(json!([{ "pointer": pointer, "message": "outside the range policies read" }]))
}
