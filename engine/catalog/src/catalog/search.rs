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
//! Here the rules and the index's parts; `index` builds it, `words` reads a text,
//! `query` a query, `rank` ranks, `meaning` places tools and queries by what their words
//! mean, `why` says why a hit ranked.

use std::collections::{BTreeMap, HashMap, HashSet};

use schemars::JsonSchema;
use serde::Deserialize;

mod index;
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
    /// Service -> the id prefixes (of [`Self::id_prefixes`]) only its upstream issues
    /// (`payments = ["ch", "pi"]`: Stripe's): an id of such a prefix names the service
    /// as its id does ([`Self::service_miss_factor`]). A prefix that more than one
    /// upstream issues names none.
    #[serde(default)]
    pub id_services: BTreeMap<String, Vec<String>>,
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
    /// ("list crm users"; an id names one only as written: "payments", not "a
    /// payment"); the word itself is then not matched. Between 0 and 1; 1
    /// (the default) turns it off.
    #[serde(default = "one")]
    pub service_miss_factor: f64,
    /// Other words that name a service, as [`Self::service_miss_factor`] reads a
    /// service's id: the upstream's own name ("apollo" -> `leads`), which people say
    /// more often than ours. Unlike an id, such a word is also matched: a tool may say
    /// it ("update the Hostinger plugin"). Each names a service of the catalog.
    #[serde(default)]
    pub service_names: BTreeMap<String, String>,
    /// Score factor of a tool none of whose name's words the query says: a tool whose
    /// name says more than the query asks for ("list calendars":
    /// `calendars_fetch_calendar_resources` against `calendars_get_calendars`) scores
    /// `1 - (1 - factor) * share`, the share that of
    /// its name's words the query says neither as itself nor through a synonym. A
    /// name's words here leave out its HTTP method, verbs, services' words and
    /// `name_filler`. Between 0 and 1; 1 (the default) turns it off.
    #[serde(default = "one")]
    pub name_miss_factor: f64,
    /// Words of tools' names that say nothing of what a tool acts on (`id`, an
    /// upstream's path quirk), left out of [`Self::name_miss_factor`]'s share.
    #[serde(default)]
    pub name_filler: Vec<String>,
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
    /// Openings that ask how to do something ("how do I", "where can I", "is it
    /// possible to"), as written, a word or more each: a query that opens with one and
    /// says an action ("How do I cancel my subscription?") asks for the action, though
    /// its question word reads; one that says none still reads ("How do refunds work?").
    #[serde(default)]
    pub how_to: Vec<String>,
    /// How a query says not to do an action ("don't send payout po_...", "never
    /// publish it"): absent, a negated verb reads as the verb.
    #[serde(default)]
    pub negation: Option<Negation>,
}

/// A negation before an action verb (`[actions.negation]` of `rules/search.toml`): the
/// query asks to call the action off, so the negation reads as `means` ("cancel"),
/// which comes first and so is the query's verb; the negated verb stays a word of the
/// query ("send" of "don't send payout po_...": the cancel of a payout).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Negation {
    /// The negations as written, one word or two ("don't", "do not", "never"); an
    /// apostrophe may be typed either way. A negation counts only right before a word
    /// of [`Actions::words`].
    pub words: Vec<String>,
    /// The action word a negated action asks for.
    pub means: String,
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
    /// Each negation as its lowercase words ([`Negation::words`]), and what a negated
    /// action asks for.
    negations: Vec<Vec<String>>,
    negated: String,
    /// Each of [`Actions::how_to`] as its lowercase words.
    how_to: Vec<Vec<String>>,
    action_miss: f64,
    stopwords: HashSet<String>,
    synonyms: HashMap<String, Vec<String>>,
    /// Stemmed phrase -> stemmed words it stands for, longest phrases first.
    phrases: Vec<(Vec<String>, Vec<String>)>,
    /// Id prefix -> the words an id of that form stands for.
    id_prefixes: HashMap<String, String>,
    /// Id prefix -> the service only whose upstream issues ids of that form.
    id_services: HashMap<String, String>,
    /// See [`RawSearch::id_miss_factor`].
    id_miss: f64,
    /// What a value in a query is read as.
    values: Values,
    /// Word -> its stem, where the stemmer's would merge it with another word.
    stems: HashMap<String, String>,
    /// Stemmed service id or [`RawSearch::service_names`] word -> the service it names.
    service_words: HashMap<String, String>,
    /// The stems of [`RawSearch::service_names`]: they name a service and are matched
    /// too (a tool's name may say one: `hosting_update_hostinger_word_press_plugin`).
    service_names: HashSet<String>,
    service_miss: f64,
    /// See [`RawSearch::name_miss_factor`].
    name_miss: f64,
    /// Stemmed [`RawSearch::name_filler`].
    name_filler: HashSet<String>,
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
#[derive(Debug)]
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
    /// The words of its name that say what it acts on (term ids, sorted; see
    /// [`RawSearch::name_miss_factor`]).
    named: Vec<u32>,
}

/// One search hit: the tool's position in `Catalog::tools`, its score, and which of
/// the query's distinct words it matched ([`SearchIndex::why`] says them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Index into the catalog's tools.
    pub tool: usize,
    /// Score (higher is better).
    pub score: f64,
    /// How many of the query's distinct words it matched, as themselves or through a
    /// synonym.
    pub matched: u32,
    /// Bit i: the i-th distinct query word (sorted) matched as itself. Only the first
    /// [`MARKED`] words have a bit; [`Why`] reads a later word's match from the index.
    pub own: u64,
    /// Bit i: the i-th distinct query word matched only through a synonym.
    pub related: u64,
}

/// How many of a query's distinct words a [`Hit`]'s bits mark.
pub const MARKED: usize = u64::BITS as usize;
