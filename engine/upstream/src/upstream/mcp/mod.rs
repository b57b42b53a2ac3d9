//! The broker as an MCP client (docs/mcp-upstreams.md): the catalog's MCP services
//! reached over stdio (`stdio`, a process the broker runs) or Streamable HTTP (`http`),
//! both speaking the JSON-RPC of `wire`.
//!
//! [`Servers`] holds one connection per MCP service and what each server last said of
//! its tools. A call is checked against that before it is sent: the tools are listed
//! (every page) on a service's first call, again when the server says its list changed
//! (`notifications/tools/list_changed`), and when the listing is older than
//! [`RELIST_AFTER`]; a tool whose upstream descriptor no longer hashes to the
//! catalog's pin is refused `upstream_changed` and nothing is sent. A server that cannot
//! be reached makes its own tools `upstream_unavailable`, no other service's.
//!
//! Lives under `upstream/`: only the gate holds it (decision 017), and it attaches the
//! caller's key itself (an HTTP server's credential header), as `client` does.

mod http;
pub mod relay;
mod stdio;
pub mod wire;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hyper::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use crate::catalog::mcp::{McpPlan, Transport, upstream_sha256};
use crate::catalog::{Catalog, Service};
use crate::error::{CallError, Classification};
use crate::telemetry::trace::CallTrace;
use crate::telemetry::trace::context::{TRACEPARENT, TRACESTATE};
use relay::Relay;
use wire::Failure;

/// A listing older than this is read again before the next call.
pub const RELIST_AFTER: Duration = Duration::from_secs(300);
/// Pages of `tools/list` read at most (a server that pages forever is cut off).
const MOST_PAGES: usize = 100;

/// One `tools/call` of a catalog tool on its server: what is sent, and what a preview
/// or a confirmed plan shows of it.
#[derive(Debug, Clone)]
pub struct McpCall {
    /// The server's tool.
    pub tool: String,
    /// Its arguments (the broker's own taken out).
    pub arguments: Map<String, Value>,
}

impl McpCall {
    /// What a preview shows, and a confirmation binds: the JSON-RPC method and params.
    pub fn preview(&self) -> Value {
        json!({
            "method": "tools/call",
            "params": { "name": self.tool, "arguments": self.arguments },
        })
    }
}

/// Where and how one call reaches its server.
#[derive(Debug)]
pub struct McpTarget<'a> {
    /// The service.
    pub service: &'a Service,
    /// The URL in effect (HTTP servers).
    pub base_url: Option<&'a str>,
    /// The caller's key (HTTP servers, in the service's credential header).
    pub key: Option<&'a str>,
    /// The key is an OAuth access token for `Authorization: Bearer` (a hub
    /// connection's `token_placement`), not for the credential header.
    pub bearer: bool,
    /// The tool's timeout.
    pub timeout: Duration,
    /// The largest answer read.
    pub max_body_bytes: usize,
    /// The call's trace: the request carries its `traceparent` (header and `_meta`).
    pub trace: &'a CallTrace,
    /// Where the server's progress and questions go (`/mcp` callers that can hear
    /// them); `None`: dropped and refused.
    pub relay: Option<&'a Relay>,
    /// The values swept from what is passed on to the caller (the caller's keys, the
    /// server's environment), as they are from answers.
    pub sweep: &'a [&'a str],
}

/// What one exchange with a server reads: its URL and headers (credential, trace), and
/// its bounds.
pub(super) struct Exchange<'a> {
    base_url: Option<&'a str>,
    key: Option<&'a str>,
    headers: Vec<(HeaderName, HeaderValue)>,
    timeout: Duration,
    max_bytes: usize,
    relay: Option<&'a Relay>,
    sweep: &'a [&'a str],
}

impl Exchange<'_> {
    /// Puts the server's question to the caller, its secrets swept out: the answer to
    /// send back.
    pub(super) async fn ask(&self, mut params: Value) -> Result<Value, wire::RpcError> {
        let Some(relay) = self.relay else {
            return Err(relay::cannot_ask());
        };
        sweep(&mut params, self.sweep);
        relay.ask(params).await
    }
}

