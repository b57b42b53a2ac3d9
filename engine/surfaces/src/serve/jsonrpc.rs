//! The JSON-RPC 2.0 request of `POST /`: one `tools/call`, checked.
//!
//! [`read`] is what the HTTP/1.1 server calls. A well-formed request (the shape nearly every
//! call has) is read in one pass into borrowed text, with only `arguments` built as a
//! `Value`: no tree of the envelope's own members, no copy of the tool's name. Anything
//! else (not an object, a member of the wrong type, a repeated member, an escaped name,
//! an id too long) is read again as a `Value` and checked member by member
//! (`check_request`), which says exactly what is wrong. So the fast reading only ever
//! accepts what the checks accept; the tests hold the two to the same answers.

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer;
use serde::de::{self, MapAccess, Visitor};
use serde_json::{Value, json};

use crate::error::CallError;
use crate::mcp::message::{Skipped, once};

/// A `tools/call` as the checks let it through.
#[derive(Debug, PartialEq)]
pub struct Call<'a> {
    /// `params.name`: `<service>.<tool>`.
    pub name: Cow<'a, str>,
    /// `params.arguments` as sent (`None` when absent; `null` is kept).
    pub arguments: Option<Value>,
    /// `params.descriptorHash`: the descriptor the caller reviewed (a pin).
    pub descriptor_hash: Option<Cow<'a, str>>,
}

/// A request read: the id to answer with (empty when there is none, or it is not a
/// string or a number, or it is too long to show) and the call or what is wrong.
#[derive(Debug, PartialEq)]
pub struct Read<'a> {
    /// The JSON-RPC id as text, as the answer shows it.
    pub shown_id: String,
    /// The call, or the `invalid_request` to answer.
    pub call: Result<Call<'a>, CallError>,
}

/// Reads and checks the body of a `POST /`; `max_id` is the longest id in characters.
pub fn read(body: &[u8], max_id: usize) -> Read<'_> {
    if let Some(read) = fast(body, max_id) {
        return read;
    }
    checked(body, max_id)
}

/// The reference reading: the body as a `Value`, checked member by member. `fast`
/// must answer the same wherever it answers (held by a property test).
pub fn checked(body: &[u8], max_id: usize) -> Read<'_> {
    let parsed: Result<Value, _> = serde_json::from_slice(body);
    let id = parsed.as_ref().ok().and_then(request_id);
    let id_text = id.clone().unwrap_or_default();
    let shown_id = if id_text.chars().count() > max_id {
        String::new()
    } else {
        id_text
    };
    let call = match parsed {
        Err(_) => Err(CallError::invalid_request("the body is not JSON")),
        Ok(body) => check_request(&body, id.as_deref(), max_id).map(|checked| Call {
            name: Cow::Owned(checked.name),
            arguments: checked.arguments,
            descriptor_hash: checked.descriptor_hash.map(Cow::Owned),
        }),
    };
    Read { shown_id, call }
}

/// The request when it is a JSON object [`check_request`] accepts and its members need
/// no unescaping; else `None` (read it again as a `Value`).
fn fast(body: &[u8], max_id: usize) -> Option<Read<'_>> {
    // An array, which a struct reader would take as a sequence, is never read here.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return None;
    }
    // Every string is checked as UTF-8 as it is read, skipped members' too ([`Skipped`]).
    let mut de = serde_json::Deserializer::from_slice(body);
    let request = de.deserialize_map(RequestVisitor).ok()?;
    de.end().ok()?;
    let shown_id = match request.id? {
        Value::String(s) => s,
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let params = request.params?;
    let fits = request.jsonrpc? == "2.0"
        && request.method? == "tools/call"
        && shown_id.chars().count() <= max_id
        && well_formed(params.name?);
    fits.then(|| Read {
        shown_id,
        call: Ok(Call {
            name: Cow::Borrowed(params.name.unwrap_or_default()),
            arguments: params.arguments,
            descriptor_hash: params.descriptor_hash.map(Cow::Borrowed),
        }),
    })
}

