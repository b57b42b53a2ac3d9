//! Guards as data (`rules/guards.toml`, docs/guards.md): rules that find secrets,
//! personal numbers and the characters injected instructions hide in, compiled once and
//! each proven by its own examples.
//!
//! A rule is a pattern (the `regex` crate: linear time; a pattern over [`PATTERN_BYTES`]
//! compiled is refused), literal `keywords` (one automaton finds every rule's keywords
//! in one pass, and a rule runs only where one of its own occurs; a format with no
//! literal says what a text must hold instead, `needs` ([`Needs`]: enough digits, a
//! run of them, a shape of letters and digits, or a byte outside ASCII), measured in one
//! pass too), an optional validator ([`validate::Validator`]), an `allow` list
//! (literals, or `re:` patterns matched whole) never flagged, where it looks
//! (`arguments`, `answers`, `both`) and what it does there (`redact`, `strip`, `block`,
//! `alert`). The finding is the pattern's first capture group when it has one (a
//! value after its name), else the whole match. Its `matches` must all be flagged and
//! its `ignores` none: a rule whose own examples fail is refused with its line.
//!
//! This module compiles and scans; what a call does with a finding is the call's.

pub mod applied;
mod keywords;
mod needs;
pub mod validate;
pub mod written;

use regex::Regex;
use serde::Deserialize;

pub use needs::Needs;
use needs::{Signals, Wanted};
use validate::Validator;
pub use written::WrittenRule;

/// From how many bytes an answer's keywordless rules are first run as one set over the
/// whole of it ([`Guards::narrowed`]; measured in bench/README.md "Guards").
pub const WHOLE_PATTERNS_FROM: usize = 4096;

/// The largest compiled pattern (bytes of the regex's program): a pattern over it is
/// refused at start.
pub const PATTERN_BYTES: usize = 256 * 1024;

/// What a rule finds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Keys, tokens, private keys, signatures.
    #[default]
    Secret,
    /// Numbers and addresses that name or charge a person.
    Personal,
    /// What a text tells a model to do instead of what it was asked.
    Injection,
}

/// Where a rule looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LooksAt {
    /// A call's arguments.
    Arguments,
    /// An upstream's answers.
    Answers,
    /// Both.
    #[default]
    Both,
}

impl LooksAt {
    /// Whether a rule looking `self` looks at `direction` (`Arguments` or `Answers`).
    pub fn covers(self, direction: Self) -> bool {
        self == Self::Both || self == direction
    }
}

/// What a rule does where it finds something.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The finding replaced with `[REDACTED:<id>]`.
    Redact,
    /// The finding removed (invisible characters).
    Strip,
    /// The call refused (`guard_blocked`), the text never returned.
    Block,
    /// Left as it is, noted.
    #[default]
    Alert,
}

impl Action {
    /// Its name as written (`redact`, `strip`, `block`, `alert`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Redact => "redact",
            Self::Strip => "strip",
            Self::Block => "block",
            Self::Alert => "alert",
        }
    }
}

/// One rule, whole: a [`WrittenRule`] with what it changes or extends filled in
/// ([`written::resolve`]).
#[derive(Debug, Clone, Default)]
pub struct RawRule {
    /// The rule's id (`card`, `aws-access-key`).
    pub id: String,
    /// The id of the rule it descends from through `extends` (its own when none): of the
    /// rules of one family that apply to a tool in one direction, the most specific wins.
    pub family: String,
    /// How many `extends` lead from the family's first rule to it: at equal specificity
    /// the deeper rule wins (it was written to refine the other).
    pub depth: u8,
    /// What it finds.
    pub kind: Kind,
    /// One line on what it finds, from which format.
    pub description: String,
    /// The pattern.
    pub pattern: String,
    /// Literals one of which must occur for the pattern to run (none: it always runs).
    pub keywords: Vec<String>,
    /// Whether keywords are matched in any case.
    pub keywords_any_case: bool,
    /// For a format with no literal to wait for, what a text must hold for the
    /// pattern to run ([`Needs`]: `"digits >= n"`, `"digit_run >= n"`, `"shape XXXX"`
    /// or `"non_ascii"`). A rule with neither keywords nor `needs` runs on every text.
    pub needs: Option<String>,
    /// A check the finding must also pass.
    pub validator: Option<String>,
    /// Findings never flagged: literals, or `re:<pattern>` matched whole.
    pub allow: Vec<String>,
    /// Where it looks.
    pub looks_at: LooksAt,
    /// What it does.
    pub action: Action,
    /// Whether it is on.
    pub on: bool,
    /// Texts it must flag.
    pub matches: Vec<String>,
    /// Texts it must not flag.
    pub ignores: Vec<String>,
    /// Which tools it applies to.
    pub selectors: Selectors,
}

