//! Ranking: BM25F over the docs of one service or of all, each score times the share of
//! the query's words matched, its verb, the service it names and the ids it holds; then,
//! unless a tool matched every word, fused by score with the tools' similarity of
//! meaning (`meaning`), when the rules turn it on.

use super::query::Reading;
use super::{Hit, SearchIndex, Stats};

/// What a tool gathered from a query's words so far: its BM25F sum, how many distinct
/// words it matched, and which (as themselves, or through a synonym).
#[derive(Debug, Clone, Copy, Default)]
struct Gathered {
    score: f64,
    matched: u32,
    own: u64,
    related: u64,
}

impl SearchIndex {
    /// Ranks the tools of one service for a query; `keep` filters candidates.
    pub fn search(&self, service: &str, query: &str, keep: impl Fn(usize) -> bool) -> Vec<Hit> {
        let Some(index) = self.services.get(service) else {
            return Vec::new();
        };
        self.rank(Some(index.number), &index.stats, query, keep)
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
        let number = match service {
            Some(id) => match self.services.get(id) {
                Some(index) => Some(index.number),
                None => return Vec::new(),
            },
            None => None,
        };
        self.rank(number, &self.global, query, keep)
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

    /// Ranks the tools of the service numbered `service` (`None`: of every service).
    pub(super) fn rank(
        &self,
        service: Option<u32>,
        stats: &Stats,
        query: &str,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<Hit> {
        // The query read once: its words, its ids' objects and its meaning come from it.
        let Reading {
            plain,
            asks: (reading, verb),
            named,
            distinct,
        } = self.reading(query);
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
            self.id_terms(&plain.objects)
        } else {
            Vec::new()
        };
        // Every term the query says, as a word or a synonym (sorted), for the share of
        // a tool's name it says (none when the rules turn that off).
        let mut said: Vec<u32> = Vec::new();
        if self.name_miss < 1.0 {
            said.extend(weighted.iter().flatten().map(|&(term, _)| term));
            said.sort_unstable();
            said.dedup();
        }
        let in_scope = |number: u32| service.is_none_or(|s| s == number);
        let (gathered, touched) = self.gather(&weighted, &owns, in_scope);
        let mut hits = Vec::with_capacity(touched.len());
        for tool in touched {
            let (tool, tally) = (tool as usize, gathered[tool as usize]);
            let Some(doc) = self.docs.get(tool) else {
                continue;
            };
            if !keep(tool) {
                continue;
            }
            let coverage = f64::from(tally.matched) / distinct.len() as f64;
            let does_it = asked
                .iter()
                .all(|verb| verb.iter().any(|v| doc.verbs.binary_search(v).is_ok()));
            let action = if does_it && !(reading && doc.writes) {
                1.0
            } else {
                self.action_miss
            };
            let place = if named.is_empty()
                || self
                    .service_ids
                    .get(doc.service as usize)
                    .is_some_and(|id| named.contains(id.as_str()))
            {
                1.0
            } else {
                self.service_miss
            };
            let takes = ids
                .iter()
                .all(|words| words.iter().all(|w| doc.takes.binary_search(w).is_ok()));
            let target = if takes { 1.0 } else { self.id_miss };
            let naming = if self.name_miss < 1.0 && !doc.named.is_empty() {
                let unsaid = doc
                    .named
                    .iter()
                    .filter(|term| said.binary_search(term).is_err())
                    .count();
                1.0 - (1.0 - self.name_miss) * unsaid as f64 / doc.named.len() as f64
            } else {
                1.0
            };
            hits.push(Hit {
                tool,
                score: tally.score * coverage * action * place * target * naming,
                matched: tally.matched,
                own: tally.own,
                related: tally.related,
            });
        }
        // Ties keep catalog order (tools are sorted by name), so results are stable.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool)));
        if self.meaning.on() {
            // Every tool `keep` admits, for the meaning signal.
            let kept: Vec<usize> = self
                .docs
                .iter()
                .enumerate()
                .filter(|(tool, doc)| in_scope(doc.service) && keep(*tool))
                .map(|(tool, _)| tool)
                .collect();
            self.meaning.fuse(
                &mut hits,
                &plain.text,
                &self.stopwords,
                &kept,
                distinct.len(),
            );
        }
        hits
    }

    /// What each tool in scope gathers from the query's words: each word's postings
    /// (its own term's and its synonyms') walked once for a tool's best part for the
    /// word, then added to the tool's sum word by word (so sums are added in one order);
    /// and the tools that matched any word, in the order first reached.
    fn gather(
        &self,
        weighted: &[Vec<(u32, f64)>],
        owns: &[Option<u32>],
        in_scope: impl Fn(u32) -> bool,
    ) -> (Vec<Gathered>, Vec<u32>) {
        let mut gathered = vec![Gathered::default(); self.docs.len()];
        let mut best = vec![(0.0f64, false); self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        let mut reached: Vec<u32> = Vec::new();
        for (i, candidates) in weighted.iter().enumerate() {
            for &(term, weight) in candidates {
                let itself = owns.get(i).copied().flatten() == Some(term);
                let postings = self.postings(term);
                for posting in postings.iter().filter(|p| in_scope(p.service)) {
                    let tf = posting.tf;
                    let part = weight * tf * (self.k1 + 1.0) / (tf + self.k1);
                    let slot = &mut best[posting.tool as usize];
                    if part > slot.0 {
                        if slot.0 == 0.0 {
                            reached.push(posting.tool);
                        }
                        *slot = (part, itself);
                    }
                }
            }
            let bit = 1u64.checked_shl(i as u32).unwrap_or(0);
            for tool in reached.drain(..) {
                let (part, itself) = std::mem::take(&mut best[tool as usize]);
                let tally = &mut gathered[tool as usize];
                if tally.matched == 0 {
                    touched.push(tool);
                }
                tally.matched += 1;
                tally.score += part;
                if itself {
                    tally.own |= bit;
                } else {
                    tally.related |= bit;
                }
            }
        }
        (gathered, touched)
    }
}
