//! The one-pass answer scan against the tree path: parse, redact, cut, write.

use std::sync::OnceLock;

use super::Verdict;
use crate::answer::scan::{NotJson, Scanned, scan};
use crate::catalog::rules::{RawRedaction, Redaction};

/// A secret every oracle run searches for; no scanned answer may still hold it.
pub const SECRET: &str = "tb_oracle_secret_value";

/// The project's own redaction rules (the committed file; it always parses, and a
/// catalog test holds that).
pub(crate) fn rules() -> &'static Redaction {
    static RULES: OnceLock<Redaction> = OnceLock::new();
    RULES.get_or_init(|| {
        let raw = toml::from_str::<RawRedaction>(include_str!("../../../rules/redaction.toml"))
            .unwrap_or_else(|_| RawRedaction {
                replacement: "[REDACTED]".into(),
                keys: vec!["token".into(), "password".into()],
                suffixes: Vec::new(),
                keep: Vec::new(),
            });
        Redaction::compile(raw)
    })
}

/// What the tree path makes of `body`.
pub(crate) fn tree(
    body: &[u8],
    secrets: &[&str],
    budget: Option<usize>,
) -> Result<Scanned, NotJson> {
    let text = std::str::from_utf8(body).map_err(|_| NotJson)?;
    let mut value: serde_json::Value = serde_json::from_str(text).map_err(|_| NotJson)?;
    let redacted = crate::answer::redact::redact(&mut value, rules(), &[], secrets);
    let truncation = match budget {
        Some(b) => crate::answer::response::truncate(&mut value, b),
        None => Vec::new(),
    };
    Ok(Scanned {
        text: value.to_string(),
        redacted,
        truncation,
    })
}

/// Any answer, with and without an item budget: the scan writes what the tree path
/// writes, counts the same redactions and cuts, and leaves no secret.
pub fn answer(body: &[u8]) -> Verdict {
    if body.trim_ascii().is_empty() {
        return Ok(()); // the caller answers an empty body before any scan
    }
    let secrets = [SECRET, "short"];
    for budget in [None, Some(0), Some(2)] {
        let scanned = scan(body, rules(), &secrets, budget);
        let reference = tree(body, &secrets, budget);
        if scanned != reference {
            return Err(format!(
                "scan (budget {budget:?}): {scanned:?}, tree: {reference:?}"
            ));
        }
        if let Ok(s) = &scanned
            && s.text.contains(SECRET)
        {
            return Err(format!("a secret is left in {:?}", s.text));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        #[test]
        fn any_bytes_scan_as_the_tree_path_writes_them(
            body in proptest::collection::vec(proptest::sample::select(
                b"{}[],:\"\\ 0123456789-+.eEtrufalsn\x01\xc3\xa9aptokenid".to_vec()), 0..64)
        ) {
            proptest::prop_assert_eq!(answer(&body), Ok(()));
        }
    }

    #[test]
    fn seeds_scan_alike() {
        for body in [
            format!(r#"{{"token":"x","data":[1,2,3],"note":"has {SECRET} inside"}}"#),
            r#"[{"id":1,"password":null},{"id":2}]"#.to_string(),
            r#"{"a":1,"a":2}"#.to_string(),
            "[1e400]".to_string(),
            // Found by cargo fuzz (2026-11-26): a secret in a key was left by both paths.
            format!(r#" {{ "kDDDDDDDD[ [ ##nnnnnnn{SECRET}DD4\u8065y" :70 }} "#),
            // And a secret only the escaped form holds: `\t` then the rest of it.
            format!(r#" {{ "kDDD8\{SECRET}u0065y" :70, "v": "\{SECRET}" }} "#),
        ] {
            assert_eq!(answer(body.as_bytes()), Ok(()));
        }
    }
}
