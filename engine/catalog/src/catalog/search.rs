//! Ranked tool search for the `find_tools` hook: BM25F over each tool's fields, built
//! once at compile time, per service and across services.
//!
//! A tool's fields are its native name, aliases, title, category, description, literal
//! path segments, *operation words* (from its method and path shape: a GET on a
//! collection is a "list", a POST on one a "create"), its resource (the last path
//! segment that is not an action) and its argument names; each has its weight from
//! `rules/search.toml` and its own length normalisation, so a long description never
//! weakens a match in the name. Words are split at punctuation and camelCase,
//! lowercased, stop words dropped and Snowball-stemmed (some stems kept whole); each
//! word is stored once, as a term id. A query's phrases and ids are read as the
//! catalog's words first; a query word also matches its synonyms at half weight. A
//! score is the BM25F sum times the share of distinct query words matched. A query that
//! opens with a read verb or a question asks to read (writes scaled by `miss_factor`);
//! else its first action word is the verb, and tools that do not name it in the fields
//! that say what they do are scaled instead. A query word naming a service is not
//! matched and scales the other services' tools. No embedding service.

use std::collections::{BTreeMap, HashMap, HashSet};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Action, PathPart, Tool};

mod why;
pub use why::Why;

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
    /// Words a user says for a thing the tools name otherwise ("money back" ->
    /// "refund"): in a query, the phrase's words are replaced by these.
    #[serde(default)]
    pub phrases: BTreeMap<String, Vec<String>>,
    /// Id prefix -> what an id of that form names (`ch_3Mml...` is a charge): a query
    /// word `<prefix>_<...digits...>` is read as these words; an id of an unknown
    /// prefix is dropped (it names no tool).
    #[serde(default)]
    pub id_prefixes: BTreeMap<String, String>,
    /// Score factor of a tool that takes no id of the kind a query's id names ("when
    /// will payout po_1Nq... land?" asks about one payout: the tool that reads a payout
    /// ranks above the one that lists them). A tool takes a kind of id when a path
    /// placeholder follows the kind's segment (`/v1/payouts/{payout}`) or an argument
    /// is named for it (`charge`). Between 0 and 1; 1 (the default) turns it off.
    #[serde(default = "one")]
    pub id_miss_factor: f64,
    /// What a value in a user's sentence is read as: an e-mail address, a URL, a domain
    /// name (each a hint of what the tool takes, or nothing); a number, an amount, a
    /// date, a time or an IP address is never a search word.
    #[serde(default)]
    pub values: Values,
    /// Words the stemmer would merge with others, kept as these stems ("customer"
    /// is not "custom").
    #[serde(default)]
    pub stems: BTreeMap<String, String>,
    /// Score factor of the tools of other services when a query word names a service
    /// ("list crm users"); the word itself is then not matched. Between 0 and 1; 1
    /// (the default) turns it off.
    #[serde(default = "one")]
    pub service_miss_factor: f64,
    /// Words a tool gets from its method and path shape.
    #[serde(default)]
    pub operation_words: Vec<OperationWords>,
    /// Verbs a query can name as the thing to do.
    #[serde(default)]
    pub actions: Option<Actions>,
}

/// The words a value in a query is read as (`[values]` of `rules/search.toml`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Values {
    /// An e-mail address (`jane@example.com`).
    #[serde(default)]
    pub email: String,
    /// A URL (`https://...`).
    #[serde(default)]
    pub url: String,
    /// A domain name (`example.com`, `www.example.com`).
    #[serde(default)]
    pub domain: String,
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
    /// Verbs that ask to read ("list", "show") and question words ("which"): when one
    /// opens the query or comes before any action word, the query asks to read ("list
    /// refunds", "which plugins are installed?") and writes score `miss_factor`.
    #[serde(default)]
    pub read_words: Vec<String>,
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
    /// The resource: the last literal path segment that is not an action
    /// (`payment_intents` of `/v1/payment_intents/{intent}/cancel`).
    #[serde(default)]
    pub resource: f64,
    /// The names of the arguments (`email`, `evidence`).
    #[serde(default)]
    pub arguments: f64,
    /// The tool's intents (`catalog/<service>/intents.toml`): requests in a user's
    /// words, read as a query is (phrases, ids and values as the rules say).
    #[serde(default)]
    pub intents: f64,
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

