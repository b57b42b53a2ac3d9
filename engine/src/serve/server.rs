//! The HTTP front door: routing and answers. A connection starts in the broker's own
//! HTTP/1.1 door ([`crate::serve::door`]), which reads plain call requests and has
//! [`answer_call`] answer them; everything else is hyper 1.x's server on tokio
//! ([`handle`]), which answers the call doors through the same code.
//!
//! - `POST /`: one JSON-RPC 2.0 `tools/call`; the body of the answer is the envelope and
//!   its status is the classification's (DECISIONS sections 1 and 3).
//! - `POST /mcp`: the MCP Streamable HTTP door ([`crate::mcp`]).
//! - `POST /mcp/<service>/<tool-name-with-hyphens>`: the projection's operations; the
//!   body is the arguments object, the answer is what `POST /` answers. The request id
//!   is the `X-Request-Id` header when given, else one the broker makes.
//! - `GET /openapi.json` (`?include_legacy=true`): the OpenAPI 3.1 projection
//!   ([`crate::serve::projection`]); like the health endpoints it needs no bearer token.
//! - `GET /healthz`: the process is up. `GET /readyz`: the catalog is compiled, callers
//!   can authenticate and the store answers (503 while it does not). `GET /metrics`: Prometheus counters. None needs a bearer
//!   token, and none shows a caller's input.
//!
//! Each call is wrapped in `catch_unwind`, so a bug that panics becomes an
//! `internal_error` envelope (500), never a dropped connection.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::answer::envelope::{self, Meta, Response};
use crate::call::{Broker, CallInput, Door};
use crate::error::{CallError, Classification};
use crate::serve::door::{self, Answer, CallDoor};
use crate::telemetry::trace::Parent;

/// What hyper's server answers.
pub(super) type HttpResponse = hyper::Response<Full<Bytes>>;

/// What every accept loop of one server shares: the broker, the connection cap, the
/// connection builder and the stop signal.
struct Serving {
    broker: Arc<Broker>,
    /// The broker listens on a loopback address (the Host rule of [`crate::caller::origin`]
    /// applies: DNS rebinding is the way in).
    loopback: bool,
    permits: Arc<tokio::sync::Semaphore>,
    builder: hyper_util::server::conn::auto::Builder<TokioExecutor>,
    /// "Connection refused at the cap" is logged at most once a second.
    refused: crate::store::Every,
    /// Flips to true when the server stops accepting.
    stopped: tokio::sync::watch::Receiver<bool>,
}

impl Serving {
    fn new(broker: Arc<Broker>, loopback: bool) -> (Arc<Self>, tokio::sync::watch::Sender<bool>) {
        let bounds = &broker.doors.bounds;
        let permits = Arc::new(tokio::sync::Semaphore::new(bounds.max_connections));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
        builder.http1().max_buf_size(bounds.max_header_bytes);
        if bounds.max_headers != crate::config::server::HYPER_MAX_HEADERS {
            builder.http1().max_headers(bounds.max_headers);
        }
        builder
            .http2()
            .max_header_list_size(u32::try_from(bounds.max_header_bytes).unwrap_or(u32::MAX));
        let serving = Self {
            broker,
            loopback,
            permits,
            builder,
            refused: crate::store::Every::new(),
            stopped,
        };
        (Arc::new(serving), stop)
    }

