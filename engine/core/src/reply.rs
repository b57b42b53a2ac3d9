//! What the broker sends back over HTTP, on every surface: one type, [`Reply`], whose
//! [`Body`] says how it is written, and one error body ([`Reply::error`]) for every
//! answer that is neither a call's envelope nor a JSON-RPC error.
//!
//! Each surface builds a `Reply` (a page converts with `Reply::from`); the servers of
//! `broker-surfaces` write it, on the broker's own HTTP/1.1 server or on hyper's, with
//! the same headers ([`Reply::defaults`]).

use bytes::Bytes;
use serde_json::{Value, json};

use crate::html::{PAGE_HEADERS, Page};

/// A response: status, headers beyond those its body implies, and the body.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// HTTP status (one outside 100-999 is written as 500).
    pub status: u16,
    /// Headers beyond [`Reply::defaults`]: one named like a default replaces it; a name
    /// given twice (`set-cookie`) is sent twice. A value HTTP cannot carry is left out.
    pub headers: Vec<(&'static str, String)>,
    /// What is sent, and so its content type.
    pub body: Body,
}

/// A reply's body.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// Nothing (MCP's 202, the hub API's 204).
    Empty,
    /// JSON text, always whole JSON: `application/json`.
    Json(Bytes),
    /// A server-rendered page: HTML with the headers every page carries
    /// ([`PAGE_HEADERS`]).
    Page(String),
    /// Anything else, with its content type (the metrics' text, an audit export).
    Typed(&'static str, Bytes),
    /// A body written as it is made (an MCP call's `text/event-stream`), with its
    /// content type: each chunk sent whole as it comes, the body ended when the
    /// sending end drops.
    Stream(&'static str, Chunks),
}

/// The receiving end of a [`Body::Stream`], taken once by the server that writes it.
#[derive(Clone)]
pub struct Chunks(std::sync::Arc<std::sync::Mutex<Option<tokio::sync::mpsc::Receiver<Bytes>>>>);

impl Chunks {
    /// The chunks `rx` receives.
    pub fn new(rx: tokio::sync::mpsc::Receiver<Bytes>) -> Self {
        Self(std::sync::Arc::new(std::sync::Mutex::new(Some(rx))))
    }

    /// The receiving end (once; `None` after).
    pub fn take(&self) -> Option<tokio::sync::mpsc::Receiver<Bytes>> {
        self.0.lock().ok()?.take()
    }
}

impl PartialEq for Chunks {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for Chunks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Chunks")
    }
}

/// The headers of a JSON or typed body: never cached, never sniffed as anything else.
const JSON_HEADERS: [(&str, &str); 3] = [
    ("content-type", "application/json"),
    ("cache-control", "no-store"),
    ("x-content-type-options", "nosniff"),
];

/// `JSON_HEADERS` as HTTP/1.1 header lines, written in one copy by the broker's own
/// server for a JSON reply that overrides none of them (every call's).
pub const JSON_HEAD: &str = "content-type: application/json\r\ncache-control: no-store\r\nx-content-type-options: nosniff\r\n";