fn one() -> f64 {
    1.0
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
    /// Stemmed read verbs (see [`Actions::read_words`]).
    reads: HashSet<String>,
    /// The read verbs and question words as written, for a query's first word.
    read_openers: HashSet<String>,
    action_miss: f64,
    stopwords: HashSet<String>,
    synonyms: HashMap<String, Vec<String>>,
    /// Stemmed phrase -> stemmed words it stands for, longest phrases first.
    phrases: Vec<(Vec<String>, Vec<String>)>,
    /// Id prefix -> the words an id of that form stands for.
    id_prefixes: HashMap<String, String>,
    /// See [`RawSearch::id_miss_factor`].
    id_miss: f64,
    /// What a value in a query is read as.
    values: Values,
    /// Word -> its stem, where the stemmer's would merge it with another word.
    stems: HashMap<String, String>,
    /// Stemmed service id -> the service it names.
    service_words: HashMap<String, String>,
    service_miss: f64,
    services: HashMap<String, ServiceIndex>,
    /// Document frequencies over every service, for searches across them.
    global: Stats,
    /// Every word a tool holds -> its term id.
    vocabulary: HashMap<String, u32>,
    /// A stem -> its shortest written form in the catalog ("charg" -> "charge").
    spelled: HashMap<String, String>,
    /// A tool (index into the catalog's tools) -> each of its intents and the intent's
    /// distinct words, for `why`.
    intents: HashMap<usize, Vec<(String, Vec<String>)>>,
}

/// What BM25 needs of a corpus besides its documents.
#[derive(Debug, Default)]
struct Stats {
    /// Term id -> how many documents hold it.
    df: HashMap<u32, u32>,
    docs: usize,
}

/// A tool's fields: name, aliases, title, category, description, path, operation words,
/// resource, argument names, intents.
const FIELDS: usize = 10;

/// Which fields say what a tool does (an action word there is one it performs); the
/// category, the description, the arguments and the intents only talk about it.
const SAYS_WHAT: [bool; FIELDS] = [
    true, true, true, false, false, true, true, true, false, false,
];

#[derive(Debug, Default)]
struct ServiceIndex {
    docs: Vec<Doc>,
    stats: Stats,
}

/// One tool's terms. Terms are ids of the index's vocabulary (each word stored once,
/// not once per tool), kept sorted for a binary search per query word.
#[derive(Debug)]
struct Doc {
    tool: usize,
    /// `(term id, BM25F term frequency)`, sorted by id.
    terms: Vec<(u32, f64)>,
    /// Action words of the fields that say what the tool does (term ids, sorted).
    verbs: Vec<u32>,
    /// Whether it writes.
    writes: bool,
    /// The kinds of id it takes (term ids, sorted): the segment before each path
    /// placeholder and the argument names.
    takes: Vec<u32>,
}

/// One search hit: the tool's position in `Catalog::tools`, its score, and which of
/// the query's distinct words it matched ([`SearchIndex::why`] says them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Index into the catalog's tools.
    pub tool: usize,
    /// Score (higher is better).
    pub score: f64,
    /// Bit i: the i-th distinct query word (sorted) matched as itself.
    pub own: u64,
    /// Bit i: the i-th distinct query word matched only through a synonym.
    pub related: u64,
}

/// Each stem spelled as a person reads it, from the catalog's `written -> stem` pairs:
/// its shortest written form ("charg" is "charge"), for `why`.
fn spelled(stems: HashMap<String, String>) -> HashMap<String, String> {
    let mut spelled: HashMap<String, String> = HashMap::new();
    for (written, stemmed) in stems {
        let kept = spelled.entry(stemmed).or_insert_with(|| written.clone());
        if (written.len(), &written) < (kept.len(), &*kept) {
            *kept = written;
        }
    }
    spelled
}

/// The intents field's position in [`FIELDS`].
const INTENTS: usize = 9;

