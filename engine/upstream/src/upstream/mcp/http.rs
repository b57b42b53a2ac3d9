//! An MCP server over Streamable HTTP, as its client.
//!
//! The revision is settled once per service, on first contact: the broker asks
//! `server/discover` as the stateless revision 2026-07-28 says; a server that answers
//! it is spoken to statelessly (every request carries its `_meta` and the
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers). Any other answer, and
//! the broker speaks the handshake revisions: `initialize` (offering 2025-11-25, taking
//! 2025-06-18 and 2025-03-26 back), `notifications/initialized`, then each request with
//! the `Mcp-Session-Id` the server issued and the revision in `MCP-Protocol-Version`. A
//! session is held per caller key (by its digest: the key itself is never kept), so two
//! callers never share one; a session the server forgot (404) is made again once.
//!
//! An answer is one JSON message, or an event stream read until the answer to the
//! request comes: notifications on the way (progress, a changed tool list) are passed
//! on, and a request of the server's is answered with a `POST` as it comes (a question
//! put to the caller through the call's relay; `ping` answered; anything else refused).
//! Every answer is bounded in size; the caller bounds it in time.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::wire::{self, Failure, Message};
use super::{Events, Exchange};
use crate::upstream::client::Pool;

/// The sessions held at most per service; the oldest is dropped past it.
const MOST_SESSIONS: usize = 1024;

/// The revision a server speaks.
#[derive(Debug, Clone)]
enum Era {
    /// 2026-07-28: no session.
    Stateless,
    /// A handshake revision: `initialize` once per session.
    Handshake,
}

/// A session of the handshake revisions.
#[derive(Debug, Clone)]
struct Session {
    id: Option<String>,
    version: String,
    made: u64,
}

/// One Streamable HTTP server.
pub(super) struct Remote {
    service: String,
    pool: Pool,
    era: tokio::sync::Mutex<Option<Era>>,
    sessions: std::sync::Mutex<HashMap<String, Session>>,
    next_id: AtomicU64,
    events: Arc<Events>,
}

/// What one `POST` brought back.
struct Posted {
    /// The answer to the request, when it was one.
    outcome: Option<Result<Value, wire::RpcError>>,
    /// `Mcp-Session-Id`, when the server set one.
    session: Option<String>,
}

impl Remote {
    pub(super) fn new(service: &str, pool: Pool, events: Arc<Events>) -> Self {
        Self {
            service: service.to_string(),
            pool,
            era: tokio::sync::Mutex::new(None),
            sessions: std::sync::Mutex::default(),
            next_id: AtomicU64::new(1),
            events,
        }
    }

    /// One request, answered.
    pub(super) async fn request(
        &self,
        method: &str,
        params: Value,
        exchange: &Exchange<'_>,
    ) -> Result<Value, Failure> {
        let url = exchange
            .base_url
            .ok_or_else(|| Failure::Unavailable("no URL".into()))?;
        match self.era(url, exchange).await? {
            Era::Stateless => {
                let name = params.get("name").and_then(Value::as_str).map(String::from);
                let params = stateless_params(params);
                let headers = stateless_headers(method, name.as_deref());
                self.ask(url, method, params, &headers, exchange).await
            }
            Era::Handshake => {
                let digest = key_digest(exchange.key);
                for attempt in 0..2 {
                    let session = self.session(url, &digest, exchange).await?;
                    let headers = session_headers(&session);
                    match self
                        .ask(url, method, params.clone(), &headers, exchange)
                        .await
                    {
                        Err(Failure::Status(404)) if attempt == 0 && session.id.is_some() => {
                            self.forget(&digest);
                        }
                        answer => return answer,
                    }
                }
                Err(Failure::Status(404))
            }
        }
    }

    /// The server's revision, asked once.
    async fn era(&self, url: &str, exchange: &Exchange<'_>) -> Result<Era, Failure> {
        let mut era = self.era.lock().await;
        if let Some(known) = &*era {
            return Ok(known.clone());
        }
        let headers = stateless_headers("server/discover", None);
        let asked = self
            .ask(
                url,
                "server/discover",
                stateless_params(json!({})),
                &headers,
                exchange,
            )
            .await;
        let found = match asked {
            Ok(result)
                if result.get("supportedVersions").is_some()
                    || result.get("resultType").is_some() =>
            {
                Era::Stateless
            }
            // A refused key says nothing of the revision: asked again with one.
            Err(Failure::Status(status @ (401 | 403))) => return Err(Failure::Status(status)),
            Ok(_) | Err(Failure::Rpc(_) | Failure::Status(_)) => Era::Handshake,
            Err(e) => return Err(e),
        };
        tracing::info!(service = %self.service, era = ?found, "mcp server's revision settled");
        *era = Some(found.clone());
        Ok(found)
    }

