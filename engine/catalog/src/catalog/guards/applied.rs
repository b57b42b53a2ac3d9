//! Which guard rules read each tool's arguments and answers: the rules that are on, look
//! that way and whose selectors hold for the tool, and of the rules of one family (a rule
//! and those that extend it) only the most specific, as for costs: a tool named beats a
//! service, a service beats classes, classes beat a risk, any of them beats none; at
//! equal selectors a rule that extends beats the rule it extends. So
//! `{id = "payments-cards", extends = "card", service = "payments", looks_at = "arguments",
//! on = false}` lets payments tools take card numbers while every other tool's are
//! redacted, and payments' answers are still read by `card`. Computed once per catalog
//! and deployment; a call looks its tool up.

use super::{Guards, LooksAt, Rule, Set};
use crate::catalog::Tool;

/// The rules of each tool, by the tool's index in the catalog.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The rules.
    pub guards: std::sync::Arc<Guards>,
    /// Per tool: the rules on its arguments, and on its answers.
    sets: Vec<[Set; 2]>,
}

impl Applied {
    /// The rules of each of `tools`; every selector naming nothing, and every two rules
    /// of one family as specific as each other on one tool and direction, refused with
    /// the rule's index.
    pub fn new(
        guards: std::sync::Arc<Guards>,
        tools: &[Tool],
    ) -> Result<Self, Vec<(usize, String)>> {
        let mut problems = Vec::new();
        for (i, rule) in guards.rules.iter().enumerate() {
            if let Some(problem) = selects_nothing(rule, tools) {
                problems.push((i, problem));
            }
        }
        let mut sets = Vec::with_capacity(tools.len());
        for tool in tools {
            let mut pair = [Set::EMPTY; 2];
            for (slot, direction) in [LooksAt::Arguments, LooksAt::Answers]
                .into_iter()
                .enumerate()
            {
                match winners(&guards, tool, direction) {
                    Ok(set) => pair[slot] = set,
                    Err(problem) => problems.push(problem),
                }
            }
            sets.push(pair);
        }
        problems.sort();
        problems.dedup_by(|a, b| a.0 == b.0);
        if problems.is_empty() {
            Ok(Self { guards, sets })
        } else {
            Err(problems)
        }
    }

    /// The rules with no per-tool sets: every tool read by the rules without selectors
    /// (until [`Applied::new`] is computed with the tools).
    pub fn plain(guards: std::sync::Arc<Guards>) -> Self {
        Self {
            guards,
            sets: Vec::new(),
        }
    }

    /// The rules reading `direction` (`Arguments` or `Answers`) of the tool at `index`
    /// in the catalog; without one (a tool not in the catalog), the rules without
    /// selectors.
    pub fn set(&self, index: Option<usize>, direction: LooksAt) -> Set {
        let slot = usize::from(direction != LooksAt::Arguments);
        match index.and_then(|i| self.sets.get(i)) {
            Some(pair) => pair[slot],
            None => {
                let plain = self
                    .guards
                    .select(|r| r.selectors == super::Selectors::default());
                Set(self.guards.on_for(direction).0 & plain.0)
            }
        }
    }
}

/// How specifically `rule` selects `tool`, or `None` when it does not.
fn rank(rule: &Rule, tool: &Tool) -> Option<u16> {
    let s = &rule.selectors;
    let selecting = crate::catalog::descriptor::Selecting {
        tool: s.tool.as_deref(),
        service: s.service.as_deref(),
        risk: s.risk,
        classes: &s.classes,
    };
    // The selectors first, then the depth in the family.
    selecting
        .rank(&tool.full_name, &tool.service, tool.risk, &tool.classes)
        .map(|selectors| u16::from(selectors) << 8 | u16::from(rule.depth))
}

/// The rules of `tool` in `direction`: per family the most specific that selects it and
/// looks that way, kept when it is on.
fn winners(guards: &Guards, tool: &Tool, direction: LooksAt) -> Result<Set, (usize, String)> {
    // (family, rank, rule index), the best so far of each family.
    let mut best: Vec<(&str, u16, usize)> = Vec::new();
    for (i, rule) in guards.rules.iter().enumerate() {
        if !rule.looks_at.covers(direction) {
            continue;
        }
        let Some(rank) = rank(rule, tool) else {
            continue;
        };
        match best
            .iter_mut()
            .find(|(family, _, _)| *family == rule.family)
        {
            Some(slot) if slot.1 == rank => {
                let other = &guards.rules[slot.2];
                return Err((
                    i,
                    format!(
                        "rules `{}` and `{}` (one family, `{}`) both read the {} of `{}` as specifically; make one of them more specific (name the tool or the service)",
                        other.id,
                        rule.id,
                        rule.family,
                        if direction == LooksAt::Arguments {
                            "arguments"
                        } else {
                            "answers"
                        },
                        tool.full_name
                    ),
                ));
            }
            Some(slot) if slot.1 < rank => *slot = (slot.0, rank, i),
            Some(_) => {}
            None => best.push((rule.family.as_str(), rank, i)),
        }
    }
    Ok(best
        .iter()
        .filter(|(_, _, i)| guards.rules[*i].on)
        .fold(Set::EMPTY, |set, (_, _, i)| set.with(*i)))
}

/// Why `rule`'s selectors select no tool, if they do not.
fn selects_nothing(rule: &Rule, tools: &[Tool]) -> Option<String> {
    let s = &rule.selectors;
    if let Some(name) = &s.tool
        && !tools.iter().any(|t| t.full_name == *name)
    {
        let names = tools.iter().map(|t| t.full_name.as_str());
        let hint = crate::catalog::diag::did_you_mean(name, names)
            .map(|h| format!(" ({h})"))
            .unwrap_or_default();
        return Some(format!("rule `{}` names no tool `{name}`{hint}", rule.id));
    }
    if s == &super::Selectors::default() || tools.iter().any(|t| rank(rule, t).is_some()) {
        return None;
    }
    Some(format!("rule `{}`'s selectors match no tool", rule.id))
}
