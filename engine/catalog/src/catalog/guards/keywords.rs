//! The keyword pass: one automaton finds, in one pass over a text, every rule whose
//! keywords occur in it (a keyword inside another included). Built at compile for the sets of rules a call reads (those on
//! arguments, those on answers) and for all of them, each with the keywords of its own
//! rules only: a rule that is off adds no keyword to a call's pass, and case is ignored
//! only by the automaton of the rules that ask for it (an automaton that ignores case
//! has a weaker prefilter).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, Input, MatchKind};

use super::{Rule, Set};

/// The automata of one set of rules: case kept, and case ignored; each with, per
/// pattern, the rules of that keyword and of every keyword that is a prefix of it.
#[derive(Debug, Clone)]
pub(super) struct Keywords {
    /// The rules it was built for.
    pub(super) set: Set,
    exact: Option<(AhoCorasick, Vec<Set>)>,
    any_case: Option<(AhoCorasick, Vec<Set>)>,
}

impl Keywords {
    /// The automata of the keyed rules of `set`.
    pub(super) fn build(rules: &[Rule], set: Set) -> Result<Self, String> {
        let build = |any_case: bool| -> Result<Option<(AhoCorasick, Vec<Set>)>, String> {
            let mut patterns: Vec<&str> = Vec::new();
            let mut rule_of = Vec::new();
            for i in set.iter() {
                let Some(rule) = rules.get(i).filter(|r| r.any_case == any_case) else {
                    continue;
                };
                for k in &rule.keywords {
                    patterns.push(k.as_str());
                    rule_of.push(i);
                }
            }
            if patterns.is_empty() {
                return Ok(None);
            }
            // A leftmost-longest search reports, at each place, the longest keyword
            // there: the shorter ones there are its prefixes, and count as found too.
            let same = |a: &str, b: &str| {
                if any_case {
                    a.eq_ignore_ascii_case(b)
                } else {
                    a == b
                }
            };
            let found: Vec<Set> = patterns
                .iter()
                .map(|p| {
                    patterns
                        .iter()
                        .zip(&rule_of)
                        .filter(|(q, _)| p.get(..q.len()).is_some_and(|head| same(head, q)))
                        .fold(Set::EMPTY, |set, (_, rule)| set.with(*rule))
                })
                .collect();
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(any_case)
                .match_kind(MatchKind::LeftmostLongest)
                .kind(Some(AhoCorasickKind::DFA))
                .build(&patterns)
                .map(|automaton| Some((automaton, found)))
                .map_err(|e| format!("the guards' keywords do not compile: {e}"))
        };
        Ok(Self {
            set,
            exact: build(false)?,
            any_case: build(true)?,
        })
    }

    /// The rules (of its set) whose keywords occur in `text`: a leftmost search (which
    /// skips ahead with the automaton's prefilter) started again one byte after each
    /// keyword it finds, so every place a keyword starts is visited.
    pub(super) fn found(&self, text: &[u8]) -> Set {
        let mut hit = Set::EMPTY;
        for (automaton, found) in self.exact.iter().chain(&self.any_case) {
            let mut at = 0;
            while at < text.len() {
                let Some(m) = automaton.find(Input::new(text).range(at..)) else {
                    break;
                };
                if let Some(rules) = found.get(m.pattern().as_usize()) {
                    hit = hit.union(*rules);
                }
                at = m.start() + 1;
            }
        }
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Guards, RawGuards};

