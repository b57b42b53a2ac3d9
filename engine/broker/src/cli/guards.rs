//! `guards test TEXT`: which rules of `rules/guards.toml` fire on a text, where and why,
//! and what arguments and answers holding it would read after the rules that are on
//! (docs/guards.md).

use std::fmt::Write as _;

use super::args::GuardsCommand;
use super::catalog::CatalogRoot;
use crate::catalog::guards::{Action, Guards, LooksAt};

/// Runs a `guards` command on the catalog at `root`; what to print, or why it failed.
pub fn guards(command: GuardsCommand, root: &CatalogRoot) -> Result<String, String> {
    let catalog = root.load()?;
    match command {
        GuardsCommand::Test { text } => Ok(report(&catalog.rules.guards, &text)),
    }
}

/// The report of `text`: each finding of every rule (on or off), then the text as each
/// direction would read with the rules that are on.
fn report(guards: &Guards, text: &str) -> String {
    let mut out = String::new();
    let all = guards.select(|_| true);
    let ran = guards.candidates(text, all);
    let findings = guards.scan(text, all);
    if findings.is_empty() {
        let _ = writeln!(
            out,
            "no rule fires ({} of {} rules ran: their keywords occur, or they need none)",
            ran.len(),
            guards.rules.len()
        );
    }
    for f in &findings {
        let rule = &guards.rules[f.rule];
        let why = match rule.validator() {
            Some(v) => format!("matches its pattern and passes {v:?}"),
            None => "matches its pattern".into(),
        };
        let _ = writeln!(
            out,
            "{} ({:?}, {}, {} in {:?}): bytes {}..{} {why}",
            rule.id,
            rule.kind,
            if rule.on { "on" } else { "off" },
            rule.action.as_str(),
            rule.looks_at,
            f.start,
            f.end,
        );
    }
    for (name, direction) in [
        ("arguments", LooksAt::Arguments),
        ("answers", LooksAt::Answers),
    ] {
        let found = guards.scan(text, guards.on_for(direction));
        let blocked: Vec<&str> = found
            .iter()
            .map(|f| &guards.rules[f.rule])
            .filter(|r| r.action == Action::Block)
            .map(|r| r.id.as_str())
            .collect();
        if blocked.is_empty() {
            let _ = writeln!(out, "as {name}: {}", guards.apply(text, &found));
        } else {
            let _ = writeln!(out, "as {name}: blocked by {}", blocked.join(", "));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_names_the_rules_and_shows_each_direction() {
        let catalog =
            crate::catalog::compile::compile(&crate::catalog::source::Sources::embedded())
                .unwrap_or_else(|d| panic!("{d}"));
        let text = report(
            &catalog.rules.guards,
            "pay with 4539 1488 0343 6467 to dana@acme.io\u{202E}",
        );
        assert!(text.contains("card (Personal, on, redact in Both): bytes 9..28 matches its pattern and passes Luhn"), "{text}");
        assert!(text.contains("email (Personal, off, redact"), "{text}");
        assert!(
            text.contains("as arguments: pay with [REDACTED:card] to dana@acme.io\u{202E}"),
            "{text}"
        );
        assert!(
            text.contains("as answers: pay with [REDACTED:card] to dana@acme.io\n"),
            "{text}"
        );
        assert!(report(&catalog.rules.guards, "nothing").starts_with("no rule fires"));
    }
}