/// Each field's average length in words over the catalog (at least 1). The intents'
/// average is over the tools that have some: few tools do, and over all tools any
/// tool's intents would read as overlong.
fn average_lengths(fielded: &[[Vec<String>; FIELDS]]) -> [f64; FIELDS] {
    let mut sum = [0.0f64; FIELDS];
    let mut count = [0usize; FIELDS];
    for fields in fielded {
        for (f, words) in fields.iter().enumerate() {
            sum[f] += words.len() as f64;
            count[f] += usize::from(f != INTENTS || !words.is_empty());
        }
    }
    let mut avg = [1.0f64; FIELDS];
    for (f, a) in avg.iter_mut().enumerate() {
        *a = (sum[f] / count[f].max(1) as f64).max(1.0);
    }
    avg
}

impl SearchIndex {
    /// Builds the index over every tool (grouped by service).
    pub fn build(raw: &RawSearch, tools: &[Tool]) -> Self {
        let mut index = Self {
            k1: raw.k1,
            b: raw.b,
            actions: HashSet::new(),
            reads: HashSet::new(),
            read_openers: raw
                .actions
                .iter()
                .flat_map(|a| a.read_words.iter())
                .map(|w| w.to_lowercase())
                .collect(),
            action_miss: raw.actions.as_ref().map_or(1.0, |a| a.miss_factor),
            stopwords: raw.stopwords.iter().map(|w| w.to_lowercase()).collect(),
            synonyms: HashMap::new(),
            phrases: Vec::new(),
            id_prefixes: raw.id_prefixes.clone().into_iter().collect(),
            id_miss: raw.id_miss_factor,
            values: raw.values.clone(),
            stems: raw
                .stems
                .iter()
                .map(|(w, s)| (w.to_lowercase(), s.to_lowercase()))
                .collect(),
            service_words: HashMap::new(),
            service_miss: raw.service_miss_factor,
            services: HashMap::new(),
            global: Stats::default(),
            vocabulary: HashMap::new(),
            spelled: HashMap::new(),
            intents: HashMap::new(),
        };
        index.phrases = raw
            .phrases
            .iter()
            .map(|(phrase, words)| {
                let words = words.iter().flat_map(|w| index.words(w)).collect();
                (index.words(phrase), words)
            })
            .filter(|(phrase, _)| !phrase.is_empty())
            .collect();
        index
            .phrases
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
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
        let actions = raw.actions.as_ref();
        index.actions = index.stemmed(actions.map(|a| a.words.as_slice()));
        index.service_words = tools
            .iter()
            .filter_map(|t| Some((index.words(&t.service).pop()?, t.service.clone())))
            .collect();
        index.reads = index.stemmed(actions.map(|a| a.read_words.as_slice()));
        let w = raw.weights;
        let weights = [
            w.name,
            w.aliases,
            w.title,
            w.category,
            w.description,
            w.path,
            w.operation,
            w.resource,
            w.arguments,
            w.intents,
        ];
        // First the words of each tool's fields (a word counts once per field:
        // `/charges/{charge}/refunds/{refund}` does not outrank `/refunds` for "refund"
        // by repeating it), then each field's average length over the catalog.
        // The catalog says the same words many times over (about 25 uses of each
        // distinct word): each is stemmed once.
        let mut stems = HashMap::new();
        let fielded: Vec<[Vec<String>; FIELDS]> = tools
            .iter()
            .map(|tool| index.fields(raw, tool, &mut stems))
            .collect();
        let avg = average_lengths(&fielded);
        index.spelled = spelled(stems);
        index.intents = index.intents_of(tools);
        for (i, (tool, fields)) in tools.iter().zip(fielded).enumerate() {
            let doc = index.doc(i, tool, &fields, &avg, &weights);
            let service = index.services.entry(tool.service.clone()).or_default();
            for &(id, _) in &doc.terms {
                *service.stats.df.entry(id).or_default() += 1;
            }
            service.docs.push(doc);
        }
        for service in index.services.values_mut() {
            service.stats.docs = service.docs.len();
            index.global.docs += service.docs.len();
            for (&id, df) in &service.stats.df {
                *index.global.df.entry(id).or_default() += df;
            }
        }
        index
    }