    /// Accepts until the server stops; `place` starts serving each connection.
    async fn accept(self: Arc<Self>, listener: TcpListener, mut place: impl FnMut(Accepted)) {
        let mut stop = self.stopped.clone();
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(pair) => pair,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        continue;
                    }
                },
                _ = stop.wait_for(|stopped| *stopped) => break,
            };
            let Ok(permit) = self.permits.clone().try_acquire_owned() else {
                self.broker.metrics.record_status(429);
                if self.refused.due(self.broker.now().as_millisecond(), 1_000) {
                    tracing::warn!(
                        max_connections = self.broker.doors.bounds.max_connections,
                        "connection refused: the broker is at its connection cap (429)"
                    );
                }
                tokio::spawn(crate::serve::bounds::refuse_connection(
                    stream,
                    over_cap_body(&self.broker).to_string(),
                ));
                continue;
            };
            place(Accepted {
                stream,
                peer,
                permit,
            });
        }
    }

    /// Serves one connection until it ends, its watchdog closes it, or a stop has let
    /// its calls in flight finish: the broker's own door first ([`door`]), then, if
    /// the connection brings what the door leaves to hyper, hyper's server.
    async fn connection(self: Arc<Self>, accepted: Accepted) {
        let Accepted {
            stream,
            peer,
            permit: _permit,
        } = accepted;
        let broker = &self.broker;
        let state = crate::serve::bounds::ConnState::new();
        let watchdog = crate::serve::bounds::watchdog(state.clone(), &broker.doors.bounds);
        tokio::pin!(watchdog);
        if broker.doors.bounds.front_door == crate::config::server::FrontDoor::Own {
            // Pipelined answers go out at once, not after the last one's ACK.
            let _ = stream.set_nodelay(true);
        }
        let watched = crate::serve::bounds::Watched::new(stream, state.clone());
        let io = match broker.doors.bounds.front_door {
            crate::config::server::FrontDoor::Own => {
                let own = door::serve(broker, self.loopback, watched, &state, self.stopped.clone());
                // Pinned out here, so a connection the watchdog closes is logged before
                // it closes (select! drops its own futures before running a branch).
                tokio::pin!(own);
                tokio::select! {
                    ended = &mut own => match ended {
                        door::Ended::Closed => return,
                        door::Ended::Hyper(io) => io,
                    },
                    expired = &mut watchdog => {
                        log_expired(expired, peer, &broker.doors.bounds);
                        return;
                    }
                }
            }
            crate::config::server::FrontDoor::Hyper => watched,
        };
        let service = {
            let broker = broker.clone();
            let state = state.clone();
            let loopback = self.loopback;
            hyper::service::service_fn(move |mut req: Request<Incoming>| {
                let broker = broker.clone();
                let in_flight = state.request();
                req.extensions_mut()
                    .insert(crate::caller::origin::Peer(peer));
                async move {
                    let response = handle(broker, req, loopback).await;
                    drop(in_flight);
                    Ok::<_, Infallible>(response)
                }
            })
        };
        let conn = self.builder.serve_connection(TokioIo::new(io), service);
        tokio::pin!(conn);
        let mut stopped = self.stopped.clone();
        let mut draining = false;
        loop {
            tokio::select! {
                ended = conn.as_mut() => {
                    if let Err(e) = ended {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                    break;
                }
                expired = &mut watchdog => {
                    // Dropping the connection closes it.
                    log_expired(expired, peer, &broker.doors.bounds);
                    break;
                }
                changed = stopped.wait_for(|stopped| *stopped), if !draining => {
                    draining = true;
                    if changed.is_ok() {
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
        }
    }

    /// After the accept loops have ended: `/readyz` goes false, every connection
    /// finishes its calls in flight and closes, for up to the shutdown grace.
    async fn drain(&self, stop: tokio::sync::watch::Sender<bool>) {
        let bounds = &self.broker.doors.bounds;
        self.broker
            .doors
            .draining
            .store(true, std::sync::atomic::Ordering::Release);
        let open = bounds.max_connections - self.permits.available_permits();
        tracing::info!(
            open_connections = open,
            grace_ms = bounds.shutdown_grace_ms,
            "shutting down: no new connections; calls in flight may finish"
        );
        let _ = stop.send(true);
        let all = u32::try_from(bounds.max_connections).unwrap_or(u32::MAX);
        match tokio::time::timeout(bounds.shutdown_grace(), self.permits.acquire_many(all)).await {
            Ok(_) => tracing::info!("every connection closed; stopped"),
            Err(_) => tracing::warn!(
                still_open = bounds.max_connections - self.permits.available_permits(),
                "the shutdown grace ran out; the remaining connections are cut"
            ),
        }
    }
}

/// Says why a connection's watchdog closed it.
fn log_expired(
    expired: crate::serve::bounds::Expired,
    peer: std::net::SocketAddr,
    bounds: &crate::config::server::ServerBounds,
) {
    match expired {
        crate::serve::bounds::Expired::Idle => {
            tracing::debug!(%peer, "idle keep-alive connection closed");
        }
        crate::serve::bounds::Expired::HeaderRead => tracing::info!(
            %peer,
            header_read_timeout_ms = bounds.header_read_timeout_ms,
            "slow client closed: its request head did not arrive in time"
        ),
    }
}

/// An accepted connection holding its place under the cap.
struct Accepted {
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    permit: tokio::sync::OwnedSemaphorePermit,
}

/// A connection on its way to a worker: the socket leaves the accepting runtime and is
/// registered with the worker's.
struct Handoff {
    stream: std::net::TcpStream,
    peer: std::net::SocketAddr,
    permit: tokio::sync::OwnedSemaphorePermit,
}

/// A serving worker as the acceptor sees it.
struct Worker {
    handoff: tokio::sync::mpsc::UnboundedSender<Handoff>,
    /// Connections it serves now (the acceptor picks the worker with the fewest).
    open: Arc<std::sync::atomic::AtomicUsize>,
}

/// Takes one off a worker's open count when its connection ends.
struct OpenCount(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for OpenCount {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

fn is_loopback(addr: std::io::Result<std::net::SocketAddr>) -> bool {
    addr.map(|a| a.ip().is_loopback()).unwrap_or(true)
}

/// Serves on the current runtime until `shutdown` completes, then drains: the listener
/// closes (new connections are refused), `/readyz` answers 503, every connection
/// finishes the calls it has in flight and closes, for up to the `[server]`
/// `shutdown_grace_ms`. The layout of tests and embedders; `tool-broker serve` uses
/// [`serve_workers`].
pub async fn serve(
    broker: Arc<Broker>,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let (serving, stop) = Serving::new(broker.clone(), is_loopback(listener.local_addr()));
    // Webhook public keys the deployment has the broker fetch: now, then hourly.
    warm_oauth(&broker);
    let spans = export_spans(&broker);
    crate::webhook::keys::spawn_refresh(broker);
    let place = |accepted| {
        tokio::spawn(serving.clone().connection(accepted));
    };
    tokio::select! {
        () = serving.clone().accept(listener, place) => {}
        () = shutdown => {}
    }
    serving.drain(stop).await;
    flush_spans(spans).await;
    Ok(())
}

/// Serves with `workers` threads until `shutdown` completes, then drains as [`serve`]
/// does. The calling runtime accepts and hands each connection to the worker serving
/// the fewest; a worker is a thread with a current-thread runtime that owns what it is
/// handed: a call runs start to end on one thread, with that thread's own upstream
/// connection pool ([`crate::upstream::Upstream::own_pool`]), so no call waits for a
/// wake-up from another thread (engine/DESIGN.md, "Serving threads"). The calling
/// runtime also holds the store and background work; the workers stop when the drain
/// has finished or its grace ran out.
pub async fn serve_workers(
    broker: Arc<Broker>,
    listener: TcpListener,
    workers: usize,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    use std::sync::atomic::Ordering;
    let (serving, stop) = Serving::new(broker.clone(), is_loopback(listener.local_addr()));
    let (cut, cut_seen) = tokio::sync::watch::channel(false);
    let mut threads = Vec::with_capacity(workers);
    let mut pool = Vec::with_capacity(workers);
    for n in 0..workers.max(1) {
        let (handoff, mut handed) = tokio::sync::mpsc::unbounded_channel::<Handoff>();
        let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let serving = serving.clone();
        let mut cut_seen = cut_seen.clone();
        let count = open.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name(format!("tool-broker-worker-{n}"))
            .spawn(move || {
                crate::upstream::Upstream::own_pool();
                runtime.block_on(async move {
                    // Until the acceptor has gone (its senders dropped).
                    while let Some(h) = handed.recv().await {
                        let open = OpenCount(count.clone());
                        match tokio::net::TcpStream::from_std(h.stream) {
                            Ok(stream) => {
                                let accepted = Accepted {
                                    stream,
                                    peer: h.peer,
                                    permit: h.permit,
                                };
                                let serving = serving.clone();
                                tokio::spawn(async move {
                                    serving.connection(accepted).await;
                                    drop(open);
                                });
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "a worker could not take a connection")
                            }
                        }
                    }
                    let _ = cut_seen.wait_for(|cut| *cut).await;
                });
            })?;
        threads.push(thread);
        pool.push(Worker { handoff, open });
    }
    warm_oauth(&broker);
    let spans = export_spans(&broker);
    crate::webhook::keys::spawn_refresh(broker);
    let place = |accepted: Accepted| {
        let mut handoff = match accepted.stream.into_std() {
            Ok(stream) => Handoff {
                stream,
                peer: accepted.peer,
                permit: accepted.permit,
            },
            Err(e) => {
                tracing::warn!(error = %e, "an accepted connection could not be handed to a worker");
                return;
            }
        };
        // The worker serving the fewest; one that has stopped (it cannot, short of a
        // bug) is passed over from then on.
        for _ in 0..pool.len() {
            let Some(worker) = pool.iter().min_by_key(|w| w.open.load(Ordering::Relaxed)) else {
                return;
            };
            worker.open.fetch_add(1, Ordering::Relaxed);
            match worker.handoff.send(handoff) {
                Ok(()) => return,
                Err(tokio::sync::mpsc::error::SendError(back)) => {
                    worker.open.store(usize::MAX / 2, Ordering::Relaxed);
                    tracing::error!(
                        "a serving worker has stopped; its connections go to the others"
                    );
                    handoff = back;
                }
            }
        }
        tracing::error!("no serving worker is left; a connection was dropped");
    };
    tokio::select! {
        () = serving.clone().accept(listener, place) => {}
        () = shutdown => {}
    }
    // The workers serve what they hold until the drain ends; then they are cut.
    drop(pool);
    serving.drain(stop).await;
    flush_spans(spans).await;
    let _ = cut.send(true);
    let joined = tokio::task::spawn_blocking(move || {
        threads
            .into_iter()
            .map(std::thread::JoinHandle::join)
            .filter(Result::is_err)
            .count()
    })
    .await;
    if !matches!(joined, Ok(0)) {
        tracing::error!("a serving worker ended with a panic");
    }
    Ok(())
}

/// Starts the span exporter when `OTEL_*` sets one (on the calling runtime, beside the
/// store's work); what it needs to flush at stop.
fn export_spans(broker: &Broker) -> Option<Arc<crate::telemetry::otlp::export::Exporter>> {
    let exporter = broker.traces.exporter()?;
    exporter.spawn();
    Some(exporter.clone())
}

/// Posts the spans of the last calls after the drain (for up to 5 s).
async fn flush_spans(exporter: Option<Arc<crate::telemetry::otlp::export::Exporter>>) {
    if let Some(exporter) = exporter {
        let flushed = tokio::time::timeout(std::time::Duration::from_secs(5), exporter.flush());
        if flushed.await.is_err() {
            tracing::warn!("the last spans were not exported within 5 s of the stop");
        }
    }
}

/// The envelope of a connection over the cap.
fn over_cap_body(broker: &Broker) -> Value {
    let err = CallError::new(
        Classification::RateLimited,
        format!(
            "the broker is at its limit of {} open connections; retry in a moment",
            broker.doors.bounds.max_connections
        ),
    );
    let meta = Meta {
        trace_id: broker.traces.answer_trace_id(None),
        ..Meta::default()
    };
    envelope::standard_err(&err, meta, &broker.catalog.rules).envelope()
}

pub(super) fn json_response(
    status: u16,
    body: &Value,
    extra: &[(&'static str, String)],
) -> HttpResponse {
    // Straight into bytes: `Value`'s `Display` goes through `fmt` and is slower.
    let text = serde_json::to_vec(body).unwrap_or_default();
    json_text_response(status, text, extra)
}

/// A JSON answer whose text is already serialised.
fn json_text_response(
    status: u16,
    body: impl Into<Bytes>,
    extra: &[(&'static str, String)],
) -> HttpResponse {
    let mut response = hyper::Response::new(Full::new(body.into()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    for (name, value) in extra {
        if let Ok(v) = hyper::header::HeaderValue::from_str(value) {
            headers.insert(*name, v);
        }
    }
    response
}

fn send(r: Response) -> Answer {
    let body = r.to_json();
    Answer::json(r.status, body, r.headers)
}

/// A call door's answer as hyper's response.
fn into_hyper(answer: Answer) -> HttpResponse {
    if answer.json {
        return json_text_response(answer.status, answer.body, &answer.headers);
    }
    let status = answer.status_code();
    let mut response = hyper::Response::new(Full::new(answer.body));
    *response.status_mut() = status;
    response
}

/// Refuses a request whose `Origin` or `Host` fails [`crate::caller::origin`], in the shape its
/// door answers: a JSON-RPC error on `/mcp`, an envelope on the tool doors.
fn refuse_origin(
    broker: &Broker,
    (path, headers): (&str, &hyper::HeaderMap),
    reason: String,
) -> Answer {
    tracing::warn!(path = %path, "request refused by the Origin/Host rules");
    if path == "/mcp" {
        let reply = crate::mcp::error(
            &Value::Null,
            crate::mcp::code::INVALID_REQUEST,
            reason,
            None,
        );
        return mcp_reply(crate::mcp::Reply {
            status: 403,
            ..reply
        });
    }
    if path == "/" || path.starts_with("/mcp/") {
        return failure(
            broker,
            headers,
            "",
            CallError::new(Classification::Forbidden, reason),
        );
    }
    Answer::json(
        403,
        serde_json::to_vec(&json!({ "error": reason })).unwrap_or_default(),
        Vec::new(),
    )
}

/// Routes one HTTP request. `loopback`: the broker listens on a loopback address.
pub async fn handle(broker: Arc<Broker>, req: Request<Incoming>, loopback: bool) -> HttpResponse {
    if let Err(refusal) = broker.doors.origins.check(
        req.headers(),
        req.uri().authority().map(|a| a.as_str()),
        loopback,
    ) {
        let response = refuse_origin(&broker, (req.uri().path(), req.headers()), refusal.0);
        broker.metrics.record_status(403);
        return into_hyper(response);
    }
    if req.method() == Method::POST
        && let Some(door) = CallDoor::of(req.uri().path())
    {
        let answer = match precheck(door, req.headers()) {
            Some(refused) => refused,
            None => {
                let (parts, body) = req.into_parts();
                let path = parts.uri.path();
                let body = read_limited(
                    &broker,
                    &parts.headers,
                    path,
                    body,
                    broker.doors.max_body_bytes,
                )
                .await;
                let request = door::Request {
                    door,
                    path,
                    headers: &parts.headers,
                    body,
                };
                answer_door(&broker, request).await
            }
        };
        broker.metrics.record_status(answer.status);
        return into_hyper(answer);
    }
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/healthz") => json_response(200, &json!({ "status": "ok" }), &[]),
        (&Method::GET, "/readyz") => {
            // Ready: the catalog is compiled and the store answers. Never the store's
            // location: only its kind.
            let draining = broker
                .doors
                .draining
                .load(std::sync::atomic::Ordering::Acquire);
            let store_ready = !draining && broker.store.ping().await;
            json_response(
                if store_ready { 200 } else { 503 },
                &json!({
                    "status": if draining { "shutting down" } else if store_ready { "ready" } else { "store unreachable" },
                    "snapshotId": broker.catalog.snapshot_id,
                    "tools": broker.catalog.tools.len(),
                    "store": { "kind": broker.store.kind(), "ready": store_ready },
                }),
                &[],
            )
        }
        (&Method::GET, "/metrics") => {
            let text = broker.metrics.render(
                &broker.catalog.snapshot_id,
                broker.catalog.tools.len(),
                broker.traces.exporter().map(|e| e.counts()),
            );
            let mut response = hyper::Response::new(Full::new(Bytes::from(text)));
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"),
            );
            response
        }
        (&Method::GET, "/openapi.json") => {
            let include_legacy = req
                .uri()
                .query()
                .is_some_and(|q| q.split('&').any(|p| p == "include_legacy=true"));
            let slot = &broker.doors.projection[usize::from(include_legacy)];
            let text = match slot.get() {
                Some(text) => text,
                None => match crate::serve::projection::text(&broker.catalog, include_legacy) {
                    Ok(text) => slot.get_or_init(|| Bytes::from(text)),
                    Err(e) => {
                        // Every key is a string, so this does not happen; if it did, the
                        // answer says so and nothing is cached.
                        tracing::error!(error = %e, "the OpenAPI projection did not serialise");
                        return json_response(
                            500,
                            &json!({ "error": "the OpenAPI projection could not be written; see the broker's log" }),
                            &[],
                        );
                    }
                },
            };
            let mut response = hyper::Response::new(Full::new(text.clone()));
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            response
        }
        (&Method::GET, path) if crate::caller::oauth::METADATA_PATHS.contains(&path) => {
            protected_resource_metadata(&broker)
        }
        (_, path) if path == "/hub" || path.starts_with("/hub/") => {
            let response = super::hub::route(broker.clone(), req).await;
            broker.metrics.record_status(response.status().as_u16());
            response
        }
        (&Method::GET | &Method::POST, path) if path.starts_with("/approvals/") => {
            let response = approvals(broker.clone(), req).await;
            broker.metrics.record_status(response.status().as_u16());
            response
        }
        (&Method::POST, path) if path.starts_with("/webhooks/") => {
            let response = webhook(broker.clone(), req).await;
            broker.metrics.record_status(response.status().as_u16());
            response
        }
        (_, "/mcp") => json_response(
            405,
            &json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32600, "message": "this broker answers MCP over POST only (no SSE stream, no session to delete)" } }),
            &[("allow", "POST".to_string())],
        ),
        (_, "/" | "/healthz" | "/readyz" | "/metrics" | "/openapi.json") => json_response(
            405,
            &json!({ "error": "method not allowed: use POST / for tools/call, POST /mcp for MCP; GET /healthz, /readyz, /metrics, /openapi.json" }),
            &[],
        ),
        _ => json_response(
            404,
            &json!({ "error": "not found: POST / takes JSON-RPC tools/call, POST /mcp speaks MCP, POST /mcp/<service>/<tool> runs one tool; GET /openapi.json lists them" }),
            &[],
        ),
    }
}

/// With `[oauth]`, fetches the issuer's keys once at start, so the first token is
/// checked without waiting for them (they are fetched on demand anyway).
fn warm_oauth(broker: &Arc<Broker>) {
    if broker.callers.oauth.is_some() {
        let broker = Arc::clone(broker);
        tokio::spawn(async move {
            if let Some(oauth) = &broker.callers.oauth {
                oauth.warm().await;
            }
        });
    }
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`: the Protected Resource Metadata
/// (RFC 9728) MCP clients discover the authorization server by; readable from any
/// origin (it is public). 404 without `[oauth]`.
fn protected_resource_metadata(broker: &Broker) -> HttpResponse {
    match &broker.callers.oauth {
        Some(oauth) => json_text_response(
            200,
            oauth.metadata().to_string(),
            &[
                ("access-control-allow-origin", "*".to_string()),
                ("cache-control", "max-age=3600".to_string()),
            ],
        ),
        None => json_response(
            404,
            &json!({ "error": "this broker takes no OAuth access tokens: its config has no [oauth] table" }),
            &[],
        ),
    }
}

/// How a body read ended, short of the body itself.
enum Unread {
    /// Over the limit (what followed was read and dropped up to the drain bound).
    TooLarge,
    /// The body stream broke.
    Broken,
}

/// Reads a body up to `limit` bytes, within the `[server]` `body_read_timeout_ms`.
///
/// A body over the limit answers `payload_too_large` (413) in a way every ordinary
/// client reads: the rest of the body is read and dropped, up to `over_limit_drain_bytes`
/// beyond the limit, before the answer. Answered at once, without reading: a declared
/// length past that bound, or a client waiting on `Expect: 100-continue` (it has not sent
/// the body and will not). A body that does not arrive in time is `invalid_request`, and
/// the connection closes (the log says so).
pub(super) async fn read_limited(
    broker: &Broker,
    headers: &hyper::HeaderMap,
    path: &str,
    mut body: Incoming,
    limit: usize,
) -> Result<Bytes, CallError> {
    let drain = broker.doors.bounds.over_limit_drain_bytes;
    let declared = headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let waits_to_send = headers
        .get(hyper::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if declared.is_some_and(|n| n > limit && (waits_to_send || n - limit > drain)) {
        return Err(too_large(limit));
    }
    let timeout = broker.doors.bounds.body_read_timeout();
    let read = async {
        // A body that comes in one frame (the usual case) is kept as it came, uncopied.
        let mut first: Option<Bytes> = None;
        let mut buf = bytes::BytesMut::new();
        let mut seen = 0usize;
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.map_err(|_| Unread::Broken)?.into_data() else {
                continue;
            };
            seen = seen.saturating_add(data.len());
            if seen > limit {
                if seen - limit > drain {
                    return Err(Unread::TooLarge);
                }
            } else if first.is_none() && buf.is_empty() {
                first = Some(data);
            } else {
                if let Some(earlier) = first.take() {
                    buf.extend_from_slice(&earlier);
                }
                buf.extend_from_slice(&data);
            }
        }
        if seen > limit {
            Err(Unread::TooLarge)
        } else {
            Ok(first.unwrap_or_else(|| buf.freeze()))
        }
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(Unread::TooLarge)) => Err(too_large(limit)),
        Ok(Err(Unread::Broken)) => Err(CallError::invalid_request(
            "the request body could not be read",
        )),
        Err(_) => Err(body_timed_out(&broker.doors.bounds, path)),
    }
}

/// A body over `limit` bytes: `payload_too_large` (413).
pub(crate) fn too_large(limit: usize) -> CallError {
    CallError::new(
        Classification::PayloadTooLarge,
        format!("the request body is over the broker's limit of {limit} bytes"),
    )
}

/// A body that did not arrive within the body read timeout: says so in the log and
/// answers `invalid_request`; the connection closes after the answer.
pub(crate) fn body_timed_out(
    bounds: &crate::config::server::ServerBounds,
    path: &str,
) -> CallError {
    tracing::info!(
        body_read_timeout_ms = bounds.body_read_timeout_ms,
        path = %path,
        "slow client closed: its request body did not arrive in time"
    );
    CallError::invalid_request(format!(
        "the request body did not arrive within {} ms; the connection is closed",
        bounds.body_read_timeout_ms
    ))
}

/// Who a request's `Authorization` header names ([`crate::caller::Callers`]).
pub(super) async fn authenticate(
    broker: &Broker,
    headers: &hyper::HeaderMap,
) -> Result<Arc<crate::caller::Principal>, CallError> {
    broker
        .callers
        .authenticate(
            headers
                .get(hyper::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok()),
            broker.now(),
        )
        .await
}

fn mcp_reply(reply: crate::mcp::Reply) -> Answer {
    match reply.body {
        Some(body) => Answer::json(reply.status, body, reply.headers),
        None => Answer {
            status: 202,
            json: false,
            headers: Vec::new(),
            body: Bytes::new(),
        },
    }
}

/// A call door's request answered from its head alone, before its body is read: `POST
/// /mcp` without a JSON `Accept` (406) or with another `Content-Type` (415).
fn precheck(door: CallDoor, headers: &hyper::HeaderMap) -> Option<Answer> {
    use crate::mcp::{code, error};
    if door != CallDoor::Mcp {
        return None;
    }
    if !crate::mcp::accepts_json(headers) {
        return Some(mcp_reply(crate::mcp::Reply {
            status: 406,
            ..error(
                &Value::Null,
                code::INVALID_REQUEST,
                "this broker answers MCP as application/json: accept it (with or without text/event-stream)",
                None,
            )
        }));
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
        return Some(mcp_reply(crate::mcp::Reply {
            status: 415,
            ..error(
                &Value::Null,
                code::INVALID_REQUEST,
                "send MCP messages as Content-Type: application/json",
                None,
            )
        }));
    }
    None
}

/// Answers a call door's request, read whole by either front door: from the broker's
/// own ([`door`]), the `Origin`/`Host` rules and [`precheck`] first, as hyper's front
/// door does in [`handle`]. Counts the answer's status.
pub(crate) async fn answer_call(
    broker: &Arc<Broker>,
    loopback: bool,
    request: door::Request<'_>,
) -> Answer {
    let answer = if let Err(refusal) = broker.doors.origins.check(request.headers, None, loopback) {
        refuse_origin(broker, (request.path, request.headers), refusal.0)
    } else if let Some(refused) = precheck(request.door, request.headers) {
        refused
    } else {
        answer_door(broker, request).await
    };
    broker.metrics.record_status(answer.status);
    answer
}

/// The three call doors, past the checks of the request's head.
async fn answer_door(broker: &Arc<Broker>, request: door::Request<'_>) -> Answer {
    let door::Request {
        door,
        path,
        headers,
        body,
    } = request;
    match door {
        CallDoor::Rpc => rpc(broker, headers, body).await,
        CallDoor::Mcp => mcp(broker, headers, body).await,
        CallDoor::Rest => rest(broker, path, headers, body).await,
    }
}

/// `POST /mcp`, past [`precheck`].
async fn mcp(
    broker: &Arc<Broker>,
    headers: &hyper::HeaderMap,
    body: Result<Bytes, CallError>,
) -> Answer {
    use crate::mcp::{code, error};
    let bytes = match body {
        Ok(bytes) => bytes,
        Err(e) => {
            let status = broker.catalog.rules.status(e.classification);
            return mcp_reply(crate::mcp::Reply {
                status,
                ..error(&Value::Null, code::INVALID_REQUEST, e.message, None)
            });
        }
    };
    let principal = authenticate(broker, headers).await;
    let handled = crate::mcp::handle(broker, headers, &bytes, principal.as_deref());
    match std::panic::AssertUnwindSafe(handled).catch_unwind().await {
        Ok(reply) => mcp_reply(reply),
        Err(_) => {
            tracing::error!("an MCP request panicked; answered internal error");
            mcp_reply(error(
                &Value::Null,
                -32603,
                "the broker failed to handle this request; the cause is in its log",
                None,
            ))
        }
    }
}

/// The approval page (`crate::confirm::approval::page`): `GET /approvals/<id>`,
/// `POST /approvals/<id>/sign-in`, `POST /approvals/<id>/decision`; forms of a few KB.
async fn approvals(broker: Arc<Broker>, req: Request<Incoming>) -> HttpResponse {
    use crate::confirm::approval::page;
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    let rest = path.trim_start_matches("/approvals/");
    let (id, action) = rest.split_once('/').unwrap_or((rest, ""));
    let well_formed = id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit());
    let provider = super::hub::approval_provider(&broker, &parts.headers);
    let client = crate::caller::origin::client_address(
        parts
            .extensions
            .get::<crate::caller::origin::Peer>()
            .copied(),
        &parts.headers,
    );
    let answer = if !well_formed {
        None
    } else {
        match (&parts.method, action) {
            (&Method::GET, "") => {
                Some(page::view(broker.confirming(), id, &parts.headers, &provider).await)
            }
            (&Method::POST, "sign-in" | "decision") => {
                match read_limited(&broker, &parts.headers, path, body, 16 * 1024).await {
                    Ok(body) => Some(if action == "sign-in" {
                        page::sign_in(broker.confirming(), id, &parts.headers, &body, &client).await
                    } else {
                        page::decide(broker.confirming(), id, &parts.headers, &body, &provider)
                            .await
                    }),
                    Err(_) => Some(page::Page {
                        status: 413,
                        headers: Vec::new(),
                        body: page::escape("The form is too large."),
                    }),
                }
            }
            _ => None,
        }
    };
    page_response(answer.unwrap_or(page::Page {
        status: 404,
        headers: Vec::new(),
        body: "<!doctype html><title>Not found</title><p>No such approval page.</p>".into(),
    }))
}

/// A server-rendered page (approvals, the hub) as hyper's response, with the headers
/// every page carries.
pub(super) fn page_response(answer: crate::confirm::approval::page::Page) -> HttpResponse {
    let mut response = hyper::Response::new(Full::new(Bytes::from(answer.body)));
    *response.status_mut() =
        hyper::StatusCode::from_u16(answer.status).unwrap_or(hyper::StatusCode::OK);
    let headers = response.headers_mut();
    for (name, value) in crate::confirm::approval::page::PAGE_HEADERS {
        headers.insert(name, hyper::header::HeaderValue::from_static(value));
    }
    for (name, value) in answer.headers {
        if let Ok(v) = hyper::header::HeaderValue::from_str(&value) {
            headers.append(name, v);
        }
    }
    response
}

/// `POST /webhooks/<service>`: upstream callbacks ([`crate::webhook`]), bodies up to the
/// webhook limit.
async fn webhook(broker: Arc<Broker>, req: Request<Incoming>) -> HttpResponse {
    let service = req
        .uri()
        .path()
        .strip_prefix("/webhooks/")
        .unwrap_or("")
        .to_string();
    let (parts, body) = req.into_parts();
    let limit = crate::webhook::MAX_BODY_BYTES;
    let bytes = match read_limited(&broker, &parts.headers, parts.uri.path(), body, limit).await {
        Ok(bytes) => bytes,
        Err(e) => {
            let status = broker.catalog.rules.status(e.classification);
            let message = if status == 413 {
                "the callback body is over 256 KiB".to_string()
            } else {
                e.message
            };
            return json_response(status, &json!({ "error": message }), &[]);
        }
    };
    let answer =
        crate::webhook::receive(&broker, &service, &parts.uri, &parts.headers, &bytes).await;
    json_response(answer.status, &answer.body, &[])
}

/// `POST /mcp/<service>/<tool>`: the projection's operations.
async fn rest(
    broker: &Broker,
    path: &str,
    headers: &hyper::HeaderMap,
    body: Result<Bytes, CallError>,
) -> Answer {
    let name = path
        .strip_prefix("/mcp/")
        .and_then(|rest| rest.split_once('/'))
        .filter(|(s, t)| !s.is_empty() && !t.is_empty() && !t.contains('/'))
        .map(|(s, t)| format!("{s}.{t}"));
    let max_id = broker.catalog.rules.limits.max_request_id_chars;
    let request_id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.chars().count() <= max_id)
        .map_or_else(|| broker.traces.next_request_id(), String::from);
    let bytes = match body {
        Ok(bytes) => bytes,
        Err(e) => return failure(broker, headers, &request_id, e),
    };
    let principal = match authenticate(broker, headers).await {
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
    // The REST door's pin is a header; one that is not text is no hash (refused as such).
    let pinned = headers
        .get("x-descriptor-hash")
        .map(|v| v.to_str().unwrap_or_default().to_string());
    guarded_call(
        broker,
        Door::Rest,
        request_id,
        (&name, pinned),
        arguments,
        headers,
        &principal,
    )
    .await
}

/// Runs one call; a panic becomes an `internal_error` envelope, never a dropped
/// connection. Shared by `POST /` and the projection's REST paths.
async fn guarded_call(
    broker: &Broker,
    door: Door,
    request_id: String,
    (name, descriptor_hash): (&str, Option<String>),
    arguments: Option<Value>,
    headers: &hyper::HeaderMap,
    principal: &crate::caller::Principal,
) -> Answer {
    let call = broker.call(CallInput {
        request_id: request_id.clone(),
        name,
        arguments,
        headers,
        principal,
        idempotency_key: None,
        elicitation: None,
        task_watch: None,
        descriptor_hash,
        trace_parent: Parent::from_headers(headers),
        door,
    });
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
fn failure(
    broker: &Broker,
    headers: &hyper::HeaderMap,
    request_id: &str,
    err: CallError,
) -> Answer {
    let meta = Meta {
        request_id: request_id.to_string(),
        trace_id: broker.traces.answer_trace_id(Some(headers)),
        ..Meta::default()
    };
    send(envelope::standard_err(&err, meta, &broker.catalog.rules))
}

/// `POST /`.
async fn rpc(
    broker: &Broker,
    headers: &hyper::HeaderMap,
    body: Result<Bytes, CallError>,
) -> Answer {
    let bytes = match body {
        Ok(bytes) => bytes,
        Err(e) => return failure(broker, headers, "", e),
    };
    let max_id = broker.catalog.rules.limits.max_request_id_chars;
    let crate::serve::jsonrpc::Read { shown_id, call } =
        crate::serve::jsonrpc::read(&bytes, max_id);
    let principal = match authenticate(broker, headers).await {
        Ok(p) => p,
        Err(e) => return failure(broker, headers, &shown_id, e),
    };
    let call = match call {
        Ok(call) => call,
        Err(e) => return failure(broker, headers, &shown_id, e),
    };
    guarded_call(
        broker,
        Door::Rpc,
        shown_id,
        (
            &call.name,
            call.descriptor_hash.map(std::borrow::Cow::into_owned),
        ),
        call.arguments,
        headers,
        &principal,
    )
    .await
}
