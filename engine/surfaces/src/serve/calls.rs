//! The call endpoints: `POST /` (JSON-RPC `tools/call`), `POST /mcp` (MCP Streamable
//! HTTP, [`crate::mcp`]) and `POST /mcp/<service>/<tool>` (the REST paths of the
//! projection), answered alike whichever HTTP/1.1 server read the request: the
//! `Origin`/`Host` rules, the MCP head checks, then the endpoint's own reading of the
//! body and the call (decisions 001 and 003). Each call is wrapped in `catch_unwind`, so
//! a bug that panics becomes an `internal_error` envelope (500), never a dropped
//! connection.

use bytes::Bytes;
use futures_util::FutureExt;
use hyper::Request;
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use serde_json::Value;

use crate::answer::envelope::{self, Enveloped, Meta};
use crate::call::{Broker, CallInput, Endpoint};
use crate::error::{CallError, Classification};
use crate::reply::Reply;
use crate::serve::request::{authenticate, read_limited};
use crate::served::Served;
use crate::telemetry::trace::Parent;

/// A call endpoint's request read whole (by either HTTP/1.1 server), to be answered.
pub struct CallRequest<'a> {
    /// Its endpoint.
    pub endpoint: Endpoint,
    /// Its path.
    pub path: &'a str,
    /// Its headers.
    pub headers: &'a HeaderMap,
    /// Its body, or why it could not be had (over the limit, too slow).
    pub body: Result<Bytes, CallError>,
}

fn send(r: Enveloped) -> Reply {
    let body = r.to_json();
    Reply {
        headers: r.headers,
        ..Reply::json_text(r.status, body)
    }
}

/// Refuses a request whose `Origin` or `Host` fails [`crate::caller::origin`], in the shape its
/// endpoint answers: a JSON-RPC error on `/mcp`, an envelope on the others.
pub(super) fn refuse_origin(
    broker: &Broker,
    path: &str,
    headers: &hyper::HeaderMap,
    reason: String,
) -> Reply {
    tracing::warn!(path = %path, "request refused by the Origin/Host rules");
    if path == "/mcp" {
        let reply = crate::mcp::error(
            &Value::Null,
            crate::mcp::code::INVALID_REQUEST,
            reason,
            None,
        );
        return Reply {
            status: 403,
            ..reply
        };
    }
    if path == "/" || path.starts_with("/mcp/") {
        return failure(
            broker,
            headers,
            "",
            CallError::new(Classification::Forbidden, reason),
        );
    }
    Reply::error(403, "forbidden", &reason)
}

/// A call endpoint's request answered from its head alone, before its body is read: `POST
/// /mcp` without a JSON `Accept` (406) or with another `Content-Type` (415).
fn precheck(endpoint: Endpoint, headers: &hyper::HeaderMap) -> Option<Reply> {
    use crate::mcp::{code, error};
    if endpoint != Endpoint::Mcp {
        return None;
    }
    if !crate::mcp::accepts_json(headers) {
        return Some(Reply {
            status: 406,
            ..error(
                &Value::Null,
                code::INVALID_REQUEST,
                "this broker answers MCP as application/json: accept it (with or without text/event-stream)",
                None,
            )
        });
    }
    let content_type_ok = headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|ct| {
            ct.trim()
                .as_bytes()
                .get(..16)
                .is_some_and(|start| start.eq_ignore_ascii_case(b"application/json"))
        });
    if !content_type_ok {
        return Some(Reply {
            status: 415,
            ..error(
                &Value::Null,
                code::INVALID_REQUEST,
                "send MCP messages as Content-Type: application/json",
                None,
            )
        });
    }
    None
}

/// Answers a call endpoint's request read whole by the broker's own HTTP/1.1 server
/// ([`crate::serve::http1`]): the `Origin`/`Host` rules and `precheck` first, as
/// `answer_hyper` does for hyper's server. Counts the response's status.
pub async fn answer_call(served: &Served, loopback: bool, request: CallRequest<'_>) -> Reply {
    let broker = &served.broker;
    let answer = if let Err(refusal) =
        served
            .endpoints
            .origins
            .check(request.headers, None, loopback)
    {
        refuse_origin(broker, request.path, request.headers, refusal.0)
    } else if let Some(refused) = precheck(request.endpoint, request.headers) {
        refused
    } else {
        dispatch(served, request).await
    };
    broker.parts.metrics.record_status(answer.status);
    answer
}

/// Answers a call endpoint's request on hyper's server, its `Origin`/`Host` already
/// checked: [`precheck`], then the body read within its limits, then [`dispatch`].
/// Counts the response's status.
pub(super) async fn answer_hyper(
    served: &Served,
    endpoint: Endpoint,
    req: Request<Incoming>,
) -> Reply {
    let response = match precheck(endpoint, req.headers()) {
        Some(refused) => refused,
        None => {
            let (parts, body) = req.into_parts();
            let path = parts.uri.path();
            let limit = served.endpoints.max_body_bytes;
            let body = read_limited(served, &parts.headers, path, body, limit).await;
            let request = CallRequest {
                endpoint,
                path,
                headers: &parts.headers,
                body,
            };
            dispatch(served, request).await
        }
    };
    served.broker.parts.metrics.record_status(response.status);
    response
}

/// The three call endpoints, past the checks of the request's head.
async fn dispatch(served: &Served, request: CallRequest<'_>) -> Reply {
    let broker = &served.broker;
    let CallRequest {
        endpoint,
        path,
        headers,
        body,
    } = request;
    match endpoint {
        Endpoint::Rpc => rpc(broker, headers, body).await,
        Endpoint::Mcp => mcp(served, headers, body).await,
        Endpoint::Rest => rest(broker, path, headers, body).await,
    }
}

