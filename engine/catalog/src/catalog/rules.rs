//! Cross-cutting rules from `rules/*.toml`: error statuses, default redaction keys,
//! confirmation policies and limits. Parsed strictly, compiled once.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::descriptor::{Class, ConfirmationMode, Risk};
use crate::error::Classification;

/// `rules/errors.toml`: one table per classification.
pub type RawErrors = BTreeMap<String, RawErrorRule>;

/// Status and retry hint of one classification.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawErrorRule {
    /// HTTP status.
    pub status: u16,
    /// Whether the same call may succeed later unchanged.
    pub retryable: bool,
}

/// `rules/redaction.toml`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawRedaction {
    /// The value put in place of a redacted one.
    pub replacement: String,
    /// Credential-like key names.
    pub keys: Vec<String>,
    /// Key name endings that are credential-like.
    #[serde(default)]
    pub suffixes: Vec<String>,
    /// Names never redacted by the suffix rule (pagination cursors).
    #[serde(default)]
    pub keep: Vec<String>,
}

/// `rules/confirmation.toml`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawConfirmation {
    /// The argument that confirms a write (`confirm`).
    pub confirm_arg: String,
    /// The argument that carries the crm apply phrase (`confirmApply`).
    pub apply_arg: String,
    /// The exact apply phrase (`CONFIRM APPLY`).
    pub apply_phrase: String,
    /// Policies, first match wins.
    pub policy: Vec<RawPolicy>,
}

/// One confirmation policy.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawPolicy {
    /// Only tools of this service.
    #[serde(default)]
    pub service: Option<String>,
    /// Only tools of this risk.
    #[serde(default)]
    pub risk: Option<Risk>,
    /// Only tools with at least one of these class words.
    #[serde(default)]
    pub classes: Vec<Class>,
    /// The mode for matching tools (never `auto`).
    pub mode: ConfirmationMode,
}

/// `rules/argument_sets.toml`: named groups of argument properties (JSON Schema) that
/// tools of any service merge in with `argument_sets = ["name"]`; a service's own
/// `[argument_sets]` of the same name win.
pub type RawArgumentSets = BTreeMap<String, serde_json::Map<String, serde_json::Value>>;

/// `rules/limits.toml`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Limits {
    /// Largest accepted request body in bytes.
    pub max_body_bytes: usize,
    /// Upstream timeout when neither tool nor service sets one.
    pub default_timeout_ms: u64,
    /// List budget when neither tool nor service sets one.
    pub default_item_budget: usize,
    /// Largest upstream answer read.
    pub max_upstream_body_bytes: usize,
    /// Largest redacted upstream error body kept in `error.details`.
    pub error_details_bytes: usize,
    /// Longest JSON-RPC id accepted.
    pub max_request_id_chars: usize,
    /// minijinja fuel per evaluation.
    pub template_fuel: u64,
}

/// Compiled rules.
#[derive(Debug, Clone)]
pub struct Rules {
    /// Status and retry hint per classification.
    pub errors: BTreeMap<Classification, RawErrorRule>,
    /// Default redaction.
    pub redaction: Redaction,
    /// Confirmation policies.
    pub confirmation: Confirmation,
    /// Limits.
    pub limits: Limits,
    /// Find-tools ranking (`rules/search.toml`).
    pub search: crate::catalog::search::RawSearch,
    /// Argument sets any tool may name (`rules/argument_sets.toml`).
    pub argument_sets: RawArgumentSets,
    /// The guards (`rules/guards.toml`), compiled and proven by their examples.
    pub guards: std::sync::Arc<crate::catalog::guards::Guards>,
}

impl Rules {
    /// HTTP status of a classification (500 if the rules lack it, which compile forbids).
    pub fn status(&self, classification: Classification) -> u16 {
        self.errors.get(&classification).map_or(500, |r| r.status)
    }

    /// Whether a classification is retryable.
    pub fn retryable(&self, classification: Classification) -> bool {
        self.errors
            .get(&classification)
            .is_some_and(|r| r.retryable)
    }
}

/// Compiled default redaction: normalized key sets.
#[derive(Debug, Clone)]
pub struct Redaction {
    /// Replacement value.
    pub replacement: String,
    /// The replacement as a JSON string, written once for the one-pass scan.
    replacement_json: Box<[u8]>,
    keys: NameSet,
    suffixes: Vec<String>,
    keep: NameSet,
    /// The last two bytes of every normalized key and suffix, as bits `(a << 8) | b`
    /// (`a` is 0 for a one-byte name): a key whose normalized end is not among them
    /// names nothing secret, known without normalizing it whole.
    tails: Vec<u64>,
}

/// A small set of short names, looked up by length, then by comparing the few of that
/// length: no hashing. The redaction sets hold a few dozen names and are asked about
/// every key of every upstream answer and every request header.
#[derive(Debug, Clone, Default)]
struct NameSet {
    by_len: Vec<Vec<Box<[u8]>>>,
}