/// Replaces each of `secrets` in the strings of `value` (keys too) with `[REDACTED]`.
fn sweep(value: &mut Value, secrets: &[&str]) {
    let scrub = |text: &mut String| {
        for secret in secrets.iter().filter(|s| !s.is_empty()) {
            if text.contains(secret) {
                *text = text.replace(secret, "[REDACTED]");
            }
        }
    };
    match value {
        Value::String(text) => scrub(text),
        Value::Array(items) => items.iter_mut().for_each(|v| sweep(v, secrets)),
        Value::Object(map) => {
            let taken = std::mem::take(map);
            for (mut key, mut v) in taken {
                scrub(&mut key);
                sweep(&mut v, secrets);
                map.insert(key, v);
            }
        }
        _ => {}
    }
}

/// What a server told the broker without being asked, and the calls in flight that
/// hear its progress.
#[derive(Debug, Default)]
pub(super) struct Events {
    service: String,
    /// Its tool list changed: read it again before the next call.
    list_changed: AtomicBool,
    /// The relays of the calls in flight, by the progress token each was sent with.
    relays: std::sync::Mutex<HashMap<String, Relay>>,
}

impl Events {
    /// A notification from the server.
    pub(super) fn notified(&self, method: &str, params: &Value) {
        match method {
            "notifications/tools/list_changed" => {
                tracing::info!(service = %self.service, "mcp server says its tools changed");
                self.list_changed.store(true, Ordering::Release);
            }
            "notifications/progress" => {
                let token = params.get("progressToken").and_then(Value::as_str);
                let relay = token.and_then(|t| self.relays.lock().ok()?.get(t).cloned());
                match relay {
                    Some(relay) => relay.progress(params),
                    None => {
                        tracing::debug!(service = %self.service, "mcp server progress for no call that hears it; dropped")
                    }
                }
            }
            other => {
                tracing::debug!(service = %self.service, method = other, "mcp server notification")
            }
        }
    }

    /// The relay of the one call in flight, when exactly one is (a stdio server's
    /// question names no call: it is passed on only when it can be no other's).
    pub(super) fn only_relay(&self) -> Option<Relay> {
        let relays = self.relays.lock().ok()?;
        if relays.len() == 1 {
            relays.values().next().cloned()
        } else {
            None
        }
    }

    /// Hears progress sent under `token` until the guard drops.
    fn hear(self: &Arc<Self>, token: String, relay: Relay) -> Hearing {
        if let Ok(mut relays) = self.relays.lock() {
            relays.insert(token.clone(), relay);
        }
        Hearing {
            events: self.clone(),
            token,
        }
    }
}

/// A call's relay registered with its server's events; taken out on drop.
struct Hearing {
    events: Arc<Events>,
    token: String,
}

impl Drop for Hearing {
    fn drop(&mut self) {
        if let Ok(mut relays) = self.events.relays.lock() {
            relays.remove(&self.token);
        }
    }
}

/// What a server said of its tools when last asked.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Each tool's upstream descriptor hash, by its name on the server.
    pub hashes: BTreeMap<String, String>,
    /// When it was read.
    pub read_at: Option<Instant>,
}

enum Conn {
    Stdio(stdio::Supervisor),
    Http(Box<http::Remote>),
}

struct Server {
    conn: Conn,
    events: Arc<Events>,
    /// One listing at a time.
    listing: tokio::sync::Mutex<()>,
    seen: std::sync::RwLock<Listing>,
}

/// The catalog's MCP servers.
pub struct Servers {
    servers: HashMap<String, Server>,
    /// The next progress token.
    next_token: AtomicU64,
}

