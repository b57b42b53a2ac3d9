//! What is checked across tools once every tool is compiled: the step tools a
//! multi-step hook runs, a task's watch, a dispatcher's categories, a webhook's
//! verification key tool, and the services the search rules name.

use super::*;
use crate::catalog::descriptor::Risk;

/// A tool a multi-step hook runs as one of its steps.
struct Step<'t> {
    /// Its name in the hook's service.
    name: &'t String,
    /// The risk the step needs.
    risk: Risk,
    /// It must be an upstream (HTTP) tool, not a hook.
    http: bool,
}

impl Compiler<'_> {
    /// The step tools of a multi-step hook (`[tool.reschedule]`, `[tool.poll]`): tools of
    /// the same service, of the risk their step needs, upstream tools where the step
    /// sends a request.
    pub(super) fn check_steps(&mut self, tool: &Tool, tools: &[Tool]) {
        let step = |name, risk, http| Step { name, risk, http };
        let mut steps: Vec<Step<'_>> = Vec::new();
        if let Some(r) = &tool.reschedule {
            steps.push(step(&r.search_tool, Risk::Read, true));
            steps.push(step(&r.update_tool, Risk::Write, true));
            steps.extend(r.zone.iter().map(|(t, _, _)| step(t, Risk::Read, true)));
        }
        if let Some(p) = &tool.poll {
            steps.extend(p.submit.iter().map(|(_, t, _)| step(t, Risk::Write, true)));
            steps.push(step(&p.status_tool, Risk::Read, true));
            // The tool named to check later may be local (a hook).
            steps.extend(p.check_tool.iter().map(|t| step(t, Risk::Read, false)));
        }
        for Step { name, risk, http } in steps {
            let found = tools
                .iter()
                .find(|t| t.service == tool.service && &t.name == name);
            match found {
                Some(t) if t.risk == risk && (!http || matches!(t.action, Action::Http(_))) => {}
                Some(_) => self.diags.push(
                    &tool.source.0,
                    tool.source.1,
                    format!(
                        "tool `{}`: step tool `{name}` must be a {} {}tool",
                        tool.full_name,
                        risk.as_str(),
                        if http { "HTTP " } else { "" }
                    ),
                ),
                None => self.diags.push_help(
                    &tool.source.0,
                    tool.source.1,
                    format!(
                        "tool `{}`: step tool `{name}` is not a tool of service `{}`",
                        tool.full_name, tool.service
                    ),
                    did_you_mean(
                        name,
                        tools
                            .iter()
                            .filter(|t| t.service == tool.service)
                            .map(|t| t.name.as_str()),
                    ),
                ),
            }
        }
    }

    /// A task's watch: a read `submit_and_poll` tool of the same service that takes the
    /// job from its arguments (no submit choices).
    pub(super) fn check_task(&mut self, tool: &Tool, tools: &[Tool]) {
        let Some(plan) = &tool.task else {
            return;
        };
        let found = tools
            .iter()
            .find(|t| t.service == tool.service && t.name == plan.watch);
        let fits = found.is_some_and(|t| {
            t.risk == Risk::Read && t.poll.as_ref().is_some_and(|p| p.submit.is_empty())
        });
        if !fits {
            self.diags.push_help(
                &tool.source.0,
                tool.source.1,
                format!(
                    "tool `{}`: `[tool.task] watch = \"{}\"` must name a read `submit_and_poll` tool of service `{}` without submit choices{}",
                    tool.full_name,
                    plan.watch,
                    tool.service,
                    if found.is_some() { "" } else { " (no such tool)" }
                ),
                did_you_mean(
                    &plan.watch,
                    tools
                        .iter()
                        .filter(|t| t.service == tool.service && t.poll.is_some())
                        .map(|t| t.name.as_str()),
                ),
            );
        }
    }

    /// A dispatcher's categories: each the category of some tool of its service.
    pub(super) fn check_categories(&mut self, tool: &Tool, tools: &[Tool]) {
        for category in tool.dispatch.iter().flat_map(|d| &d.categories) {
            let known = tools.iter().any(|t| {
                t.service == tool.service && t.category.as_deref() == Some(category.as_str())
            });
            if !known {
                let candidates: Vec<&str> = tools
                    .iter()
                    .filter(|t| t.service == tool.service)
                    .filter_map(|t| t.category.as_deref())
                    .collect();
                self.diags.push_help(
                    &tool.source.0,
                    tool.source.1,
                    format!(
                        "tool `{}`: no tool of service `{}` has the category `{category}`",
                        tool.full_name, tool.service
                    ),
                    did_you_mean(category, candidates),
                );
            }
        }
    }

    /// A webhook's verification key tool: a read HTTP tool of the same service.
    pub(super) fn check_webhook_keys(
        &mut self,
        services: &BTreeMap<String, (Service, ServiceFile)>,
        tools: &[Tool],
    ) {
        for (id, (service, _)) in services {
            let Some((name, _)) = service.webhook.as_ref().and_then(|w| w.public_key.as_ref())
            else {
                continue;
            };
            let ok = tools.iter().any(|t| {
                &t.full_name == name && t.risk == Risk::Read && matches!(t.action, Action::Http(_))
            });
            if !ok {
                self.diags.push(
                    &format!("catalog/{id}/service.toml"),
                    0,
                    format!(
                        "[webhook] public_key.tool `{name}` must be a read HTTP tool of the service"
                    ),
                );
            }
        }
    }

    /// Each of the search rules' `service_names` is one word, names a service of the
    /// catalog (`apollo = "leads"`) and is no service's id (which names its service
    /// already: `leads = "crm"` would take the word from the leads service).
    pub(super) fn check_service_names(
        &mut self,
        search: &RawSearch,
        services: &BTreeMap<String, (Service, ServiceFile)>,
    ) {
        let text = self.sources.get(SEARCH_RULES).unwrap_or_default();
        for (word, service) in &search.service_names {
            let line = key_line(text, "service_names", word);
            if word.is_empty()
                || !word
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            {
                self.diags.push(
                    SEARCH_RULES,
                    line,
                    format!(
                        "[service_names] `{word}` must be one lowercase word (letters and digits), as a query is read"
                    ),
                );
            }
            let stemmed = |w: &str| stem_as_read(search, w);
            if let Some(id) = services
                .keys()
                .find(|id| *id == word || stemmed(id) == stemmed(word))
            {
                self.diags.push(
                    SEARCH_RULES,
                    line,
                    format!(
                        "[service_names] `{word}` is the service id `{id}` as a query is read (the same stem): an upstream's own name must be another word"
                    ),
                );
            }
            if !services.contains_key(service) {
                let hint = hint(service, services.keys());
                self.diags.push(
                    SEARCH_RULES,
                    line,
                    format!("[service_names] `{word}` names the service `{service}`, which the catalog does not have{hint}"),
                );
            }
        }
    }

    /// Each of the search rules' `id_services` is a service of the catalog, and each
    /// of its prefixes one of `id_prefixes`, listed under one service only.
    pub(super) fn check_id_services(
        &mut self,
        search: &RawSearch,
        services: &BTreeMap<String, (Service, ServiceFile)>,
    ) {
        let text = self.sources.get(SEARCH_RULES).unwrap_or_default();
        let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
        for (service, prefixes) in &search.id_services {
            let line = key_line(text, "id_services", service);
            if !services.contains_key(service) {
                let hint = hint(service, services.keys());
                self.diags.push(
                    SEARCH_RULES,
                    line,
                    format!("[id_services] `{service}` is no service of the catalog{hint}"),
                );
            }
            for prefix in prefixes {
                if !search.id_prefixes.contains_key(prefix) {
                    let hint = hint(prefix, search.id_prefixes.keys());
                    self.diags.push(
                        SEARCH_RULES,
                        line,
                        format!(
                            "[id_services] {service}: `{prefix}` is no prefix of [id_prefixes]: say what its ids name there first{hint}"
                        ),
                    );
                }
                if let Some(first) = owner.insert(prefix, service) {
                    self.diags.push(
                        SEARCH_RULES,
                        line,
                        format!(
                            "[id_services] `{prefix}` is listed under `{first}` and `{service}`: a prefix that more than one upstream issues names no service; take it out of both"
                        ),
                    );
                }
            }
        }
    }

    /// The search rules' openings of `[actions]`: each `how_to` says a word, each
    /// `[actions.negation]` word is one word or two, and what a negated action means
    /// is one of `[actions] words`, so it is read as the query's verb.
    pub(super) fn check_action_openings(&mut self, search: &RawSearch) {
        let Some(actions) = &search.actions else {
            return;
        };
        let text = self.sources.get(SEARCH_RULES).unwrap_or_default();
        if actions
            .how_to
            .iter()
            .any(|o| o.split_whitespace().next().is_none())
        {
            self.diags.push(
                SEARCH_RULES,
                key_line(text, "actions", "how_to"),
                "[actions] how_to: an opening says no word: take the empty one out".to_string(),
            );
        }
        let Some(negation) = &actions.negation else {
            return;
        };
        for word in &negation.words {
            let count = word.split_whitespace().count();
            if !(1..=2).contains(&count) {
                self.diags.push(
                    SEARCH_RULES,
                    key_line(text, "actions.negation", "words"),
                    format!(
                        "[actions.negation] words: `{word}` must be one word or two (\"don't\", \"do not\"), as written before a verb"
                    ),
                );
            }
        }
        let stemmed = |w: &str| stem_as_read(search, w);
        let means = stemmed(&negation.means);
        if !actions.words.iter().any(|w| stemmed(w) == means) {
            let hint = hint(&negation.means, actions.words.iter());
            self.diags.push(
                SEARCH_RULES,
                key_line(text, "actions.negation", "means"),
                format!(
                    "[actions.negation] means `{}` is none of [actions] words, so it could not be read as the query's verb: list it there or mean one of them{hint}",
                    negation.means
                ),
            );
        }
    }
}

/// The search rules' file.
const SEARCH_RULES: &str = "rules/search.toml";

/// The line of `key = ...` (or `"key" = ...`) in the table `[table]` of a rules file's
/// `text`; 0 when it is not found.
fn key_line(text: &str, table: &str, key: &str) -> usize {
    let start = text.find(&format!("[{table}]")).unwrap_or(0);
    text.get(start..)
        .and_then(|t| {
            t.find(&format!("\n{key} ="))
                .or_else(|| t.find(&format!("\n\"{key}\" =")))
        })
        .map_or(0, |o| line_of(text, start + o + 1))
}

/// A word's stem as a query reads it: lowercased, the one `[stems]` keeps, else
/// Snowball's.
fn stem_as_read(search: &RawSearch, word: &str) -> String {
    let word = word.to_lowercase();
    (search.stems.get(&word).cloned()).unwrap_or_else(|| crate::catalog::search::stem(&word))
}

/// "; did you mean `x`?" for a name none of `known` is, or nothing.
fn hint<'a>(name: &str, known: impl Iterator<Item = &'a String>) -> String {
    did_you_mean(name, known.map(String::as_str)).map_or_else(String::new, |s| format!("; {s}"))
}
