//! Ranked tool search for the `find_tools` hook: BM25F over each tool's fields, built
//! once at compile time, per service and across services.
//!
//! A tool's fields are its native name, aliases, title, category, description, literal
//! path segments, *operation words* (from its method and path shape: a GET on a
//! collection is a "list", a POST on one a "create"), its resource (the last path
//! segment that is not an action), its argument names, its intents (requests in
//! users' words, `catalog/<service>/intents.toml`) and its documentation (the upstream
//! document's whole text, where the description keeps only its opening); each has its
//! weight from
//! `rules/search.toml` and its own length normalisation, so a long description never
//! weakens a match in the name. Words are split at punctuation and camelCase,
//! lowercased, stop words dropped and Snowball-stemmed (some stems kept whole); each
//! word is stored once, as a term id, with the list of tools that hold it (the index
//! is by term: a search reads its words' lists, never every tool). A query's phrases and ids are read as the
//! catalog's words first; a query word also matches its synonyms at half weight. A
//! score is the BM25F sum times the share of distinct query words matched. A query that
//! opens with a read verb or a question asks to read (writes scaled by `miss_factor`);
//! else its first action word is the verb, and tools that do not name it in the fields
//! that say what they do are scaled instead. A query word naming a service is not
//! matched and scales the other services' tools, and an id scales the tools that take
//! no id of its kind. Beside the words, the meaning: each tool's and the query's
//! vector of a static word-vector table (`meaning`), its cosine similarity added to the
//! words' score. No model runs at search time and no embedding service is called.
//!
//! Here the rules and the index's build; `words` reads a text, `query` a query, `rank`
//! ranks, `meaning` places tools and queries by what their words mean, `why` says why
//! a hit ranked.

use std::collections::{BTreeMap, HashMap, HashSet};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Action, PathPart, Tool};

mod meaning;
mod query;
mod rank;
mod why;
mod words;
pub use meaning::MeaningRules;
pub use why::Why;
pub use words::stem;

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
    /// The meaning signal beside the words (static word vectors, fused by score);
    /// absent, tools rank by their words alone.
    #[serde(default)]
    pub meaning: Option<MeaningRules>,
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
    /// The upstream document's whole text on the operation, where the description
    /// keeps only its opening (a tool's `documentation`).
    #[serde(default)]
    pub documentation: f64,
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
    /// Each service's id by its number ([`ServiceIndex::number`]).
    service_ids: Vec<String>,
    /// Every tool's document, at its index in the catalog's tools.
    docs: Vec<Doc>,
    /// Every term's tools, term after term, each term's by tool ([`Self::postings`]):
    /// a query walks the lists of its words only, never every tool.
    postings: Vec<Posting>,
    /// Where each term's tools begin in `postings` (term id -> start; one more entry
    /// than terms, the last the end).
    starts: Vec<u32>,
    /// Document frequencies over every service, for searches across them.
    global: Stats,
    /// Every word a tool holds -> its term id.
    vocabulary: HashMap<String, u32>,
    /// A stem -> its shortest written form in the catalog ("charg" -> "charge").
    spelled: HashMap<String, String>,
    /// A tool (index into the catalog's tools) -> each of its intents and the intent's
    /// distinct words, for `why`.
    intents: HashMap<usize, Vec<(String, Vec<String>)>>,
    /// The tools' vectors of the meaning signal.
    meaning: meaning::Meaning,
}

/// What BM25 needs of a corpus besides its documents.
#[derive(Debug, Default)]
struct Stats {
    /// Term id -> how many documents hold it.
    df: HashMap<u32, u32>,
    docs: usize,
}

/// A tool's fields: name, aliases, title, category, description, path, operation words,
/// resource, argument names, intents, documentation.
const FIELDS: usize = 11;

/// Which fields say what a tool does (an action word there is one it performs); the
/// category, the description, the arguments, the intents and the documentation only
/// talk about it.
const SAYS_WHAT: [bool; FIELDS] = [
    true, true, true, false, false, true, true, true, false, false, false,
];

/// One service's part of the index.
#[derive(Debug, Default)]
struct ServiceIndex {
    /// Its number in the postings ([`Posting::service`]).
    number: u32,
    stats: Stats,
}

/// One tool holding one term: the tool, its service's number and the term's BM25F
/// frequency in it.
#[derive(Debug, Clone, Copy, Default)]
struct Posting {
    tool: u32,
    service: u32,
    tf: f64,
}