/// Which tools a rule applies to: every one named must hold (none named: every tool).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selectors {
    /// One tool, by full name.
    pub tool: Option<String>,
    /// Tools of this service.
    pub service: Option<String>,
    /// Tools of this risk.
    pub risk: Option<crate::catalog::descriptor::Risk>,
    /// Tools with at least one of these classes.
    pub classes: Vec<crate::catalog::descriptor::Class>,
}

/// A text without its spaces and dashes: how an allowed literal is compared (a test
/// card number is the same number however it is grouped).
fn loose(text: &str) -> String {
    text.chars().filter(|c| *c != ' ' && *c != '-').collect()
}

/// `rules/guards.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGuards {
    /// The rules, in order.
    #[serde(default)]
    pub rule: Vec<WrittenRule>,
}

/// One compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its id.
    pub id: String,
    /// Its id, shared (an envelope's `meta.guards` holds it without a copy).
    pub shared_id: std::sync::Arc<str>,
    /// What it finds.
    pub kind: Kind,
    /// Where it looks.
    pub looks_at: LooksAt,
    /// What it does.
    pub action: Action,
    /// Whether it is on.
    pub on: bool,
    /// The description.
    pub description: String,
    /// Its family (the rule it descends from through `extends`, else itself).
    pub family: String,
    /// Its depth in the family.
    pub depth: u8,
    /// Which tools it applies to.
    pub selectors: Selectors,
    pattern: Regex,
    validator: Option<Validator>,
    allow_literals: Vec<String>,
    allow_patterns: Vec<Regex>,
    /// When it runs without a keyword: always (`None` with no keywords), or when the
    /// text holds what it needs.
    needs: Option<Needs>,
    /// Whether it has keywords.
    keyed: bool,
    /// Its keywords (lower case when matched in any case), to check its own examples.
    keywords: Vec<String>,
    any_case: bool,
}

/// One thing a rule found: the rule's index and the byte range in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    /// Index into [`Guards::rules`].
    pub rule: usize,
    /// Start byte.
    pub start: usize,
    /// End byte.
    pub end: usize,
}

/// The rules that acted during one call, in each direction: written by every pass of
/// the call that reads its arguments or an answer (a tool run inside another too),
/// read once for its envelope, audit, metric and span. Lock-free: two words per
/// direction.
#[derive(Debug, Default)]
pub struct Acted {
    arguments: [std::sync::atomic::AtomicU64; 2],
    answers: [std::sync::atomic::AtomicU64; 2],
}

impl Acted {
    /// Notes that the rules of `set` acted on `direction` (`Arguments` or `Answers`).
    pub fn note(&self, direction: LooksAt, set: Set) {
        use std::sync::atomic::Ordering::Relaxed;
        if set.is_empty() {
            return;
        }
        let words = match direction {
            LooksAt::Arguments => &self.arguments,
            LooksAt::Answers | LooksAt::Both => &self.answers,
        };
        words[0].fetch_or(set.0 as u64, Relaxed);
        words[1].fetch_or((set.0 >> 64) as u64, Relaxed);
    }

