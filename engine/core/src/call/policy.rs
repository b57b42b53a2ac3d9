//! Phase 4, decide (docs/policy.md): after the key or role fields allowed the tool and
//! its arguments were validated and priced, and before anything is confirmed or sent,
//! Cedar decides the call on those arguments. A tool run inside another
//! (`portal.call_read_tool`, a hook's step, the endpoint an allowlisted request
//! matches) is decided too, under the same set.

use serde_json::{Map, Value, json};

use super::Broker;
use super::price::Priced;
use super::resolve::Call;
use crate::caller::Caller;
use crate::catalog::Tool;
use crate::catalog::guards::{LooksAt, Set};
use crate::config::WriteConfirmation;
use crate::confirm::flag::{Verdict as Flagged, decide};
use crate::error::{CallError, Classification};
use crate::policy::{Confirm, Decision, Policies, Unreadable};

/// What a decision reads of a call beyond its tool, caller and arguments.
#[derive(Clone, Copy)]
struct Asks<'p> {
    /// Whether the call would answer a preview (`context.dryRun`).
    dry_run: bool,
    /// Its price (`context.cost`).
    priced: Priced<'p>,
    /// The guard rules that fired on its arguments (`context.guards`).
    guards: Set,
}

/// A tool's call the policy stage let through (allowed, or no `[policy]`), with its
/// price: what the gate takes to clear a request of that tool (decision 017). Made only
/// here: by the door once its decision allowed the call ([`Decided::door`]), and by
/// [`Broker::inner_policy`] for a tool run inside another.
#[derive(Clone)]
pub(super) struct Decided<'p> {
    priced: Priced<'p>,
    /// The policies that allowed a tool run inside another (its audit record's).
    policies: Option<std::sync::Arc<[String]>>,
}

impl<'p> Decided<'p> {
    /// The door's call, which [`Broker::door_policy`] allowed (the door's audit record
    /// names its policies).
    pub(super) fn door(priced: Priced<'p>) -> Self {
        Self {
            priced,
            policies: None,
        }
    }

    /// The call's price and estimate.
    pub(super) fn priced(&self) -> Priced<'p> {
        self.priced
    }

    /// The policies that allowed it, for an inner write's audit record.
    pub(super) fn into_policies(self) -> Option<std::sync::Arc<[String]>> {
        self.policies
    }
}

impl Broker {
    /// Phase 4 at the door: the decision on the call's validated, priced arguments,
    /// allowed or not, under the set the call started with. `Ok(None)` without
    /// `[policy]`.
    pub(super) fn door_policy(
        &self,
        call: &Call<'_>,
        args: &Map<String, Value>,
        priced: Priced<'_>,
    ) -> Result<Option<Decision>, CallError> {
        self.decide_door(
            call.policies.as_deref(),
            call.tool,
            call.caller,
            args,
            priced,
            call.guards.on(LooksAt::Arguments),
        )
    }

    /// The door's decision under `policies`: a call the flags would answer with a
    /// preview is decided as a dry run.
    fn decide_door(
        &self,
        policies: Option<&Policies>,
        tool: &Tool,
        caller: &Caller,
        args: &Map<String, Value>,
        priced: Priced<'_>,
        guards: Set,
    ) -> Result<Option<Decision>, CallError> {
        let Some(policies) = policies else {
            return Ok(None);
        };
        let dry_run = matches!(
            decide(tool, args, &self.parts.catalog.rules.confirmation),
            Ok(Flagged::Preview(_))
        );
        let asks = Asks {
            dry_run,
            priced,
            guards,
        };
        self.decision(policies, tool, caller, args, asks).map(Some)
    }

    /// Whether the door would let a call of `tool` with `arguments` reach its run: the
    /// key or role fields, the arguments against the schema and the price, and the
    /// policies. A call that would be refused is not kept as an MCP task: it is
    /// answered at once with its refusal, and nothing is stored for it.
    pub fn admits(&self, tool: &Tool, caller: &Caller, arguments: Option<&Value>) -> bool {
        let mut arguments = arguments.cloned();
        let acted = crate::catalog::guards::Acted::default();
        caller.check(tool).is_ok()
            && self
                .guard_arguments(tool, &mut arguments, Some(&acted))
                .is_ok()
            && self
                .validate_and_price(tool, arguments)
                .is_ok_and(|(args, priced)| {
                    let policies = self.parts.policy_set();
                    let guards = acted.on(LooksAt::Arguments);
                    self.decide_door(policies.as_deref(), tool, caller, &args, priced, guards)
                        .is_ok_and(|d| d.is_none_or(|d| d.allowed))
                })
    }

    /// Phase 4 for a tool run inside the door's (a portal read, a hook's step, the
    /// endpoint an allowlisted request matches), decided on its validated arguments:
    /// refused unless allowed.
    pub(super) fn inner_policy<'p>(
        &self,
        tool: &Tool,
        ctx: &crate::run::RequestCtx<'_>,
        args: &Map<String, Value>,
        dry_run: bool,
        priced: Priced<'p>,
        guards: Set,
    ) -> Result<Decided<'p>, CallError> {
        let Some(policies) = ctx.policies.as_deref() else {
            return Ok(Decided {
                priced,
                policies: None,
            });
        };
        let asks = Asks {
            dry_run,
            priced,
            guards,
        };
        let decision = self.decision(policies, tool, ctx.caller, args, asks)?;
        if decision.allowed {
            Ok(Decided {
                priced,
                policies: Some(decision.policies),
            })
        } else {
            Err(refusal(tool, &decision))
        }
    }

    fn decision(
        &self,
        policies: &Policies,
        tool: &Tool,
        caller: &Caller,
        args: &Map<String, Value>,
        asks: Asks<'_>,
    ) -> Result<Decision, CallError> {
        let cost = asks.priced.units().map(|(unit, n)| (unit.as_str(), n));
        let guards = if asks.guards.is_empty() {
            Vec::new()
        } else {
            self.parts.guards.guards.ids(asks.guards)
        };
        let facts = crate::policy::Facts {
            dry_run: asks.dry_run,
            cost,
            guards: &guards,
        };
        policies
            .decide(tool, caller, args, facts, || self.parts.now())
            .map_err(|Unreadable(pointer)| unreadable(tool, &pointer))
    }
}

/// The caller a permit's `@confirm` makes stricter, when it does: the mode can only
/// rise (flag < bound < human), never fall.
pub(super) fn raised(caller: &Caller, confirm: Option<Confirm>) -> Option<Caller> {
    let wanted = match confirm? {
        Confirm::Bound => WriteConfirmation::Bound,
        Confirm::Human => WriteConfirmation::Human,
    };
    (wanted > caller.confirmation).then(|| Caller {
        confirmation: wanted,
        ..caller.clone()
    })
}

/// `forbidden` with `details.reason = "policy"` and the determining policies' ids; no
/// argument value.
pub(super) fn refusal(tool: &Tool, decision: &Decision) -> CallError {
    let message = match &decision.policies[..] {
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
