//! Intents: short requests in a user's own words that a tool serves ("give the customer
//! their money back" is `payments.post_refunds`), written per service in
//! `catalog/<service>/intents.toml` and searched by `find_tools` as a field of their own.
//!
//! They sit beside the tool files, not in them: the importer rewrites the tool files from
//! the upstream documents, and intents are no part of what a tool does, so no descriptor
//! hash covers them (adding one leaves `catalog.lock` as it is). Each key must name a tool
//! of the folder's service; every problem is reported with its line (a name is not
//! reported while a tool file of the service has a problem of its own: its tools are
//! missing for that reason alone).

use std::collections::{BTreeMap, HashMap, HashSet};

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use crate::catalog::Tool;
use crate::catalog::diag::{Diagnostics, LineIndex, did_you_mean};

/// The file name of a service folder's intents.
pub const FILE_NAME: &str = "intents.toml";

/// Most intents one tool may have: a few requests in different words say more than many
/// in the same words, and each costs search time.
pub const MAX_PER_TOOL: usize = 12;

/// Longest intent, in characters: one request, not a paragraph.
pub const MAX_LEN: usize = 160;

/// `catalog/<service>/intents.toml`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntentsFile {
    /// Tool name (without the service prefix, as in the tool files) -> requests in a
    /// user's words that the tool serves.
    #[schemars(with = "BTreeMap<String, Vec<String>>")]
    pub intents: BTreeMap<Spanned<String>, Vec<Spanned<String>>>,
}

/// Reads one service's intents file and gives each named tool its intents; problems go
/// to `diags` with the file's line. `tools` are every compiled tool; `service` the
/// folder's service id.
pub fn attach(file: &str, text: &str, service: &str, tools: &mut [Tool], diags: &mut Diagnostics) {
    let lines = LineIndex::new(text);
    let parsed = match toml::from_str::<IntentsFile>(text) {
        Ok(parsed) => parsed,
        Err(e) => {
            let line = e.span().map_or(0, |s| lines.line(s.start));
            diags.push(file, line, e.message().trim().to_string());
            return;
        }
    };
    let by_name: HashMap<&str, usize> = tools
        .iter()
        .enumerate()
        .filter(|(_, t)| t.service == service)
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    // A tool file of the service that did not compile left its tools out: their
    // intents name no tool only because of that one problem, which is reported already.
    let folder = format!("catalog/{service}/");
    let tools_failed = diags
        .0
        .iter()
        .any(|d| d.file.starts_with(&folder) && d.file != file);
    let mut given: Vec<(usize, Vec<String>)> = Vec::new();
    for (name, said) in &parsed.intents {
        let line = lines.line(name.span().start);
        let Some(&at) = by_name.get(name.get_ref().as_str()) else {
            if tools_failed {
                continue;
            }
            diags.push_help(
                file,
                line,
                format!("`{}` is no tool of service `{service}`", name.get_ref()),
                did_you_mean(name.get_ref(), by_name.keys().copied()),
            );
            continue;
        };
        if tools.get(at).is_some_and(|t| !t.exposed) {
            diags.push_help(
                file,
                line,
                format!(
                    "`{}` is not exposed: `find_tools` never returns it",
                    name.get_ref()
                ),
                Some("give intents to the tools callers can run".into()),
            );
        }
        if said.is_empty() || said.len() > MAX_PER_TOOL {
            diags.push(
                file,
                line,
                format!(
                    "`{}` has {} intents: give 1 to {MAX_PER_TOOL}",
                    name.get_ref(),
                    said.len()
                ),
            );
        }
        let mut seen = HashSet::new();
        let mut kept = Vec::new();
        for intent in said {
            let line = lines.line(intent.span().start);
            let request = intent.get_ref().trim();
            if request.is_empty() || request.chars().count() > MAX_LEN {
                diags.push(
                    file,
                    line,
                    format!("an intent is one request of 1 to {MAX_LEN} characters"),
                );
            } else if !seen.insert(request.to_lowercase()) {
                diags.push(
                    file,
                    line,
                    format!("`{request}` is said twice for `{}`", name.get_ref()),
                );
            } else {
                kept.push(request.to_string());
            }
        }
        given.push((at, kept));
    }
    for (at, kept) in given {
        if let Some(tool) = tools.get_mut(at) {
            tool.intents = kept;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::attach;
    use crate::catalog::diag::Diagnostics;

    #[test]
    fn unknown_tools_and_bad_requests_are_reported_with_their_lines() {
        let mut diags = Diagnostics::default();
        let text = "[intents]\nget_refundz = [\"money back\"]\n";
        attach("catalog/x/intents.toml", text, "x", &mut [], &mut diags);
        assert_eq!(diags.0.len(), 1);
        assert_eq!(diags.0[0].line, 2);
        assert!(
            diags.0[0]
                .message
                .contains("`get_refundz` is no tool of service `x`")
        );

        // When a tool file of the service failed, its tools are missing: their intents
        // add no second problem.
        let mut diags = Diagnostics::default();
        diags.push("catalog/x/operations.toml", 3, "a tool file's mistake");
        attach("catalog/x/intents.toml", text, "x", &mut [], &mut diags);
        assert_eq!(diags.0.len(), 1, "{:?}", diags.0);
        let mut diags = Diagnostics::default();
        diags.push("catalog/y/operations.toml", 3, "another service's mistake");
        attach("catalog/x/intents.toml", text, "x", &mut [], &mut diags);
        assert_eq!(diags.0.len(), 2, "{:?}", diags.0);

        let mut diags = Diagnostics::default();
        attach("f", "[intents]\nx = 3\n", "x", &mut [], &mut diags);
        assert_eq!(diags.0[0].line, 2, "{:?}", diags.0);

        let mut diags = Diagnostics::default();
        attach("f", "intent = {}\n", "x", &mut [], &mut diags);
        assert!(
            diags.0[0].message.contains("unknown field"),
            "{:?}",
            diags.0
        );
    }
}
