//! One message posted to `/mcp`, read into its JSON-RPC members.
//!
//! [`read`] is what the MCP endpoint calls. A message object whose `jsonrpc` and `method` are
//! strings without escapes and whose members each come once (nearly every message) is
//! read in one pass: `jsonrpc` and `method` borrowed from the body, `id` and `params`
//! built as `Value`s, any other member skipped. Anything else is read as a `Value` and
//! its members taken out of it; that reading decides what the message is. The tests hold
//! the two readings to the same [`Message`] on every body they know.

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A message object's members, as the MCP endpoint checks them.
#[derive(Debug, PartialEq)]
pub struct Message<'a> {
    /// `jsonrpc` is the string `"2.0"`.
    pub two_point_oh: bool,
    /// `id` as sent (absent for a notification).
    pub id: Option<Value>,
    /// `method` when it is a string.
    pub method: Option<Cow<'a, str>>,
    /// `params` as sent.
    pub params: Option<Value>,
    /// It carries `result` or `error`: a response the client sent.
    pub answer: bool,
}

/// Why a body is not a message object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// Not JSON.
    NotJson,
    /// A JSON array: a batch.
    Batch,
    /// Some other JSON value.
    NotObject,
}

/// Reads the body of a `POST /mcp`.
pub fn read(body: &[u8]) -> Result<Message<'_>, Unreadable> {
    match fast(body) {
        Some(message) => Ok(message),
        None => as_value(body),
    }
}

/// The message read as a `Value`, its members taken out.
pub fn as_value(body: &[u8]) -> Result<Message<'static>, Unreadable> {
    match serde_json::from_slice::<Value>(body) {
        Err(_) => Err(Unreadable::NotJson),
        Ok(Value::Array(_)) => Err(Unreadable::Batch),
        Ok(Value::Object(mut map)) => Ok(Message {
            two_point_oh: map.get("jsonrpc").and_then(Value::as_str) == Some("2.0"),
            id: map.remove("id"),
            method: match map.remove("method") {
                Some(Value::String(method)) => Some(Cow::Owned(method)),
                _ => None,
            },
            params: map.remove("params"),
            answer: map.contains_key("result") || map.contains_key("error"),
        }),
        Ok(_) => Err(Unreadable::NotObject),
    }
}

/// The message in one pass, or `None` to read it as a `Value`.
fn fast(body: &[u8]) -> Option<Message<'_>> {
    // An array, which a struct reader would take as a sequence, is never read here.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return None;
    }
    // Every string is checked as UTF-8 as it is read, skipped members' too ([`Skipped`]).
    let mut de = serde_json::Deserializer::from_slice(body);
    let members = de.deserialize_map(MembersVisitor).ok()?;
    de.end().ok()?;
    Some(Message {
        two_point_oh: members.jsonrpc == Some("2.0"),
        id: members.id,
        method: members.method.map(Cow::Borrowed),
        params: members.params,
        answer: members.answer,
    })
}

/// Puts a member's value in its slot, which must still be empty: a repeated member is
/// left to the `Value` reading, which keeps the last (the `POST /` reader,
/// [`crate::serve::jsonrpc`], uses it too).
pub fn once<T, E: serde::de::Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    match slot {
        Some(_) => Err(E::custom("a member is repeated")),
        None => {
            *slot = Some(value);
            Ok(())
        }
    }
}

/// A member the one-pass readers do not keep, read as strictly as reading a `Value`
/// reads it (strings as UTF-8, escapes, numbers in range, nesting) and kept nowhere.
/// serde's `IgnoredAny` is not that: serde_json skips an ignored string or number
/// unchecked, so bytes that are not UTF-8 in a string, or `{"x":1e400}`, passed where a
/// `Value` is refused (found by the differential fuzzer).
pub struct Skipped;

impl<'de> serde::Deserialize<'de> for Skipped {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SkippedVisitor)
    }
}

struct SkippedVisitor;

impl<'de> Visitor<'de> for SkippedVisitor {
    type Value = Skipped;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_unit<E>(self) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skipped, A::Error> {
        while seq.next_element::<Skipped>()?.is_some() {}
        Ok(Skipped)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skipped, A::Error> {
        while map.next_entry::<Skipped, Skipped>()?.is_some() {}
        Ok(Skipped)
    }
}

/// The members of the object, each read once.
#[derive(Default)]
struct Members<'a> {
    jsonrpc: Option<&'a str>,
    id: Option<Value>,
    method: Option<&'a str>,
    params: Option<Value>,
    answer: bool,
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Members::default();
        let (mut result, mut error) = (None, None);
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "jsonrpc" => once(&mut members.jsonrpc, map.next_value()?)?,
                "id" => once(&mut members.id, map.next_value()?)?,
                "method" => once(&mut members.method, map.next_value()?)?,
                "params" => once(&mut members.params, map.next_value()?)?,
                "result" => once(&mut result, map.next_value::<Skipped>()?)?,
                "error" => once(&mut error, map.next_value::<Skipped>()?)?,
                _ => {
                    map.next_value::<Skipped>()?;
                }
            }
        }
        members.answer = result.is_some() || error.is_some();
        Ok(members)
    }
}

