//! The guard rules on a call (docs/guards.md, decision 021): its arguments read as
//! phase 3 begins, before they are validated, priced, decided or sent (the door's in
//! `admit.rs`, a tool's run inside another in `execute.rs`); each answer read in phase 9,
//! after its secrets are redacted (`send.rs`, `mcp.rs`). A redacting rule changes the
//! text where it stands; a blocking one refuses the call (`guard_blocked`) with the rule
//! and the pointer, never the text; an alerting one is only noted. Every rule that acted
//! is noted in the call's [`Acted`] (its envelope's `meta.guards`).

use serde_json::{Value, json};

use super::Broker;
use crate::answer::guard::{Blocked, OnePass, guard};
use crate::catalog::Tool;
use crate::catalog::guards::{Acted, Guards, LooksAt, Set};
use crate::error::{CallError, Classification};

impl Broker {
    /// The guard rules that read `tool`'s `direction` (`Arguments` or `Answers`).
    pub(super) fn guard_set(&self, tool: &Tool, direction: LooksAt) -> Set {
        self.parts
            .guards
            .set(self.parts.catalog.index_of(tool), direction)
    }

    /// Phase 3's first step: every string of `arguments` read by the rules on
    /// arguments; redacted in place; a block refuses the call before anything runs.
    /// The rules that fired (its policies' `context.guards`).
    pub(super) fn guard_arguments(
        &self,
        tool: &Tool,
        arguments: &mut Option<Value>,
        acted: Option<&Acted>,
    ) -> Result<Set, CallError> {
        let Some(value) = arguments.as_mut() else {
            return Ok(Set::EMPTY);
        };
        self.guard_value(tool, value, LooksAt::Arguments, acted)
    }

    /// Phase 9's guard step: every string of an answer's `value` read by the rules on
    /// answers; redacted or stripped in place; a block refuses the answer whole.
    pub(super) fn guard_answer(
        &self,
        tool: &Tool,
        value: &mut Value,
        acted: Option<&Acted>,
    ) -> Result<(), CallError> {
        self.guard_value(tool, value, LooksAt::Answers, acted)
            .map(|_| ())
    }

    /// Phase 9's guard step for an answer read as a tree from `raw`, its bytes: the
    /// rules that could find nothing in the bytes as a whole are left out for every
    /// string, when no string of it had an escape (each string is then a piece of the
    /// bytes).
    pub(super) fn guard_answer_of(
        &self,
        tool: &Tool,
        value: &mut Value,
        raw: &[u8],
        acted: Option<&Acted>,
    ) -> Result<(), CallError> {
        let mut set = self.guard_set(tool, LooksAt::Answers);
        if !set.is_empty() && !raw.contains(&b'\\') {
            let guards = &self.parts.guards.guards;
            set = guards.narrowed(raw, set);
        }
        self.guard_in(tool, value, LooksAt::Answers, set, acted)
            .map(|_| ())
    }

    /// `value` read by `tool`'s rules on `direction`, what acted noted in `acted` and
    /// answered.
    fn guard_value(
        &self,
        tool: &Tool,
        value: &mut Value,
        direction: LooksAt,
        acted: Option<&Acted>,
    ) -> Result<Set, CallError> {
        let set = self.guard_set(tool, direction);
        self.guard_in(tool, value, direction, set, acted)
    }

    /// `value` read by the rules of `set`.
    fn guard_in(
        &self,
        tool: &Tool,
        value: &mut Value,
        direction: LooksAt,
        set: Set,
        acted: Option<&Acted>,
    ) -> Result<Set, CallError> {
        if set.is_empty() {
            return Ok(Set::EMPTY);
        }
        let guards = &self.parts.guards.guards;
        let mut found = Set::EMPTY;
        let result = guard(value, guards, set, &mut found);
        if let Some(acted) = acted {
            acted.note(direction, found);
        }
        result
            .map(|()| found)
            .map_err(|b| blocked(guards, tool, direction, &b))
    }

    /// What reads each string of an answer written in one pass for `tool`'s rules on
    /// answers (then the answer is read as a tree where one would act); `None` when no
    /// rule reads its answers.
    pub(super) fn one_pass_guard<'g>(&'g self, tool: &Tool, body: &[u8]) -> Option<OnePass<'g>> {
        let set = self.guard_set(tool, LooksAt::Answers);
        (!set.is_empty()).then(|| OnePass::new(&self.parts.guards.guards, set, body))
    }
}

/// `guard_blocked` for what `b` says; a value nested past what the guards read is the
/// caller's (`validation_error`) or the upstream's (`upstream_unavailable`) mistake.
fn blocked(guards: &Guards, tool: &Tool, direction: LooksAt, b: &Blocked) -> CallError {
    let answer = direction != LooksAt::Arguments;
    let Some(rule) = guards.rules.get(b.rule) else {
        return if answer {
            CallError::new(
                Classification::UpstreamUnavailable,
                format!(
                    "the answer of `{}` nests deeper than 128 levels: nothing of it is returned",
                    tool.full_name
                ),
            )
        } else {
            CallError::validation(format!(
                "the arguments of `{}` nest deeper than 128 levels",
                tool.full_name
            ))
        };
    };
    let at = if b.pointer.is_empty() {
        String::new()
    } else {
        format!(" at `{}`", b.pointer)
    };
    let message = if answer {
        format!(
            "the answer of `{}` holds what guard rule `{}` blocks{at} ({}): nothing of it is returned",
            tool.full_name, rule.id, rule.description
        )
    } else {
        format!(
            "the arguments of `{}` hold what guard rule `{}` blocks{at} ({}): nothing was sent; leave it out and call again",
            tool.full_name, rule.id, rule.description
        )
    };
    CallError::new(Classification::GuardBlocked, message).with_details(json!({
        "rule": rule.id,
        "where": if answer { "answer" } else { "arguments" },
        "pointer": b.pointer,
    }))
}
