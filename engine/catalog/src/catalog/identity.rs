//! Catalog identity (decision 006): canonical JSON, descriptor hashes, the
//! snapshot id, the committed lock file, and the diff auditors read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Canonical JSON in the style of RFC 8785: object keys sorted by code point, no white
/// space, integral numbers written without a fraction.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // Only JSON text was written: always UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// Writes `value` canonically into `out` (a buffer or a hasher: writing cannot fail).
fn write_canonical(value: &Value, out: &mut impl std::io::Write) {
    match value {
        Value::Object(map) => {
            // serde_json's map is ordered by key already (no `preserve_order`); sort
            // only if that ever changes.
            let mut entries: Vec<(&str, Field<'_>)> = map
                .iter()
                .map(|(k, v)| (k.as_str(), Field::Value(v)))
                .collect();
            if !entries.is_sorted_by_key(|(k, _)| *k) {
                entries.sort_by_key(|(k, _)| *k);
            }
            write_object(&entries, out);
        }
        Value::Array(items) => {
            let _ = out.write_all(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    let _ = out.write_all(b",");
                }
                write_canonical(item, out);
            }
            let _ = out.write_all(b"]");
        }
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 => {
                let _ = write!(out, "{}", f as i64);
            }
            _ => {
                let _ = write!(out, "{n}");
            }
        },
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

/// An object of `entries`, already sorted by key, written canonically.
fn write_object(entries: &[(&str, Field<'_>)], out: &mut impl std::io::Write) {
    let _ = out.write_all(b"{");
    for (i, (key, field)) in entries.iter().enumerate() {
        if i > 0 {
            let _ = out.write_all(b",");
        }
        let _ = serde_json::to_writer(&mut *out, key);
        let _ = out.write_all(b":");
        match field {
            Field::Value(value) => write_canonical(value, out),
            Field::Canonical(canonical) => {
                let _ = out.write_all(canonical.as_bytes());
            }
        }
    }
    let _ = out.write_all(b"}");
}

/// Lowercase hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of bytes (digests, random ids).
pub fn hex(digest: &[u8]) -> String {
    let mut out = String::with_capacity(64);
    for b in digest {
        let _ = std::fmt::Write::write_fmt(&mut out, format_args!("{b:02x}"));
    }
    out
}

/// The descriptor hash of a normalized tool definition.
pub fn descriptor_hash(normalized: &Value) -> String {
    descriptor_hash_with(normalized, &[])
}

/// A field hashed into a descriptor beside its normalized definition.
#[derive(Debug, Clone, Copy)]
pub enum Field<'a> {
    /// A value, written canonically.
    Value(&'a Value),
    /// A value's canonical text, already written (a schema whose compact text is
    /// canonical: `compact_is_canonical`).
    Canonical(&'a str),
}

/// The descriptor hash of `normalized` with the top-level fields `extra` added, as if
/// they were in it (a field of `normalized` with the same name gives way). The compiler
/// hashes a tool's argument and output schemas this way instead of copying them into
/// its normalized definition: they are most of its size, and their compact text is
/// usually their canonical text already.
pub fn descriptor_hash_with(normalized: &Value, extra: &[(&str, Field<'_>)]) -> String {
    // The canonical text in one buffer, then one hash: cheaper than feeding the hash
    // each punctuation mark.
    let mut text = Vec::with_capacity(8 * 1024);
    match normalized {
        Value::Object(map) if !extra.is_empty() => {
            let mut entries: Vec<(&str, Field<'_>)> = map
                .iter()
                .map(|(k, v)| (k.as_str(), Field::Value(v)))
                .filter(|(k, _)| !extra.iter().any(|(name, _)| name == k))
                .chain(extra.iter().copied())
                .collect();
            entries.sort_by_key(|(k, _)| *k);
            write_object(&entries, &mut text);
        }
        other => write_canonical(other, &mut text),
    }
    hex(&Sha256::digest(&text))
}

/// Whether the compact JSON text serde_json wrote of a value is its canonical text. The
/// two differ only where a float is whole and below 2^53 (canonical text writes it as an
/// integer), and serde_json writes such a float as digits, `.`, digits; a float it
/// writes with an exponent alone is 1e16 or more, or not whole, and written alike by
/// both. So a text with no digit-dot-digit anywhere (strings included: a version number
/// in a description only sends the schema the longer way) is canonical.
pub fn compact_is_canonical(compact: &str) -> bool {
    let bytes = compact.as_bytes();
    let digit = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
    !memchr::memchr_iter(b'.', bytes).any(|i| i > 0 && digit(i - 1) && digit(i + 1))
}

/// `catalog-` + the first 16 hex digits of sha256 over the sorted lines
/// `service <id> <version>` and `tool <full name> <hash>`, each ending in `\n`.
pub fn snapshot_id(lock: &Lock) -> String {
    let mut lines = Vec::new();
    for (id, service) in &lock.services {
        lines.push(format!("service {id} {}\n", service.catalog_version));
        for (tool, hash) in &service.tools {
            lines.push(format!("tool {tool} {hash}\n"));
        }
    }
    lines.sort();
    let hex = sha256_hex(lines.concat().as_bytes());
    format!("catalog-{}", &hex[..16])
}

/// `catalog/catalog.lock`: every service's version and every descriptor hash.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// The snapshot id of everything below.
    pub snapshot_id: String,
    /// Per service, by id.
    pub services: BTreeMap<String, LockedService>,
}

/// One service in the lock file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedService {
    /// The catalog version.
    pub catalog_version: String,
    /// Full tool name -> descriptor hash.
    pub tools: BTreeMap<String, String>,
}

/// Path of the lock file inside a catalog root.
pub const LOCK_PATH: &str = "catalog/catalog.lock";

impl Lock {
    /// Renders the lock file text (TOML with a header comment).
    pub fn to_text(&self) -> String {
        let body = toml::to_string(self).unwrap_or_default();
        format!(
            "# Generated by `tool-broker catalog lock`. Do not edit by hand.\n\
             # `tool-broker catalog verify` fails when this file is stale, or when a\n\
             # descriptor hash changed while its service's catalog_version did not.\n\n{body}"
        )
    }

    /// Parses a lock file.
    pub fn parse(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }
}

/// Problems `catalog verify` reports.
pub fn verify(committed: &Lock, current: &Lock) -> Vec<String> {
    let mut problems = Vec::new();
    for (id, now) in &current.services {
        let Some(then) = committed.services.get(id) else {
            problems.push(format!(
                "service `{id}` is not in the lock file; run `tool-broker catalog lock`"
            ));
            continue;
        };
        let changed: Vec<&String> = now
            .tools
            .iter()
            .filter(|(t, h)| then.tools.get(*t) != Some(*h))
            .map(|(t, _)| t)
            .chain(then.tools.keys().filter(|t| !now.tools.contains_key(*t)))
            .collect();
        if !changed.is_empty() && now.catalog_version == then.catalog_version {
            let names: Vec<String> = changed.iter().map(|t| format!("`{t}`")).collect();
            problems.push(format!(
                "service `{id}`: descriptors changed ({}) but catalog_version is still `{}`; \
                 bump catalog_version in catalog/{id}/service.toml, then run `tool-broker catalog lock`",
                names.join(", "),
                now.catalog_version
            ));
        } else if !changed.is_empty() || now.catalog_version != then.catalog_version {
            problems.push(format!(
                "service `{id}`: the lock file is stale (locked version `{}`, catalog version `{}`); \
                 run `tool-broker catalog lock`",
                then.catalog_version, now.catalog_version
            ));
        }
    }
    for id in committed.services.keys() {
        if !current.services.contains_key(id) {
            problems.push(format!(
                "service `{id}` is in the lock file but not in the catalog; run `tool-broker catalog lock`"
            ));
        }
    }
    if problems.is_empty() && committed.snapshot_id != current.snapshot_id {
        problems.push(format!(
            "the lock file's snapshot_id `{}` should be `{}`; run `tool-broker catalog lock`",
            committed.snapshot_id, current.snapshot_id
        ));
    }
    problems
}

/// One line of `catalog diff`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffEntry {
    /// `added`, `removed` or `changed`.
    pub change: &'static str,
    /// Full tool name.
    pub tool: String,
    /// Hash before, if the tool existed.
    pub old_hash: Option<String>,
    /// Hash after, if the tool exists.
    pub new_hash: Option<String>,
}

/// Tools added, removed and changed between two locks, sorted by name.
pub fn diff(old: &Lock, new: &Lock) -> Vec<DiffEntry> {
    let flatten = |lock: &Lock| -> BTreeMap<String, String> {
        lock.services
            .values()
            .flat_map(|s| s.tools.iter().map(|(t, h)| (t.clone(), h.clone())))
            .collect()
    };
    let (old, new) = (flatten(old), flatten(new));
    let mut out = Vec::new();
    for (tool, hash) in &new {
        match old.get(tool) {
            None => out.push(DiffEntry {
                change: "added",
                tool: tool.clone(),
                old_hash: None,
                new_hash: Some(hash.clone()),
            }),
            Some(before) if before != hash => out.push(DiffEntry {
                change: "changed",
                tool: tool.clone(),
                old_hash: Some(before.clone()),
                new_hash: Some(hash.clone()),
            }),
            Some(_) => {}
        }
    }
    for (tool, hash) in &old {
        if !new.contains_key(tool) {
            out.push(DiffEntry {
                change: "removed",
                tool: tool.clone(),
                old_hash: Some(hash.clone()),
                new_hash: None,
            });
        }
    }
    out.sort_by(|a, b| a.tool.cmp(&b.tool));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_and_strips() {
        let v = json!({"b": [1, 2.0, "x"], "a": {"d": null, "c": true}});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":{"c":true,"d":null},"b":[1,2,"x"]}"#
        );
    }

    #[test]
    fn compact_text_is_canonical_unless_it_holds_a_float() {
        for (value, canonical) in [
            (
                json!({"a": [1, -2, 30], "e": "e.g. 1e3", "t": true, "f": false}),
                true,
            ),
            (json!({"k\"e.y": "x\\\". 1"}), true),
            // A version number in a string: sent the longer way, never wrongly.
            (json!({"d": "v1.5"}), false),
            (json!({"m": 2.0}), false),
            (json!({"m": 2.5}), false),
            (json!([1e300, 1e-7, -1e16]), true),
            (json!(u64::MAX), true),
        ] {
            let compact = value.to_string();
            assert_eq!(compact_is_canonical(&compact), canonical, "{compact}");
            if canonical {
                assert_eq!(compact, canonical_json(&value), "{compact}");
            }
        }
    }

    #[test]
    fn hashing_with_extra_fields_is_hashing_them_in_place() {
        let whole = json!({"a": 1, "arguments": {"type": "object"}, "name": "t", "output": null, "z": [2.0]});
        let without = json!({"a": 1, "name": "t", "z": [2.0], "output": "given way"});
        let schema = json!({"type": "object"});
        let extra = [
            ("arguments", Field::Value(&schema)),
            ("output", Field::Value(&Value::Null)),
        ];
        assert_eq!(
            descriptor_hash_with(&without, &extra),
            descriptor_hash(&whole)
        );
        // A schema's compact text in place of the schema: the same hash.
        let text = schema.to_string();
        assert!(compact_is_canonical(&text));
        let extra = [
            ("arguments", Field::Canonical(&text)),
            ("output", Field::Value(&Value::Null)),
        ];
        assert_eq!(
            descriptor_hash_with(&without, &extra),
            descriptor_hash(&whole)
        );
        assert_eq!(
            descriptor_hash(&whole),
            sha256_hex(canonical_json(&whole).as_bytes())
        );
        assert_ne!(descriptor_hash(&without), descriptor_hash(&whole));
    }

    fn lock(version: &str, hash: &str) -> Lock {
        let mut l = Lock::default();
        l.services.insert(
            "svc".into(),
            LockedService {
                catalog_version: version.into(),
                tools: [("svc.t".to_string(), hash.to_string())].into(),
            },
        );
        l.snapshot_id = snapshot_id(&l);
        l
    }

    #[test]
    fn verify_names_the_missing_version_bump() {
        let problems = verify(&lock("v1", "aa"), &lock("v1", "bb"));
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("bump catalog_version"), "{problems:?}");
        let problems = verify(&lock("v1", "aa"), &lock("v2", "bb"));
        assert!(problems[0].contains("stale"), "{problems:?}");
        assert!(verify(&lock("v1", "aa"), &lock("v1", "aa")).is_empty());
    }

    #[test]
    fn snapshot_id_has_the_spec_form() {
        let id = snapshot_id(&lock("v1", "aa"));
        assert!(id.starts_with("catalog-") && id.len() == 24, "{id}");
    }
}