    /// The session of the key whose digest is `digest`, made if there is none.
    async fn session(
        &self,
        url: &str,
        digest: &str,
        exchange: &Exchange<'_>,
    ) -> Result<Session, Failure> {
        if let Some(session) = self
            .sessions
            .lock()
            .ok()
            .and_then(|s| s.get(digest).cloned())
        {
            return Ok(session);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = wire::request(
            id,
            "initialize",
            wire::initialize_params(wire::HANDSHAKE_VERSION),
        );
        let posted = self.post(url, body, Some(id), &[], exchange).await?;
        let result = match posted.outcome {
            Some(Ok(result)) => result,
            Some(Err(e)) => return Err(Failure::Rpc(e)),
            None => return Err(Failure::Unavailable("`initialize` was not answered".into())),
        };
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !wire::HANDSHAKE_ACCEPTED.contains(&version.as_str()) {
            return Err(Failure::Unavailable(format!(
                "the server speaks MCP `{version}`, which the broker does not"
            )));
        }
        let session = Session {
            id: posted.session,
            version,
            made: id,
        };
        let headers = session_headers(&session);
        self.post(
            url,
            wire::notification("notifications/initialized"),
            None,
            &headers,
            exchange,
        )
        .await?;
        if let Ok(mut sessions) = self.sessions.lock() {
            if sessions.len() >= MOST_SESSIONS
                && let Some(oldest) = sessions
                    .iter()
                    .min_by_key(|(_, s)| s.made)
                    .map(|(k, _)| k.clone())
            {
                sessions.remove(&oldest);
            }
            sessions.insert(digest.to_string(), session.clone());
        }
        Ok(session)
    }

    fn forget(&self, digest: &str) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.remove(digest);
        }
    }

    /// A request with `headers`, its answer's result.
    async fn ask(
        &self,
        url: &str,
        method: &str,
        params: Value,
        headers: &[(HeaderName, HeaderValue)],
        exchange: &Exchange<'_>,
    ) -> Result<Value, Failure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let posted = self
            .post(
                url,
                wire::request(id, method, params),
                Some(id),
                headers,
                exchange,
            )
            .await?;
        match posted.outcome {
            Some(Ok(result)) => Ok(result),
            Some(Err(e)) => Err(Failure::Rpc(e)),
            None => Err(Failure::Unavailable(format!("`{method}` was not answered"))),
        }
    }

    /// One `POST` of `body`, read until the answer to `id` (none for a notification).
    async fn post(
        &self,
        url: &str,
        body: Value,
        id: Option<u64>,
        headers: &[(HeaderName, HeaderValue)],
        exchange: &Exchange<'_>,
    ) -> Result<Posted, Failure> {
        let bytes = serde_json::to_vec(&body)
            .map_err(|_| Failure::Unavailable("a request could not be written".into()))?;
        let mut request = hyper::Request::new(Full::new(Bytes::from(bytes)));
        *request.method_mut() = hyper::Method::POST;
        *request.uri_mut() = url
            .parse()
            .map_err(|_| Failure::Unavailable("its URL is not a URL".into()))?;
        let map = request.headers_mut();
        map.insert(
            hyper::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        map.insert(
            hyper::header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        map.insert(
            hyper::header::USER_AGENT,
            HeaderValue::from_static(concat!("tool-broker/", env!("CARGO_PKG_VERSION"))),
        );
        for (name, value) in headers.iter().chain(exchange.headers.iter()) {
            map.insert(name.clone(), value.clone());
        }
        let response = crate::upstream::client::here_or(&self.pool)
            .request(request)
            .await
            .map_err(|_| Failure::Unavailable("connection failed".into()))?;
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        if status == 202 || (id.is_none() && (200..300).contains(&status)) {
            return Ok(Posted {
                outcome: None,
                session,
            });
        }
        if !(200..300).contains(&status) {
            return Err(Failure::Status(status));
        }
        let streamed = response
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut body = response.into_body();
        let mut read = 0usize;
        let mut buffer: Vec<u8> = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| Failure::Unavailable("the answer was cut off".into()))?;
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            read += chunk.len();
            if read > exchange.max_bytes {
                return Err(Failure::TooLarge);
            }
            buffer.extend_from_slice(&chunk);
            if !streamed {
                continue;
            }
            while let Some((event, rest)) = next_event(&buffer) {
                let data = event_data(&buffer[..event]);
                buffer.drain(..rest);
                // An event with no data (a stream's priming event) carries no message.
                let Some(data) = data.filter(|d| !d.iter().all(u8::is_ascii_whitespace)) else {
                    continue;
                };
                match self.take(&data, id) {
                    Taken::Answer(outcome) => {
                        return Ok(Posted {
                            outcome: Some(outcome),
                            session,
                        });
                    }
                    Taken::Request { id, method, params } => {
                        // Answered at once: the server waits for it before it goes on.
                        let reply = if method == wire::ELICIT {
                            tracing::info!(service = %self.service, "mcp server asked the caller a question");
                            wire::answer(&id, exchange.ask(params).await)
                        } else {
                            tracing::info!(service = %self.service, method = %method, "mcp server asked the broker; refused");
                            wire::answer_server_request(&id, &method)
                        };
                        let _ = Box::pin(self.post(url, reply, None, headers, exchange)).await;
                    }
                    Taken::Nothing => {}
                }
            }
        }
        if streamed {
            return Err(Failure::Unavailable(
                "its event stream ended before the answer".into(),
            ));
        }
        let message: Value = serde_json::from_slice(&buffer)
            .map_err(|_| Failure::Unavailable("its answer is not JSON".into()))?;
        match wire::classify(message) {
            Message::Response { id: got, outcome } if Some(got) == id => Ok(Posted {
                outcome: Some(outcome),
                session,
            }),
            _ => Err(Failure::Unavailable(
                "its answer is not the answer to the request".into(),
            )),
        }
    }

    /// One message of an event stream: the answer to `id`, a request of the server's
    /// to answer, or nothing more to do (a notification passed on, a stray skipped).
    fn take(&self, data: &[u8], id: Option<u64>) -> Taken {
        let Ok(message) = serde_json::from_slice::<Value>(data) else {
            tracing::warn!(service = %self.service, "mcp server sent an event that is not JSON; skipped");
            return Taken::Nothing;
        };
        match wire::classify(message) {
            Message::Response { id: got, outcome } if Some(got) == id => {
                return Taken::Answer(outcome);
            }
            Message::Response { .. } | Message::Garbage => {
                tracing::warn!(service = %self.service, "mcp server sent a message that answers nothing the broker asked; skipped");
            }
            Message::Notification { method, params } => self.events.notified(&method, &params),
            Message::Request { id, method, params } => {
                return Taken::Request { id, method, params };
            }
        }
        Taken::Nothing
    }
}

