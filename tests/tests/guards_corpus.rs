//! The shipped guard rules held to two corpora (docs/guards.md, bench/README.md
//! "Guards"): every example string of the upstream OpenAPI documents, which the rules
//! that are on must not block and may redact only where the example is a secret or a
//! personal number of the rule's format (each finding is listed here, reviewed); and
//! generated secrets and numbers of every shipped kind, each of which they must catch.

use std::collections::BTreeMap;

use serde_json::Value;
use tool_broker::catalog::guards::{Action, Guards, LooksAt};

fn shipped() -> std::sync::Arc<Guards> {
    crate::support::embedded_catalog().rules.guards.clone()
}

/// Every finding of the rules that are on, in either direction, over the upstream
/// documents' examples: `(service, rule, the text found)`.
fn findings() -> (usize, Vec<(String, String, String)>) {
    let guards = shipped();
    let text = std::fs::read_to_string(
        crate::support::root().join("tests/fixtures/guards/upstream-examples.json"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let corpus: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let on = guards.on_for(LooksAt::Both);
    let mut strings = 0;
    let mut found = Vec::new();
    for (service, examples) in corpus["services"].as_object().into_iter().flatten() {
        for example in examples
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            strings += 1;
            for f in guards.scan(example, on) {
                found.push((
                    service.clone(),
                    guards.rules[f.rule].id.clone(),
                    example[f.start..f.end].to_string(),
                ));
            }
        }
    }
    (strings, found)
}

#[test]
fn the_upstream_documents_examples_are_never_blocked_and_redacted_only_where_they_hold_a_secret() {
    let guards = shipped();
    let (strings, found) = findings();
    assert!(strings > 4_000, "the corpus is whole: {strings} strings");
    for (service, rule, text) in &found {
        let rule = guards.rules.iter().find(|r| r.id == *rule);
        assert!(
            rule.is_some_and(|r| r.action != Action::Block),
            "{service}: {text:?} blocked"
        );
    }
    let mut by_rule: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, rule, _) in &found {
        *by_rule.entry(rule.as_str()).or_default() += 1;
    }
    let listed: Vec<String> = found
        .iter()
        .map(|(service, rule, text)| format!("{service} {rule} {text:?}"))
        .collect();
    assert_eq!(listed, Vec::<String>::new(), "{by_rule:?}");
}

/// A small deterministic generator (an LCG): the same corpus on every run.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn pick(&mut self, alphabet: &str, n: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        (0..n)
            .map(|_| chars[usize::try_from(self.next()).unwrap_or(0) % chars.len()])
            .collect()
    }

    fn digits(&mut self, n: usize) -> String {
        self.pick("0123456789", n)
    }
}

const UPPER_DIGITS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// The Luhn check digit that completes `body`.
fn luhn_digit(body: &str) -> u32 {
    let sum: u32 = body
        .chars()
        .rev()
        .filter_map(|c| c.to_digit(10))
        .enumerate()
        .map(|(i, d)| {
            if i % 2 == 0 {
                let d = d * 2;
                if d > 9 { d - 9 } else { d }
            } else {
                d
            }
        })
        .sum();
    (10 - sum % 10) % 10
}

/// A valid IBAN of `country` with a BBAN of `bban_len` digits.
fn iban(g: &mut Gen, country: &str, bban_len: usize) -> String {
    let bban = g.digits(bban_len);
    let rearranged: String = format!("{bban}{country}00")
        .chars()
        .map(|c| c.to_digit(36).map_or(String::new(), |d| d.to_string()))
        .collect();
    let remainder = rearranged
        .chars()
        .filter_map(|c| c.to_digit(10))
        .fold(0u64, |r, d| (r * 10 + u64::from(d)) % 97);
    format!("{country}{:02}{bban}", 98 - remainder)
}