impl Reply {
    /// JSON text already written.
    pub fn json_text(status: u16, text: impl Into<Bytes>) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Body::Json(text.into()),
        }
    }

    /// A JSON value with status 200.
    pub fn ok(body: &Value) -> Self {
        Self::json(200, body)
    }

    /// A JSON value, written once.
    pub fn json(status: u16, body: &Value) -> Self {
        // Straight into bytes: `Value`'s `Display` goes through `fmt` and is slower.
        Self::json_text(status, serde_json::to_vec(body).unwrap_or_default())
    }

    /// The one error body of every surface outside a call's envelope and JSON-RPC:
    /// `{"error": {"classification", "message"}}`. `classification` is one of the
    /// contract's (rules/errors.toml), or `not_found` for a path or record that does
    /// not exist (docs/behaviour.md, "Error bodies").
    pub fn error(status: u16, classification: &str, message: &str) -> Self {
        Self::json(
            status,
            &json!({ "error": { "classification": classification, "message": message } }),
        )
    }

    /// No body.
    pub fn empty(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Body::Empty,
        }
    }

    /// A body of its own content type.
    pub fn typed(status: u16, content_type: &'static str, body: impl Into<Bytes>) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Body::Typed(content_type, body.into()),
        }
    }

    /// The same reply with one more header.
    #[must_use]
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The body's own headers, before [`Reply::headers`]: a JSON or typed body's
    /// content type, `cache-control: no-store` and `nosniff`; a page's
    /// [`PAGE_HEADERS`]; nothing for an empty body.
    pub fn defaults(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        let (content_type, rest): (Option<&'static str>, &[(&str, &str)]) = match &self.body {
            Body::Empty => (None, &[]),
            Body::Json(_) => (None, &JSON_HEADERS),
            Body::Typed(content_type, _) | Body::Stream(content_type, _) => {
                (Some(content_type), &JSON_HEADERS[1..])
            }
            Body::Page(_) => (None, &PAGE_HEADERS),
        };
        content_type
            .map(|c| ("content-type", c))
            .into_iter()
            .chain(rest.iter().copied())
            .filter(|(name, _)| !self.headers.iter().any(|(given, _)| given == name))
    }

    /// Whether this is a JSON reply whose headers override none of `JSON_HEADERS`:
    /// its defaults are [`JSON_HEAD`].
    pub fn plain_json(&self) -> bool {
        matches!(self.body, Body::Json(_))
            && !self
                .headers
                .iter()
                .any(|(given, _)| JSON_HEADERS.iter().any(|(name, _)| name == given))
    }

    /// The body's bytes, borrowed (none for a stream: its server writes it).
    pub fn body_bytes(&self) -> &[u8] {
        match &self.body {
            Body::Empty | Body::Stream(..) => &[],
            Body::Json(b) | Body::Typed(_, b) => b,
            Body::Page(text) => text.as_bytes(),
        }
    }

    /// The body as JSON, where it is JSON (tests and the surfaces that read an answer
    /// back).
    pub fn json_body(&self) -> Option<Value> {
        match &self.body {
            Body::Json(b) => serde_json::from_slice(b).ok(),
            _ => None,
        }
    }
}

impl Body {
    /// The bytes, moved out.
    pub fn into_bytes(self) -> Bytes {
        match self {
            Body::Empty | Body::Stream(..) => Bytes::new(),
            Body::Json(b) | Body::Typed(_, b) => b,
            Body::Page(text) => Bytes::from(text),
        }
    }
}

impl From<Page> for Reply {
    fn from(page: Page) -> Self {
        Self {
            status: page.status,
            headers: page.headers,
            body: Body::Page(page.body),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_header_replaces_the_default_of_its_name() {
        let reply = Reply::json_text(200, "{}").with_header("cache-control", "max-age=3600");
        let defaults: Vec<_> = reply.defaults().collect();
        assert_eq!(
            defaults,
            [
                ("content-type", "application/json"),
                ("x-content-type-options", "nosniff")
            ]
        );
        let typed = Reply::typed(200, "text/csv", "a,b\n");
        assert_eq!(
            typed.defaults().next(),
            Some(("content-type", "text/csv")),
            "a typed body says its own type"
        );
        assert_eq!(Reply::empty(204).defaults().count(), 0);
    }

    #[test]
    fn the_json_head_is_the_json_headers() {
        let lines: String = JSON_HEADERS
            .iter()
            .map(|(name, value)| format!("{name}: {value}\r\n"))
            .collect();
        assert_eq!(JSON_HEAD, lines);
        assert!(
            Reply::json_text(200, "{}")
                .with_header("retry-after", "1")
                .plain_json()
        );
        assert!(
            !Reply::json_text(200, "{}")
                .with_header("cache-control", "max-age=1")
                .plain_json()
        );
        assert!(!Reply::empty(202).plain_json());
    }

    #[test]
    fn every_error_has_one_shape() {
        let reply = Reply::error(404, "not_found", "no such service");
        assert_eq!(
            reply.json_body(),
            Some(
                json!({ "error": { "classification": "not_found", "message": "no such service" } })
            )
        );
        assert_eq!(reply.status, 404);
    }

    #[test]
    fn a_page_keeps_its_status_and_headers() {
        let reply = Reply::from(Page {
            status: 303,
            headers: vec![("location", "/hub".into())],
            body: "<p>moved".into(),
        });
        assert_eq!(reply.status, 303);
        assert_eq!(reply.headers, [("location", "/hub".to_string())]);
        assert!(reply.defaults().any(|(name, _)| name == "x-frame-options"));
        assert_eq!(reply.body_bytes(), b"<p>moved");
    }
}
