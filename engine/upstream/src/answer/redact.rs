//! Redaction of upstream answers: the tool's JSONPath paths, then every credential-like
//! key at any depth (`rules/redaction.toml`), then any string that contains one of this
//! request's own secrets (an upstream that echoes the key back cannot leak it); a member
//! whose key holds one of them is dropped.

use jsonpath_rust::query::js_path_process;
use jsonpath_rust::query::queryable::Queryable;
use serde_json::Value;

use crate::catalog::JsonPath;
use crate::catalog::rules::Redaction;

/// Secrets shorter than this are not searched for in strings (too many false hits).
pub(crate) const MIN_SECRET_LEN: usize = 6;

/// Redacts in place; returns how many values were replaced.
pub fn redact(
    value: &mut Value,
    rules: &Redaction,
    paths: &[&JsonPath],
    secrets: &[&str],
) -> usize {
    let mut count = 0;
    for path in paths {
        if let Some(pointer) = &path.pointer {
            if let Some(slot) = value.pointer_mut(pointer) {
                *slot = Value::String(rules.replacement.clone());
                count += 1;
            }
            continue;
        }
        let found: Vec<String> = js_path_process(&path.query, &*value)
            .map(|refs| refs.into_iter().map(|r| r.path).collect())
            .unwrap_or_default();
        for p in found {
            if let Some(slot) = value.reference_mut(p) {
                *slot = Value::String(rules.replacement.clone());
                count += 1;
            }
        }
    }
    let secrets: Vec<&str> = secrets
        .iter()
        .copied()
        .filter(|s| s.len() >= MIN_SECRET_LEN)
        .collect();
    walk(value, rules, &secrets, &mut count);
    count
}

fn walk(value: &mut Value, rules: &Redaction, secrets: &[&str], count: &mut usize) {
    match value {
        Value::Object(map) => {
            // A member whose key holds a secret goes, value and all (a key cannot be
            // replaced without colliding with another).
            if !secrets.is_empty() {
                let before = map.len();
                map.retain(|key, _| !holds_secret(key, secrets));
                *count += before - map.len();
            }
            for (key, v) in map.iter_mut() {
                if rules.is_secret_key(key) {
                    if !v.is_null() {
                        *v = Value::String(rules.replacement.clone());
                        *count += 1;
                    }
                } else {
                    walk(v, rules, secrets, count);
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                walk(v, rules, secrets, count);
            }
        }
        Value::String(s) if holds_secret(s, secrets) => {
            *s = rules.replacement.clone();
            *count += 1;
        }
        _ => {}
    }
}

/// Whether `text` holds one of `secrets`, as it is or as JSON writes it: a text with a
/// character JSON escapes is searched in its escaped form too, where a tab before
/// `b_live…` reads `\tb_live…` (found by the differential fuzzer). The one-pass scan
/// ([`crate::answer::scan`]) asks the same.
pub(crate) fn holds_secret(text: &str, secrets: &[&str]) -> bool {
    if secrets.is_empty() {
        return false;
    }
    secrets.iter().any(|secret| text.contains(secret))
        || escaped(text).is_some_and(|json| secrets.iter().any(|secret| json.contains(secret)))
}

/// `text` as JSON writes it, when that differs from `text` (a control character, a quote
/// or a backslash in it).
pub(crate) fn escaped(text: &str) -> Option<String> {
    text.bytes()
        .any(|b| b < 0x20 || b == b'"' || b == b'\\')
        .then(|| serde_json::to_string(text).unwrap_or_default())
}

/// Replaces this request's secrets inside free text (for error messages and details).
pub fn scrub_text(text: &str, replacement: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for secret in secrets.iter().filter(|s| s.len() >= MIN_SECRET_LEN) {
        out = out.replace(secret, replacement);
    }
    out
}
