//! Compiling a service's `[webhook]`: JSONPaths parsed, the signed message split into
//! its parts, and every inconsistency reported at catalog load, never at a callback.

use crate::catalog::descriptor::{WebhookScheme, WebhookSpec};
use crate::catalog::{JsonPath, Webhook};

/// Default freshness window when a timestamp header is named.
pub const DEFAULT_MAX_AGE_SECONDS: u64 = 300;

/// One piece of a signed message (`message = "{timestamp}.{url}.{body_sha256_hex}"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessagePart {
    /// Literal text.
    Text(String),
    /// The timestamp header's value.
    Timestamp,
    /// The callback URL the upstream was given.
    Url,
    /// Lowercase hex sha256 of the raw body.
    BodySha256Hex,
    /// The raw body.
    Body,
}

fn path(what: &str, text: &str, errors: &mut Vec<String>) -> Option<JsonPath> {
    match jsonpath_rust::parser::parse_json_path(text) {
        Ok(query) => Some(JsonPath {
            source: text.to_string(),
            query,
            pointer: crate::catalog::simple_pointer(text),
        }),
        Err(e) => {
            errors.push(format!("[webhook] {what} `{text}` is not a JSONPath: {e}"));
            None
        }
    }
}

fn header_name(what: &str, name: &str, errors: &mut Vec<String>) {
    if name != name.to_ascii_lowercase()
        || hyper::header::HeaderName::from_bytes(name.as_bytes()).is_err()
    {
        errors.push(format!(
            "[webhook] {what} `{name}` must be a lowercase header name"
        ));
    }
}

/// Splits `message` at its `{placeholders}`.
pub fn parse_message(text: &str) -> Result<Vec<MessagePart>, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(MessagePart::Text(rest[..open].to_string()));
        }
        let Some(close) = rest[open..].find('}') else {
            return Err(format!("[webhook] message `{text}`: `{{` is never closed"));
        };
        let name = &rest[open + 1..open + close];
        parts.push(match name {
            "timestamp" => MessagePart::Timestamp,
            "url" => MessagePart::Url,
            "body_sha256_hex" => MessagePart::BodySha256Hex,
            "body" => MessagePart::Body,
            other => {
                return Err(format!(
                    "[webhook] message `{text}`: unknown placeholder `{{{other}}}`; use {{timestamp}}, {{url}}, {{body_sha256_hex}} or {{body}}"
                ));
            }
        });
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(MessagePart::Text(rest.to_string()));
    }
    Ok(parts)
}

/// Compiles a `[webhook]`; the errors say what to change. Whether `public_key.tool`
/// names a read tool of the service is checked once the tools are compiled.
pub fn compile(spec: &WebhookSpec, service: &str) -> Result<Webhook, Vec<String>> {
    let mut errors = Vec::new();
    header_name("header", &spec.header, &mut errors);
    if let Some(name) = &spec.timestamp_header {
        header_name("timestamp_header", name, &mut errors);
    }
    let event_id = spec
        .event_id
        .as_ref()
        .and_then(|t| path("event_id", t, &mut errors));
    let mut paths = |what: &str, list: &[String]| -> Vec<JsonPath> {
        if list.is_empty() {
            errors.push(format!("[webhook] {what} names no JSONPath"));
        }
        list.iter()
            .filter_map(|t| path(what, t, &mut errors))
            .collect()
    };
    let job_id = paths("job_id", spec.job_id.as_slice());
    let status = paths("status", spec.status.as_slice());
    let mut message = Vec::new();
    let mut public_key = None;
    match spec.scheme {
        WebhookScheme::Bearer => {
            for (set, field) in [
                (spec.message.is_some(), "message"),
                (spec.public_key.is_some(), "public_key"),
                (spec.timestamp_header.is_some(), "timestamp_header"),
                (spec.max_age_seconds.is_some(), "max_age_seconds"),
            ] {
                if set {
                    errors.push(format!(
                        "[webhook] `{field}` belongs to scheme \"rsa_sha256\"; a bearer secret signs nothing"
                    ));
                }
            }
        }
        WebhookScheme::RsaSha256 => {
            match spec.message.as_deref().map(parse_message) {
                None => errors.push(
                    "[webhook] scheme \"rsa_sha256\" needs `message`, the text the upstream signs"
                        .into(),
                ),
                Some(Err(e)) => errors.push(e),
                Some(Ok(parts)) => message = parts,
            }
            let signs_time = message.contains(&MessagePart::Timestamp);
            match (&spec.timestamp_header, signs_time) {
                (Some(_), false) => errors.push(
                    "[webhook] a `timestamp_header` outside the signed `message` proves nothing: add {timestamp} to `message`".into(),
                ),
                (None, true) => errors.push(
                    "[webhook] `message` uses {timestamp}: name the `timestamp_header` it comes from".into(),
                ),
                _ => {}
            }
            if let Some(source) = &spec.public_key {
                public_key = path("public_key.path", &source.path, &mut errors)
                    .map(|p| (format!("{service}.{}", source.tool), p));
            }
        }
    }
    if spec.max_age_seconds.is_some() && spec.timestamp_header.is_none() {
        errors.push("[webhook] `max_age_seconds` needs a `timestamp_header`".into());
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Webhook {
        spec: spec.clone(),
        event_id,
        job_id,
        status,
        message,
        public_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_split_at_their_placeholders() {
        assert_eq!(
            parse_message("{timestamp}.{url}.{body_sha256_hex}").unwrap(),
            [
                MessagePart::Timestamp,
                MessagePart::Text(".".into()),
                MessagePart::Url,
                MessagePart::Text(".".into()),
                MessagePart::BodySha256Hex,
            ]
        );
        assert_eq!(
            parse_message("v1:{body}").unwrap(),
            [MessagePart::Text("v1:".into()), MessagePart::Body]
        );
        assert!(
            parse_message("{nonce}.{body}")
                .unwrap_err()
                .contains("`{nonce}`")
        );
        assert!(parse_message("{body").unwrap_err().contains("never closed"));
    }
}
