//! The names tools are listed under on `/mcp` (decision 010).
//!
//! Model APIs and hosted clients take a tool name only when it matches
//! `^[a-zA-Z0-9_-]{1,64}$` (Claude refuses a whole tool list over one bad name, OpenAI
//! refuses dots), so the canonical `<service>.<tool>` cannot be listed as it is. Each
//! tool's listed name is its full name with every other character (the dot) made `_`:
//! `payments.get_customers` is `payments_get_customers`. A name over 64 characters, or
//! one that two tools would share, keeps its first 55 characters and ends in `_` and 8
//! hex digits of the sha256 of the full name, so it is unique and the same on every
//! start of the same catalog. The mapping is made once at assembly
//! ([`crate::catalog::Catalog::resolve`] finds a tool by it); the canonical name stays
//! what `POST /`, `call_tool` and `_meta` say.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

/// The longest name model APIs take.
pub const MAX_LEN: usize = 64;

/// Characters kept before the hash of a shortened name (55 + `_` + 8 = 64).
const KEPT: usize = MAX_LEN - 9;

/// Whether a model API takes `name`: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn model_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A full name with every character a model API refuses made `_`.
fn plain(full_name: &str) -> String {
    full_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The shortened form: the first characters of the plain name, `_`, and 8 hex digits
/// of the sha256 of the full name.
fn hashed(full_name: &str, plain: &str) -> String {
    let digest = Sha256::digest(full_name.as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let kept = plain[..plain.len().min(KEPT)].trim_end_matches('_');
    format!("{kept}_{hex}")
}

/// The listed name of each of `full_names`, in the same order: unique, each
/// [`model_safe`].
pub fn listed_names<'a>(full_names: impl Iterator<Item = &'a str> + Clone) -> Vec<String> {
    let mut count: HashMap<String, usize> = HashMap::new();
    for name in full_names.clone() {
        *count.entry(plain(name)).or_default() += 1;
    }
    full_names
        .map(|name| {
            let p = plain(name);
            if p.len() <= MAX_LEN && count.get(&p) == Some(&1) {
                p
            } else {
                hashed(name, &p)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_names_are_safe_unique_and_stable() {
        let long = format!("payments.{}", "get_a_very_long_name_".repeat(4));
        let full = [
            "payments.get_customers",
            "crm.contacts-search",
            "a.b_c",
            "a_b.c",
            long.as_str(),
            "media.caf\u{e9}",
        ];
        let names = listed_names(full.iter().copied());
        assert_eq!(names[0], "payments_get_customers");
        assert_eq!(names[1], "crm_contacts-search");
        // Two tools that would share a name both take the hashed form.
        assert!(names[2].starts_with("a_b_c_") && names[3].starts_with("a_b_c_"));
        assert_ne!(names[2], names[3]);
        assert!(
            names[4].len() <= MAX_LEN && names[4].len() > 60,
            "{}",
            names[4]
        );
        assert!(names[4].starts_with("payments_get_a_very_long_name"));
        assert!(names[5].starts_with("media_caf_"));
        for n in &names {
            assert!(model_safe(n), "{n}");
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        // The same catalog lists the same names.
        assert_eq!(listed_names(full.iter().copied()), names);
        assert!(!model_safe("payments.get") && !model_safe("") && !model_safe(&"a".repeat(65)));
    }
}