    /// The rules that acted on `direction`.
    pub fn on(&self, direction: LooksAt) -> Set {
        use std::sync::atomic::Ordering::Relaxed;
        let read = |words: &[std::sync::atomic::AtomicU64; 2]| {
            Set(u128::from(words[0].load(Relaxed)) | u128::from(words[1].load(Relaxed)) << 64)
        };
        match direction {
            LooksAt::Arguments => read(&self.arguments),
            LooksAt::Answers => read(&self.answers),
            LooksAt::Both => Set(read(&self.arguments).0 | read(&self.answers).0),
        }
    }
}

/// The compiled guards: the rules and the keyword automaton over all of them.
#[derive(Debug, Clone)]
pub struct Guards {
    /// The rules, in the file's order.
    pub rules: Vec<Rule>,
    /// The keyword automata: of the keyed rules on arguments, on answers, and of all
    /// keyed rules (last: what any other set falls back on).
    keywords: Vec<keywords::Keywords>,
    /// The patterns of the rules without keywords, as one set each: of each rule alone,
    /// then of those on arguments, on answers, and of all.
    patterns: Vec<keywords::Patterns>,
    /// The rules with keywords.
    keyed: Set,
    /// The rules without keywords that need something of a text.
    needing: Set,
    /// The rules that run on every text (no keywords, no `needs`).
    always: Set,
    /// The rules that are on and look at arguments.
    on_arguments: Set,
    /// The rules that are on and look at answers.
    on_answers: Set,
    /// The rules whole, as compiled (a deployment's rules change or extend them).
    raw: Vec<RawRule>,
    /// The line each was last written at.
    lines: Vec<usize>,
}

/// The most rules the guards hold (a [`Set`] is one 128-bit word).
pub const MOST_RULES: usize = 128;

/// A set of rules, by their index in [`Guards::rules`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Set(u128);

impl Set {
    /// No rule.
    pub const EMPTY: Self = Self(0);

    /// Whether it holds no rule.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether it holds rule `i`.
    pub fn contains(self, i: usize) -> bool {
        i < MOST_RULES && self.0 & (1 << i) != 0
    }

    /// Its rules' indexes, in order.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        let mut left = self.0;
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            let i = left.trailing_zeros() as usize;
            left &= left - 1;
            Some(i)
        })
    }

    /// It and rule `i`.
    #[must_use]
    pub fn with(self, i: usize) -> Self {
        if i < MOST_RULES {
            Self(self.0 | 1 << i)
        } else {
            self
        }
    }

    /// Both sets' rules.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// How many rules it holds.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }
}

/// A rule's refusal at compile: the line of its `[[rule]]` and why.
pub type Refusal = (usize, String);

