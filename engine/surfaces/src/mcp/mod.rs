//! The MCP HTTP/1.1 server (`POST /mcp`, Streamable HTTP, answers as plain JSON but for
//! the event stream of an MCP server's tool that says something on the way, [`stream`]):
//! the same engine as `POST /` behind the Model Context Protocol (decision 001).
//!
//! Two eras are served, and the broker keeps no session state in either, so any number
//! of replicas behind a plain load balancer serve one client:
//! - the handshake revisions 2025-06-18 and 2025-11-25: `initialize` (a version the
//!   broker does not speak there, 2026-07-28 included, is answered with a counter-offer
//!   of 2025-11-25), `notifications/*` (202, empty body), `ping`, `tools/list`,
//!   `tools/call`. `Mcp-Session-Id` is never issued nor required;
//! - the stateless revision 2026-07-28: `server/discover` and per-request `_meta`
//!   (`io.modelcontextprotocol/protocolVersion`, `.../clientCapabilities`,
//!   `.../clientInfo`), with the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`
//!   headers checked against the body (`-32020` on a mismatch, `-32022` with the
//!   supported versions for an unknown version). A request is of this era when its
//!   `_meta` names a protocol version, its `MCP-Protocol-Version` header is 2026-07-28,
//!   or it is `server/discover`; a `server/discover` without the envelope is an
//!   invalid-params error, on which clients fall back to `initialize`. Its results
//!   carry `resultType` and `_meta["io.modelcontextprotocol/serverInfo"]`; the methods
//!   it removed (`initialize`, `ping`, `logging/setLevel`, `resources/(un)subscribe`)
//!   are 404 with -32601 when sent as stateless requests.
//!
//! Protocol errors are JSON-RPC errors with their HTTP status (parse error, invalid
//! request, invalid params, header mismatch, unsupported version: 400; unknown method:
//! 404; a bad bearer token: 401). A tool's own failure is not a protocol error: it is a
//! `CallToolResult` with `isError: true` and the envelope in `structuredContent`.
//!
//! May import: the call driver and the stages below it; never [`crate::serve`], which
//! routes `POST /mcp` here.

pub mod connect;
pub mod detached;
pub mod message;
pub mod schemas;
pub mod stream;
pub mod surface;
pub mod tasks;
pub mod tools;

use hyper::HeaderMap;
use hyper::header::HeaderName;
use serde_json::{Map, Value, json};

use crate::call::{Broker, CallInput};
use crate::caller::Caller;
use crate::error::CallError;
use crate::reply::{Body, Reply};
use crate::run::Elicitation;
use crate::served::Served;
use crate::telemetry::trace::Parent;

/// Handshake revisions, oldest first.
pub const HANDSHAKE_VERSIONS: [&str; 2] = ["2025-06-18", "2025-11-25"];
/// Stateless revisions.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];
/// Tools per `tools/list` page.
pub const PAGE_SIZE: usize = 100;

const PROTOCOL_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// Where a 2026-07-28 result names the server.
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// Methods of the handshake revisions that 2026-07-28 removed.
const REMOVED_IN_MODERN: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// JSON-RPC and MCP error codes.
pub mod code {
    /// Not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Bad params.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The bearer token is missing or wrong.
    pub const UNAUTHORIZED: i64 = -32001;
    /// The access token lacks a scope the request needs (HTTP 403, step-up).
    pub const FORBIDDEN: i64 = -32003;
    /// Headers disagree with the body (2026-07-28).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// Unknown protocol version (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// A method needs a client capability the request did not declare (2026-07-28).
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
}

/// A JSON-RPC message's text as a reply's body.
fn json_bytes(text: Vec<u8>) -> Body {
    Body::Json(text.into())
}

fn status_of(code: i64) -> u16 {
    match code {
        code::METHOD_NOT_FOUND => 404,
        code::UNAUTHORIZED => 401,
        code::PARSE_ERROR
        | code::INVALID_REQUEST
        | code::INVALID_PARAMS
        | code::HEADER_MISMATCH
        | code::MISSING_CLIENT_CAPABILITY
        | code::UNSUPPORTED_PROTOCOL_VERSION => 400,
        _ => 200,
    }
}

