//! Why a tool ranked for a query, in a few words a model can read: the query's words it
//! matched, spelled as the person wrote them (or as the tool says them, for a word that
//! came from a phrase or an id), and a word matched through a synonym as "bill as
//! invoice".

use std::collections::HashMap;

use super::{Hit, SearchIndex};
use crate::catalog::Tool;

/// At most this many words are named (the best first, as the query's words sort).
const MOST_NAMED: usize = 6;

impl SearchIndex {
    /// Why `hit` (of `tool`) ranked for `query`: `matched refund, charge; bill as
    /// invoice`. Empty when it matched nothing (no hit is without a match).
    pub fn why(&self, query: &str, hit: &Hit, tool: &Tool) -> String {
        let (words, _) = self.distinct(self.query_words(query));
        let asked = self.spellings(query);
        let says = self.spellings(&format!(
            "{} {} {} {} {}",
            tool.title,
            tool.name,
            tool.aliases.join(" "),
            tool.description,
            tool.argument_names.join(" ")
        ));
        let spell = |stem: &str| {
            asked
                .get(stem)
                .or_else(|| says.get(stem))
                .map_or_else(|| stem.to_string(), Clone::clone)
        };
        let bit = |i: usize, set: u64| 1u64.checked_shl(i as u32).is_some_and(|b| set & b != 0);
        let matched: Vec<String> = (0..words.len())
            .filter(|i| bit(*i, hit.own))
            .map(|i| spell(&words[i]))
            .take(MOST_NAMED)
            .collect();
        let through: Vec<String> = (0..words.len())
            .filter(|i| bit(*i, hit.related))
            .filter_map(|i| {
                let word = &words[i];
                let synonym = self
                    .synonyms
                    .get(word)?
                    .iter()
                    .find(|s| says.contains_key(s.as_str()))?;
                Some(format!("{} as {}", spell(word), spell(synonym)))
            })
            .take(MOST_NAMED)
            .collect();
        let mut why = String::new();
        if !matched.is_empty() {
            why.push_str("matched ");
            why.push_str(&matched.join(", "));
        }
        if !through.is_empty() {
            if !why.is_empty() {
                why.push_str("; ");
            }
            why.push_str(&through.join(", "));
        }
        why
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
