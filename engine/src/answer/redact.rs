//! Redaction of upstream answers: the tool's JSONPath paths, then every credential-like
//! key at any depth (`rules/redaction.toml`), then any string that contains one of this
//! request's own secrets (an upstream that echoes the key back cannot leak it).

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
        Value::String(s) if secrets.iter().any(|secret| s.contains(secret)) => {
            *s = rules.replacement.clone();
            *count += 1;
        }
        _ => {}
    }
}

/// Replaces this request's secrets inside free text (for error messages and details).
pub fn scrub_text(text: &str, replacement: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for secret in secrets.iter().filter(|s| s.len() >= MIN_SECRET_LEN) {
        out = out.replace(secret, replacement);
    }
    out
}