    /// One tool's document: its terms with their BM25F frequencies (each word of
    /// `fields` given a term id of the vocabulary), its verbs and the ids it takes.
    fn doc(
        &mut self,
        i: usize,
        tool: &Tool,
        fields: &[Vec<String>; FIELDS],
        avg: &[f64; FIELDS],
        weights: &[f64; FIELDS],
    ) -> Doc {
        // BM25F: a term's frequency is the sum over fields of the field's weight, each
        // normalised by that field's own length, so a long description weakens what
        // the description says, never a match in the name.
        let mut terms: HashMap<u32, f64> = HashMap::new();
        let mut verbs: Vec<u32> = Vec::new();
        // A read does none of the actions a query can name: its path and name may say
        // "refunds" or "cancel", but calling it changes nothing.
        let acts = tool.risk == crate::catalog::descriptor::Risk::Write;
        for (f, words) in fields.iter().enumerate() {
            let norm = 1.0 - self.b + self.b * words.len() as f64 / avg[f];
            for word in words {
                let next = u32::try_from(self.vocabulary.len()).unwrap_or(u32::MAX);
                let id = *self.vocabulary.entry(word.clone()).or_insert(next);
                if acts && SAYS_WHAT[f] && self.actions.contains(word) {
                    verbs.push(id);
                }
                *terms.entry(id).or_default() += weights[f] / norm;
            }
        }
        let mut terms: Vec<(u32, f64)> = terms.into_iter().collect();
        terms.sort_unstable_by_key(|&(id, _)| id);
        verbs.sort_unstable();
        verbs.dedup();
        let mut takes: Vec<u32> = self
            .takes(tool)
            .iter()
            .filter_map(|w| self.vocabulary.get(w).copied())
            .collect();
        takes.sort_unstable();
        takes.dedup();
        Doc {
            tool: i,
            terms,
            verbs,
            writes: acts,
            takes,
        }
    }

    /// Each tool with intents -> each intent and its distinct words (for `why`).
    fn intents_of(&self, tools: &[Tool]) -> HashMap<usize, Vec<(String, Vec<String>)>> {
        tools
            .iter()
            .enumerate()
            .filter(|(_, tool)| !tool.intents.is_empty())
            .map(|(i, tool)| {
                let said = tool
                    .intents
                    .iter()
                    .map(|intent| {
                        let words = self.intent_words(std::slice::from_ref(intent));
                        (intent.clone(), words)
                    })
                    .collect();
                (i, said)
            })
            .collect()
    }

    /// The stems of a word list of the rules (absent: none).
    fn stemmed(&self, words: Option<&[String]>) -> HashSet<String> {
        words
            .into_iter()
            .flatten()
            .flat_map(|w| self.words(w))
            .collect()
    }

    /// The distinct words of each field of a tool, in [`FIELDS`] order; `stems` keeps
    /// each word's stem across tools.
    fn fields(
        &self,
        raw: &RawSearch,
        tool: &Tool,
        stems: &mut HashMap<String, String>,
    ) -> [Vec<String>; FIELDS] {
        let mut words = |text: &str| {
            let mut words = self.words_with(text, Some(&mut *stems));
            words.sort_unstable();
            words.dedup();
            words
        };
        let (path, operation, resource) = match &tool.action {
            Action::Http(plan) => {
                let literals: Vec<&str> = plan
                    .segments
                    .iter()
                    .filter_map(|part| match part {
                        PathPart::Literal(text) => Some(text.as_str()),
                        PathPart::Param(_) => None,
                    })
                    .collect();
                // A trailing `/` is not a segment: `/contacts/` is a collection.
                let target =
                    match plan.segments.iter().rev().find(
                        |p| !matches!(p, PathPart::Literal(t) if t.trim_matches('/').is_empty()),
                    ) {
                        Some(PathPart::Param(_)) => "item",
                        _ => "collection",
                    };
                let operation: Vec<&str> = raw
                    .operation_words
                    .iter()
                    .filter(|rule| {
                        rule.method.eq_ignore_ascii_case(plan.method.as_str())
                            && (rule.target == "any" || rule.target == target)
                    })
                    .flat_map(|rule| rule.words.iter().map(String::as_str))
                    .collect();
                // The thing acted on: the last literal segment that is not itself an
                // action (`cancel`, `capture`).
                let resource = literals
                    .iter()
                    .rev()
                    .map(|l| words(l))
                    .find(|w| !w.is_empty() && !w.iter().all(|w| self.actions.contains(w)))
                    .unwrap_or_default();
                (
                    words(&literals.join(" ")),
                    words(&operation.join(" ")),
                    resource,
                )
            }
            // An MCP tool's own name on its server is searched as its path is.
            Action::Mcp(plan) => (words(&plan.tool), Vec::new(), Vec::new()),
            Action::Hook(_) => (Vec::new(), Vec::new(), Vec::new()),
        };
        [
            words(&tool.name),
            words(&tool.aliases.join(" ")),
            words(&tool.title),
            words(tool.category.as_deref().unwrap_or_default()),
            words(&tool.description),
            path,
            operation,
            resource,
            words(&tool.argument_names.join(" ")),
            self.intent_words(&tool.intents),
        ]
    }

