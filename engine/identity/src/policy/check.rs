//! What `policy check` tells a reviewer of a valid set: per policy, its effect, place
//! and the tools its scope can apply to; and a warning for every policy that pins
//! `resource.descriptorHash` to a hash no tool of the catalog has now (the catalog
//! changed under a reviewed rule).

use std::collections::BTreeSet;

use cedar_policy::Effect;
use serde_json::{Value, json};

use super::Policies;
use crate::catalog::Catalog;

/// What one policy names: tools (by `Action::"<tool>"` or `Tool::"<tool>"`) and the
/// descriptor hashes it pins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// The policy's id.
    pub id: String,
    /// Full names of the tools it names.
    pub tools: BTreeSet<String>,
    /// The hashes it compares `resource.descriptorHash` with.
    pub hashes: Vec<String>,
}

impl Mention {
    /// Whether a change of `tool` (whose hash was `old_hash`) is one this policy's
    /// reviewer should see: it names the tool or pins its old hash.
    pub fn concerns(&self, tool: &str, old_hash: Option<&str>) -> bool {
        self.tools.contains(tool) || old_hash.is_some_and(|h| self.hashes.iter().any(|p| p == h))
    }
}

/// What each policy of `files` names, read without a schema (so a folder written for
/// another catalog can be read; `catalog diff --policy-dir`). A file that does not parse
/// is an error with its position.
pub fn mentions(files: &[(String, String)]) -> Result<Vec<Mention>, Vec<String>> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (file, text) in files {
        match super::load::parse_file(file, text) {
            Ok(sources) => {
                for source in sources {
                    let Ok(est) = source.policy.to_json() else {
                        continue;
                    };
                    let mut tools = BTreeSet::new();
                    named_tools(&est, &mut tools);
                    out.push(Mention {
                        id: source.id,
                        tools,
                        hashes: pinned_hashes(&est),
                    });
                }
            }
            Err(mut found) => problems.append(&mut found),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// Every `{"type": "Action" | "Tool", "id": ...}` entity reference of a policy's JSON
/// form (scope and conditions alike).
fn named_tools(est: &Value, out: &mut BTreeSet<String>) {
    super::est::visit(est, &mut |map| {
        if let (Some(Value::String(t)), Some(Value::String(id))) = (map.get("type"), map.get("id"))
            && (t == "Action" || t == "Tool")
        {
            out.insert(id.clone());
        }
    });
}

/// Tools a text report names per policy before it counts the rest.
const LISTED: usize = 8;

/// The hashes a policy compares `resource.descriptorHash` with (`==` or `!=` a string).
pub fn pinned_hashes(est: &Value) -> Vec<String> {
    let mut out = Vec::new();
    super::est::visit(est, &mut |map| {
        for pair in ["==", "!="].iter().filter_map(|op| map.get(*op)) {
            let (left, right) = (pair.get("left"), pair.get("right"));
            for (a, b) in [(left, right), (right, left)] {
                if a.and_then(Value::as_object)
                    .is_some_and(|a| super::est::is_attr(a, "resource", "descriptorHash"))
                    && let Some(hash) = b.and_then(|b| b.get("Value")).and_then(Value::as_str)
                {
                    out.push(hash.to_string());
                }
            }
        }
    });
    out
}

/// The pinned hashes no tool of the catalog has now, as warnings with their place.
pub fn stale_pins(policies: &Policies, catalog: &Catalog) -> Vec<String> {
    let current: BTreeSet<&str> = catalog
        .tools
        .iter()
        .map(|t| t.descriptor_hash.as_str())
        .collect();
    let mut warnings = Vec::new();
    for source in policies.sources() {
        let Ok(est) = source.policy.to_json() else {
            continue;
        };
        for hash in pinned_hashes(&est) {
            if !current.contains(hash.as_str()) {
                warnings.push(format!(
                    "{}:{}: policy `{}` pins resource.descriptorHash to \"{hash}\", which no tool of this catalog has: the tool changed since the rule was reviewed; review it again (`tool-broker catalog describe` shows each tool's hash)",
                    source.file, source.line, source.id
                ));
            }
        }
    }
    warnings
}

/// The report as JSON: every policy with its tools, and the warnings.
pub fn report_json(policies: &Policies, catalog: &Catalog) -> Value {
    let list: Vec<Value> = (policies.sources().iter().enumerate())
        .map(|(i, s)| {
            json!({
                "id": s.id,
                "file": s.file,
                "line": s.line,
                "effect": effect_word(s.effect),
                "confirm": s.confirm.map(super::Confirm::as_str),
                "tools": policies.tools_of(i).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut warnings = policies.warnings().to_vec();
    warnings.extend(stale_pins(policies, catalog));
    json!({ "policies": list, "warnings": warnings })
}

/// The report as text: one line per policy, its tools (the first few), then warnings.
pub fn report_text(policies: &Policies, catalog: &Catalog) -> String {
    let mut out = String::new();
    for (i, s) in policies.sources().iter().enumerate() {
        let tools: Vec<&str> = policies.tools_of(i).collect();
        let shown = tools
            .iter()
            .take(LISTED)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        let more = tools.len().saturating_sub(LISTED);
        out.push_str(&format!(
            "{} ({}, {}:{}{}): {} tool{}{}{}\n",
            s.id,
            effect_word(s.effect),
            s.file,
            s.line,
            s.confirm
                .map(|c| format!(", confirm {}", c.as_str()))
                .unwrap_or_default(),
            tools.len(),
            if tools.len() == 1 { "" } else { "s" },
            if shown.is_empty() {
                String::new()
            } else {
                format!(": {shown}")
            },
            if more > 0 {
                format!(" and {more} more (--format json lists all)")
            } else {
                String::new()
            },
        ));
    }
    let mut warnings = policies.warnings().to_vec();
    warnings.extend(stale_pins(policies, catalog));
    for w in &warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out.push_str(&format!(
        "{} polic{} valid against the catalog's schema ({} tools), {} warning{}",
        policies.sources().len(),
        if policies.sources().len() == 1 {
            "y"
        } else {
            "ies"
        },
        catalog.tools.len(),
        warnings.len(),
        if warnings.len() == 1 { "" } else { "s" },
    ));
    out
}

fn effect_word(effect: Effect) -> &'static str {
    match effect {
        Effect::Permit => "permit",
        Effect::Forbid => "forbid",
    }
}
