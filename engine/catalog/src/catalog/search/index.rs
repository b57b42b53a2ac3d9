//! The index's build, once per catalog: each tool's fields and their words, each
//! field's average length, each tool's terms with their BM25F frequencies, and the
//! postings (every term's tools in one list, term after term), with the document
//! frequencies of each service and of the catalog.

use std::collections::{HashMap, HashSet};

use super::query::apostrophe;
use super::{
    Actions, Doc, FIELDS, Posting, RawSearch, SAYS_WHAT, SearchIndex, ServiceIndex, Stats, meaning,
};
use crate::catalog::{Action, PathPart, Tool};

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

/// Each negation of the rules' `[actions.negation]` as its words (lowercase, the
/// apostrophe typed straight), and what a negated action means; none without it.
fn negation(actions: Option<&Actions>) -> (Vec<Vec<String>>, String) {
    let Some(negation) = actions.and_then(|a| a.negation.as_ref()) else {
        return (Vec::new(), String::new());
    };
    (as_written(&negation.words), negation.means.to_lowercase())
}

/// Openings of a query as the rules write them, each as its words (lowercase, the
/// apostrophe typed straight); an empty one is left out.
fn as_written(openings: &[String]) -> Vec<Vec<String>> {
    (openings.iter())
        .map(|w| w.split_whitespace().map(apostrophe).collect::<Vec<_>>())
        .filter(|words| !words.is_empty())
        .collect()
}

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
        let (negations, negated) = negation(raw.actions.as_ref());
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
            negations,
            negated,
            how_to: as_written(raw.actions.as_ref().map_or(&[][..], |a| &a.how_to)),
            action_miss: raw.actions.as_ref().map_or(1.0, |a| a.miss_factor),
            stopwords: raw.stopwords.iter().map(|w| w.to_lowercase()).collect(),
            synonyms: HashMap::new(),
            phrases: Vec::new(),
            id_prefixes: raw.id_prefixes.clone().into_iter().collect(),
            id_services: raw
                .id_services
                .iter()
                .flat_map(|(service, prefixes)| {
                    prefixes.iter().map(move |p| (p.clone(), service.clone()))
                })
                .collect(),
            id_miss: raw.id_miss_factor,
            values: raw.values.clone(),
            stems: raw
                .stems
                .iter()
                .map(|(w, s)| (w.to_lowercase(), s.to_lowercase()))
                .collect(),
            service_words: HashMap::new(),
            service_names: HashSet::new(),
            service_miss: raw.service_miss_factor,
            name_miss: raw.name_miss_factor,
            name_filler: HashSet::new(),
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
        index.service_words = index.service_words(tools.iter().map(|t| t.service.as_str()));
        for (word, service) in &raw.service_names {
            if let Some(stem) = index.words(word).pop() {
                index.service_words.insert(stem.clone(), service.clone());
                index.service_names.insert(stem);
            }
        }
        index.reads = index.stemmed(actions.map(|a| a.read_words.as_slice()));
        index.name_filler = index.stemmed(Some(raw.name_filler.as_slice()));
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
            let number = self.service_number(&tool.service);
            let (doc, terms) = self.doc(number, tool, &fields, avg, weights);
            self.global.docs += 1;
            for &(id, _) in &terms {
                *self.global.df.entry(id).or_default() += 1;
            }
            if let Some(service) = self.services.get_mut(&tool.service) {
                service.stats.docs += 1;
                for &(id, _) in &terms {
                    *service.stats.df.entry(id).or_default() += 1;
                }
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

    /// A service's number in the postings, given on first sight.
    fn service_number(&mut self, service: &str) -> u32 {
        if let Some(known) = self.services.get(service) {
            return known.number;
        }
        let number = u32::try_from(self.service_ids.len()).unwrap_or(u32::MAX);
        self.service_ids.push(service.to_string());
        let index = ServiceIndex {
            number,
            stats: Stats::default(),
        };
        self.services.insert(service.to_string(), index);
        number
    }

    /// The tools that hold a term, by tool.
    pub(super) fn postings(&self, term: u32) -> &[Posting] {
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
            named: self.named(&fields[0], tool),
        };
        (doc, terms)
    }

    /// The words of a tool's name (`name`, its name field's words) that say what it
    /// acts on, as terms (sorted): not its HTTP method (`leads_post_contacts`), not a
    /// verb, not a service's id (`crm.payments_delete_coupon` acts on a coupon), not
    /// a word the rules call filler (`name_filler`: `id`).
    fn named(&self, name: &[String], tool: &Tool) -> Vec<u32> {
        let method = match &tool.action {
            Action::Http(plan) => self.words(plan.method.as_str()),
            Action::Mcp(_) | Action::Hook(_) => Vec::new(),
        };
        let mut named: Vec<u32> = name
            .iter()
            .filter(|w| {
                !method.contains(*w)
                    && !self.actions.contains(*w)
                    && !self.reads.contains(*w)
                    && !self.names_only_a_service(w)
                    && !self.name_filler.contains(*w)
            })
            .filter_map(|w| self.vocabulary.get(w).copied())
            .collect();
        named.sort_unstable();
        named.dedup();
        named
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
    /// Each service id of one word as that word's stem -> the id. An id of several
    /// words (`everything_http`) names its service only written whole
    /// ([`Self::written_ids`]), never by one of its words, each an everyday word.
    pub(super) fn service_words<'s>(
        &self,
        ids: impl Iterator<Item = &'s str>,
    ) -> HashMap<String, String> {
        ids.filter_map(|id| match self.words(id)[..] {
            [ref word] => Some((word.clone(), id.to_string())),
            _ => None,
        })
        .collect()
    }

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