impl std::fmt::Debug for Servers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Servers")
            .field("services", &self.servers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Servers {
    /// A connection (not yet open) for every MCP service of `catalog`; `lookup` reads
    /// the environment passed to stdio servers.
    pub fn new(catalog: &Catalog, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let max_line = catalog.rules.limits.max_upstream_body_bytes;
        let mut servers = HashMap::new();
        let mut pool = None;
        for (id, service) in &catalog.services {
            let Some(spec) = &service.mcp else { continue };
            let events = Arc::new(Events {
                service: id.clone(),
                ..Events::default()
            });
            let conn = match &spec.transport {
                Transport::Stdio { .. } => {
                    let Some(supervisor) =
                        stdio::Supervisor::new(id, spec, lookup, max_line, events.clone())
                    else {
                        continue;
                    };
                    Conn::Stdio(supervisor)
                }
                Transport::Http => {
                    let pool = match &pool {
                        Some(pool) => pool,
                        None => pool.insert(crate::upstream::client::pool()?),
                    };
                    Conn::Http(Box::new(http::Remote::new(
                        id,
                        pool.clone(),
                        events.clone(),
                    )))
                }
            };
            servers.insert(
                id.clone(),
                Server {
                    conn,
                    events,
                    listing: tokio::sync::Mutex::new(()),
                    seen: std::sync::RwLock::default(),
                },
            );
        }
        Ok(Self {
            servers,
            next_token: AtomicU64::new(1),
        })
    }

    /// Whether the catalog has any MCP service.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The deployment's values a service's server is passed (a stdio server's `env`):
    /// secrets its answers are swept for, as a caller's key is.
    pub fn secrets(&self, service: &str) -> &[String] {
        match self.servers.get(service).map(|s| &s.conn) {
            Some(Conn::Stdio(s)) => s.secrets(),
            _ => &[],
        }
    }

    /// What each server last said of its tools, by service.
    pub fn listings(&self) -> BTreeMap<String, Listing> {
        self.servers
            .iter()
            .map(|(id, s)| {
                (
                    id.clone(),
                    s.seen.read().map(|l| l.clone()).unwrap_or_default(),
                )
            })
            .collect()
    }

    /// Sends `call` of the tool pinned by `plan` once the server's listing shows the
    /// tool as pinned: its `CallToolResult`, not yet read (`answer::mcp`).
    pub async fn call(
        &self,
        plan: &McpPlan,
        call: &McpCall,
        target: &McpTarget<'_>,
    ) -> Result<Value, CallError> {
        let service = &target.service.id;
        let server = self.server(service)?;
        let started = Instant::now();
        let mut hop = Some(target.trace.hop());
        let exchange = exchange(target, hop.as_ref());
        let seen = Box::pin(self.seen_hash(server, &call.tool, target, &exchange)).await?;
        if seen.as_ref() != Some(&plan.pinned) {
            tracing::warn!(service = %service, tool = %call.tool, "mcp server describes a tool otherwise than the catalog pinned; refused");
            return Err(changed(service, &call.tool, &plan.pinned, seen.as_deref()));
        }
        let mut meta = Map::new();
        if let Some(Ok(text)) = hop.as_ref().map(|h| h.traceparent.to_str()) {
            meta.insert("traceparent".into(), json!(text));
        }
        // A caller that hears progress gets the server's under a token of the broker's.
        let _hearing = target.relay.map(|relay| {
            let token = format!("tb-{}", self.next_token.fetch_add(1, Ordering::Relaxed));
            meta.insert("progressToken".into(), json!(token));
            server.events.hear(token, relay.clone())
        });
        let params = json!({ "name": call.tool, "arguments": call.arguments, "_meta": meta });
        let left = target.timeout.saturating_sub(started.elapsed());
        let exchange = Exchange {
            timeout: left,
            relay: target.relay,
            ..exchange
        };
        let answer = Box::pin(request(server, "tools/call", params, &exchange)).await;
        if let Some(hop) = hop.take() {
            let error = answer.as_ref().err().map(failure_name);
            target.trace.finish_hop(
                hop,
                || format!("tools/call {}", call.tool),
                |span| {
                    span.text("rpc.system", "jsonrpc");
                    span.text("rpc.method", "tools/call");
                    span.text("tool_broker.service", service.as_str());
                    if let Some(error) = error {
                        span.text("error.type", error);
                        span.error = true;
                    }
                },
            );
        }
        answer.map_err(|f| failed(service, "tools/call", f))
    }

    /// Every tool the server lists now (every page), as it describes them: for
    /// `catalog import-mcp` and `diff-mcp`.
    pub async fn list(&self, target: &McpTarget<'_>) -> Result<Vec<Value>, CallError> {
        let server = self.server(&target.service.id)?;
        let exchange = exchange(target, None);
        list_all(server, &exchange)
            .await
            .map_err(|f| failed(&target.service.id, "tools/list", f))
    }

    fn server(&self, service: &str) -> Result<&Server, CallError> {
        self.servers.get(service).ok_or_else(|| {
            CallError::new(
                Classification::NotConfigured,
                format!("the `{service}` MCP server is not set up in this broker"),
            )
        })
    }

    /// What `tool` hashes to in the server's listing (`None`: not listed), the listing
    /// read again first if it is missing, old, or said to have changed.
    async fn seen_hash(
        &self,
        server: &Server,
        tool: &str,
        target: &McpTarget<'_>,
        exchange: &Exchange<'_>,
    ) -> Result<Option<String>, CallError> {
        let fresh = |l: &Listing| {
            l.read_at.is_some_and(|at| at.elapsed() < RELIST_AFTER)
                && !server.events.list_changed.load(Ordering::Acquire)
        };
        if let Ok(seen) = server.seen.read()
            && fresh(&seen)
        {
            return Ok(seen.hashes.get(tool).cloned());
        }
        let _one = server.listing.lock().await;
        if let Ok(seen) = server.seen.read()
            && fresh(&seen)
        {
            return Ok(seen.hashes.get(tool).cloned());
        }
        let listing = read_listing(server, target, exchange).await?;
        Ok(listing.hashes.get(tool).cloned())
    }

    /// Reads the server's listing now, whatever its age (at start and every few
    /// minutes, so drift shows before a call meets it).
    pub async fn relist(&self, target: &McpTarget<'_>) -> Result<Listing, CallError> {
        let server = self.server(&target.service.id)?;
        let exchange = exchange(target, None);
        let _one = server.listing.lock().await;
        read_listing(server, target, &exchange).await
    }
}

/// Reads a server's listing (every page) and keeps it; the caller holds its listing lock.
async fn read_listing(
    server: &Server,
    target: &McpTarget<'_>,
    exchange: &Exchange<'_>,
) -> Result<Listing, CallError> {
    server.events.list_changed.store(false, Ordering::Release);
    let tools = list_all(server, exchange)
        .await
        .map_err(|f| failed(&target.service.id, "tools/list", f))?;
    let listing = Listing {
        hashes: tools
            .iter()
            .filter_map(|t| Some((t.get("name")?.as_str()?.to_string(), upstream_sha256(t))))
            .collect(),
        read_at: Some(Instant::now()),
    };
    if let Ok(mut seen) = server.seen.write() {
        *seen = listing.clone();
    }
    Ok(listing)
}

/// The exchange of one call: the credential header (HTTP), the trace, the bounds.
fn exchange<'a>(
    target: &McpTarget<'a>,
    hop: Option<&crate::telemetry::trace::Hop>,
) -> Exchange<'a> {
    let mut headers = Vec::new();
    if let (true, Some(key)) = (target.bearer, target.key)
        && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {key}"))
    {
        value.set_sensitive(true);
        headers.push((hyper::header::AUTHORIZATION, value));
    } else if let (Some(cred), Some(key)) = (&target.service.credential, target.key)
        && let Ok(name) = HeaderName::from_bytes(cred.name.as_bytes())
        && let Ok(mut value) = HeaderValue::from_str(&format!("{}{key}", cred.prefix))
    {
        value.set_sensitive(true);
        headers.push((name, value));
    }
    for (name, value) in &target.service.static_headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.push((name, value));
        }
    }
    if let Some(hop) = hop {
        headers.push((TRACEPARENT, hop.traceparent.clone()));
        if let Some(state) = &hop.tracestate {
            headers.push((TRACESTATE, state.clone()));
        }
    }
    Exchange {
        base_url: target.base_url,
        key: target.key,
        headers,
        timeout: target.timeout,
        max_bytes: target.max_body_bytes,
        relay: None,
        sweep: target.sweep,
    }
}