impl NameSet {
    fn new(names: impl IntoIterator<Item = String>) -> Self {
        let mut set = Self::default();
        for name in names {
            if set.by_len.len() <= name.len() {
                set.by_len.resize(name.len() + 1, Vec::new());
            }
            if let Some(same) = set.by_len.get_mut(name.len())
                && !same.iter().any(|n| **n == *name.as_bytes())
            {
                same.push(name.into_bytes().into_boxed_slice());
            }
        }
        set
    }

    fn contains(&self, name: &[u8]) -> bool {
        self.by_len
            .get(name.len())
            .is_some_and(|same| same.iter().any(|n| n.last() == name.last() && **n == *name))
    }
}

/// Lowercase with `_`, `-` and spaces removed.
pub fn normalize_key(key: &str) -> String {
    key.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

impl Redaction {
    /// Compiles the raw redaction rule.
    pub fn compile(raw: RawRedaction) -> Self {
        let keys: Vec<String> = raw.keys.iter().map(|k| normalize_key(k)).collect();
        let suffixes: Vec<String> = raw.suffixes.iter().map(|k| normalize_key(k)).collect();
        let mut tails = vec![0u64; 1024];
        // A one-byte suffix ends keys whatever byte comes before it: no quick answer.
        let mut all = suffixes.iter().all(|s| s.len() >= 2);
        for name in keys.iter().chain(&suffixes) {
            match Self::tail(name.as_bytes().iter().copied().rev()) {
                Some(bit) => {
                    if let Some(word) = tails.get_mut(bit / 64) {
                        *word |= 1 << (bit % 64);
                    }
                }
                // An empty name (it matches every key's end): no quick answer.
                None => all = false,
            }
        }
        Self {
            replacement_json: serde_json::Value::String(raw.replacement.clone())
                .to_string()
                .into_bytes()
                .into_boxed_slice(),
            replacement: raw.replacement,
            keys: NameSet::new(keys),
            suffixes,
            keep: NameSet::new(raw.keep.iter().map(|k| normalize_key(k))),
            tails: if all { tails } else { Vec::new() },
        }
    }

    /// The bit of a normalized name's last two bytes, from its bytes last first (already
    /// normalized or not: `_`, `-` and spaces are skipped, letters lowered); `None` for a
    /// name with no byte left.
    fn tail(mut rev: impl Iterator<Item = u8>) -> Option<usize> {
        let mut kept = rev
            .by_ref()
            .filter(|b| !matches!(b, b'_' | b'-' | b' '))
            .map(|b| b.to_ascii_lowercase());
        let last = kept.next()?;
        let before = kept.next().unwrap_or(0);
        Some(Self::bit(before, last))
    }

    /// The bit of a normalized name ending in `before`, `last`.
    fn bit(before: u8, last: u8) -> usize {
        (usize::from(before) << 8) | usize::from(last)
    }

    /// Whether some secret name ends as the bit says.
    fn has_tail(&self, bit: usize) -> bool {
        self.tails
            .get(bit / 64)
            .is_some_and(|word| word & (1 << (bit % 64)) != 0)
    }

    /// The replacement as JSON text (a quoted, escaped string).
    pub fn replacement_json(&self) -> &[u8] {
        &self.replacement_json
    }

    /// Whether a key names a credential-like value. Called for every key of every
    /// upstream answer: the usual key (ending in two ASCII letters or digits that end no
    /// secret name) is answered inline from its last two bytes; the rest are normalized
    /// (short ASCII keys on the stack) and compared.
    #[inline]
    pub fn is_secret_key(&self, key: &str) -> bool {
        if let Some(&[before, last]) = key.as_bytes().last_chunk::<2>()
            && !self.tails.is_empty()
            && before.is_ascii_alphanumeric()
            && last.is_ascii_alphanumeric()
        {
            // Its last two bytes are the normalized name's (whatever comes before them,
            // ASCII or not).
            let bit = Self::bit(before.to_ascii_lowercase(), last.to_ascii_lowercase());
            if !self.has_tail(bit) {
                return false;
            }
        }
        self.is_secret_key_whole(key)
    }

    /// [`Self::is_secret_key`] past the quick answer.
    fn is_secret_key_whole(&self, key: &str) -> bool {
        if !self.tails.is_empty() && key.is_ascii() {
            // Most keys end otherwise than every secret name: no need to look further.
            let Some(bit) = Self::tail(key.bytes().rev()) else {
                return false;
            };
            if !self.has_tail(bit) {
                return false;
            }
        }
        let mut buf = [0u8; 64];
        let mut len = 0;
        if key.len() <= buf.len() && key.is_ascii() {
            for b in key.bytes() {
                if !matches!(b, b'_' | b'-' | b' ') {
                    buf[len] = b.to_ascii_lowercase();
                    len += 1;
                }
            }
            self.matches(buf.get(..len).unwrap_or_default())
        } else {
            self.matches(normalize_key(key).as_bytes())
        }
    }

    /// `k` normalized.
    fn matches(&self, k: &[u8]) -> bool {
        if self.keep.contains(k) {
            return false;
        }
        // The last byte first: most keys end otherwise, and then no comparison is made.
        self.keys.contains(k)
            || self
                .suffixes
                .iter()
                .any(|s| k.last() == s.as_bytes().last() && k.ends_with(s.as_bytes()))
    }
}

/// Compiled confirmation rules.
#[derive(Debug, Clone)]
pub struct Confirmation {
    /// `confirm`.
    pub confirm_arg: String,
    /// `confirmApply`.
    pub apply_arg: String,
    /// `CONFIRM APPLY`.
    pub apply_phrase: String,
    /// Policies in order.
    pub policies: Vec<RawPolicy>,
}

impl Confirmation {
    /// The mode of the first policy matching a tool; `None` when no policy matches.
    pub fn mode_for(
        &self,
        service: &str,
        risk: Risk,
        classes: &[Class],
    ) -> Option<ConfirmationMode> {
        self.policies
            .iter()
            .find(|p| {
                crate::catalog::descriptor::selects(
                    p.service.as_deref(),
                    p.risk,
                    &p.classes,
                    service,
                    risk,
                    classes,
                )
            })
            .map(|p| p.mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redaction() -> Redaction {
        Redaction::compile(RawRedaction {
            replacement: "[REDACTED]".into(),
            keys: vec!["apiKey".into(), "authorization".into()],
            suffixes: vec!["token".into()],
            keep: vec!["next_page_token".into()],
        })
    }

    /// The quick answer from a key's last two bytes never differs from the whole check.
    #[test]
    fn the_quick_answer_agrees_with_the_whole_check() {
        let project: RawRedaction =
            toml::from_str(include_str!("../../../../rules/redaction.toml")).unwrap();
        let one_byte = RawRedaction {
            replacement: "x".into(),
            keys: vec!["k".into()],
            suffixes: vec!["z".into()],
            keep: vec![],
        };
        let keys = [
            "id",
            "name",
            "k",
            "K",
            "z",
            "az",
            "a_z",
            "api_key",
            "API-KEY",
            "apiKey",
            "x-api-key",
            "Authorization",
            "refresh_token",
            "next_page_token",
            "pageToken",
            "csrfToken",
            "token_",
            "to ken",
            "password",
            "pass_word",
            "Password2",
            "secret",
            "client_secret",
            "mysecretkey",
            "private-key",
            "cookie",
            "set-cookie",
            "tokens",
            "",
            "_",
            "-_ ",
            "period_unit",
            "first_period_price",
            "metadata",
            "Kelvin\u{212a}",
            "ключ_token",
            "ключtoken",
            "api\u{212a}EY",
            "TOKEN",
            "aPiKeY",
            "secret2",
        ];
        for rules in [
            redaction(),
            Redaction::compile(project),
            Redaction::compile(one_byte),
        ] {
            for key in keys {
                assert_eq!(
                    rules.is_secret_key(key),
                    rules.matches(normalize_key(key).as_bytes()),
                    "{key:?}"
                );
            }
        }
    }

    #[test]
    fn keys_match_in_any_spelling() {
        let r = redaction();
        for k in [
            "api_key",
            "API-KEY",
            "apiKey",
            "Authorization",
            "refresh_token",
            "csrfToken",
        ] {
            assert!(r.is_secret_key(k), "{k}");
        }
        for k in ["next_page_token", "nextPageToken", "name", "tokens_used"] {
            assert!(!r.is_secret_key(k), "{k}");
        }
    }

    #[test]
    fn names_of_every_length_are_told_apart_without_hashing() {
        let r = Redaction::compile(RawRedaction {
            replacement: "[REDACTED]".into(),
            keys: vec!["id".into(), "x".into(), "cookie".into(), "session".into()],
            suffixes: vec![],
            keep: vec![],
        });
        for k in ["ID", "x", "Cookie", "SESSION", "se_ssion"] {
            assert!(r.is_secret_key(k), "{k}");
        }
        // Same lengths as a key but other names; longer and shorter than any; empty;
        // past the 64-byte stack buffer; not ASCII.
        for k in [
            "ab",
            "y",
            "cookiz",
            "sessio",
            "sessions",
            "",
            &"x".repeat(80),
            "séssion",
        ] {
            assert!(!r.is_secret_key(k), "{k}");
        }
        assert!(r.is_secret_key(&format!("{}-", "session")));
    }
}
