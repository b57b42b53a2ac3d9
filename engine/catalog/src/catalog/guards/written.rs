//! A guard rule as written, in `rules/guards.toml` or a deployment's `[[guards.rule]]`,
//! and how it becomes a whole rule ([`RawRule`]): a rule that names a rule before it by
//! its own id changes that rule (each field it gives replaces the field; its `allow`
//! adds to the list); one that `extends` a rule takes every field it does not give from
//! it. Its examples stay with the pattern: a rule that gives its own `pattern` gives its
//! own `matches`, and one that keeps the pattern keeps its examples too (and may add).

use serde::Deserialize;

use super::{Action, Kind, LooksAt, RawRule, Selectors};
use crate::catalog::descriptor::{Class, Risk};

/// One `[[rule]]` (or `[[guards.rule]]`) as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrittenRule {
    /// The rule's id (`card`, `aws-access-key`); an earlier rule's id changes that rule.
    pub id: String,
    /// The id of an earlier rule this one takes every field it does not give from.
    #[serde(default)]
    pub extends: Option<String>,
    /// What it finds.
    #[serde(default)]
    pub kind: Option<Kind>,
    /// One line on what it finds, from which format.
    #[serde(default)]
    pub description: Option<String>,
    /// The pattern.
    #[serde(default)]
    pub pattern: Option<String>,
    /// Literals one of which must occur for the pattern to run.
    #[serde(default)]
    pub keywords: Option<Vec<String>>,
    /// Whether keywords are matched in any case.
    #[serde(default)]
    pub keywords_any_case: Option<bool>,
    /// What a text must hold for the pattern to run (`digits >= n`, `non_ascii`).
    #[serde(default)]
    pub needs: Option<String>,
    /// A check the finding must also pass.
    #[serde(default)]
    pub validator: Option<String>,
    /// Findings never flagged (added to those of the rule it changes or extends).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Where it looks.
    #[serde(default)]
    pub looks_at: Option<LooksAt>,
    /// What it does.
    #[serde(default)]
    pub action: Option<Action>,
    /// Whether it is on (a new rule: yes).
    #[serde(default)]
    pub on: Option<bool>,
    /// Texts it must flag.
    #[serde(default)]
    pub matches: Vec<String>,
    /// Texts it must not flag.
    #[serde(default)]
    pub ignores: Vec<String>,
    /// Only this tool (full name).
    #[serde(default)]
    pub tool: Option<String>,
    /// Only tools of this service.
    #[serde(default)]
    pub service: Option<String>,
    /// Only tools of this risk.
    #[serde(default)]
    pub risk: Option<Risk>,
    /// Only tools with one of these classes.
    #[serde(default)]
    pub classes: Vec<Class>,
}

/// `written` resolved against `rules` (the rules before it): the changed rule in its
/// place, or a new rule to add; or why not.
pub enum Resolved {
    /// `rules[i]` replaced by this.
    Changes(usize, RawRule),
    /// This rule added.
    Adds(RawRule),
}

/// Resolves one written rule against the rules before it.
pub fn resolve(written: &WrittenRule, rules: &[RawRule]) -> Result<Resolved, String> {
    let id = &written.id;
    let same = rules.iter().position(|r| r.id == *id);
    match (&written.extends, same) {
        (Some(_), Some(_)) => Err(format!(
            "rule `{id}` is already a rule: change it by its id alone, or give this one another id"
        )),
        (Some(base), None) => {
            let Some(from) = rules.iter().find(|r| r.id == *base) else {
                return Err(format!(
                    "rule `{id}` extends `{base}`, which is no rule before it (rules: {})",
                    ids(rules)
                ));
            };
            Ok(Resolved::Adds(merged(written, from, true)))
        }
        (None, Some(i)) => {
            let from = &rules[i];
            Ok(Resolved::Changes(i, merged(written, from, false)))
        }
        (None, None) => whole(written).map(Resolved::Adds),
    }
}

