//! Ranked tool search for the `find_tools` hook: a field-weighted BM25 over each tool's
//! words, built once at compile time, per service.
//!
//! A tool's words come from its native name, aliases, title, category, description and
//! path, each field with its weight from `rules/search.toml`, plus *operation words*
//! derived from its method and the shape of its path (a GET on a collection is a "list",
//! a POST on one a "create"), so a plain query such as "list issuing cards" finds
//! `GET /v1/issuing/cards` rather than the single-card read beside it. Words are split
//! at punctuation and camelCase, lowercased, stop words dropped and lightly stemmed; a
//! query word also matches its synonyms at half weight. A document's score is its BM25
//! score times the share of distinct query words it matched, so a tool that matches
//! every word outranks one that repeats a single word. When a query names an action
//! (`rules/search.toml` `[actions]`: "cancel", "refund", ...), a tool that writes and
//! names that action (or a synonym) in its name, aliases, title, path or operation
//! words keeps its score; every other tool, and every read, is scaled by `miss_factor`,
//! so a query that says what to do finds tools that do it before tools that list the
//! thing. No embedding service.

use std::collections::{BTreeMap, HashMap, HashSet};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Action, PathPart, Tool};

/// `rules/search.toml`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawSearch {
    /// BM25 term-frequency saturation.
    pub k1: f64,
    /// BM25 length normalisation (0 = none, 1 = full).
    pub b: f64,
    /// Field weights.
    pub weights: Weights,
    /// Words ignored in queries and tools.
    #[serde(default)]
    pub stopwords: Vec<String>,
    /// Query word -> words that also count for it (at half weight).
    #[serde(default)]
    pub synonyms: BTreeMap<String, Vec<String>>,
    /// Words a tool gets from its method and path shape.
    #[serde(default)]
    pub operation_words: Vec<OperationWords>,
    /// Verbs a query can name as the thing to do.
    #[serde(default)]
    pub actions: Option<Actions>,
}

/// What to do when a query names an action ("cancel a subscription", "refund a
/// charge"): tools that do it rank above tools that only list or read the thing.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Actions {
    /// The verbs (stemmed like every word).
    pub words: Vec<String>,
    /// Score factor of a tool whose name, aliases, title, path or operation words hold
    /// none of the query's verbs (nor their synonyms); between 0 and 1.
    pub miss_factor: f64,
}

/// Weight of each field.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Weights {
    /// Native name.
    pub name: f64,
    /// Aliases.
    pub aliases: f64,
    /// Title.
    pub title: f64,
    /// Category.
    pub category: f64,
    /// Description.
    pub description: f64,
    /// Literal path segments.
    pub path: f64,
    /// Operation words.
    pub operation: f64,
}

/// Words for tools of one method whose path ends one way.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct OperationWords {
    /// HTTP method (upper case).
    pub method: String,
    /// `collection` (path ends in a literal), `item` (ends in a placeholder) or `any`.
    #[serde(default = "any_target")]
    pub target: String,
    /// The words.
    pub words: Vec<String>,
}

fn any_target() -> String {
    "any".into()
}

/// The compiled search: tokenizer settings and one index per service.
#[derive(Debug, Default)]
pub struct SearchIndex {
    k1: f64,
    b: f64,
    actions: HashSet<String>,
    action_miss: f64,
    stopwords: HashSet<String>,
    synonyms: HashMap<String, Vec<String>>,
    services: HashMap<String, ServiceIndex>,
    /// Document frequencies and lengths over every service, for searches across them.
    global: Stats,
}

/// What BM25 needs of a corpus besides its documents.
#[derive(Debug, Default)]
struct Stats {
    df: HashMap<String, u32>,
    docs: usize,
    avg_len: f64,
}

#[derive(Debug, Default)]
struct ServiceIndex {
    docs: Vec<Doc>,
    stats: Stats,
}

#[derive(Debug)]
struct Doc {
    tool: usize,
    terms: HashMap<String, f64>,
    /// Words of the fields that say what the tool does (not its description).
    verbs: HashSet<String>,
    len: f64,
}

/// One search hit: the tool's position in `Catalog::tools` and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Index into the catalog's tools.
    pub tool: usize,
    /// Score (higher is better).
    pub score: f64,
}