/// What one message of an event stream asks of the broker.
enum Taken {
    /// It answers the request.
    Answer(Result<Value, wire::RpcError>),
    /// The server asks something, answered with a `POST`.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// Nothing more.
    Nothing,
}

/// The end of the first whole event in `buffer` and where the next begins.
fn next_event(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = memchr::memmem::find(buffer, b"\n\n").map(|at| (at, at + 2));
    let crlf = memchr::memmem::find(buffer, b"\r\n\r\n").map(|at| (at, at + 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// The `data:` lines of one event, joined.
fn event_data(event: &[u8]) -> Option<Vec<u8>> {
    let mut data: Option<Vec<u8>> = None;
    for line in event.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(rest) = line.strip_prefix(b"data:") {
            let rest = rest.strip_prefix(b" ").unwrap_or(rest);
            let out = data.get_or_insert_with(Vec::new);
            if !out.is_empty() {
                out.push(b'\n');
            }
            out.extend_from_slice(rest);
        }
    }
    data
}

/// The params of a stateless request: its `_meta` names the revision, the client and
/// its capabilities (none).
fn stateless_params(params: Value) -> Value {
    let mut params = match params {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(
            "io.modelcontextprotocol/protocolVersion".into(),
            json!(wire::MODERN_VERSION),
        );
        meta.insert(
            "io.modelcontextprotocol/clientCapabilities".into(),
            json!({}),
        );
        meta.insert(
            "io.modelcontextprotocol/clientInfo".into(),
            wire::client_info(),
        );
    }
    Value::Object(params)
}

/// The headers of a stateless request.
fn stateless_headers(method: &str, name: Option<&str>) -> Vec<(HeaderName, HeaderValue)> {
    let mut headers = vec![(
        HeaderName::from_static("mcp-protocol-version"),
        HeaderValue::from_static(wire::MODERN_VERSION),
    )];
    if let Ok(value) = HeaderValue::from_str(method) {
        headers.push((HeaderName::from_static("mcp-method"), value));
    }
    if let Some(value) = name.and_then(|n| HeaderValue::from_str(n).ok()) {
        headers.push((HeaderName::from_static("mcp-name"), value));
    }
    headers
}

/// The headers of a request in a session.
fn session_headers(session: &Session) -> Vec<(HeaderName, HeaderValue)> {
    let mut headers = Vec::new();
    if let Ok(version) = HeaderValue::from_str(&session.version) {
        headers.push((HeaderName::from_static("mcp-protocol-version"), version));
    }
    if let Some(id) = session
        .id
        .as_deref()
        .and_then(|id| HeaderValue::from_str(id).ok())
    {
        headers.push((HeaderName::from_static("mcp-session-id"), id));
    }
    headers
}

/// What a session is held under: the key's digest, never the key.
fn key_digest(key: Option<&str>) -> String {
    key.map(|k| crate::catalog::identity::sha256_hex(k.as_bytes()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_and_their_data_joined() {
        let stream = b"event: message\ndata: {\"a\":\ndata: 1}\n\nid: 2\r\ndata: {}\r\n\r\n";
        let (end, next) = next_event(stream).unwrap();
        assert_eq!(event_data(&stream[..end]).unwrap(), b"{\"a\":\n1}");
        let rest = &stream[next..];
        let (end, _) = next_event(rest).unwrap();
        assert_eq!(event_data(&rest[..end]).unwrap(), b"{}");
        assert!(next_event(b"data: {}\n").is_none());
    }

    #[test]
    fn a_stateless_request_names_its_revision() {
        let params = stateless_params(json!({"name": "echo", "arguments": {}}));
        assert_eq!(
            params["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(params["name"], "echo");
        let headers = stateless_headers("tools/call", Some("echo"));
        assert_eq!(headers.len(), 3);
    }
}
