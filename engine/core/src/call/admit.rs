//! Phases 2 and 3, and the door's phase 4 (`policy.rs` decides): may the caller use the
//! tool (its key or role fields, the descriptor it pinned), then its arguments
//! validated against the schema (defaults in) and priced, once for the whole call.
//! What they found is an [`Admission`]: the call admitted with its arguments, or why it
//! stops, and what the audit and the span say of the decision either way.
//!
//! A tool run inside another goes through the same checks in [`Broker::execute`]
//! (`execute.rs`), with its own arguments, under the door's cover.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::Broker;
use super::policy::{self, Decided};
use super::price::Priced;
use super::resolve::Call;
use crate::caller::Caller;
use crate::catalog::Tool;
use crate::config::WriteConfirmation;
use crate::error::{CallError, Classification};
use crate::run::cover::Cover;

/// What phases 2 to 4 found for the door's tool.
pub(super) struct Admission<'p> {
    /// The call admitted, or why it stops here.
    pub(super) admitted: Result<Admitted<'p>, CallError>,
    /// What the audit and the span say of the door's decision.
    pub(super) ruling: Ruling,
    /// The call's price and estimate, once its arguments were priced.
    pub(super) priced: Option<Priced<'p>>,
    /// A task's copy of the arguments (a tool that answers a job at once watches it
    /// with them).
    pub(super) task_args: Option<Map<String, Value>>,
    /// The caller as a permitting policy's `@confirm` raised it (`None`: as it came).
    pub(super) raised: Option<Caller>,
}

/// A call admitted at its door: its validated arguments, the policy's word with its
/// price, and how its writes are confirmed.
pub(super) struct Admitted<'p> {
    /// The arguments, validated (defaults in).
    pub(super) args: Map<String, Value>,
    /// What the policy stage let through, with the price (the gate's).
    pub(super) decided: Decided<'p>,
    /// How the call is confirmed ([`Broker::confirmation_of`]).
    pub(super) mode: WriteConfirmation,
}

/// What the door's decision says in the audit and the span, whether the call was
/// admitted or not.
#[derive(Debug, Default)]
pub(super) struct Ruling {
    /// The determining policies, whether they permitted or refused (`None` without
    /// `[policy]`, or when the call stopped before the policies).
    pub(super) policies: Option<Arc<[String]>>,
    /// Whether the policies refused it.
    pub(super) refused: bool,
    /// How the call's writes are confirmed (the caller's mode when it stopped early).
    pub(super) mode: WriteConfirmation,
}

impl Admission<'_> {
    /// What covers the writes inside the call: the flags only where the caller's
    /// writes are confirmed by flags; else each pass of the call says (decision 017).
    pub(super) fn cover(&self, caller: &Caller) -> Cover<'static> {
        if self.ruling.mode == WriteConfirmation::Flag
            && caller.confirmation == WriteConfirmation::Flag
        {
            Cover::Flags
        } else {
            Cover::ReadsOnly
        }
    }
}

/// A caller's pin (decision 010): the descriptor hash it reviewed, held against
/// the tool's current one. A mismatch is `descriptor_changed` with the current hash, and
/// nothing runs; a pin that is no descriptor hash at all is the caller's mistake
/// (`invalid_request`), never taken for a change.
pub fn check_pin(tool: &Tool, pinned: Option<&str>) -> Result<(), CallError> {
    let Some(pinned) = pinned else {
        return Ok(());
    };
    let hash = pinned.trim();
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CallError::invalid_request(
            "the descriptor hash must be the 64 hex characters a tool's `descriptorHash` shows (tools/list `_meta`, get_tool_reference)",
        ));
    }
    if hash.eq_ignore_ascii_case(&tool.descriptor_hash) {
        return Ok(());
    }
    Err(CallError::new(
        Classification::DescriptorChanged,
        format!(
            "`{}` has changed since the descriptor you reviewed: nothing ran",
            tool.full_name
        ),
    )
    .with_details(json!({
        "tool": tool.full_name,
        "currentHash": tool.descriptor_hash,
        "pinnedHash": hash.to_ascii_lowercase(),
        "nextAction": format!(
            "Read `{}` again (tools/list or get_tool_reference), review what changed, then call it with the new descriptorHash.",
            tool.full_name
        ),
    })))
}

impl Broker {
    /// Phases 2 to 4 at the door: authorize, validate and price, decide; and the
    /// confirmation mode the call runs under.
    pub(super) fn admit<'p>(&'p self, call: &mut Call<'_>) -> Admission<'p> {
        let tool = call.tool;
        let mut arguments = call.arguments.take();
        let guarded = authorize(tool, call.caller, call.descriptor_hash.as_deref())
            .and_then(|()| self.guard_arguments(tool, &mut arguments, Some(&call.guards)));
        // A task's copy is of the arguments as the guards left them.
        let task_args = (call.task_watch.is_some() && tool.task.is_some()).then(|| {
            arguments
                .as_ref()
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        });
        let checked = guarded.and_then(|_| self.validate_and_price(tool, arguments));
        let priced = checked.as_ref().ok().map(|(_, priced)| *priced);
        let decided = checked.and_then(|(args, priced)| {
            let decision = self.door_policy(call, &args, priced)?;
            Ok((args, priced, decision))
        });
        let mut ruling = Ruling::default();
        let mut raised = None;
        let admitted = decided.and_then(|(args, priced, decision)| {
            if let Some(d) = &decision {
                ruling.policies = Some(d.policies.clone());
                ruling.refused = !d.allowed;
                if !d.allowed {
                    return Err(policy::refusal(tool, d));
                }
                raised = policy::raised(call.caller, d.confirm);
            }
            Ok((args, priced))
        });
        let caller = raised.as_ref().unwrap_or(call.caller);
        ruling.mode = match &admitted {
            Ok((_, priced)) => self.confirmation_of(tool, caller, *priced),
            Err(_) => caller.confirmation,
        };
        let admitted = admitted.map(|(args, priced)| Admitted {
            args,
            decided: Decided::door(priced),
            mode: ruling.mode,
        });
        Admission {
            admitted,
            ruling,
            priced,
            task_args,
            raised,
        }
    }

    /// Phase 3: `arguments` validated against `tool`'s schema (defaults in), and
    /// priced.
    pub(super) fn validate_and_price<'p>(
        &'p self,
        tool: &Tool,
        arguments: Option<Value>,
    ) -> Result<(Map<String, Value>, Priced<'p>), CallError> {
        let args = super::args::prepare(tool, arguments)?;
        let priced = self.estimate(tool, &args)?;
        Ok((args, priced))
    }
}

/// Phase 2: may `caller` use `tool` (its key or role fields), and is it the tool the
/// caller reviewed (a pinned descriptor).
pub(super) fn authorize(
    tool: &Tool,
    caller: &Caller,
    pinned: Option<&str>,
) -> Result<(), CallError> {
    caller.check(tool)?;
    check_pin(tool, pinned)
}