impl Rule {
    fn compile(raw: &RawRule) -> Result<Self, String> {
        if raw.id.is_empty()
            || !raw
                .id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "rule id `{}` must be lowercase letters, digits, `-` and `_`",
                raw.id
            ));
        }
        let pattern = regex::RegexBuilder::new(&raw.pattern)
            .size_limit(PATTERN_BYTES)
            .build()
            .map_err(|e| {
                format!(
                    "rule `{}`: its pattern does not compile within {} KiB: {e}",
                    raw.id,
                    PATTERN_BYTES / 1024
                )
            })?;
        let validator = raw
            .validator
            .as_deref()
            .map(Validator::parse)
            .transpose()
            .map_err(|e| format!("rule `{}`: {e}", raw.id))?;
        let mut allow_literals = Vec::new();
        let mut allow_patterns = Vec::new();
        for allowed in &raw.allow {
            match allowed.strip_prefix("re:") {
                Some(p) => allow_patterns.push(
                    Regex::new(&format!("^(?:{p})$"))
                        .map_err(|e| format!("rule `{}`: allow `{allowed}`: {e}", raw.id))?,
                ),
                None => allow_literals.push(loose(allowed)),
            }
        }
        if raw.keywords.iter().any(String::is_empty) {
            return Err(format!("rule `{}`: a keyword is empty", raw.id));
        }
        Ok(Self {
            id: raw.id.clone(),
            shared_id: std::sync::Arc::from(raw.id.as_str()),
            kind: raw.kind,
            looks_at: raw.looks_at,
            action: raw.action,
            on: raw.on,
            description: raw.description.clone(),
            family: raw.family.clone(),
            depth: raw.depth,
            selectors: raw.selectors.clone(),
            pattern,
            validator,
            allow_literals,
            allow_patterns,
            needs: raw
                .needs
                .as_deref()
                .map(Needs::parse)
                .transpose()
                .map_err(|e| format!("rule `{}`: {e}", raw.id))?,
            keyed: !raw.keywords.is_empty(),
            keywords: raw
                .keywords
                .iter()
                .map(|k| {
                    if raw.keywords_any_case {
                        k.to_ascii_lowercase()
                    } else {
                        k.clone()
                    }
                })
                .collect(),
            any_case: raw.keywords_any_case,
        })
    }

    /// This rule's findings in `text` (its pattern run, validated, allowed ones left).
    fn find(&self, index: usize, text: &str, out: &mut Vec<Finding>) {
        self.find_allowing(index, text, true, out);
    }

    /// [`Rule::find`], the allow list heeded or not.
    fn find_allowing(&self, index: usize, text: &str, heed_allow: bool, out: &mut Vec<Finding>) {
        for captures in self.pattern.captures_iter(text) {
            // The first group that took part (a value after its name), else the match.
            let Some(found) = captures
                .iter()
                .skip(1)
                .flatten()
                .next()
                .or_else(|| captures.get(0))
            else {
                continue;
            };
            let value = found.as_str();
            if value.is_empty()
                || self.validator.is_some_and(|v| !v.passes(value))
                || (heed_allow
                    && (self.allow_literals.iter().any(|a| *a == loose(value))
                        || self.allow_patterns.iter().any(|p| p.is_match(value))))
            {
                continue;
            }
            out.push(Finding {
                rule: index,
                start: found.start(),
                end: found.end(),
            });
        }
    }

    /// The validator a finding must also pass, if any.
    pub fn validator(&self) -> Option<Validator> {
        self.validator
    }

    /// Whether this rule's pattern would run on `text` at all: one of its keywords
    /// occurs, or the text holds what it needs.
    fn runs_on(&self, text: &str) -> bool {
        if self.keyed {
            let text = if self.any_case {
                std::borrow::Cow::Owned(text.to_ascii_lowercase())
            } else {
                std::borrow::Cow::Borrowed(text)
            };
            return self.keywords.iter().any(|k| text.contains(k.as_str()));
        }
        self.needs.is_none_or(|n| {
            let mut wanted = Wanted::default();
            wanted.add(n);
            Signals::of(text.as_bytes(), wanted).meet(n)
        })
    }

    /// Whether this rule alone flags `text`.
    pub fn flags(&self, text: &str) -> bool {
        let mut out = Vec::new();
        self.find(0, text, &mut out);
        !out.is_empty()
    }
}

impl Guards {
    /// Compiles `raw`; every refusal with the line of its rule (`lines[i]` is the line
    /// of the `i`-th `[[rule]]`).
    pub fn compile(written: &[WrittenRule], lines: &[usize]) -> Result<Self, Vec<Refusal>> {
        Self::empty().with(written, lines)
    }

    /// These guards with `written` applied in order on top (a deployment's
    /// `[[guards.rule]]`): each changes a rule by its id, extends one, or adds one; then
    /// every rule compiled and proven again. `lines[i]` is the line of the `i`-th.
    pub fn with(&self, written: &[WrittenRule], lines: &[usize]) -> Result<Self, Vec<Refusal>> {
        let mut raw = self.raw.clone();
        let mut raw_lines = self.lines.clone();
        let mut refusals = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for (i, w) in written.iter().enumerate() {
            let line = lines.get(i).copied().unwrap_or(0);
            if !seen.insert(w.id.as_str()) {
                refusals.push((line, format!("rule `{}` is written twice here", w.id)));
                continue;
            }
            match written::resolve(w, &raw) {
                Ok(written::Resolved::Changes(at, rule)) => {
                    raw[at] = rule;
                    raw_lines[at] = line;
                }
                Ok(written::Resolved::Adds(rule)) => {
                    raw.push(rule);
                    raw_lines.push(line);
                }
                Err(e) => refusals.push((line, e)),
            }
        }
        if !refusals.is_empty() {
            return Err(refusals);
        }
        Self::compile_whole(raw, raw_lines)
    }

