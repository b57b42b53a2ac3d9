//! A policy folder read, parsed and validated against the catalog's schema in strict
//! mode: every problem reported with its file, line and column and what to do.
//!
//! Each policy gets its id: its `@id("...")` annotation, else `<file>:<line>`. Ids are
//! unique across the folder. `@confirm("human" | "bound")` is read here, and only on a
//! `permit`. Templates (policies with `?principal` or `?resource` slots) are refused: a
//! deployment's rules are static, each one reviewed as written.

use std::path::Path;

use cedar_policy::{Effect, Policy, PolicyId, PolicySet, Schema, ValidationMode, Validator};
use miette::Diagnostic;

use crate::catalog::Catalog;
use crate::config::PolicyConfig;

/// The confirmation a `permit` asks for the calls it permits (`@confirm`), ordered from
/// the weaker to the stronger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Confirm {
    /// A token bound to the preview (decision 008's `bound`).
    Bound,
    /// A person approves (decision 008's `human`).
    Human,
}

impl Confirm {
    /// The word of the annotation.
    pub fn as_str(self) -> &'static str {
        match self {
            Confirm::Bound => "bound",
            Confirm::Human => "human",
        }
    }
}

/// One policy as the folder holds it.
#[derive(Debug, Clone)]
pub struct Source {
    /// Its id: `@id`, else `<file>:<line>`.
    pub id: String,
    /// Its file, relative to the folder.
    pub file: String,
    /// The line it starts on (1-based).
    pub line: usize,
    /// `permit` or `forbid`.
    pub effect: Effect,
    /// What `@confirm` asks of the calls it permits.
    pub confirm: Option<Confirm>,
    /// The policy, with its id.
    pub policy: Policy,
}

/// A validated policy set and the schema it was validated against.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Every policy, in file then source order.
    pub sources: Vec<Source>,
    /// The catalog's schema.
    pub schema: Schema,
    /// What strict validation warned of, each with its place (the set is valid).
    pub warnings: Vec<String>,
}

/// The `*.cedar` files of a folder, by name, with their text.
pub fn read_dir(dir: &Path) -> Result<Vec<(String, String)>, Vec<String>> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        vec![format!(
            "[policy] dir `{}` cannot be read: {e}; create it or point `dir` at the folder of the *.cedar files",
            dir.display()
        )]
    })?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".cedar"))
        .collect();
    names.sort();
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for name in names {
        match std::fs::read_to_string(dir.join(&name)) {
            Ok(text) => files.push((name, text)),
            Err(e) => problems.push(format!("{name}: cannot be read: {e}")),
        }
    }
    if problems.is_empty() {
        Ok(files)
    } else {
        Err(problems)
    }
}

/// Reads `[policy] dir` and validates it against `catalog` ([`load`]).
pub fn load_config(config: &PolicyConfig, catalog: &Catalog) -> Result<Loaded, Vec<String>> {
    let files = read_dir(&config.dir)?;
    let schema = super::schema::schema(catalog, config)?;
    load(&files, schema)
}