    /// The words of the kinds of id a tool takes: the last segment of the literal
    /// before each path placeholder (`payouts` of `/v1/payouts/{payout}`) and its
    /// argument names.
    fn takes(&self, tool: &Tool) -> Vec<String> {
        let mut words = self.words(&tool.argument_names.join(" "));
        if let Action::Http(plan) = &tool.action {
            for pair in plan.segments.windows(2) {
                if let [PathPart::Literal(text), PathPart::Param(_)] = pair {
                    let last = text.trim_end_matches('/').rsplit('/').next();
                    words.extend(self.words(last.unwrap_or_default()));
                }
            }
        }
        words
    }

    /// The words each id of a query names, as term ids (`po_1Nq...` -> "payout"); an
    /// id whose words no tool holds is left out.
    fn query_ids(&self, query: &str) -> Vec<Vec<u32>> {
        query
            .split_whitespace()
            .filter_map(|token| {
                let bare = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
                let named = self.id_prefixes.get(id_prefix(bare)?)?;
                self.words(named)
                    .iter()
                    .map(|w| self.vocabulary.get(w).copied())
                    .collect()
            })
            .collect()
    }

    /// The distinct words of a tool's intents, each read as a query is (its phrases,
    /// ids and values as the rules say), so an intent and a request in the same words
    /// meet.
    fn intent_words(&self, intents: &[String]) -> Vec<String> {
        let mut words: Vec<String> = intents.iter().flat_map(|i| self.query_words(i)).collect();
        words.sort_unstable();
        words.dedup();
        words
    }

    /// Words of a text: split at punctuation and camelCase, lowercased, stop words
    /// dropped, stemmed.
    pub fn words(&self, text: &str) -> Vec<String> {
        self.words_with(text, None)
    }

    /// [`Self::words`], looking each stem up in `memo` first and keeping it there.
    fn words_with(&self, text: &str, memo: Option<&mut HashMap<String, String>>) -> Vec<String> {
        let mut out = Vec::new();
        self.each_word(text, memo, |_, stem| out.push(stem));
        out
    }

    /// Each word of `text` (as [`Self::words`] reads it), lowercased as written and
    /// stemmed.
    fn each_word(
        &self,
        text: &str,
        mut memo: Option<&mut HashMap<String, String>>,
        mut each: impl FnMut(&str, String),
    ) {
        let mut current = String::new();
        let mut prev_lower = false;
        for c in text.chars() {
            if c.is_alphanumeric() {
                if c.is_uppercase() && prev_lower {
                    self.push_word(&mut current, memo.as_deref_mut(), &mut each);
                }
                prev_lower = c.is_lowercase() || c.is_ascii_digit();
                current.extend(c.to_lowercase());
            } else {
                prev_lower = false;
                self.push_word(&mut current, memo.as_deref_mut(), &mut each);
            }
        }
        self.push_word(&mut current, memo, &mut each);
    }

    fn push_word(
        &self,
        current: &mut String,
        memo: Option<&mut HashMap<String, String>>,
        each: &mut impl FnMut(&str, String),
    ) {
        if !current.is_empty() && !self.stopwords.contains(current.as_str()) {
            let stemmed = match (self.stems.get(current.as_str()), memo) {
                (Some(kept), _) => kept.clone(),
                (None, None) => stem(current),
                (None, Some(memo)) => match memo.get(current.as_str()) {
                    Some(stemmed) => stemmed.clone(),
                    None => {
                        let stemmed = stem(current);
                        memo.insert(current.clone(), stemmed.clone());
                        stemmed
                    }
                },
            };
            each(current, stemmed);
        }
        current.clear();
    }