/// `POST /mcp`, past [`precheck`].
async fn mcp(served: &Served, headers: &hyper::HeaderMap, body: Result<Bytes, CallError>) -> Reply {
    use crate::mcp::{code, error};
    let bytes = match body {
        Ok(bytes) => bytes,
        Err(e) => {
            let status = served.broker.parts.catalog.rules.status(e.classification);
            return Reply {
                status,
                ..error(&Value::Null, code::INVALID_REQUEST, e.message, None)
            };
        }
    };
    let caller = authenticate(&served.broker, headers).await;
    let handled = crate::mcp::handle(served, headers, &bytes, caller.as_deref());
    match std::panic::AssertUnwindSafe(handled).catch_unwind().await {
        Ok(reply) => reply,
        Err(_) => {
            tracing::error!("an MCP request panicked; answered internal error");
            error(
                &Value::Null,
                -32603,
                "the broker failed to handle this request; the cause is in its log",
                None,
            )
        }
    }
}

/// `POST /mcp/<service>/<tool>`: the projection's operations.
async fn rest(
    broker: &Broker,
    path: &str,
    headers: &hyper::HeaderMap,
    body: Result<Bytes, CallError>,
) -> Reply {
    let name = path
        .strip_prefix("/mcp/")
        .and_then(|rest| rest.split_once('/'))
        .filter(|(s, t)| !s.is_empty() && !t.is_empty() && !t.contains('/'))
        .map(|(s, t)| format!("{s}.{t}"));
    let max_id = broker.parts.catalog.rules.limits.max_request_id_chars;
    let request_id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.chars().count() <= max_id)
        .map_or_else(|| broker.parts.traces.next_request_id(), String::from);
    let bytes = match body {
        Ok(bytes) => bytes,
        Err(e) => return failure(broker, headers, &request_id, e),
    };
    let caller = match authenticate(broker, headers).await {
        Ok(p) => p,
        Err(e) => return failure(broker, headers, &request_id, e),
    };
    let Some(name) = name else {
        return failure(
            broker,
            headers,
            &request_id,
            CallError::invalid_request("the path must be /mcp/<service>/<tool-name>"),
        );
    };
    let arguments = if bytes.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => Some(v),
            Err(_) => {
                return failure(
                    broker,
                    headers,
                    &request_id,
                    CallError::invalid_request(
                        "the body must be the tool's arguments as a JSON object",
                    ),
                );
            }
        }
    };
    // The REST paths' pin is a header; one that is not text is no hash (refused as such).
    let pinned = headers
        .get("x-descriptor-hash")
        .map(|v| v.to_str().unwrap_or_default().to_string());
    let input = CallInput {
        request_id,
        name: &name,
        arguments,
        headers,
        caller: &caller,
        idempotency_key: None,
        elicitation: None,
        relay: None,
        task_watch: None,
        descriptor_hash: pinned,
        trace_parent: Parent::from_headers(headers),
        endpoint: Endpoint::Rest,
    };
    guarded_call(broker, input).await
}

/// Runs one call; a panic becomes an `internal_error` envelope, never a dropped
/// connection. Shared by `POST /` and the projection's REST paths.
async fn guarded_call(broker: &Broker, input: CallInput<'_>) -> Reply {
    let (request_id, headers) = (input.request_id.clone(), input.headers);
    let call = broker.call(input);
    match std::panic::AssertUnwindSafe(call).catch_unwind().await {
        Ok(response) => send(response),
        Err(_) => {
            tracing::error!("a tool call panicked; answered internal_error");
            failure(broker, headers, &request_id, CallError::internal())
        }
    }
}

/// The envelope of a request refused before its call (body, caller, JSON-RPC): the
/// caller's trace id when it brought a `traceparent`.
fn failure(broker: &Broker, headers: &hyper::HeaderMap, request_id: &str, err: CallError) -> Reply {
    let meta = Meta {
        request_id: request_id.to_string(),
        trace_id: broker.parts.traces.answer_trace_id(Some(headers)),
        ..Meta::default()
    };
    send(envelope::standard_err(
        &err,
        meta,
        &broker.parts.catalog.rules,
    ))
}

/// `POST /`.
async fn rpc(broker: &Broker, headers: &hyper::HeaderMap, body: Result<Bytes, CallError>) -> Reply {
    let bytes = match body {
        Ok(bytes) => bytes,
        Err(e) => return failure(broker, headers, "", e),
    };
    let max_id = broker.parts.catalog.rules.limits.max_request_id_chars;
    let crate::serve::jsonrpc::Read { shown_id, call } =
        crate::serve::jsonrpc::read(&bytes, max_id);
    let caller = match authenticate(broker, headers).await {
        Ok(p) => p,
        Err(e) => return failure(broker, headers, &shown_id, e),
    };
    let call = match call {
        Ok(call) => call,
        Err(e) => return failure(broker, headers, &shown_id, e),
    };
    let input = CallInput {
        request_id: shown_id,
        name: &call.name,
        arguments: call.arguments,
        headers,
        caller: &caller,
        idempotency_key: None,
        elicitation: None,
        relay: None,
        task_watch: None,
        descriptor_hash: call.descriptor_hash.map(std::borrow::Cow::into_owned),
        trace_parent: Parent::from_headers(headers),
        endpoint: Endpoint::Rpc,
    };
    guarded_call(broker, input).await
}