/// Generated message texts for the differential property tests of the one-pass readers
/// (this one and [`crate::serve::jsonrpc`]).
#[cfg(test)]
pub mod generated {
    /// A JSON text of a member value: well-typed for its member, or any other type.
    pub fn member_value(
        good: &'static [&'static str],
    ) -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        // Mostly well-typed, so a good share of requests is one the fast reading takes.
        prop_oneof![
            12 => proptest::sample::select(good).prop_map(str::to_string),
            1 => Just("null".to_string()),
            1 => Just("7".to_string()),
            1 => Just("[1,2]".to_string()),
            1 => Just("{\"a\":1}".to_string()),
            1 => "[a-z.]{0,12}".prop_map(|s| format!("\"{s}\"")),
            // An escaped text: equal once unescaped, never borrowed.
            1 => Just("\"tools\\/call\"".to_string()),
            1 => Just("\"a\\u002eb\"".to_string()),
        ]
    }

    /// An object's text from members, each present or not, some repeated, in any order,
    /// with a name sometimes escaped.
    pub fn object(members: Vec<(&'static str, String)>, picks: &[u8]) -> String {
        let mut parts = Vec::new();
        for (i, (name, value)) in members.iter().enumerate() {
            let pick = picks.get(i).copied().unwrap_or(5);
            let key = if pick % 10 == 2 {
                // `\u006e` for the first letter: the same member, escaped.
                let first = name.chars().next().unwrap_or('x');
                format!(
                    "\"\\u{:04x}{}\"",
                    u32::from(first),
                    &name[first.len_utf8()..]
                )
            } else {
                format!("\"{name}\"")
            };
            match pick % 10 {
                0 => {}
                1 => {
                    parts.push(format!("{key}:{value}"));
                    parts.push(format!("{key}:{value}"));
                }
                _ => parts.push(format!("{key}:{value}")),
            }
        }
        if picks.first().is_some_and(|p| p % 2 == 0) {
            parts.reverse();
        }
        format!("{{{}}}", parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Differential oracle on any message, the one-pass reading finds what
        /// the `Value` reading finds; on any bytes, the same verdict.
        #[test]
        fn the_one_pass_reading_agrees_with_the_value_reading_on_any_message(
            jsonrpc in super::generated::member_value(&["\"2.0\""]),
            id in super::generated::member_value(&["1", "\"r-1\"", "null"]),
            method in super::generated::member_value(&["\"tools/call\"", "\"initialize\"", "\"notifications/initialized\""]),
            params in super::generated::member_value(&["{}", "{\"name\":\"a.b\",\"arguments\":{\"x\":[1]}}"]),
            answer in super::generated::member_value(&["{}"]),
            picks in proptest::collection::vec(proptest::prelude::any::<u8>(), 6),
            tail in proptest::sample::select(&["", " ", "x", "\n"][..]),
        ) {
            let result_or_error = if picks[5] % 2 == 0 { "result" } else { "error" };
            let body = format!(
                "{}{tail}",
                super::generated::object(
                    vec![("jsonrpc", jsonrpc), ("id", id), ("method", method), ("params", params), (result_or_error, answer)],
                    &picks,
                )
            );
            proptest::prop_assert_eq!(read(body.as_bytes()), as_value(body.as_bytes()), "{}", body);
        }

        #[test]
        fn any_bytes_get_the_value_readings_verdict(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            proptest::prop_assert_eq!(read(&body), as_value(&body));
        }
    }

    #[test]
    fn the_one_pass_reading_finds_what_the_value_reading_finds() {
        // (body, read in one pass)
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b","arguments":{"x":[1]}}}"#,
                true,
            ),
            (
                r#" {"params":{"_meta":{"k":"v"}},"method":"tools/list","id":"r-1","jsonrpc":"2.0","extra":[1,2]} "#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                true,
            ),
            (r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, true),
            (r#"{"jsonrpc":"2.0","id":3,"error":{"code":1}}"#, true),
            (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, true),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping","params":7}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":[1],"method":"ping","params":null}"#,
                true,
            ),
            (r#"{}"#, true),
            // Left to the `Value` reading.
            (r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call"}"#, false),
            (r#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#, false),
            (r#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"method":7}"#, false),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":null,"result":1}"#,
                false,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#, false),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}"#,
                false,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"result":1,"result":2}"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"method":"ping""#, false),
            (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, false),
            (r#"["2.0",1,"ping"]"#, false),
            ("", false),
            ("null", false),
            ("\"ping\"", false),
            ("7", false),
        ];
        for (body, one_pass) in cases {
            assert_eq!(fast(body.as_bytes()).is_some(), one_pass, "{body}");
            assert_eq!(read(body.as_bytes()), as_value(body.as_bytes()), "{body}");
        }
        assert_eq!(read(b"[]"), Err(Unreadable::Batch));
        assert_eq!(read(b"7"), Err(Unreadable::NotObject));
        assert_eq!(read(b"{"), Err(Unreadable::NotJson));
        // What the `Value` reading makes of repeated members: the last one.
        let repeated = read(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}"#);
        let repeated = repeated.unwrap();
        assert_eq!(
            (repeated.id, repeated.method),
            (Some(2.into()), Some("b".into()))
        );
    }
}
