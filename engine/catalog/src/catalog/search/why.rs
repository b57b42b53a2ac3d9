//! Why a tool ranked for a query, in a few words a model can read: the query's words it
//! matched, spelled as the person wrote them (or as the tool says them, for a word that
//! came from a phrase or an id), a word matched through a synonym as "bill as
//! invoice", the tool's intent the query says most alike ("like \"give a customer
//! their money back\""), and "similar meaning" for a tool only the meaning ranked.

use std::collections::HashMap;

use super::{Hit, MARKED, SearchIndex};

/// How a hit matched one of the query's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Match {
    /// The tool holds the word itself.
    Itself,
    /// The tool holds only a synonym of it.
    Synonym,
}

/// The reading of one query that says why each of its hits ranked: the query is read
/// once, each hit then costs a few lookups.
#[derive(Debug)]
pub struct Why<'i> {
    index: &'i SearchIndex,
    /// The query's distinct words, as ranked (a hit's bits index them).
    words: Vec<String>,
    /// Each stem of the query -> the word that gave it, as written.
    asked: HashMap<String, String>,
}

/// At most this many words are named (the best first, as the query's words sort).
const MOST_NAMED: usize = 6;

impl SearchIndex {
    /// What says why each hit of `query` ranked ([`Why::of`]).
    pub fn why(&self, query: &str) -> Why<'_> {
        Why {
            index: self,
            words: self.reading(query).distinct,
            asked: self.spellings(query),
        }
    }

    /// Whether the tool at `tool` holds the word `stem` in any field.
    fn holds(&self, tool: usize, stem: &str) -> bool {
        let Some(term) = self.vocabulary.get(stem) else {
            return false;
        };
        self.postings(*term)
            .binary_search_by_key(&tool, |p| p.tool as usize)
            .is_ok()
    }

    /// Each stem of `text` -> the first word that gave it, lowercased as written.
    fn spellings(&self, text: &str) -> HashMap<String, String> {
        let mut out: HashMap<String, String> = HashMap::new();
        self.each_word(text, None, |written, stem| {
            out.entry(stem).or_insert_with(|| written.to_string());
        });
        out
    }
}

impl Why<'_> {
    /// Why `hit` ranked: `matched refund, charge; bill as invoice`, or `similar
    /// meaning` when only the meaning signal ranked it. Reads no tool text: a word the
    /// query does not spell (one from a phrase or an id) is spelled as the catalog
    /// writes it.
    pub fn of(&self, hit: &Hit) -> String {
        let spell = |stem: &str| {
            self.asked
                .get(stem)
                .or_else(|| self.index.spelled.get(stem))
                .map_or_else(|| stem.to_string(), Clone::clone)
        };
        let matched: Vec<String> = (0..self.words.len())
            .filter(|i| self.matched(hit, *i) == Some(Match::Itself))
            .map(|i| spell(&self.words[i]))
            .take(MOST_NAMED)
            .collect();
        let through: Vec<String> = (0..self.words.len())
            .filter(|i| self.matched(hit, *i) == Some(Match::Synonym))
            .filter_map(|i| {
                let word = &self.words[i];
                let synonym = self
                    .index
                    .synonyms
                    .get(word)?
                    .iter()
                    .find(|s| self.index.holds(hit.tool, s))?;
                Some(format!("{} as {}", spell(word), spell(synonym)))
            })
            .take(MOST_NAMED)
            .collect();
        let mut parts = Vec::new();
        if !matched.is_empty() {
            parts.push(format!("matched {}", matched.join(", ")));
        }
        if !through.is_empty() {
            parts.push(through.join(", "));
        }
        if let Some(intent) = self.intent(hit) {
            parts.push(format!("like \"{intent}\""));
        }
        if hit.matched == 0 {
            // Ranked by the meaning signal alone: no word of the query is the tool's.
            parts.push("similar meaning".to_string());
        }
        parts.join("; ")
    }

    /// How `hit` matched the query's `i`-th word, if it did: from the hit's bits for the
    /// first [`MARKED`] words, from the index for a later one (a query that long is a
    /// pasted text; the tool holds the word, or else one of its synonyms).
    fn matched(&self, hit: &Hit, i: usize) -> Option<Match> {
        if i < MARKED {
            let bit = 1u64.checked_shl(i as u32).unwrap_or(0);
            return if hit.own & bit != 0 {
                Some(Match::Itself)
            } else if hit.related & bit != 0 {
                Some(Match::Synonym)
            } else {
                None
            };
        }
        let word = self.words.get(i)?;
        if self.index.holds(hit.tool, word) {
            Some(Match::Itself)
        } else {
            let synonyms = self.index.synonyms.get(word)?;
            synonyms
                .iter()
                .any(|s| self.index.holds(hit.tool, s))
                .then_some(Match::Synonym)
        }
    }

    /// The hit's intent that shares the most of the query's words, when it shares two
    /// or more (or the whole of a one-word query); the first such intent on a tie.
    fn intent(&self, hit: &Hit) -> Option<&str> {
        let needed = 2.min(self.words.len());
        let mut best: Option<(usize, &str)> = None;
        for (text, words) in self.index.intents.get(&hit.tool)? {
            let shared = self
                .words
                .iter()
                .filter(|w| words.binary_search(w).is_ok())
                .count();
            if shared >= needed.max(1) && best.is_none_or(|(most, _)| shared > most) {
                best = Some((shared, text));
            }
        }
        best.map(|(_, text)| text)
    }
}