impl SearchIndex {
    /// Builds the index over every tool (grouped by service).
    pub fn build(raw: &RawSearch, tools: &[Tool]) -> Self {
        let mut index = Self {
            k1: raw.k1,
            b: raw.b,
            actions: HashSet::new(),
            action_miss: raw.actions.as_ref().map_or(1.0, |a| a.miss_factor),
            stopwords: raw.stopwords.iter().map(|w| w.to_lowercase()).collect(),
            synonyms: HashMap::new(),
            services: HashMap::new(),
            global: Stats::default(),
        };
        index.synonyms = raw
            .synonyms
            .iter()
            .map(|(word, others)| {
                let stems = others.iter().flat_map(|o| index.words(o)).collect();
                (
                    index.words(word).into_iter().next().unwrap_or_default(),
                    stems,
                )
            })
            .collect();
        index.actions = raw
            .actions
            .iter()
            .flat_map(|a| a.words.iter())
            .flat_map(|w| index.words(w))
            .collect();
        let w = raw.weights;
        for (i, tool) in tools.iter().enumerate() {
            let mut terms: HashMap<String, f64> = HashMap::new();
            let mut verbs: HashSet<String> = HashSet::new();
            // A read does none of the actions a query can name: its path and name may
            // say "refunds" or "cancel", but calling it changes nothing.
            let acts = tool.risk == crate::catalog::descriptor::Risk::Write;
            // A word counts once per field: `/charges/{charge}/refunds/{refund}` does not
            // outrank `/refunds` for "refund" by repeating it.
            let mut add = |text: &str, weight: f64, says_what: bool, index: &Self| {
                let mut words = index.words(text);
                words.sort_unstable();
                words.dedup();
                for word in words {
                    if acts && says_what && index.actions.contains(&word) {
                        verbs.insert(word.clone());
                    }
                    *terms.entry(word).or_default() += weight;
                }
            };
            add(&tool.name, w.name, true, &index);
            for alias in &tool.aliases {
                add(alias, w.aliases, true, &index);
            }
            add(&tool.title, w.title, true, &index);
            if let Some(category) = &tool.category {
                add(category, w.category, false, &index);
            }
            add(&tool.description, w.description, false, &index);
            if let Action::Http(plan) = &tool.action {
                let literals: Vec<&str> = plan
                    .segments
                    .iter()
                    .filter_map(|part| match part {
                        PathPart::Literal(text) => Some(text.as_str()),
                        PathPart::Param(_) => None,
                    })
                    .collect();
                add(&literals.join(" "), w.path, true, &index);
                // A trailing `/` is not a segment: `/contacts/` is a collection.
                let target =
                    match plan.segments.iter().rev().find(
                        |p| !matches!(p, PathPart::Literal(t) if t.trim_matches('/').is_empty()),
                    ) {
                        Some(PathPart::Param(_)) => "item",
                        _ => "collection",
                    };
                let words: Vec<&str> = raw
                    .operation_words
                    .iter()
                    .filter(|rule| {
                        rule.method.eq_ignore_ascii_case(plan.method.as_str())
                            && (rule.target == "any" || rule.target == target)
                    })
                    .flat_map(|rule| rule.words.iter().map(String::as_str))
                    .collect();
                add(&words.join(" "), w.operation, true, &index);
            }
            let len = terms.values().sum();
            let service = index.services.entry(tool.service.clone()).or_default();
            for term in terms.keys() {
                *service.stats.df.entry(term.clone()).or_default() += 1;
            }
            service.docs.push(Doc {
                tool: i,
                terms,
                verbs,
                len,
            });
        }
        let mut total_len = 0.0;
        for service in index.services.values_mut() {
            let total: f64 = service.docs.iter().map(|d| d.len).sum();
            service.stats.docs = service.docs.len();
            service.stats.avg_len = total / (service.docs.len().max(1) as f64);
            total_len += total;
            index.global.docs += service.docs.len();
            for (term, df) in &service.stats.df {
                *index.global.df.entry(term.clone()).or_default() += df;
            }
        }
        index.global.avg_len = total_len / (index.global.docs.max(1) as f64);
        index
    }

    /// Words of a text: split at punctuation and camelCase, lowercased, stop words
    /// dropped, stemmed.
    pub fn words(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut current = String::new();
        let mut prev_lower = false;
        for c in text.chars() {
            if c.is_alphanumeric() {
                if c.is_uppercase() && prev_lower {
                    self.push_word(&mut out, &mut current);
                }
                prev_lower = c.is_lowercase() || c.is_ascii_digit();
                current.extend(c.to_lowercase());
            } else {
                prev_lower = false;
                self.push_word(&mut out, &mut current);
            }
        }
        self.push_word(&mut out, &mut current);
        out
    }

    fn push_word(&self, out: &mut Vec<String>, current: &mut String) {
        if !current.is_empty() && !self.stopwords.contains(current.as_str()) {
            out.push(stem(current));
        }
        current.clear();
    }