/// Generated instances of every shipped rule that is on, each in a sentence: the rule's
/// id and the text.
fn positives() -> Vec<(&'static str, String)> {
    let mut g = Gen(0x5eed_9a7d);
    let mut out = Vec::new();
    for i in 0..50 {
        out.push((
            "aws-access-key",
            format!(
                "key {}{} set",
                if i % 2 == 0 { "AKIA" } else { "ASIA" },
                g.pick(UPPER_DIGITS, 16)
            ),
        ));
        let prefix = ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"][i % 5];
        out.push((
            "github-token",
            format!("token={prefix}{}", g.pick(ALNUM, 36)),
        ));
        out.push((
            "gitlab-token",
            format!("use glpat-{} here", g.pick(ALNUM, 20)),
        ));
        out.push((
            "slack-token",
            format!(
                "xoxb-{}-{}-{}",
                g.digits(11),
                g.digits(13),
                g.pick(ALNUM, 24)
            ),
        ));
        out.push((
            "payments-live-secret",
            format!("secret sk_live_{}", g.pick(ALNUM, 24 + i % 75)),
        ));
        out.push((
            "google-api-key",
            format!("AIza{}", g.pick(&format!("{ALNUM}-_"), 35)),
        ));
        let issuer = ["4", "51", "55", "2221", "2720", "34", "37", "6011", "65"][i % 9];
        let len = match issuer {
            "34" | "37" => 15,
            _ => 16,
        };
        let body = format!("{issuer}{}", g.digits(len - issuer.len() - 1));
        let number = format!("{body}{}", luhn_digit(&body));
        let shown = match i % 3 {
            0 => number.clone(),
            1 => number
                .as_bytes()
                .chunks(4)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            _ => number
                .as_bytes()
                .chunks(4)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect::<Vec<_>>()
                .join("-"),
        };
        out.push(("card", format!("charged to {shown} yesterday")));
        let (country, len) = [
            ("DE", 18),
            ("FR", 23),
            ("ES", 20),
            ("IT", 23),
            ("NL", 14),
            ("GB", 18),
        ][i % 6];
        let mut number = iban(&mut g, country, len);
        if country == "NL" || country == "GB" {
            // A bank code of letters: NL `ABNA`, GB `WEST` (the check digits recomputed).
            let bank = if country == "NL" { "ABNA" } else { "WEST" };
            let digits = if country == "NL" { 10 } else { 14 };
            let account = g.digits(digits);
            let rearranged: String = format!("{bank}{account}{country}00")
                .chars()
                .map(|c| c.to_digit(36).map_or(String::new(), |d| d.to_string()))
                .collect();
            let r = rearranged
                .chars()
                .filter_map(|c| c.to_digit(10))
                .fold(0u64, |r, d| (r * 10 + u64::from(d)) % 97);
            number = format!("{country}{:02}{bank}{account}", 98 - r);
        }
        out.push(("iban", format!("IBAN {number}, thanks")));
        out.push((
            "invisible-characters",
            format!("read this\u{E0049}\u{E0047}\u{E004E} {}", g.pick(ALNUM, 8)),
        ));
        out.push((
            "invisible-characters",
            format!("file\u{202E}fdp.exe {}", g.pick(ALNUM, 4)),
        ));
    }
    out.push(("private-key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgwMbRvI0MBZhpF\n-----END RSA PRIVATE KEY-----".into()));
    out.push(("private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----".into()));
    out.push(("private-key", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----".into()));
    out.push(("signed-url", format!("https://bucket.s3.amazonaws.com/a.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature={}", g.pick("0123456789abcdef", 64))));
    out.push(("signed-url", format!("https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature={}", g.pick("0123456789abcdef", 256))));
    out.push((
        "signed-url",
        format!(
            "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2026-12-01&sig={}%3D",
            g.pick(ALNUM, 43)
        ),
    ));
    out
}

#[test]
fn every_generated_secret_and_number_of_a_shipped_kind_is_caught_by_its_rule() {
    let guards = shipped();
    let on = guards.on_for(LooksAt::Both);
    let cases = positives();
    assert!(cases.len() > 500);
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for (rule, text) in &cases {
        let found: Vec<&str> = guards
            .scan(text, on)
            .iter()
            .map(|f| guards.rules[f.rule].id.as_str())
            .collect();
        assert!(
            found.contains(rule),
            "{rule} missed {text:?} (found {found:?})"
        );
        *kinds.entry(rule).or_default() += 1;
    }
    let on_ids: Vec<&str> = on.iter().map(|i| guards.rules[i].id.as_str()).collect();
    let covered: Vec<&str> = kinds.keys().copied().collect();
    let mut expected = on_ids.clone();
    expected.sort_unstable();
    assert_eq!(
        covered, expected,
        "every rule that is on has generated cases"
    );
}