/// One request to a server, within the exchange's time (the time its caller spent
/// answering the server's questions not counted).
async fn request(
    server: &Server,
    method: &str,
    params: Value,
    exchange: &Exchange<'_>,
) -> Result<Value, Failure> {
    let asked = async {
        match &server.conn {
            Conn::Stdio(s) => s.request(method, params, exchange).await,
            Conn::Http(h) => h.request(method, params, exchange).await,
        }
    };
    relay::within(exchange.timeout, exchange.relay, std::pin::pin!(asked))
        .await
        .unwrap_or(Err(Failure::Timeout))
}

/// Every page of `tools/list`.
async fn list_all(server: &Server, exchange: &Exchange<'_>) -> Result<Vec<Value>, Failure> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MOST_PAGES {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let page = request(server, "tools/list", params, exchange).await?;
        if let Some(Value::Array(list)) = page.get("tools") {
            tools.extend(list.iter().cloned());
        }
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(String::from);
        if cursor.is_none() {
            return Ok(tools);
        }
    }
    Err(Failure::Unavailable(format!(
        "its tool list runs past {MOST_PAGES} pages"
    )))
}

/// `upstream_changed`: the server describes the tool otherwise than the pin.
fn changed(service: &str, tool: &str, pinned: &str, seen: Option<&str>) -> CallError {
    let what = match seen {
        Some(_) => {
            "describes it otherwise than the catalog pinned (its description, schemas or annotations changed)"
        }
        None => "no longer lists it",
    };
    CallError::new(
        Classification::UpstreamChanged,
        format!(
            "the `{service}` MCP server {what}: nothing was sent; review the change with `tool-broker catalog diff-mcp {service}`, import it and deploy the new catalog"
        ),
    )
    .with_details(json!({ "service": service, "tool": tool, "pinned": pinned, "seen": seen }))
}

