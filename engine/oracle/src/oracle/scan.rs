//! The one-pass answer scan against the tree path: parse, redact, cut, write.

use std::sync::OnceLock;

use super::Verdict;
use crate::answer::scan::{NotJson, Scanned, scan};
use crate::catalog::rules::{RawRedaction, Redaction};

/// A secret every oracle run searches for; no scanned answer may still hold it.
pub const SECRET: &str = "tb_oracle_secret_value";

/// The project's own redaction rules (the committed file; it always parses, and a
/// catalog test holds that).
pub fn rules() -> &'static Redaction {
    static RULES: OnceLock<Redaction> = OnceLock::new();
    RULES.get_or_init(|| {
        let raw = toml::from_str::<RawRedaction>(include_str!("../../../../rules/redaction.toml"))
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
pub fn tree(body: &[u8], secrets: &[&str], budget: Option<usize>) -> Result<Scanned, NotJson> {
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

/// The one-pass scan held to the tree path on the project's own answers (these lived
/// beside the scan; the tree path is this oracle's).
#[cfg(test)]
mod scanned_alike {
    use crate::answer::scan::*;
    use crate::catalog::rules::Redaction;
    use serde_json::Value;

    /// The project's own redaction rules.
    fn rules() -> Redaction {
        crate::oracle::scan::rules().clone()
    }

    /// What the tree path makes of `body`: parse, redact, cut, write (the oracle's).
    fn tree(body: &str, secrets: &[&str], budget: Option<usize>) -> Result<Scanned, NotJson> {
        crate::oracle::scan::tree(body.as_bytes(), secrets, budget)
    }

    fn same(body: &str, secrets: &[&str], budget: Option<usize>) {
        assert_eq!(
            scan(body.as_bytes(), &rules(), secrets, budget),
            tree(body, secrets, budget),
            "answer: {body:?}, budget {budget:?}"
        );
    }

    /// Answers that exercise every rule; each also cut at every byte (a cut answer is
    /// not JSON, or is a shorter one, and both paths must agree which).
    const ANSWERS: &[&str] = &[
        r#"[{"id":"hostingercom-domain-com","name":".COM Domain","category":"DOMAIN","metadata":null,"prices":[{"id":"x-usd-1y","price":1799,"first_period_price":999,"period":1}]},{"id":"vps-kvm-2","prices":[]}]"#,
        r#"{"zeta":1,"alpha":{"b":2,"a":[3,2,1]},"items":[1,2,3,4,5],"more":[],"api_key":"sk_live_123456","password":null}"#,
        r#"{"a":1,"a":2,"b":{"token":"x","token":null},"c":[1,2,3,4],"c":[9]}"#,
        r#"{"token":"t1","token":{"deep":"v"},"x":"tb_echo_secret_value here"}"#,
        r#" { "k\u0065y" : "v\nw\u00e9\ud83d\ude00" , "plain" : "é✓" , "esc/\"q" : "\/" } "#,
        r#"[1.0, -0, 0, -0.0, 1e2, 1E-2, 12345678901234567890, -9223372036854775809, 123456789012345678, 0.1, 2.5e308, 1e400]"#,
        r#"[true,false,null,[],{},[[]],{"":""}]"#,
        r#"["tb\u005fecho_secret_value", {"p\u0061ssword": "v", "n": "tb_echo_secret_valu"}]"#,
        r#""just a string with tb_echo_secret_value""#,
        r#"{"list/with~odd":[1,2,3],"nested":{"x":[1,2,3]},"Authorization":"Bearer abc","X-Api-Key":5}"#,
        // Keys alike in their first eight bytes, shorter than eight, or holding NUL.
        r#"{"abcdefghZ":1,"abcdefgh":2,"abcdefghA":3,"abc":4,"abc\u0000":5,"ab":6,"abcdefghA":7,"":8,"\u0000":9}"#,
        r#"[01]"#,
        r#"[1,]"#,
        r#"{"a" 1}"#,
        r#"[truex]"#,
        r#"["\ud800"]"#,
        r#"["tab	inside"]"#,
        // Keys holding a secret (their members dropped): alone, repeated, escaped,
        // beside a list of `data`, nested, and the fuzz finding of 2026-11-26.
        r#"{"b":1,"tb_echo_secret_value":{"token":"x","v":"tb_echo_secret_value"},"a":[1,2,3]}"#,
        r#"{"x tb_echo_secret_value":1,"z":[1,2,3],"x tb_echo_secret_value":2,"a":0}"#,
        r#"{"items":[1,2,3],"k\u0020tb_echo_secret_value":[1,2,3,4],"tb_echo_secret_value":[5,6,7]}"#,
        r#"[{"tb_echo_secret_value":1},{"a":{"tb_echo_secret_value":null,"b":"short"}}]"#,
        r#" { "kDDDDDDDD[ [ ##nnnnnnntb_echo_secret_valueDD4\u8065y" :70 } "#,
        // A secret that only its escaped form holds (a tab, then the rest of it).
        r#"{"k\tb_echo_secret_value":1,"v":["\tb_echo_secret_value","\\tb_echo_secret_value","\u0009b_echo_secret_valu"]}"#,
        r#"[1] x"#,
        r#"{"a":1,}"#,
        r#"[-]"#,
        r#"[1.]"#,
        r#"[.5]"#,
        r#"[+1]"#,
        r#"["\x"]"#,
    ];

    /// Any JSON answer: keys credential-like or not, strings holding a secret or part
    /// of one, numbers of every form, nesting.
    fn answer() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = proptest::sample::select(vec![
            "id",
            "name",
            "token",
            "api_key",
            "Authorization",
            "password",
            "data",
            "items",
            "a",
            "",
            "p\u{e9}",
            "apiKey",
            "tb_echo_secret_value",
            "a tb_echo_secret_value",
        ]);
        let text = prop_oneof![
            "[a-z \"\\\\/\u{1}\u{e9}\u{1f600}]{0,12}",
            Just("tb_echo_secret_value".to_string()),
            Just("xx tb_echo_secret_value yy".to_string()),
            Just("tb_echo_secret_valu".to_string()),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1.0e6f64..1.0e6).prop_map(Value::from),
            text.prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 8, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::vec((key.clone(), inner), 0..6).prop_map(|members| {
                    Value::Object(
                        members
                            .into_iter()
                            .map(|(k, v)| (k.to_string(), v))
                            .collect(),
                    )
                }),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1500))]

        /// Differential oracle any answer, compact or spaced, whole or cut,
        /// with any item budget, scans to what the tree path writes, and no secret is
        /// left in it.
        #[test]
        fn any_answer_scans_as_the_tree_path_writes_it(
            value in answer(),
            pretty in proptest::prelude::any::<bool>(),
            budget in proptest::option::of(0usize..4),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let body = if pretty {
                serde_json::to_string_pretty(&value).unwrap_or_default()
            } else {
                value.to_string()
            };
            let secrets = ["tb_echo_secret_value", "short"];
            let scanned = scan(body.as_bytes(), &rules(), &secrets, budget);
            proptest::prop_assert_eq!(&scanned, &tree(&body, &secrets, budget), "{}", body);
            if let Ok(scanned) = scanned {
                proptest::prop_assert!(!scanned.text.contains("tb_echo_secret_value"));
            }
            let at = cut.index(body.len().max(1));
            if body.is_char_boundary(at) && at > 0 {
                let part = &body[..at];
                proptest::prop_assert_eq!(
                    scan(part.as_bytes(), &rules(), &secrets, budget),
                    tree(part, &secrets, budget),
                    "{}", part
                );
            }
        }
    }

    #[test]
    fn writes_what_the_tree_path_writes() {
        let secrets = ["tb_echo_secret_value", "short"];
        for answer in ANSWERS {
            for budget in [None, Some(0), Some(1), Some(2), Some(100)] {
                same(answer, &secrets, budget);
            }
            for cut in (1..answer.len()).filter(|&n| answer.is_char_boundary(n)) {
                same(&answer[..cut], &secrets, Some(2));
            }
        }
    }

    #[test]
    fn drops_a_member_whose_key_holds_a_secret() {
        let secrets = ["tb_echo_secret_value"];
        for (body, text, redacted) in [
            (
                r#"{"tb_echo_secret_value":{"v":"tb_echo_secret_value"}}"#,
                "{}",
                1,
            ),
            (
                r#"{"a":1,"m tb_echo_secret_value":2,"z":3}"#,
                r#"{"a":1,"z":3}"#,
                1,
            ),
            (
                r#"{"b":1,"x tb_echo_secret_value":2,"a":3}"#,
                r#"{"a":3,"b":1}"#,
                1,
            ),
            (
                r#"{"a":3,"x tb_echo_secret_value":2,"x tb_echo_secret_value":1}"#,
                r#"{"a":3}"#,
                1,
            ),
            (
                r#"[{"\u0074b_echo_secret_value":1,"z":"tb_echo_secret_value"}]"#,
                r#"[{"z":"[REDACTED]"}]"#,
                2,
            ),
            (
                r#"{"\tb_echo_secret_value":1,"v":"\u0009b_echo_secret_value"}"#,
                r#"{"v":"[REDACTED]"}"#,
                2,
            ),
        ] {
            let scanned = scan(body.as_bytes(), &rules(), &secrets, Some(1)).unwrap();
            assert_eq!(
                (scanned.text.as_str(), scanned.redacted),
                (text, redacted),
                "{body}"
            );
            same(body, &secrets, Some(1));
        }
        // A key shorter than the secret whose escaped form holds it.
        let secrets = ["u0001_secret_tail"];
        let body = r#"{"\u0001_secret_tail":1,"v":"\u0001_secret_tail","w":"_secret_tail"}"#;
        let scanned = scan(body.as_bytes(), &rules(), &secrets, None).unwrap();
        assert_eq!(scanned.text, r#"{"v":"[REDACTED]","w":"_secret_tail"}"#);
        same(body, &secrets, None);
    }

    #[test]
    fn nests_as_deep_as_serde_json_and_no_deeper() {
        for depth in [1, 126, 127, 128, 129, 400] {
            let body = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            same(&body, &[], None);
            let body = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
            same(&body, &[], Some(1));
        }
    }

    #[test]
    fn rejects_what_is_not_utf8() {
        assert_eq!(scan(b"[\"\xff\"]", &rules(), &[], None), Err(NotJson));
    }
}