/// `<service>.<tool>`, both parts present, at most 200 bytes.
fn well_formed(name: &str) -> bool {
    name.split_once('.')
        .is_some_and(|(s, t)| !s.is_empty() && !t.is_empty() && name.len() <= 200)
}

/// The envelope's members, each read once.
#[derive(Default)]
struct Request<'a> {
    jsonrpc: Option<&'a str>,
    id: Option<Value>,
    method: Option<&'a str>,
    params: Option<Params<'a>>,
}

#[derive(Default)]
struct Params<'a> {
    name: Option<&'a str>,
    arguments: Option<Value>,
    descriptor_hash: Option<&'a str>,
}

struct RequestVisitor;

impl<'de> Visitor<'de> for RequestVisitor {
    type Value = Request<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut request = Request::default();
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "jsonrpc" => once(&mut request.jsonrpc, map.next_value()?)?,
                "id" => once(&mut request.id, map.next_value()?)?,
                "method" => once(&mut request.method, map.next_value()?)?,
                "params" => once(&mut request.params, map.next_value_seed(ParamsSeed)?)?,
                _ => {
                    map.next_value::<Skipped>()?;
                }
            }
        }
        Ok(request)
    }
}

/// `params`, read only as an object.
struct ParamsSeed;

impl<'de> de::DeserializeSeed<'de> for ParamsSeed {
    type Value = Params<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ParamsSeed {
    type Value = Params<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut params = Params::default();
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "name" => once(&mut params.name, map.next_value()?)?,
                "arguments" => once(&mut params.arguments, map.next_value()?)?,
                "descriptorHash" => once(&mut params.descriptor_hash, map.next_value()?)?,
                _ => {
                    map.next_value::<Skipped>()?;
                }
            }
        }
        Ok(params)
    }
}