/// A JSON-RPC error reply.
pub fn error(id: &Value, code: i64, message: impl Into<String>, data: Option<Value>) -> Reply {
    let mut error = json!({ "code": code, "message": message.into() });
    if let Some(data) = data {
        error["data"] = data;
    }
    let mut headers = Vec::new();
    if code == code::UNAUTHORIZED {
        headers.push(("www-authenticate", "Bearer".to_string()));
    }
    Reply {
        status: status_of(code),
        body: json_bytes(
            serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": id, "error": error }))
                .unwrap_or_default(),
        ),
        headers,
    }
}

/// A request whose credential was refused: 401 with the challenge for a missing or
/// invalid one, 403 with the step-up challenge for a token without the scope, the
/// classification's status otherwise (the issuer's keys unavailable); the envelope's
/// error object as `data`.
fn refused(broker: &Broker, id: &Value, err: &CallError) -> Reply {
    let rules = &broker.parts.catalog.rules;
    let (code, status) = match err.classification {
        crate::error::Classification::Unauthorized => (code::UNAUTHORIZED, 401),
        crate::error::Classification::Forbidden => (code::FORBIDDEN, 403),
        other => (-32603, rules.status(other)),
    };
    let mut reply = error(
        id,
        code,
        err.message.clone(),
        Some(crate::answer::envelope::error_object(err, rules)),
    );
    reply.status = status;
    reply.headers = challenge_headers(err);
    reply
}

/// `WWW-Authenticate` and `Retry-After` of a refused credential.
fn challenge_headers(err: &CallError) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    if let Some(challenge) = &err.challenge {
        headers.push(("www-authenticate", challenge.clone()));
    }
    if let Some(seconds) = err.retry_after_seconds {
        headers.push(("retry-after", seconds.to_string()));
    }
    headers
}

/// A `tools/list` result written straight from the entries' JSON text (no entry is
/// parsed or copied into a value tree), then the other result members.
fn list_result(id: &Value, page: &[&tools::EntryText], rest: &Map<String, Value>) -> Reply {
    let mut body = String::with_capacity(64 + page.iter().map(|e| e.len() + 1).sum::<usize>());
    body.push_str(r#"{"jsonrpc":"2.0","id":"#);
    body.push_str(&id.to_string());
    body.push_str(r#","result":{"tools":["#);
    for (i, entry) in page.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(entry);
    }
    body.push(']');
    for (key, value) in rest {
        body.push(',');
        body.push_str(&Value::String(key.clone()).to_string());
        body.push(':');
        body.push_str(&value.to_string());
    }
    body.push_str("}}");
    Reply {
        status: 200,
        body: json_bytes(body.into_bytes()),
        headers: Vec::new(),
    }
}

fn result(id: &Value, result: Value) -> Reply {
    Reply {
        status: 200,
        body: json_bytes(
            serde_json::to_vec(&crate::answer::envelope::object([
                ("jsonrpc", json!("2.0")),
                ("id", id.clone()),
                ("result", result),
            ]))
            .unwrap_or_default(),
        ),
        headers: Vec::new(),
    }
}

/// Marks a 2026-07-28 result complete: `resultType: "complete"` and the server's info
/// in `_meta`.
fn mark_complete(map: &mut Map<String, Value>) {
    map.insert("resultType".into(), json!("complete"));
    map.insert("_meta".into(), json!({ SERVER_INFO_KEY: server_info() }));
}

/// A 2026-07-28 result (see [`mark_complete`]).
fn complete(id: &Value, mut value: Value) -> Reply {
    if let Value::Object(map) = &mut value {
        mark_complete(map);
    }
    result(id, value)
}

fn accepted() -> Reply {
    Reply {
        status: 202,
        body: Body::Empty,
        headers: Vec::new(),
    }
}

/// The protocol headers, named once (a name given as text is parsed at each lookup).
const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

fn header<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// Whether the `Accept` header allows a JSON answer (absent: yes; both orders of
/// `application/json, text/event-stream` and wildcards: yes).
pub fn accepts_json(headers: &HeaderMap) -> bool {
    match header(headers, &hyper::header::ACCEPT) {
        None | Some("") => true,
        Some(accept) => accept.split(',').any(|part| {
            let media = part.split(';').next().unwrap_or("").trim();
            ["application/json", "application/*", "*/*"]
                .iter()
                .any(|json| media.eq_ignore_ascii_case(json))
        }),
    }
}

/// Decodes an `Mcp-Name` header value (`=?base64?...?=` for non-ASCII names).
fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(payload) => {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(payload)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(value.to_string()),
    }
}