    /// Compiles whole rules, each proven by its examples.
    fn compile_whole(raw: Vec<RawRule>, lines: Vec<usize>) -> Result<Self, Vec<Refusal>> {
        let mut refusals = Vec::new();
        let mut rules = Vec::new();
        for (i, r) in raw.iter().enumerate() {
            let line = lines.get(i).copied().unwrap_or(0);
            match Rule::compile(r) {
                Ok(rule) => {
                    refusals.extend(proven(&rule, r).into_iter().map(|e| (line, e)));
                    rules.push(rule);
                }
                Err(e) => refusals.push((line, e)),
            }
        }
        if rules.len() > MOST_RULES {
            refusals.push((
                lines.get(MOST_RULES).copied().unwrap_or(0),
                format!(
                    "{} guard rules: at most {MOST_RULES} are held; merge rules of one format",
                    rules.len()
                ),
            ));
        }
        if !refusals.is_empty() {
            return Err(refusals);
        }
        let mut guards = Self {
            rules,
            raw,
            lines,
            ..Self::empty()
        };
        guards.keyed = guards.select(|r| r.keyed);
        guards.needing = guards.select(|r| !r.keyed && r.needs.is_some());
        guards.always = guards.select(|r| !r.keyed && r.needs.is_none());
        guards.on_arguments = guards.select(|r| r.on && r.looks_at.covers(LooksAt::Arguments));
        guards.on_answers = guards.select(|r| r.on && r.looks_at.covers(LooksAt::Answers));
        for set in [guards.on_arguments, guards.on_answers, guards.keyed] {
            let set = guards.keyed_in(set);
            let built = keywords::Keywords::build(&guards.rules, set).map_err(|e| vec![(0, e)])?;
            guards.keywords.push(built);
        }
        let unkeyed: Vec<(usize, &str)> = guards
            .raw
            .iter()
            .enumerate()
            .filter(|(_, r)| r.keywords.is_empty())
            .map(|(i, r)| (i, r.pattern.as_str()))
            .collect();
        let all = guards.select(|_| true);
        let mut patterns = Vec::new();
        let each = unkeyed.iter().map(|(i, _)| Set::EMPTY.with(*i));
        let sets = [guards.on_arguments, guards.on_answers, all].into_iter();
        for set in each.chain(sets.map(|set| Set(set.0 & !guards.keyed.0))) {
            patterns.push(keywords::Patterns::build(&unkeyed, set).map_err(|e| vec![(0, e)])?);
        }
        guards.patterns = patterns;
        Ok(guards)
    }