/// The JSON-RPC id as a string, when present and well-typed.
fn request_id(body: &Value) -> Option<String> {
    match body.get("id") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

/// What [`check_request`] takes from `params`.
struct Checked {
    name: String,
    arguments: Option<Value>,
    descriptor_hash: Option<String>,
}

/// Checks the JSON-RPC shape; returns `params.name`, `params.arguments` and
/// `params.descriptorHash`.
fn check_request(body: &Value, id: Option<&str>, max_id: usize) -> Result<Checked, CallError> {
    let invalid = |m: &str| Err(CallError::invalid_request(m));
    let Some(obj) = body.as_object() else {
        return if body.is_array() {
            invalid("batches are not supported: send one JSON-RPC request object")
        } else {
            invalid("the body must be a JSON-RPC 2.0 request object")
        };
    };
    if obj.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid("`jsonrpc` must be the string \"2.0\"");
    }
    match (obj.get("id"), id) {
        (None, _) => return invalid("`id` is required (a string or a number)"),
        (Some(_), None) => return invalid("`id` must be a string or a number"),
        (Some(_), Some(text)) if text.chars().count() > max_id => {
            return Err(CallError::invalid_request(format!(
                "`id` is longer than {max_id} characters"
            )));
        }
        _ => {}
    }
    match obj.get("method") {
        Some(Value::String(m)) if m == "tools/call" => {}
        Some(Value::String(_)) => {
            return invalid("`method` must be \"tools/call\"; no other method is served at POST /");
        }
        _ => return invalid("`method` is required and must be the string \"tools/call\""),
    }
    let Some(params) = obj.get("params") else {
        return invalid(
            "`params` is required: { \"name\": \"<service>.<tool>\", \"arguments\": { ... } }",
        );
    };
    let Some(params) = params.as_object() else {
        return invalid("`params` must be an object");
    };
    let name = match params.get("name") {
        Some(Value::String(n)) => n,
        Some(_) => return invalid("`params.name` must be a string"),
        None => return invalid("`params.name` is required: `<service>.<tool>`"),
    };
    if !well_formed(name) {
        return invalid("`params.name` must have the form `<service>.<tool>`");
    }
    let descriptor_hash = match params.get("descriptorHash") {
        None => None,
        Some(Value::String(h)) => Some(h.clone()),
        Some(_) => {
            return invalid(
                "`params.descriptorHash` must be a string: the `descriptorHash` of the tool you reviewed",
            );
        }
    };
    Ok(Checked {
        name: name.clone(),
        arguments: params.get("arguments").cloned(),
        descriptor_hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request as the checks alone read it.
    fn slow(body: &str, max_id: usize) -> Read<'_> {
        checked(body.as_bytes(), max_id)
    }

    use crate::mcp::message::generated::{member_value, object};

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Differential oracle on any request, the one-pass reading answers
        /// exactly what the checks answer.
        #[test]
        fn the_fast_reading_agrees_with_the_checks_on_any_request(
            jsonrpc in member_value(&["\"2.0\""]),
            id in member_value(&["1", "\"r-1\"", "-0.5", "\"abcdefghijklmnop\""]),
            method in member_value(&["\"tools/call\""]),
            name in member_value(&["\"a.b\"", "\"crm.list\"", "\".x\"", "\"x.\""]),
            arguments in member_value(&["{}", "{\"x\":[1,{\"y\":null}]}"]),
            hash in member_value(&["\"ab\""]),
            picks in proptest::collection::vec(proptest::prelude::any::<u8>(), 8),
            max_id in 3usize..20,
            tail in proptest::sample::select(&["", " ", "x", "}", "\n"][..]),
        ) {
            let params = object(
                vec![("name", name), ("arguments", arguments), ("descriptorHash", hash), ("other", "[]".into())],
                &picks[4..],
            );
            let body = format!(
                "{}{tail}",
                object(
                    vec![("jsonrpc", jsonrpc), ("id", id), ("method", method), ("params", params)],
                    &picks,
                )
            );
            proptest::prop_assert_eq!(read(body.as_bytes(), max_id), slow(&body, max_id), "{}", body);
        }

        /// Any bytes at all: the same answer (mostly "not JSON"), never a panic.
        #[test]
        fn any_bytes_read_as_the_checks_read_them(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            proptest::prop_assert_eq!(read(&body, 10), checked(&body, 10));
        }
    }

    #[test]
    #[expect(clippy::too_many_lines, reason = "a table of cases, one a line")]
    fn the_fast_reading_answers_as_the_checks_do() {
        // (body, read in one pass)
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b","arguments":{"x":[1,{"y":null}]}}}"#,
                true,
            ),
            (
                r#" {"id":"r-1","params":{"arguments":{},"name":"crm.list"},"method":"tools/call","jsonrpc":"2.0","extra":[1,2]} "#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":-1.5e3,"method":"tools/call","params":{"name":"a.b"}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a.b","arguments":null}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a.b","arguments":"text"}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a.b","other":{"k":1}}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"descriptorHash":"ab12","name":"a.b"}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a.b","descriptorHash":"a\u0062"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a.b","descriptorHash":7}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a.b","descriptorHash":"x","descriptorHash":"y"}}"#,
                false,
            ),
            // Left to the `Value` reading: its answer, exactly.
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\u002eb"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"a.b"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b","name":"c.d"}}"#,
                false,
            ),
            (r#"["2.0",1,"tools/call",{"name":"a.b"}]"#, false),
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b"}}]"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["a.b",{}]}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"a.b"}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a.b"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"a.b"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a.b"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":"0123456789","method":"tools/call","params":{"name":"a.b"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":2.0,"id":1,"method":"tools/call","params":{"name":"a.b"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a.b"}}"#,
                false,
            ),
            (
                r#"{"id":1,"method":"tools/call","params":{"name":"a.b"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"a.b"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":7,"params":{"name":"a.b"}}"#,
                false,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#, false),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ab"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":".b"}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b"}} x"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b"}"#,
                false,
            ),
            ("", false),
            ("null", false),
            ("\"text\"", false),
        ];
        let max_id = 8;
        for (body, one_pass) in cases {
            assert_eq!(fast(body.as_bytes(), max_id).is_some(), one_pass, "{body}");
            assert_eq!(read(body.as_bytes(), max_id), slow(body, max_id), "{body}");
        }
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"a.{}"}}}}"#,
            "b".repeat(199)
        );
        assert!(fast(long.as_bytes(), max_id).is_none());
        assert_eq!(read(long.as_bytes(), max_id), slow(&long, max_id));
    }
}