/// The era of one request.
enum Era {
    Handshake,
    Modern,
}

/// Checks the 2026-07-28 envelope and headers (the SDK's validation ladder order).
fn modern_era(
    method: &str,
    params: Option<&Value>,
    headers: &HeaderMap,
    id: &Value,
) -> Result<Era, Reply> {
    let param = |key: &str| params.and_then(|p| p.get(key));
    let Some(meta) = param("_meta").and_then(Value::as_object) else {
        return Err(error(
            id,
            code::INVALID_PARAMS,
            format!(
                "params._meta must be an object carrying `{PROTOCOL_KEY}` and `{CAPABILITIES_KEY}`"
            ),
            None,
        ));
    };
    let missing: Vec<&str> = [PROTOCOL_KEY, CAPABILITIES_KEY]
        .into_iter()
        .filter(|k| !meta.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(error(
            id,
            code::INVALID_PARAMS,
            format!("params._meta is missing {}", missing.join(", ")),
            None,
        ));
    }
    let version = meta
        .get(PROTOCOL_KEY)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            error(
                id,
                code::INVALID_PARAMS,
                format!("`{PROTOCOL_KEY}` must be a string"),
                None,
            )
        })?;
    if header(headers, &PROTOCOL_VERSION_HEADER) != Some(version) {
        return Err(error(
            id,
            code::HEADER_MISMATCH,
            "the MCP-Protocol-Version header does not match params._meta's protocol version",
            None,
        ));
    }
    if header(headers, &METHOD_HEADER) != Some(method) {
        return Err(error(
            id,
            code::HEADER_MISMATCH,
            "the Mcp-Method header does not match the request's method",
            None,
        ));
    }
    if method == "tools/call"
        && let Some(name) = param("name").and_then(Value::as_str)
        && header(headers, &NAME_HEADER)
            .and_then(decode_header_value)
            .as_deref()
            != Some(name)
    {
        return Err(error(
            id,
            code::HEADER_MISMATCH,
            "the Mcp-Name header does not match params.name",
            None,
        ));
    }
    if matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel")
        && let Some(task) = param("taskId").and_then(Value::as_str)
        && header(headers, &NAME_HEADER)
            .and_then(decode_header_value)
            .as_deref()
            != Some(task)
    {
        return Err(error(
            id,
            code::HEADER_MISMATCH,
            "the Mcp-Name header does not match params.taskId",
            None,
        ));
    }
    if !MODERN_VERSIONS.contains(&version) {
        return Err(error(
            id,
            code::UNSUPPORTED_PROTOCOL_VERSION,
            format!("protocol version `{version}` is not supported"),
            Some(json!({ "supported": MODERN_VERSIONS, "requested": version })),
        ));
    }
    Ok(Era::Modern)
}