    /// Ranks the tools of one service for a query; `keep` filters candidates.
    pub fn search(&self, service: &str, query: &str, keep: impl Fn(usize) -> bool) -> Vec<Hit> {
        let Some(index) = self.services.get(service) else {
            return Vec::new();
        };
        self.rank(index.docs.iter(), &index.stats, query, keep)
    }

    /// Ranks the tools of every service (or of one, scored against every service's
    /// words, so the scores of two services compare): what the MCP discovery
    /// `find_tools` uses.
    pub fn search_all(
        &self,
        service: Option<&str>,
        query: &str,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<Hit> {
        let docs = self
            .services
            .iter()
            .filter(|(id, _)| service.is_none_or(|s| s == id.as_str()))
            .flat_map(|(_, index)| index.docs.iter());
        self.rank(docs, &self.global, query, keep)
    }

    fn rank<'a>(
        &self,
        docs: impl Iterator<Item = &'a Doc>,
        stats: &Stats,
        query: &str,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<Hit> {
        let mut query_words = self.words(query);
        query_words.dedup();
        let distinct: HashSet<&String> = query_words.iter().collect();
        if distinct.is_empty() {
            return Vec::new();
        }
        let n = stats.docs as f64;
        let avg_len = stats.avg_len;
        let idf = |term: &str| {
            let df = f64::from(stats.df.get(term).copied().unwrap_or(0));
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        };
        // Per query word: the terms that count for it and their weights, computed once.
        // A synonym weighs no more than the word asked for: a rare synonym ("add") must
        // not outrank the common word itself ("create").
        let weighted: Vec<Vec<(&str, f64)>> = distinct
            .iter()
            .map(|word| {
                let own_idf = idf(word);
                std::iter::once((word.as_str(), own_idf))
                    .chain(
                        self.synonyms
                            .get(word.as_str())
                            .into_iter()
                            .flatten()
                            .map(|s| (s.as_str(), 0.5 * idf(s).min(own_idf))),
                    )
                    .collect()
            })
            .collect();
        // The verbs the query names, each with its synonyms that are verbs too.
        let asked: Vec<Vec<&str>> = distinct
            .iter()
            .filter(|w| self.actions.contains(w.as_str()))
            .map(|w| {
                std::iter::once(w.as_str())
                    .chain(
                        self.synonyms
                            .get(w.as_str())
                            .into_iter()
                            .flatten()
                            .map(String::as_str)
                            .filter(|s| self.actions.contains(*s)),
                    )
                    .collect()
            })
            .collect();
        let mut hits = Vec::new();
        for doc in docs {
            if !keep(doc.tool) {
                continue;
            }
            let norm = self.k1 * (1.0 - self.b + self.b * doc.len / avg_len.max(1e-9));
            let mut score = 0.0;
            let mut matched = 0usize;
            for candidates in &weighted {
                let mut best = 0.0f64;
                for &(term, weight) in candidates {
                    if let Some(&tf) = doc.terms.get(term) {
                        let part = weight * tf * (self.k1 + 1.0) / (tf + norm);
                        best = best.max(part);
                    }
                }
                if best > 0.0 {
                    matched += 1;
                    score += best;
                }
            }
            if matched > 0 {
                let coverage = matched as f64 / distinct.len() as f64;
                let does_it = asked
                    .iter()
                    .all(|verb| verb.iter().any(|v| doc.verbs.contains(*v)));
                let action = if does_it { 1.0 } else { self.action_miss };
                hits.push(Hit {
                    tool: doc.tool,
                    score: score * coverage * action,
                });
            }
        }
        // Ties keep catalog order (tools are sorted by name), so results are stable.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool)));
        hits
    }
}

/// A light English stemmer: plurals, `-ing`, `-ed` and a final `e`, so "cards"/"card",
/// "creating"/"create"/"created" and "prices"/"pricing" meet.
pub fn stem(word: &str) -> String {
    let mut w = word.to_string();
    let n = w.chars().count();
    if n > 4 && w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.ends_with("sses") {
        w.truncate(w.len() - 2);
    } else if n > 3
        && w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
    {
        w.truncate(w.len() - 1);
    }
    if w.chars().count() > 5 && w.ends_with("ing") {
        w.truncate(w.len() - 3);
    } else if w.chars().count() > 4 && w.ends_with("ed") {
        w.truncate(w.len() - 2);
    }
    if w.chars().count() > 4 && w.ends_with('e') {
        w.truncate(w.len() - 1);
    }
    w
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[test]
    fn stems_meet() {
        for (a, b) in [
            ("cards", "card"),
            ("creating", "create"),
            ("created", "create"),
            ("prices", "pricing"),
            ("companies", "company"),
            ("addresses", "address"),
            ("status", "status"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
    }
}