    #[test]
    fn every_keyword_is_found_wherever_it_starts_inside_another_or_sharing_its_start() {
        let raw: RawGuards = toml::from_str(
            "[[rule]]\nid = \"long\"\nkind = \"secret\"\npattern = 'abcdef'\nkeywords = [\"abcdef\"]\naction = \"redact\"\nmatches = [\"abcdef\"]\n\
             [[rule]]\nid = \"inner\"\nkind = \"secret\"\npattern = 'bcd'\nkeywords = [\"bcd\"]\naction = \"redact\"\nmatches = [\"bcd\"]\n\
             [[rule]]\nid = \"head\"\nkind = \"secret\"\npattern = 'abc'\nkeywords = [\"abc\"]\naction = \"redact\"\nmatches = [\"abc\"]\n\
             [[rule]]\nid = \"word\"\nkind = \"secret\"\npattern = '(?i)token'\nkeywords = [\"token\"]\nkeywords_any_case = true\naction = \"redact\"\nmatches = [\"TOKEN\"]\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let guards = Guards::compile(&raw.rule, &[1, 2, 3, 4]).unwrap_or_else(|e| panic!("{e:?}"));
        let all = guards.select(|_| true);
        let ids = |text: &str| -> Vec<String> {
            guards
                .candidates(text, all)
                .iter()
                .map(|i| guards.rules[i].id.clone())
                .collect()
        };
        assert_eq!(ids("xxabcdefxx"), ["long", "inner", "head"]);
        assert_eq!(ids("abcd"), ["inner", "head"]);
        assert_eq!(ids("a ToKeN b"), ["word"]);
        assert!(ids("nothing here").is_empty());
    }

    #[test]
    fn a_long_text_narrows_the_keywordless_rules_to_those_whose_pattern_matches_in_it() {
        let text = include_str!("../../../../../rules/guards.toml");
        let raw: RawGuards = toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        let guards = Guards::compile(&raw.rule, &[]).unwrap_or_else(|e| panic!("{e:?}"));
        let on = guards.on_for(super::super::LooksAt::Answers);
        let ids = |set: super::super::Set| -> Vec<String> {
            set.iter().map(|i| guards.rules[i].id.clone()).collect()
        };
        // A run of 13 digits and a capital pair before two digits: what `card` and
        // `iban` wait on, and a character outside ASCII, but no number of either form.
        let calm = "{\"at\":\"2026-11-30T10:00:00Z\",\"format\":\"ISO8601\",\"ref\":1234567890123,\"city\":\"Köln\"}"
            .repeat(100);
        assert!(calm.len() >= super::super::WHOLE_PATTERNS_FROM);
        assert_eq!(
            ids(guards.candidates(&calm, on)),
            ["card", "iban", "invisible-characters"]
        );
        assert!(ids(guards.narrowed(calm.as_bytes(), on)).is_empty());
        let with_card = format!("{calm} paid by 4539 1488 0343 6467");
        assert_eq!(ids(guards.narrowed(with_card.as_bytes(), on)), ["card"]);
        // A short text is narrowed by its candidates only.
        assert_eq!(
            ids(guards.narrowed(b"2026-11-30 1234567890123 ISO8601 K\xc3\xb6ln", on)).len(),
            3
        );
    }

    #[test]
    fn word_boundaries_become_ascii_ones_and_other_escapes_stay() {
        assert_eq!(
            super::ascii_boundaries(r"\b(\d{4})\b \\b \x{202A}"),
            r"(?-u:\b)(\d{4})(?-u:\b) \\b \x{202A}"
        );
    }
}

/// `pattern` with each word boundary `\b` made an ASCII one: the lazy DFA cannot run a
/// Unicode boundary over text with a byte outside ASCII (and falls back to a slower
/// engine). Next to the ASCII word character a rule's match begins or ends with, an ASCII
/// boundary holds wherever a Unicode one does, so the set finds at least what the rules
/// would.
fn ascii_boundaries(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('b') => out.push_str("(?-u:\\b)"),
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// The patterns of the rules of one set that have no keywords, as one set of regexes
/// over bytes: one pass over an answer says which of them match anywhere in it, and a
/// rule that matches nowhere need not run on any of its strings.
#[derive(Debug, Clone)]
pub(super) struct Patterns {
    /// The rules it was built for.
    pub(super) set: Set,
    matcher: Matcher,
    rule_of: Vec<usize>,
}

/// How a [`Patterns`] runs: one rule's regex (it stops at its first match), or the set.
#[derive(Debug, Clone)]
enum Matcher {
    One(regex::bytes::Regex),
    Set(regex::bytes::RegexSet),
}

impl Patterns {
    /// The patterns of the rules of `set` (without keywords), each as written.
    pub(super) fn build(patterns: &[(usize, &str)], set: Set) -> Result<Self, String> {
        let chosen: Vec<&(usize, &str)> =
            patterns.iter().filter(|(i, _)| set.contains(*i)).collect();
        let matcher = match chosen.as_slice() {
            [(_, pattern)] => Matcher::One(
                regex::bytes::RegexBuilder::new(&ascii_boundaries(pattern))
                    .size_limit(super::PATTERN_BYTES)
                    .build()
                    .map_err(|e| format!("the guards' pattern does not compile over bytes: {e}"))?,
            ),
            _ => Matcher::Set(
                regex::bytes::RegexSetBuilder::new(chosen.iter().map(|(_, p)| ascii_boundaries(p)))
                    .size_limit(super::PATTERN_BYTES.saturating_mul(chosen.len().max(1)))
                    .build()
                    .map_err(|e| format!("the guards' patterns do not compile as one set: {e}"))?,
            ),
        };
        Ok(Self {
            set,
            matcher,
            rule_of: chosen.iter().map(|(i, _)| *i).collect(),
        })
    }

    /// The rules of its set whose pattern matches somewhere in `text`.
    pub(super) fn matching(&self, text: &[u8]) -> Set {
        let regexes = match &self.matcher {
            Matcher::One(one) if one.is_match(text) => return self.set,
            Matcher::One(_) => return Set::EMPTY,
            Matcher::Set(regexes) => regexes,
        };
        regexes
            .matches(text)
            .iter()
            .filter_map(|k| self.rule_of.get(k))
            .fold(Set::EMPTY, |set, i| set.with(*i))
    }
}