    /// The words of a query, each phrase the rules know replaced by the words it stands
    /// for.
    pub fn query_words(&self, query: &str) -> Vec<String> {
        let mut text = String::with_capacity(query.len());
        for token in query.split_whitespace() {
            let bare = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
            if let Some(prefix) = id_prefix(bare) {
                if let Some(named) = self.id_prefixes.get(prefix) {
                    text.push_str(named);
                }
            } else if let Some(value) = self.value(token) {
                text.push_str(value);
            } else {
                text.push_str(token);
            }
            text.push(' ');
        }
        let mut words = self.words(&text);
        for (phrase, replacement) in &self.phrases {
            let mut i = 0;
            while i + phrase.len() <= words.len() {
                if words[i..i + phrase.len()] == phrase[..] {
                    words.splice(i..i + phrase.len(), replacement.iter().cloned());
                    // A phrase that stands for nothing ("set up") leaves the next word
                    // where the phrase began.
                    i += replacement.len();
                } else {
                    i += 1;
                }
            }
        }
        words
    }

    /// Ranks the tools of one service for a query; `keep` filters candidates.
    pub fn search(&self, service: &str, query: &str, keep: impl Fn(usize) -> bool) -> Vec<Hit> {
        let Some(index) = self.services.get(service) else {
            return Vec::new();
        };
        let docs = index.docs.iter().map(|doc| (service, doc));
        self.rank(docs, &index.stats, query, keep)
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
            .flat_map(|(id, index)| index.docs.iter().map(move |doc| (id.as_str(), doc)));
        self.rank(docs, &self.global, query, keep)
    }

    /// What a query asks: to read (`true`), or the action its verb names. A question
    /// ("which plugins are installed?") asks to read, as does a query that opens with a
    /// read verb ("list refunds", "show me every refund"); then writes score
    /// `miss_factor` of what they would. Otherwise the query's verb is its first action
    /// word ("give the customer their money back" asks to refund; "my site shows an
    /// old page, flush its cache" to flush).
    fn intent(&self, query: &str, query_words: &[String]) -> (bool, Option<String>) {
        let opener = query
            .split_whitespace()
            .next()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .unwrap_or_default();
        let reading = self.read_openers.contains(&opener)
            || query_words
                .first()
                .is_some_and(|w| self.reads.contains(w.as_str()));
        let verb = if reading {
            None
        } else {
            query_words
                .iter()
                .find(|w| self.actions.contains(w.as_str()))
                .cloned()
        };
        (reading, verb)
    }

    /// A query's words, once each and sorted (so sums are added in one order and equal
    /// scores tie exactly), and the services it names: a word naming a service says
    /// where to look, not what to match (it is left out when other words remain).
    fn distinct(&self, mut query_words: Vec<String>) -> (Vec<String>, HashSet<&str>) {
        let named: HashSet<&str> = query_words
            .iter()
            .filter_map(|w| self.service_words.get(w.as_str()).map(String::as_str))
            .collect();
        if !named.is_empty()
            && self.service_miss < 1.0
            && query_words
                .iter()
                .any(|w| !self.service_words.contains_key(w.as_str()))
        {
            query_words.retain(|w| !self.service_words.contains_key(w.as_str()));
        }
        query_words.sort_unstable();
        query_words.dedup();
        (query_words, named)
    }