/// What the ranking needs of a tool beside its terms (those are in the postings).
#[derive(Debug)]
struct Doc {
    /// Its service's number.
    service: u32,
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

/// The fields few tools have, by position in [`FIELDS`]: the intents and the
/// documentation.
const SPARSE: [usize; 2] = [9, 10];

/// Each field's average length in words over the catalog (at least 1). The intents'
/// and the documentation's average is over the tools that have some: few tools do,
/// and over all tools any tool's would read as overlong.
fn average_lengths(fielded: &[[Vec<String>; FIELDS]]) -> [f64; FIELDS] {
    let mut sum = [0.0f64; FIELDS];
    let mut count = [0usize; FIELDS];
    for fields in fielded {
        for (f, words) in fields.iter().enumerate() {
            sum[f] += words.len() as f64;
            count[f] += usize::from(!SPARSE.contains(&f) || !words.is_empty());
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
            service_ids: Vec::new(),
            docs: Vec::new(),
            postings: Vec::new(),
            starts: Vec::new(),
            global: Stats::default(),
            vocabulary: HashMap::new(),
            spelled: HashMap::new(),
            intents: HashMap::new(),
            meaning: meaning::Meaning::default(),
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
            w.documentation,
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
        index.meaning = meaning::Meaning::build(raw.meaning, tools, &index.stopwords);
        index.add_docs(tools, fielded, &avg, &weights);
        index
    }

    /// Each tool's document, the document frequencies of its service and of the
    /// catalog, and the postings: every term's tools in one list, sized once (a list per
    /// term grown by pushing would leave the allocator's heap in pieces).
    fn add_docs(
        &mut self,
        tools: &[Tool],
        fielded: Vec<[Vec<String>; FIELDS]>,
        avg: &[f64; FIELDS],
        weights: &[f64; FIELDS],
    ) {
        let mut held: Vec<(u32, Vec<(u32, f64)>)> = Vec::with_capacity(tools.len());
        for (tool, fields) in tools.iter().zip(fielded) {
            let next = u32::try_from(self.service_ids.len()).unwrap_or(u32::MAX);
            let number = match self.services.get(&tool.service) {
                Some(service) => service.number,
                None => {
                    self.service_ids.push(tool.service.clone());
                    let service = ServiceIndex {
                        number: next,
                        stats: Stats::default(),
                    };
                    self.services.insert(tool.service.clone(), service);
                    next
                }
            };
            let (doc, terms) = self.doc(number, tool, &fields, avg, weights);
            let service = self.services.entry(tool.service.clone()).or_default();
            service.stats.docs += 1;
            self.global.docs += 1;
            for &(id, _) in &terms {
                *service.stats.df.entry(id).or_default() += 1;
                *self.global.df.entry(id).or_default() += 1;
            }
            self.docs.push(doc);
            held.push((number, terms));
        }
        // A counting sort by term: each term's count, where each term's tools begin,
        // then every tool's terms put in place (tools in order, so each term's by tool).
        let mut starts = vec![0u32; self.vocabulary.len() + 1];
        for (_, terms) in &held {
            for &(id, _) in terms {
                starts[id as usize + 1] += 1;
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut postings = vec![Posting::default(); starts.last().map_or(0, |&n| n as usize)];
        let mut next = starts.clone();
        for (tool, (service, terms)) in held.into_iter().enumerate() {
            let tool = u32::try_from(tool).unwrap_or(u32::MAX);
            for (id, tf) in terms {
                let at = &mut next[id as usize];
                postings[*at as usize] = Posting { tool, service, tf };
                *at += 1;
            }
        }
        self.postings = postings;
        self.starts = starts;
    }

    /// The tools that hold a term, by tool.
    fn postings(&self, term: u32) -> &[Posting] {
        let at = term as usize;
        match (self.starts.get(at), self.starts.get(at + 1)) {
            (Some(&start), Some(&end)) => self.postings.get(start as usize..end as usize),
            _ => None,
        }
        .unwrap_or_default()
    }

    /// One tool's document (its verbs and the ids it takes) and its terms with their
    /// BM25F frequencies, by term id (each word of `fields` given a term id of the
    /// vocabulary).
    fn doc(
        &mut self,
        service: u32,
        tool: &Tool,
        fields: &[Vec<String>; FIELDS],
        avg: &[f64; FIELDS],
        weights: &[f64; FIELDS],
    ) -> (Doc, Vec<(u32, f64)>) {
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
                // A field weighed 0 is not searched: its words count in no frequency.
                if weights[f] > 0.0 {
                    *terms.entry(id).or_default() += weights[f] / norm;
                }
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
        let doc = Doc {
            service,
            verbs,
            writes: acts,
            takes,
        };
        (doc, terms)
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
            words(tool.documentation.as_deref().unwrap_or_default()),
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

    /// The distinct words of a tool's intents, each read as a query is (its phrases,
    /// ids and values as the rules say), so an intent and a request in the same words
    /// meet.
    fn intent_words(&self, intents: &[String]) -> Vec<String> {
        let mut words: Vec<String> = intents.iter().flat_map(|i| self.query_words(i)).collect();
        words.sort_unstable();
        words.dedup();
        words
    }
}
