//! Ranking: BM25F over the docs of one service or of all, each score times the share of
//! the query's words matched, its verb, the service it names and the ids it holds; then,
//! unless a tool matched every word, fused by score with the tools' similarity of
//! meaning (`meaning`), when the rules turn it on.

use super::{Doc, Hit, SearchIndex, Stats};

impl SearchIndex {
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

    /// The terms of the verb a query names (`None`: it names none), with its synonyms
    /// that are verbs too: a tool does it when it holds any of them.
    fn verb_terms(&self, verb: Option<&str>) -> Vec<Vec<u32>> {
        verb.iter()
            .map(|w| {
                std::iter::once(*w)
                    .chain(
                        self.synonyms
                            .get(*w)
                            .into_iter()
                            .flatten()
                            .map(String::as_str)
                            .filter(|s| self.actions.contains(*s)),
                    )
                    .filter_map(|word| self.vocabulary.get(word).copied())
                    .collect()
            })
            .collect()
    }

    /// Ranks `docs`, each with its service's id.
    pub(super) fn rank<'a>(
        &self,
        docs: impl Iterator<Item = (&'a str, &'a Doc)>,
        stats: &Stats,
        query: &str,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<Hit> {
        // The query read once: its words, its ids' objects and its meaning come from it.
        let (plain, objects) = self.read(query);
        let query_words = self.plain_words(&plain);
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
        let asked = self.verb_terms(verb.as_deref());
        // Each query word's own term, where a tool holds it.
        let owns: Vec<Option<u32>> = distinct.iter().map(|w| id(w)).collect();
        let ids = if self.id_miss < 1.0 {
            self.id_terms(&objects)
        } else {
            Vec::new()
        };
        // The tools `keep` admits, for the meaning signal (when it is on).
        let on = self.meaning.on();
        let mut kept = Vec::new();
        let mut hits = Vec::new();
        for (service, doc) in docs {
            if !keep(doc.tool) {
                continue;
            }
            if on {
                kept.push(doc.tool);
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
        if on {
            self.meaning
                .fuse(&mut hits, &plain, &self.stopwords, &kept, distinct.len());
        }
        hits
    }
}