    /// No rules at all.
    pub fn empty() -> Self {
        Self {
            rules: Vec::new(),
            keywords: Vec::new(),
            patterns: Vec::new(),
            keyed: Set::EMPTY,
            needing: Set::EMPTY,
            always: Set::EMPTY,
            on_arguments: Set::EMPTY,
            on_answers: Set::EMPTY,
            raw: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// The rules `wanted` accepts, as a set.
    pub fn select(&self, wanted: impl Fn(&Rule) -> bool) -> Set {
        Set(self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| wanted(r))
            .fold(0, |set, (i, _)| set | 1 << i))
    }

    /// The rules that are on and look at `direction` (`Arguments` or `Answers`).
    pub fn on_for(&self, direction: LooksAt) -> Set {
        match direction {
            LooksAt::Arguments => self.on_arguments,
            LooksAt::Answers => self.on_answers,
            LooksAt::Both => Set(self.on_arguments.0 | self.on_answers.0),
        }
    }

    /// The rules of `set` whose pattern runs on `text`: those whose keywords occur in it
    /// (one pass of the automaton, only when `set` has such rules), and those without
    /// keywords whose `needs` it meets (one pass over its bytes, only when `set` has
    /// such rules) or that need nothing. A text with no keyword and no signal runs no
    /// pattern, and costs no allocation.
    pub fn candidates(&self, text: &str, set: Set) -> Set {
        self.candidates_in(text.as_bytes(), set)
    }

    /// [`Guards::candidates`] over bytes (an answer's, before they are known to be
    /// text: the keywords and signals are bytes).
    pub fn candidates_in(&self, text: &[u8], set: Set) -> Set {
        let mut hit = set.0 & self.always.0;
        let needing = set.0 & self.needing.0;
        if needing != 0 {
            let mut wanted = Wanted::default();
            for need in Set(needing).iter().filter_map(|i| self.rules[i].needs) {
                wanted.add(need);
            }
            let signals = Signals::of(text, wanted);
            for i in Set(needing).iter() {
                if self.rules[i].needs.is_some_and(|n| signals.meet(n)) {
                    hit |= 1 << i;
                }
            }
        }
        let keyed = set.0 & self.keyed.0;
        if keyed != 0 {
            let automata = self.keywords.iter().find(|k| k.set.0 == keyed);
            if let Some(automata) = automata.or(self.keywords.last()) {
                hit |= keyed & automata.found(text).0;
            }
        }
        Set(hit)
    }

    /// What the rules of `set` find in `text`: sorted by start, overlaps resolved for
    /// the earliest and then the longest.
    pub fn scan(&self, text: &str, set: Set) -> Vec<Finding> {
        let candidates = self.candidates(text, set);
        if candidates.is_empty() {
            return Vec::new();
        }
        let mut found = Vec::new();
        for i in candidates.iter() {
            self.rules[i].find(i, text, &mut found);
        }
        found.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end)));
        let mut kept: Vec<Finding> = Vec::with_capacity(found.len());
        for f in found {
            if kept.last().is_none_or(|last| f.start >= last.end) {
                kept.push(f);
            }
        }
        kept
    }

    /// The line rule `i` was last written at (in `rules/guards.toml`, or the
    /// deployment's config for a rule it wrote).
    pub fn line(&self, i: usize) -> usize {
        self.lines.get(i).copied().unwrap_or(0)
    }

    /// The ids of the rules of `set`, in the file's order.
    pub fn ids(&self, set: Set) -> Vec<std::sync::Arc<str>> {
        set.iter()
            .filter_map(|i| self.rules.get(i))
            .map(|r| r.shared_id.clone())
            .collect()
    }

    /// When every rule of `set` waits for what it needs (no keywords, and a need):
    /// the fewest bytes a text must have for any of them to run.
    pub fn shortest(&self, set: Set) -> Option<usize> {
        set.iter()
            .map(|i| self.rules[i].needs.filter(|_| !self.rules[i].keyed))
            .try_fold(usize::MAX, |least, need| Some(least.min(need?.shortest())))
    }

    /// The rules of `set` that can find something in the bytes `text` as a whole: its
    /// candidates ([`Guards::candidates_in`]), and in a text of
    /// [`WHOLE_PATTERNS_FROM`] bytes or more, of the keywordless ones only those whose
    /// pattern matches somewhere ([`Guards::occurring`]): below that, one pass of the
    /// set of patterns costs more than the strings it would spare.
    pub fn narrowed(&self, text: &[u8], set: Set) -> Set {
        let candidates = self.candidates_in(text, set);
        if text.len() >= WHOLE_PATTERNS_FROM {
            self.occurring(text, candidates)
        } else {
            candidates
        }
    }

    /// The rules of `set` that could find something in `text` as a whole: those with
    /// keywords as they are, and of those without, only the ones whose pattern matches
    /// somewhere in it (one pass of one set of regexes). What cannot match in the whole
    /// cannot match in a piece of it.
    pub fn occurring(&self, text: &[u8], set: Set) -> Set {
        let unkeyed = Set(set.0 & !self.keyed.0);
        if unkeyed.is_empty() {
            return set;
        }
        // The set built for exactly these rules (one rule alone is a set of one), else
        // each rule's own pattern.
        let matching = match self.patterns.iter().find(|p| p.set == unkeyed) {
            Some(patterns) => patterns.matching(text),
            None => unkeyed
                .iter()
                .filter_map(|i| self.patterns.iter().find(|p| p.set == Set::EMPTY.with(i)))
                .fold(Set::EMPTY, |found, one| Set(found.0 | one.matching(text).0)),
        };
        Set((set.0 & self.keyed.0) | (unkeyed.0 & matching.0))
    }

    /// The rules of `set` that have keywords.
    pub fn keyed_in(&self, set: Set) -> Set {
        Set(set.0 & self.keyed.0)
    }

    /// `text` with each redacting finding replaced by `[REDACTED:<id>]` and each
    /// stripping one removed; blocking and alerting findings leave it as it is.
    pub fn apply(&self, text: &str, findings: &[Finding]) -> String {
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for f in findings {
            let rule = &self.rules[f.rule];
            match rule.action {
                Action::Redact => {
                    out.push_str(&text[at..f.start]);
                    out.push_str("[REDACTED:");
                    out.push_str(&rule.id);
                    out.push(']');
                    at = f.end;
                }
                Action::Strip => {
                    out.push_str(&text[at..f.start]);
                    at = f.end;
                }
                Action::Block | Action::Alert => {}
            }
        }
        out.push_str(&text[at..]);
        out
    }
}