fn era(
    method: &str,
    params: Option<&Value>,
    headers: &HeaderMap,
    id: &Value,
) -> Result<Era, Reply> {
    let header_version = header(headers, &PROTOCOL_VERSION_HEADER);
    let modern = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(PROTOCOL_KEY))
        .is_some()
        || header_version.is_some_and(|v| MODERN_VERSIONS.contains(&v))
        || method == "server/discover";
    if modern {
        return modern_era(method, params, headers, id);
    }
    // Before `initialize` answers, a client sends no version header; after it, the
    // negotiated one. Anything else is refused, as the transport requires.
    if method != "initialize"
        && let Some(v) = header_version
        && !HANDSHAKE_VERSIONS.contains(&v)
    {
        return Err(error(
            id,
            code::INVALID_REQUEST,
            format!(
                "MCP-Protocol-Version `{v}` is not supported; use one of {} (after initialize) or 2026-07-28 with server/discover",
                HANDSHAKE_VERSIONS.join(", ")
            ),
            None,
        ));
    }
    Ok(Era::Handshake)
}

fn server_info() -> Value {
    json!({ "name": "tool-broker", "title": "Tool broker", "version": env!("CARGO_PKG_VERSION") })
}

const INSTRUCTIONS: &str = "Tools are named <service>.<tool>; about 1,800 sit behind this broker. Search them with find_tools (each hit names the tool, what it does, its risk and its required arguments), run one with call_tool, and read get_tool_reference when a hit is not enough. Keep confirm=false until the user approves a write: writes answer a preview or a confirmation_required error until then.";

fn capabilities() -> Value {
    json!({ "tools": { "listChanged": false } })
}

/// The client capabilities a 2026-07-28 request declares in its `_meta`.
fn client_capabilities(params: &Value) -> Option<&Value> {
    params.get("_meta")?.get(CAPABILITIES_KEY)
}

/// The elicitation capability and round of a 2026-07-28 `tools/call`.
fn elicitation(params: &Value, id: &Value) -> Result<Elicitation, Reply> {
    let can_elicit = client_capabilities(params)
        .and_then(|c| c.get("elicitation"))
        .is_some_and(Value::is_object);
    let responses = match params.get("inputResponses") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => {
            return Err(error(
                id,
                code::INVALID_PARAMS,
                "`params.inputResponses` must be an object",
                None,
            ));
        }
    };
    let state = match params.get("requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(error(
                id,
                code::INVALID_PARAMS,
                "`params.requestState` must be a string",
                None,
            ));
        }
    };
    Ok(Elicitation {
        can_elicit,
        responses,
        state,
    })
}

/// A multi-round-trip answer in place of a tool result: an input-required result for
/// a write the person must approve, or a JSON-RPC error for a refused `requestState`
/// (see [`crate::confirm::approval::elicit`]). `None` for every other envelope.
fn round(id: &Value, envelope: &Value) -> Option<Reply> {
    use crate::confirm::approval::elicit::{INPUT_REQUIRED, STATE_REFUSED};
    // Looked up by key: `pointer` would copy each path segment.
    let failure = envelope.get("error")?;
    let details = failure.get("details")?;
    match details.get("reason").and_then(Value::as_str)? {
        INPUT_REQUIRED => Some(result(
            id,
            json!({
                "resultType": "input_required",
                "inputRequests": details.get("inputRequests")?,
                "requestState": details.get("requestState")?,
                "_meta": { SERVER_INFO_KEY: server_info() },
            }),
        )),
        STATE_REFUSED => Some(error(
            id,
            code::INVALID_PARAMS,
            failure
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("invalid requestState"),
            Some(json!({ "reason": details.get("refusal").cloned().unwrap_or(Value::Null) })),
        )),
        _ => None,
    }
}

/// Runs one tool call: a discovery tool, else the named tool.
pub(crate) async fn run_call(
    broker: &Broker,
    input: CallInput<'_>,
) -> crate::answer::envelope::Enveloped {
    match tools::call_discovery(broker, input).await {
        Ok(r) => r,
        Err(input) => broker.call(input).await,
    }
}

/// A `CallToolResult` as JSON text (see [`write_tool_result`]).
pub(crate) fn tool_result(response: &crate::answer::envelope::Enveloped, modern: bool) -> String {
    let text = response.to_json();
    let mut out = Vec::with_capacity(result_capacity(&text));
    write_tool_result(&mut out, response, &text, modern);
    String::from_utf8(out).unwrap_or_default()
}