/// The ids of `rules`, for a message.
fn ids(rules: &[RawRule]) -> String {
    rules
        .iter()
        .map(|r| r.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `written` over `from`: each field given replaces `from`'s; `allow` adds; the
/// examples stay with the pattern. A rule that extends is one step deeper in `from`'s
/// family, and on unless it says otherwise.
fn merged(written: &WrittenRule, from: &RawRule, extends: bool) -> RawRule {
    let own_pattern = written.pattern.is_some();
    let mut allow = from.allow.clone();
    allow.extend(written.allow.iter().cloned());
    let (mut matches, mut ignores) = if own_pattern {
        (Vec::new(), Vec::new())
    } else {
        (from.matches.clone(), from.ignores.clone())
    };
    matches.extend(written.matches.iter().cloned());
    ignores.extend(written.ignores.iter().cloned());
    let selectors = Selectors {
        tool: written.tool.clone().or_else(|| from.selectors.tool.clone()),
        service: written
            .service
            .clone()
            .or_else(|| from.selectors.service.clone()),
        risk: written.risk.or(from.selectors.risk),
        classes: if written.classes.is_empty() {
            from.selectors.classes.clone()
        } else {
            written.classes.clone()
        },
    };
    RawRule {
        id: written.id.clone(),
        family: from.family.clone(),
        depth: from.depth + u8::from(extends),
        kind: written.kind.unwrap_or(from.kind),
        description: written
            .description
            .clone()
            .unwrap_or_else(|| from.description.clone()),
        pattern: written
            .pattern
            .clone()
            .unwrap_or_else(|| from.pattern.clone()),
        keywords: written
            .keywords
            .clone()
            .unwrap_or_else(|| from.keywords.clone()),
        keywords_any_case: written.keywords_any_case.unwrap_or(from.keywords_any_case),
        needs: written.needs.clone().or_else(|| from.needs.clone()),
        validator: written.validator.clone().or_else(|| from.validator.clone()),
        allow,
        looks_at: written.looks_at.unwrap_or(from.looks_at),
        action: written.action.unwrap_or(from.action),
        on: written.on.unwrap_or(extends || from.on),
        matches,
        ignores,
        selectors,
    }
}

/// A new rule, whole as written.
fn whole(written: &WrittenRule) -> Result<RawRule, String> {
    let id = &written.id;
    let missing: Vec<&str> = [
        ("kind", written.kind.is_none()),
        ("pattern", written.pattern.is_none()),
        ("action", written.action.is_none()),
    ]
    .into_iter()
    .filter(|(_, absent)| *absent)
    .map(|(name, _)| name)
    .collect();
    if !missing.is_empty() {
        return Err(format!(
            "rule `{id}` has no `{}`: a new rule gives them, or `extends` a rule that has them",
            missing.join("`, `")
        ));
    }
    let empty = RawRule {
        id: id.clone(),
        family: id.clone(),
        kind: written.kind.unwrap_or(Kind::Secret),
        action: written.action.unwrap_or(Action::Alert),
        on: true,
        ..RawRule::default()
    };
    Ok(RawRule {
        depth: 0,
        ..merged(written, &empty, true)
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Guards, LooksAt, RawGuards};

    fn written(text: &str) -> RawGuards {
        toml::from_str(text).unwrap_or_else(|e| panic!("{e}"))
    }

    const SHIPPED: &str = "[[rule]]\nid = \"tok\"\nkind = \"secret\"\npattern = 'tok_[a-z0-9]{8}'\nkeywords = [\"tok_\"]\naction = \"redact\"\nmatches = [\"tok_abcd1234\"]\nignores = [\"tok_ab\"]\n\
        [[rule]]\nid = \"mail\"\nkind = \"personal\"\npattern = '[a-z]+@[a-z]+\\.io'\nkeywords = [\"@\"]\naction = \"redact\"\non = false\nmatches = [\"dana@acme.io\"]\n";

    fn shipped() -> Guards {
        Guards::compile(&written(SHIPPED).rule, &[1, 9]).unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn a_rule_changes_one_by_its_id_or_extends_one_into_a_new_rule() {
        let deployed = written(
            "[[rule]]\nid = \"mail\"\non = true\n\
             [[rule]]\nid = \"no-tok-out\"\nextends = \"tok\"\nlooks_at = \"arguments\"\naction = \"block\"\nservice = \"crm\"\n\
             [[rule]]\nid = \"tok\"\nallow = [\"tok_00000000\"]\nmatches = [\"x tok_99999999\"]\n",
        );
        let guards = shipped()
            .with(&deployed.rule, &[40, 42, 48])
            .unwrap_or_else(|e| panic!("{e:?}"));
        let ids: Vec<&str> = guards.rules.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["tok", "mail", "no-tok-out"]);
        assert!(guards.rules[1].on, "turned on by its id");
        let out = &guards.rules[2];
        assert_eq!((out.family.as_str(), out.depth, out.on), ("tok", 1, true));
        assert_eq!(out.action, super::super::Action::Block);
        assert_eq!(out.looks_at, LooksAt::Arguments);
        assert_eq!(out.selectors.service.as_deref(), Some("crm"));
        assert!(
            out.flags("key tok_abcd1234"),
            "it keeps the pattern and its examples"
        );
        // The allow list grew: the allowed value is no finding, the others are.
        assert!(!guards.rules[0].flags("tok_00000000") && guards.rules[0].flags("tok_99999999"));
        assert_eq!(
            (guards.line(0), guards.line(1), guards.line(2)),
            (48, 40, 42)
        );
    }

    #[test]
    fn a_written_rule_that_cannot_become_whole_is_refused_with_its_line() {
        let cases = [
            (
                "[[rule]]\nid = \"x\"\nextends = \"nope\"\n",
                "which is no rule before it",
            ),
            (
                "[[rule]]\nid = \"tok\"\nextends = \"mail\"\n",
                "is already a rule",
            ),
            (
                "[[rule]]\nid = \"new\"\nmatches = [\"a\"]\n",
                "has no `kind`, `pattern`, `action`",
            ),
            (
                "[[rule]]\nid = \"tok\"\nallow = [\"tok_abcd1234\"]\n",
                "swallows its own example",
            ),
            (
                "[[rule]]\nid = \"tok\"\npattern = 'tok_[0-9]+'\n",
                "has no `matches`",
            ),
            (
                "[[rule]]\nid = \"a\"\nextends = \"tok\"\n[[rule]]\nid = \"a\"\non = false\n",
                "written twice",
            ),
        ];
        for (text, expected) in cases {
            let refusals = shipped()
                .with(&written(text).rule, &[7, 9])
                .err()
                .unwrap_or_default();
            assert!(
                refusals
                    .iter()
                    .any(|(line, e)| [7, 9].contains(line) && e.contains(expected)),
                "{expected}: {refusals:?}"
            );
        }
    }
}