/// A rule's own examples checked: each of `matches` flagged, none of `ignores`.
fn proven(rule: &Rule, raw: &RawRule) -> Vec<String> {
    let mut failed = Vec::new();
    if raw.matches.is_empty() {
        failed.push(format!(
            "rule `{}` has no `matches`: give the examples it must flag",
            raw.id
        ));
    }
    for example in &raw.matches {
        if rule.flags(example) {
            if !rule.runs_on(example) {
                failed.push(format!(
                    "rule `{}`'s pattern flags {example:?}, but its keywords or `needs` would never let it run there",
                    raw.id
                ));
            }
            continue;
        }
        let mut unallowed = Vec::new();
        rule.find_allowing(0, example, false, &mut unallowed);
        failed.push(if unallowed.is_empty() {
            format!(
                "rule `{}` does not flag its own example {example:?} (in `matches`)",
                raw.id
            )
        } else {
            format!(
                "rule `{}`'s `allow` swallows its own example {example:?}: narrow the allow list",
                raw.id
            )
        });
    }
    for example in &raw.ignores {
        if rule.flags(example) {
            failed.push(format!(
                "rule `{}` flags {example:?}, which its `ignores` says it must not",
                raw.id
            ));
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> RawGuards {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_rule_is_refused_when_its_own_examples_fail_or_it_cannot_compile() {
        let cases = [
            (
                "id = \"x\"\nkind = \"secret\"\npattern = 'ab+'\naction = \"redact\"\nmatches = [\"ac\"]",
                "does not flag its own example",
            ),
            (
                "id = \"x\"\nkind = \"secret\"\npattern = 'ab+'\naction = \"redact\"\nmatches = [\"ab\"]\nignores = [\"xabx\"]",
                "which its `ignores` says",
            ),
            (
                "id = \"x\"\nkind = \"secret\"\npattern = 'ab+'\nvalidator = \"crc\"\naction = \"redact\"\nmatches = [\"ab\"]",
                "does not exist",
            ),
            (
                "id = \"x\"\nkind = \"secret\"\npattern = '\\w{1000}{1000}'\naction = \"redact\"\nmatches = [\"ab\"]",
                "does not compile within",
            ),
            (
                "id = \"x\"\nkind = \"secret\"\npattern = 'ab'\nallow = [\"ab\"]\naction = \"redact\"\nmatches = [\"ab\"]",
                "swallows its own example",
            ),
            (
                "id = \"X\"\nkind = \"secret\"\npattern = 'ab'\naction = \"redact\"\nmatches = [\"ab\"]",
                "lowercase",
            ),
            (
                "id = \"x\"\nkind = \"secret\"\npattern = 'ab'\nneeds = \"digits > 3\"\naction = \"redact\"\nmatches = [\"ab\"]",
                "write `digits >= n`",
            ),
            (
                "id = \"x\"\nkind = \"secret\"\npattern = 'tok_ab'\nkeywords = [\"TOK_\"]\naction = \"redact\"\nmatches = [\"tok_ab\"]",
                "would never let it run there",
            ),
        ];
        for (rule, expected) in cases {
            let guards = raw(&format!("[[rule]]\n{rule}"));
            let refusals = Guards::compile(&guards.rule, &[7]).unwrap_err();
            assert!(
                refusals
                    .iter()
                    .any(|(line, e)| *line == 7 && e.contains(expected)),
                "{expected}: {refusals:?}"
            );
        }
    }

    #[test]
    fn the_shipped_rules_prove_themselves() {
        let text = include_str!("../../../../../rules/guards.toml");
        let shipped = raw(text);
        let guards = Guards::compile(&shipped.rule, &[]).unwrap_or_else(|e| panic!("{e:#?}"));
        let on: Vec<&str> = guards
            .rules
            .iter()
            .filter(|r| r.on)
            .map(|r| r.id.as_str())
            .collect();
        assert!(
            on.contains(&"card") && on.contains(&"iban") && on.contains(&"invisible-characters"),
            "{on:?}"
        );
        let off: Vec<&str> = guards
            .rules
            .iter()
            .filter(|r| !r.on)
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(
            off,
            [
                "email",
                "phone",
                "jwt",
                "secret-assignment",
                "injection-phrases"
            ]
        );
        // A text of no rule's keywords runs only the keywordless rules.
        let all = guards.select(|_| true);
        let ran: Vec<&str> = guards
            .candidates("an ordinary answer about invoices", all)
            .iter()
            .map(|i| guards.rules[i].id.as_str())
            .collect();
        assert!(ran.is_empty(), "{ran:?}");
        let ran: Vec<&str> = guards
            .candidates("card 4539 1488 0343 6467, note \u{202E}", all)
            .iter()
            .map(|i| guards.rules[i].id.as_str())
            .collect();
        assert_eq!(ran, ["card", "invisible-characters"]);
        // Dates, times and amounts hold digits but never a run of 13, nor a capital pair
        // before two digits: no rule that is on runs (the phone rule, off, would).
        let calm = "due 2026-12-01 10:00:00, 1234567.89 EUR, +1 415 555 0100";
        let ran: Vec<&str> = guards
            .candidates(calm, guards.on_for(LooksAt::Both))
            .iter()
            .map(|i| guards.rules[i].id.as_str())
            .collect();
        assert!(ran.is_empty(), "{ran:?}");
    }

    #[test]
    fn keywords_gate_patterns_and_findings_are_redacted_or_stripped() {
        let guards = raw(
            "[[rule]]\nid = \"tok\"\nkind = \"secret\"\npattern = 'tok_[a-z0-9]{8}'\nkeywords = [\"tok_\"]\naction = \"redact\"\nmatches = [\"tok_abcd1234\"]\n\
             [[rule]]\nid = \"bidi\"\nkind = \"injection\"\npattern = '[\\x{202A}-\\x{202E}]+'\naction = \"strip\"\nlooks_at = \"answers\"\nmatches = [\"a\\u202Eb\"]\n",
        );
        let guards = Guards::compile(&guards.rule, &[1, 9]).unwrap();
        let all = guards.select(|_| true);
        assert!(
            guards.candidates("nothing here", all).iter().eq([1]),
            "only the keywordless rule runs"
        );
        let text = "key tok_abcd1234 and \u{202E}evil";
        let found = guards.scan(text, all);
        assert_eq!(found.len(), 2);
        assert_eq!(guards.apply(text, &found), "key [REDACTED:tok] and evil");
        let arguments = guards.select(|r| r.looks_at.covers(LooksAt::Arguments));
        assert_eq!(guards.scan(text, arguments).len(), 1);
        assert_eq!(guards.on_for(LooksAt::Answers).len(), 2);
    }
}