/// A failed exchange as the caller sees it (never a URL or a header).
fn failed(service: &str, method: &str, failure: Failure) -> CallError {
    match failure {
        Failure::Timeout => CallError::new(
            Classification::UpstreamTimeout,
            format!("the `{service}` MCP server did not answer `{method}` in time"),
        ),
        Failure::TooLarge => CallError::new(
            Classification::UpstreamUnavailable,
            format!(
                "the `{service}` MCP server's answer to `{method}` is larger than the broker's limit"
            ),
        ),
        Failure::Unavailable(why) => {
            tracing::warn!(service, method, why = %why, "mcp server unavailable");
            CallError::new(
                Classification::UpstreamUnavailable,
                format!("the `{service}` MCP server could not answer `{method}`: {why}"),
            )
        }
        Failure::Status(status @ (401 | 403)) => CallError::new(
            Classification::MissingRequiredCredentials,
            format!("the `{service}` MCP server refused the key ({status}); nothing was done"),
        )
        .with_upstream_status(status),
        Failure::Status(status) => CallError::new(
            Classification::UpstreamHttpError,
            format!("the `{service}` MCP server answered HTTP {status} to `{method}`"),
        )
        .with_upstream_status(status),
        Failure::Rpc(e) => CallError::new(
            Classification::UpstreamHttpError,
            format!(
                "the `{service}` MCP server refused `{method}` (JSON-RPC error {})",
                e.code
            ),
        )
        .with_details(json!({ "code": e.code, "message": e.message })),
    }
}

fn failure_name(failure: &Failure) -> &'static str {
    match failure {
        Failure::Timeout => "upstream_timeout",
        Failure::TooLarge | Failure::Unavailable(_) => "upstream_unavailable",
        Failure::Status(_) | Failure::Rpc(_) => "upstream_http_error",
    }
}