    /// Ranks `docs`, each with its service's id.
    fn rank<'a>(
        &self,
        docs: impl Iterator<Item = (&'a str, &'a Doc)>,
        stats: &Stats,
        query: &str,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<Hit> {
        let query_words = self.query_words(query);
        let (reading, verb) = self.intent(query, &query_words);
        let (distinct, named) = self.distinct(query_words);
        if distinct.is_empty() {
            return Vec::new();
        }
        let n = stats.docs as f64;
        let idf = |id: u32| {
            let df = f64::from(stats.df.get(&id).copied().unwrap_or(0));
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        };
        // A word no tool holds matches nothing (it still counts for coverage).
        let id = |word: &str| self.vocabulary.get(word).copied();
        // Per query word: the terms that count for it and their weights, computed once.
        // A synonym weighs no more than the word asked for: a rare synonym ("add") must
        // not outrank the common word itself ("create").
        let weighted: Vec<Vec<(u32, f64)>> = distinct
            .iter()
            .map(|word| {
                let own_idf = id(word).map_or(f64::INFINITY, idf);
                id(word)
                    .map(|own| (own, own_idf))
                    .into_iter()
                    .chain(
                        self.synonyms
                            .get(word.as_str())
                            .into_iter()
                            .flatten()
                            .filter_map(|s| id(s))
                            .map(|s| (s, 0.5 * idf(s).min(own_idf))),
                    )
                    .collect()
            })
            .collect();
        // The verb the query names, with its synonyms that are verbs too.
        let asked: Vec<Vec<u32>> = verb
            .iter()
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
                    .filter_map(id)
                    .collect()
            })
            .collect();
        // Each query word's own term, where a tool holds it.
        let owns: Vec<Option<u32>> = distinct.iter().map(|w| id(w)).collect();
        let ids = if self.id_miss < 1.0 {
            self.query_ids(query)
        } else {
            Vec::new()
        };
        let mut hits = Vec::new();
        for (service, doc) in docs {
            if !keep(doc.tool) {
                continue;
            }
            let mut score = 0.0;
            let mut matched = 0usize;
            let (mut own, mut related) = (0u64, 0u64);
            for (i, candidates) in weighted.iter().enumerate() {
                let mut best = 0.0f64;
                let mut itself = false;
                for &(term, weight) in candidates {
                    if let Ok(at) = doc.terms.binary_search_by_key(&term, |&(id, _)| id) {
                        let tf = doc.terms[at].1;
                        let part = weight * tf * (self.k1 + 1.0) / (tf + self.k1);
                        if part > best {
                            best = part;
                            itself = owns.get(i).copied().flatten() == Some(term);
                        }
                    }
                }
                if best > 0.0 {
                    matched += 1;
                    score += best;
                    let bit = 1u64.checked_shl(i as u32).unwrap_or(0);
                    if itself {
                        own |= bit;
                    } else {
                        related |= bit;
                    }
                }
            }
            if matched > 0 {
                let coverage = matched as f64 / distinct.len() as f64;
                let does_it = asked
                    .iter()
                    .all(|verb| verb.iter().any(|v| doc.verbs.binary_search(v).is_ok()));
                let action = if does_it && !(reading && doc.writes) {
                    1.0
                } else {
                    self.action_miss
                };
                let place = if named.is_empty() || named.contains(service) {
                    1.0
                } else {
                    self.service_miss
                };
                let takes = ids
                    .iter()
                    .all(|words| words.iter().all(|w| doc.takes.binary_search(w).is_ok()));
                let target = if takes { 1.0 } else { self.id_miss };
                hits.push(Hit {
                    tool: doc.tool,
                    score: score * coverage * action * place * target,
                    own,
                    related,
                });
            }
        }
        // Ties keep catalog order (tools are sorted by name), so results are stable.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool)));
        hits
    }
}

impl SearchIndex {
    /// What a value in a query is read as, when `token` is one: an e-mail address, a
    /// URL or a domain name its hint words; a number, an amount, a date, a time or an
    /// IP address nothing (`Some("")`). `None`: a word.
    fn value(&self, token: &str) -> Option<&str> {
        let bare = token.trim_matches(|c: char| {
            !c.is_alphanumeric() && !matches!(c, '$' | '€' | '£' | '/' | ':')
        });
        let bare = bare.trim_end_matches(['.', ':', '/']);
        if bare.is_empty() {
            return None;
        }
        if bare.contains('@') && bare.contains('.') {
            return Some(&self.values.email);
        }
        if bare.starts_with("http://") || bare.starts_with("https://") {
            return Some(&self.values.url);
        }
        let numeric = bare.chars().any(|c| c.is_ascii_digit())
            && bare.chars().all(|c| {
                c.is_ascii_digit()
                    || matches!(c, '.' | ',' | ':' | '/' | '-' | '$' | '€' | '£' | '%')
            });
        if numeric {
            return Some("");
        }
        let labels: Vec<&str> = bare.split('.').collect();
        let domain = labels.len() >= 2
            && labels
                .iter()
                .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
            && labels
                .last()
                .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_lowercase()));
        domain.then_some(self.values.domain.as_str())
    }
}