/// Parses every file, names each policy, and validates the set against `schema` in
/// strict mode. Every problem of every file is reported, each as
/// `<file>:<line>:<column>: <what> (<help>)`.
pub fn load(files: &[(String, String)], schema: Schema) -> Result<Loaded, Vec<String>> {
    let mut problems = Vec::new();
    let mut sources: Vec<Source> = Vec::new();
    for (file, text) in files {
        match parse_file(file, text) {
            Ok(parsed) => sources.extend(parsed),
            Err(mut found) => problems.append(&mut found),
        }
    }
    let mut seen = std::collections::BTreeMap::new();
    for s in &sources {
        if let Some((file, line)) = seen.insert(s.id.clone(), (s.file.clone(), s.line)) {
            problems.push(format!(
                "{}:{}: the policy id `{}` is also the id of the policy at {file}:{line}; ids name policies in refusals and the audit, so each must be unique",
                s.file, s.line, s.id
            ));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut set = PolicySet::new();
    for s in &sources {
        if let Err(e) = set.add(s.policy.clone()) {
            problems.push(format!("{}:{}: {e}", s.file, s.line));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let texts: std::collections::HashMap<&str, (&str, &str)> = sources
        .iter()
        .filter_map(|s| {
            let text = files.iter().find(|(f, _)| *f == s.file)?.1.as_str();
            Some((s.id.as_str(), (s.file.as_str(), text)))
        })
        .collect();
    let result = Validator::new(schema.clone()).validate(&set, ValidationMode::Strict);
    let place = |id: &PolicyId, d: &dyn Diagnostic| match texts.get(AsRef::<str>::as_ref(id)) {
        Some((file, text)) => located(file, text, d),
        None => format!("policy `{id}`: {}", message(d)),
    };
    let errors: Vec<String> = result
        .validation_errors()
        .map(|e| place(e.policy_id(), e))
        .collect();
    if !errors.is_empty() {
        return Err(grouped(errors));
    }
    let warnings = result
        .validation_warnings()
        .map(|w| place(w.policy_id(), w))
        .collect();
    Ok(Loaded {
        sources,
        schema,
        warnings,
    })
}

/// Problems sorted, at most [`SAME_PLACE`] per position: a policy over every action that
/// reads an argument most tools lack is one mistake, not two thousand.
fn grouped(mut problems: Vec<String>) -> Vec<String> {
    problems.sort();
    problems.dedup();
    let position = |p: &str| p.splitn(4, ':').take(3).collect::<Vec<_>>().join(":");
    let mut out: Vec<String> = Vec::new();
    let mut run: (String, usize) = (String::new(), 0);
    let flush = |out: &mut Vec<String>, run: &(String, usize)| {
        if run.1 > SAME_PLACE {
            out.push(format!(
                "{}: and {} more actions with the same problem",
                run.0,
                run.1 - SAME_PLACE
            ));
        }
    };
    for p in problems {
        let at = position(&p);
        if at != run.0 {
            flush(&mut out, &run);
            run = (at, 0);
        }
        run.1 += 1;
        if run.1 <= SAME_PLACE {
            out.push(p);
        }
    }
    flush(&mut out, &run);
    out
}

/// Problems shown per position of a policy before the rest are counted.
const SAME_PLACE: usize = 3;

/// The policies of one file, each with its id, line and annotations read.
pub(super) fn parse_file(file: &str, text: &str) -> Result<Vec<Source>, Vec<String>> {
    let parsed: PolicySet = text.parse().map_err(|e: cedar_policy::ParseErrors| {
        e.iter().map(|d| located(file, text, d)).collect::<Vec<_>>()
    })?;
    let mut problems = Vec::new();
    if let Some(t) = parsed.templates().next() {
        let line = line_of(text, &t.to_string(), 0).0;
        problems.push(format!(
            "{file}:{line}: a template (a policy with `?principal` or `?resource`); write the principal or resource it is for"
        ));
    }
    // Cedar numbers a file's policies policy0, policy1, ... in source order.
    let mut policies: Vec<&Policy> = parsed.policies().collect();
    policies.sort_by_key(|p| {
        AsRef::<str>::as_ref(p.id())
            .strip_prefix("policy")
            .and_then(|n| n.parse::<usize>().ok())
    });
    let mut sources = Vec::new();
    let mut from = 0;
    for policy in policies {
        let (line, end) = line_of(text, &policy.to_string(), from);
        from = end;
        let id = match policy.annotation("id") {
            Some(id) if id.trim().is_empty() => {
                problems.push(format!("{file}:{line}: `@id` is empty; name the policy"));
                continue;
            }
            Some(id) => id.to_string(),
            None => format!("{file}:{line}"),
        };
        let confirm = match (policy.annotation("confirm"), policy.effect()) {
            (None, _) => None,
            (Some(_), Effect::Forbid) => {
                problems.push(format!(
                    "{file}:{line}: `@confirm` on a `forbid`; it belongs on the `permit` whose calls need the confirmation"
                ));
                None
            }
            (Some("human"), Effect::Permit) => Some(Confirm::Human),
            (Some("bound"), Effect::Permit) => Some(Confirm::Bound),
            (Some(other), Effect::Permit) => {
                problems.push(format!(
                    "{file}:{line}: `@confirm(\"{other}\")`: the confirmation is \"human\" (a person approves) or \"bound\" (a token bound to the preview)"
                ));
                None
            }
        };
        sources.push(Source {
            policy: policy.new_id(PolicyId::new(&id)),
            id,
            file: file.to_string(),
            line,
            effect: policy.effect(),
            confirm,
        });
    }
    if problems.is_empty() {
        Ok(sources)
    } else {
        Err(problems)
    }
}

/// The line a policy's text starts on, searched from byte `from` of its file, and where
/// the text ends (the next policy is searched from there).
fn line_of(text: &str, policy: &str, from: usize) -> (usize, usize) {
    let rest = text.get(from..).unwrap_or_default();
    match rest.find(policy) {
        Some(at) => (line_col(text, from + at).0, from + at + policy.len().max(1)),
        None => (line_col(text, from).0, from),
    }
}

/// `<file>:<line>:<column>: <message> (<help>)` of a Cedar diagnostic, at its first label.
fn located(file: &str, text: &str, d: &dyn Diagnostic) -> String {
    let at = d
        .labels()
        .and_then(|mut labels| labels.next())
        .map(|l| l.offset());
    match at {
        Some(offset) => {
            let (line, col) = line_col(text, offset);
            format!("{file}:{line}:{col}: {}", message(d))
        }
        None => format!("{file}: {}", message(d)),
    }
}

/// A diagnostic's message and, when it has one, its help.
fn message(d: &dyn Diagnostic) -> String {
    match d.help() {
        Some(help) => format!("{d} ({help})"),
        None => d.to_string(),
    }
}

/// The 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit_once('\n')
        .map_or(before, |(_, last)| last)
        .chars()
        .count()
        + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_count_characters_from_one() {
        let text = "ab\ncé\nx";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 1));
        assert_eq!(line_col(text, 6), (2, 3));
        assert_eq!(line_col(text, 7), (3, 1));
    }

    #[test]
    fn a_file_names_its_policies_by_id_or_line() {
        let text = "permit(principal, action, resource);\n\n@id(\"two\")\nforbid(principal, action, resource);\npermit(principal, action, resource);\n";
        let sources = parse_file("a.cedar", text).unwrap_or_default();
        let ids: Vec<(&str, usize)> = sources.iter().map(|s| (s.id.as_str(), s.line)).collect();
        assert_eq!(ids, [("a.cedar:1", 1), ("two", 3), ("a.cedar:5", 5)]);
    }

    #[test]
    fn confirm_is_read_on_permits_only() {
        let text = "@confirm(\"human\")\npermit(principal, action, resource);";
        let sources = parse_file("a.cedar", text).unwrap_or_default();
        assert_eq!(
            sources.first().and_then(|s| s.confirm),
            Some(Confirm::Human)
        );
        let bad = "@confirm(\"person\")\npermit(principal, action, resource);\n@confirm(\"human\")\nforbid(principal, action, resource);";
        let problems = parse_file("b.cedar", bad).err().unwrap_or_default();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("b.cedar:1:"), "{problems:?}");
        assert!(problems[1].starts_with("b.cedar:3:"), "{problems:?}");
    }
}