/// Room for a JSON-RPC answer carrying the envelope `text` twice, once escaped (a quote
/// every few bytes): allocated once, not grown while it is written.
fn result_capacity(text: &[u8]) -> usize {
    3 * text.len() + 256
}

/// Appends a `CallToolResult` to `out`, written by hand so the envelope is serialised
/// once: the same `text` ([`Enveloped::to_json`](crate::answer::envelope::Enveloped::to_json)) is
/// `structuredContent` and, as a JSON string, `content[0].text`.
fn write_tool_result(
    out: &mut Vec<u8>,
    response: &crate::answer::envelope::Enveloped,
    text: &[u8],
    modern: bool,
) {
    let ok = response.is_ok();
    out.extend_from_slice(br#"{"content":[{"type":"text","text":"#);
    crate::answer::envelope::write_json_string(out, text);
    out.push(b'}');
    // An MCP server's images, audio and resources, as it sent them.
    for block in response
        .meta
        .as_ref()
        .and_then(|m| m.content.as_deref())
        .unwrap_or_default()
    {
        out.push(b',');
        let _ = serde_json::to_writer(&mut *out, block);
    }
    out.extend_from_slice(br#"],"structuredContent":"#);
    out.extend_from_slice(text);
    out.extend_from_slice(if ok {
        br#","isError":false"#
    } else {
        br#","isError":true"#
    });
    if modern {
        out.extend_from_slice(br#","resultType":"complete","_meta":"#);
        let _ = serde_json::to_writer(&mut *out, &json!({ SERVER_INFO_KEY: server_info() }));
    }
    out.push(b'}');
}

/// Runs a call and answers its result (or its multi-round-trip step).
async fn call_reply(
    broker: &Broker,
    id: &Value,
    input: CallInput<'_>,
    modern: bool,
    ask: connect::Ask,
) -> Reply {
    let caller = input.caller;
    let response = run_call(broker, input).await;
    answer_of(broker, caller, id, &response, modern, ask)
}

/// A call's result as `/mcp` answers it: its multi-round-trip step (an approval, a key
/// to connect), the step-up refusal, or the `CallToolResult`.
fn answer_of(
    broker: &Broker,
    caller: &Caller,
    id: &Value,
    response: &crate::answer::envelope::Enveloped,
    modern: bool,
    ask: connect::Ask,
) -> Reply {
    if let Some(reply) = round(id, &response.body) {
        return reply;
    }
    if let Some(reply) = connect::round(broker, caller, id, response, ask) {
        return reply;
    }
    // A scope the access token lacks: HTTP 403 with the step-up challenge, which MCP
    // clients act on (a tool result would hide it from them).
    if let Some(reply) = step_up(id, response) {
        return reply;
    }
    let text = response.to_json();
    let mut out = Vec::with_capacity(result_capacity(&text));
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    let _ = serde_json::to_writer(&mut out, id);
    out.extend_from_slice(br#","result":"#);
    write_tool_result(&mut out, response, &text, modern);
    out.push(b'}');
    Reply {
        status: 200,
        body: json_bytes(out),
        headers: Vec::new(),
    }
}

/// The 403 answer of a call refused for a missing scope: a JSON-RPC error carrying the
/// envelope's error object, and the challenge.
fn step_up(id: &Value, response: &crate::answer::envelope::Enveloped) -> Option<Reply> {
    let challenge = response
        .headers
        .iter()
        .find(|(name, _)| *name == "www-authenticate")?;
    let envelope = response.envelope();
    let error_object = envelope.get("error").cloned().unwrap_or(Value::Null);
    let message = error_object
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the access token lacks a scope this call needs")
        .to_string();
    let mut reply = error(id, code::FORBIDDEN, message, Some(error_object));
    reply.status = 403;
    reply.headers = vec![challenge.clone()];
    Some(reply)
}

/// Handles one message posted to `/mcp` by an authenticated caller: the message read
/// and checked (`checked`), its protocol era, then the method.
pub async fn handle(
    served: &Served,
    headers: &HeaderMap,
    bytes: &[u8],
    caller: Result<&Caller, &CallError>,
) -> Reply {
    let broker = &served.broker;
    let mut read = message::read(bytes);
    // The id to answer with, and what the message's `id` member was.
    let id_member = read.as_mut().ok().and_then(|m| m.id.take());
    let notification = id_member.is_none();
    let id_typed = id_member
        .as_ref()
        .is_none_or(|v| v.is_string() || v.is_number());
    let id = id_member
        .filter(|v| v.is_string() || v.is_number())
        .unwrap_or(Value::Null);
    let caller = match caller {
        Ok(p) => p,
        Err(e) => return refused(broker, &id, e),
    };
    // A response of the caller's: perhaps the answer to a question the broker put.
    if let Ok(message) = &read
        && message.answer
        && message.method.is_none()
        && message.two_point_oh
    {
        return stream::answered(served, caller, &id, bytes);
    }
    let (method, params, request_id) = match checked(broker, read, &id, notification, id_typed) {
        Ok(request) => request,
        Err(reply) => return reply,
    };
    let era = match era(&method, params.as_ref(), headers, &id) {
        Ok(era) => era,
        Err(reply) => return reply,
    };
    let modern = matches!(era, Era::Modern);
    let finish = |value: Value| {
        if modern {
            complete(&id, value)
        } else {
            result(&id, value)
        }
    };
    // 2026-07-28 removed the handshake and these methods; a stateless request naming
    // one is a method the server does not implement (404, -32601).
    if modern && REMOVED_IN_MODERN.contains(&method.as_ref()) {
        return error(
            &id,
            code::METHOD_NOT_FOUND,
            format!(
                "`{method}` does not exist in protocol version 2026-07-28 (stateless): use server/discover, and send the protocol version in each request's _meta"
            ),
            None,
        );
    }
    let mut params = params.unwrap_or_else(|| Value::Object(Map::new()));
    match method.as_ref() {
        "initialize" => {
            let offered = params.get("protocolVersion").and_then(Value::as_str);
            let version = offered
                .filter(|v| HANDSHAKE_VERSIONS.contains(v))
                .unwrap_or(HANDSHAKE_VERSIONS[HANDSHAKE_VERSIONS.len() - 1]);
            finish(json!({
                "protocolVersion": version,
                "capabilities": capabilities(),
                "serverInfo": server_info(),
                "instructions": INSTRUCTIONS,
            }))
        }
        "server/discover" => finish(json!({
            "supportedVersions": MODERN_VERSIONS,
            "capabilities": {
                "tools": { "listChanged": false },
                "extensions": { tasks::EXTENSION: {} },
            },
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
            "cacheScope": "public",
            "ttlMs": 300_000,
        })),
        "ping" => finish(json!({})),
        "tools/list" => list_tools(served, caller, &id, &params, modern),
        "tools/call" => {
            call_tool(
                served,
                headers,
                caller,
                &id,
                request_id,
                &mut params,
                modern,
            )
            .await
        }
        "tasks/get" | "tasks/cancel" | "tasks/update" if modern => {
            tasks::handle(broker, &id, &method, &params, headers, caller).await
        }
        other => error(
            &id,
            code::METHOD_NOT_FOUND,
            format!(
                "method `{other}` is not served; this broker serves initialize, ping, server/discover, tools/list and tools/call"
            ),
            None,
        ),
    }
}

/// A message made ready to dispatch: its method, its params (an object, or absent) and
/// its id as the request id; or the reply that ends it here (a malformed message, a
/// notification or a client's response, acknowledged).
fn checked<'a>(
    broker: &Broker,
    read: Result<message::Message<'a>, message::Unreadable>,
    id: &Value,
    notification: bool,
    id_typed: bool,
) -> Result<(std::borrow::Cow<'a, str>, Option<Value>, String), Reply> {
    let message = match read {
        Ok(message) => message,
        Err(message::Unreadable::NotJson) => {
            return Err(error(
                &Value::Null,
                code::PARSE_ERROR,
                "the body is not JSON",
                None,
            ));
        }
        Err(unreadable) => {
            return Err(error(
                &Value::Null,
                code::INVALID_REQUEST,
                if unreadable == message::Unreadable::Batch {
                    "batches are not supported: send one JSON-RPC message per request"
                } else {
                    "the body must be a JSON-RPC 2.0 message object"
                },
                None,
            ));
        }
    };
    if !message.two_point_oh {
        return Err(error(
            id,
            code::INVALID_REQUEST,
            "`jsonrpc` must be \"2.0\"",
            None,
        ));
    }
    // Taken out, not copied: a call's arguments are moved on to the call.
    let params = message.params;
    let Some(method) = message.method else {
        // A response or error sent by the client: nothing to answer.
        if message.answer {
            return Err(accepted());
        }
        return Err(error(
            id,
            code::INVALID_REQUEST,
            "`method` is required",
            None,
        ));
    };
    // A notification: acknowledged, nothing to act on.
    if notification {
        return Err(accepted());
    }
    if !id_typed {
        return Err(error(
            &Value::Null,
            code::INVALID_REQUEST,
            "`id` must be a string or a number",
            None,
        ));
    }
    let max_id = broker.parts.catalog.rules.limits.max_request_id_chars;
    let request_id = match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if request_id.chars().count() > max_id {
        return Err(error(
            &Value::Null,
            code::INVALID_REQUEST,
            format!("`id` is longer than {max_id} characters"),
            None,
        ));
    }
    if params.as_ref().is_some_and(|p| !p.is_object()) {
        return Err(error(
            id,
            code::INVALID_PARAMS,
            "`params` must be an object",
            None,
        ));
    }
    Ok((method, params, request_id))
}

/// `tools/list`: one page of the tools this caller sees, paged by a cursor that names
/// the catalog snapshot it was made on.
fn list_tools(served: &Served, caller: &Caller, id: &Value, params: &Value, modern: bool) -> Reply {
    let broker = &served.broker;
    let visible = tools::visible(served, caller);
    let snapshot: String = broker
        .parts
        .catalog
        .snapshot_id
        .chars()
        .rev()
        .take(8)
        .collect();
    let offset = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => match c.split_once(':') {
            Some((n, s)) if s == snapshot => match n.parse::<usize>() {
                Ok(n) if n <= visible.len() => n,
                _ => return error(id, code::INVALID_PARAMS, "invalid cursor", None),
            },
            Some(_) => {
                return error(
                    id,
                    code::INVALID_PARAMS,
                    "the cursor is from another catalog snapshot; list again from the start",
                    None,
                );
            }
            None => return error(id, code::INVALID_PARAMS, "invalid cursor", None),
        },
        Some(_) => {
            return error(id, code::INVALID_PARAMS, "`cursor` must be a string", None);
        }
    };
    let page: Vec<&tools::EntryText> = visible
        .iter()
        .skip(offset)
        .take(PAGE_SIZE)
        .copied()
        .collect();
    let mut out = Map::new();
    if offset + page.len() < visible.len() {
        out.insert(
            "nextCursor".into(),
            json!(format!("{}:{snapshot}", offset + page.len())),
        );
    }
    if modern {
        // The list depends on the caller's key (its toolset and permissions).
        out.insert("cacheScope".into(), json!("private"));
        out.insert("ttlMs".into(), json!(60_000));
        mark_complete(&mut out);
    }
    list_result(id, &page, &out)
}

/// `tools/call`: the call's `_meta` (idempotency key, pinned descriptor, trace), the
/// elicitation round of a modern client, then the call, as a task when the client opts
/// in.
async fn call_tool(
    served: &Served,
    headers: &HeaderMap,
    caller: &Caller,
    id: &Value,
    request_id: String,
    params: &mut Value,
    modern: bool,
) -> Reply {
    let broker = &served.broker;
    let arguments = params.as_object_mut().and_then(|p| p.remove("arguments"));
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return error(
            id,
            code::INVALID_PARAMS,
            "`params.name` is required (a string)",
            None,
        );
    };
    // An idempotency key may also come in `_meta` (the header works too), and so
    // does the descriptor the caller reviewed (the hash tools/list gave it).
    let idempotency_key = match meta_text(params, "idempotencyKey", "") {
        Ok(key) => key,
        Err(message) => return error(id, code::INVALID_PARAMS, message, None),
    };
    let descriptor_hash = match meta_text(
        params,
        "descriptorHash",
        ": the `descriptorHash` of the tool you reviewed",
    ) {
        Ok(hash) => hash,
        Err(message) => return error(id, code::INVALID_PARAMS, message, None),
    };
    if arguments
        .as_ref()
        .is_some_and(|a| !a.is_object() && !a.is_null())
    {
        return error(
            id,
            code::INVALID_PARAMS,
            "`params.arguments` must be an object",
            None,
        );
    }
    let mut ask = connect::ask_of(modern, params, header(headers, &PROTOCOL_VERSION_HEADER));
    // What an MCP server's tool may pass on to this caller (decision 019); nothing to
    // read in a catalog without MCP servers.
    let relays = broker.has_mcp();
    let streams = relays && stream::accepts_stream(headers);
    let can_ask = relays && stream::can_ask(modern, streams, params);
    let progress_token = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| streams && (t.is_string() || t.is_number()))
        .cloned();
    let answering = |ask| stream::Answering {
        id: id.clone(),
        modern,
        ask,
        progress_token: progress_token.clone(),
        can_ask,
    };
    let elicitation = if modern {
        match elicitation(params, id) {
            Ok(e) if relays && stream::asked(&e) => {
                // The retry of a caller asked its server's question: the held call goes on.
                return stream::resume(served, caller, &e, answering(ask)).await;
            }
            Ok(mut e) => {
                match connect::take_round(broker, caller, &mut e, id) {
                    Ok(true) => ask = connect::Ask::No,
                    Ok(false) => {}
                    Err(reply) => return reply,
                }
                Some(e)
            }
            Err(reply) => return reply,
        }
    } else {
        None
    };
    let input = CallInput {
        request_id,
        name,
        arguments: arguments.filter(|a| !a.is_null()),
        headers,
        caller,
        idempotency_key,
        elicitation,
        relay: None,
        task_watch: None,
        descriptor_hash,
        trace_parent: trace_parent(params, headers),
        endpoint: crate::call::Endpoint::Mcp,
    };
    if modern && tasks::opted_in(params) {
        match tasks::start(broker, id, input).await {
            Ok(reply) => return reply,
            Err(input) => return call_reply(broker, id, input, modern, ask).await,
        }
    }
    // An MCP server's tool, to a caller that takes a stream or answers questions: what
    // the server says on the way is passed on.
    if (streams || can_ask) && stream::names_mcp_tool(broker, name, input.arguments.as_ref()) {
        return stream::call(served, input, answering(ask)).await;
    }
    call_reply(broker, id, input, modern, ask).await
}

/// The trace a `tools/call` continues: `params._meta.traceparent` (and `tracestate`),
/// as the OpenTelemetry MCP conventions carry it, else the HTTP `traceparent` header.
fn trace_parent(params: &Value, headers: &hyper::HeaderMap) -> Option<Parent> {
    let meta = params.get("_meta");
    let text = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str);
    text("traceparent")
        .and_then(|p| Parent::parse(p, text("tracestate")))
        .or_else(|| Parent::from_headers(headers))
}

/// A text member of `params._meta` (`None` when absent); a member of another type is
/// the message to answer as invalid params (`hint` says what it should be).
fn meta_text(params: &Value, key: &str, hint: &str) -> Result<Option<String>, String> {
    match params.get("_meta").and_then(|m| m.get(key)) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(format!("`params._meta.{key}` must be a string{hint}")),
    }
}