/// The prefix of an id such as `ch_3MmlLrLkdIwHu7ix` or `vm_42`: a short lowercase word,
/// `_`, and letters and digits with at least one digit. `get_refunds` is no id.
fn id_prefix(token: &str) -> Option<&str> {
    let (prefix, rest) = token.split_once('_')?;
    let is_id = (1..=6).contains(&prefix.len())
        && prefix.bytes().all(|b| b.is_ascii_lowercase())
        && !rest.is_empty()
        && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && rest.bytes().any(|b| b.is_ascii_digit());
    is_id.then_some(prefix)
}

/// The Snowball English stemmer: "cards"/"card", "creating"/"create"/"created",
/// "prices"/"pricing" and "retrieves"/"retrieve" meet.
pub fn stem(word: &str) -> String {
    static STEMMER: std::sync::LazyLock<rust_stemmers::Stemmer> = std::sync::LazyLock::new(|| {
        rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English)
    });
    STEMMER.stem(word).into_owned()
}

#[cfg(test)]
mod tests {
    use super::{RawSearch, SearchIndex, id_prefix, stem};

    #[test]
    fn a_query_reads_phrases_ids_and_kept_stems_as_the_catalog_words() {
        let raw: RawSearch = toml::from_str(
            r#"
k1 = 1.2
b = 0.5
stopwords = ["the", "for", "of", "and"]
[weights]
name = 1.0
aliases = 1.0
title = 1.0
category = 1.0
description = 1.0
path = 1.0
operation = 1.0
[phrases]
"money back" = ["refund"]
"set up" = []
[id_prefixes]
ch = "charge"
[stems]
customers = "customer"
"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let index = SearchIndex::build(&raw, &[]);
        assert_eq!(
            index.query_words("money back for the customers of ch_3Mml9x and xy_12"),
            ["refund", "customer", "charg"]
        );
        // A phrase that stands for nothing leaves the next word where it began, so a
        // phrase right after it is read too.
        assert_eq!(index.query_words("set up set up calendars"), ["calendar"]);
        assert_eq!(index.query_words("get_refunds"), ["get", "refund"]);
    }

    #[test]
    fn values_in_a_sentence_are_hints_or_nothing() {
        let raw: RawSearch = toml::from_str(
            "k1 = 1.2\nb = 0.5\nstopwords = [\"at\", \"the\", \"to\", \"on\", \"for\"]\n\
             [weights]\nname = 1.0\naliases = 1.0\ntitle = 1.0\ncategory = 1.0\ndescription = 1.0\npath = 1.0\noperation = 1.0\n\
             [values]\nemail = \"email\"\nurl = \"url\"\ndomain = \"domain\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let index = SearchIndex::build(&raw, &[]);
        assert_eq!(
            index.query_words("Point www.example.com at the IP 203.0.113.7."),
            ["point", "domain", "ip"]
        );
        assert_eq!(
            index.query_words("Invite jane@example.com to https://acme.io/page on 2026-12-01 at 10:00 for $25.50 (12/29)"),
            ["invit", "email", "url"]
        );
        // Words with a dot or a digit that are not values stay words.
        assert_eq!(
            index.query_words("Q3 targets, e.g. ASP.NET"),
            ["q3", "target", "e", "g", "asp", "net"]
        );
    }

    #[test]
    fn ids_are_told_from_names() {
        for (token, prefix) in [
            ("ch_3MmlLrLkdIwHu7ix0snN0B15", Some("ch")),
            ("cus_NffrFeUfNV2Hib", Some("cus")),
            ("vm_42", Some("vm")),
            ("get_refunds", None),
            ("abc123", None),
            ("Ch_123", None),
            ("customers_123", None),
        ] {
            assert_eq!(id_prefix(token), prefix, "{token}");
        }
    }

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
            ("retrieves", "retrieve"),
            ("refunded", "refunds"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
    }
}
