//! The listener and hyper's server: accepting connections (the cap, the workers, the
//! stop and its grace), and routing every request that is not a call endpoint's. A
//! connection starts in the broker's own HTTP/1.1 server ([`crate::serve::http1`]),
//! which reads plain call requests and has [`crate::serve::calls`] answer them;
//! everything else is hyper 1.x's server on tokio ([`handle`]), which answers the call
//! endpoints through the same code.
//!
//! - `POST /`, `POST /mcp`, `POST /mcp/<service>/<tool>`: the call endpoints
//!   ([`crate::serve::calls`]).
//! - `GET /openapi.json` (`?include_legacy=true`): the OpenAPI 3.1 projection
//!   ([`crate::serve::projection`]); like the health endpoints it needs no bearer token.
//! - `GET /healthz`: the process is up. `GET /readyz`: the catalog is compiled, callers
//!   can authenticate and the store answers (503 while it does not). `GET /metrics`:
//!   Prometheus counters. None needs a bearer token, and none shows a caller's input.
//! - `/hub...` ([`crate::serve::hub`]), `/approvals/<id>`, `POST /webhooks/<service>`,
//!   `GET /.well-known/oauth-protected-resource[/mcp]`.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::answer::envelope::{self, Meta};
use crate::call::{Broker, Endpoint};
use crate::error::{CallError, Classification};
use crate::reply::Reply;
use crate::serve::calls;
use crate::serve::http1;
use crate::serve::request::read_limited;
use crate::serve::response::{HttpResponse, into_hyper};
use crate::serve::tls::Tls;
use crate::served::Served;

/// What every accept loop of one server shares: the broker, the connection cap, the
/// connection builder and the stop signal.
struct Serving {
    served: Arc<Served>,
    /// The broker listens on a loopback address (the Host rule of [`crate::caller::origin`]
    /// applies: DNS rebinding is the way in).
    loopback: bool,
    permits: Arc<tokio::sync::Semaphore>,
    builder: hyper_util::server::conn::auto::Builder<TokioExecutor>,
    /// "Connection refused at the cap" is logged at most once a second.
    refused: crate::store::Every,
    /// Flips to true when the server stops accepting.
    stopped: tokio::sync::watch::Receiver<bool>,
    /// `[tls]`: every connection is a TLS handshake first.
    tls: Option<Arc<Tls>>,
}

impl Serving {
    fn new(
        served: Arc<Served>,
        loopback: bool,
        tls: Option<Arc<Tls>>,
    ) -> (Arc<Self>, tokio::sync::watch::Sender<bool>) {
        let bounds = &served.endpoints.bounds;
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
            served,
            loopback,
            permits,
            builder,
            refused: crate::store::Every::new(),
            stopped,
            tls,
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
                self.served.broker.parts.metrics.record_status(429);
                if self
                    .refused
                    .due(self.served.broker.parts.now().as_millisecond(), 1_000)
                {
                    tracing::warn!(
                        max_connections = self.served.endpoints.bounds.max_connections,
                        "connection refused: the broker is at its connection cap (429)"
                    );
                }
                tokio::spawn(crate::serve::bounds::refuse_connection(
                    stream,
                    over_cap_body(&self.served).to_string(),
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
    /// its calls in flight finish; under `[tls]` its handshake comes first, within the
    /// head read timeout.
    async fn connection(self: Arc<Self>, accepted: Accepted) {
        let Accepted {
            stream,
            peer,
            permit: _permit,
        } = accepted;
        let bounds = &self.served.endpoints.bounds;
        if bounds.http1_server == crate::config::server::Http1Server::Own {
            // Pipelined answers go out at once, not after the last one's ACK.
            let _ = stream.set_nodelay(true);
        }
        let Some(tls) = &self.tls else {
            return self.clone().stream(stream, peer).await;
        };
        match tokio::time::timeout(bounds.header_read_timeout(), tls.acceptor().accept(stream))
            .await
        {
            Ok(Ok(stream)) => self.clone().stream(stream, peer).await,
            Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
            Err(_) => tracing::info!(
                %peer,
                header_read_timeout_ms = bounds.header_read_timeout_ms,
                "slow client closed: its TLS handshake did not finish in time"
            ),
        }
    }

    /// Serves one connection's bytes (plain, or what TLS decrypted): the broker's own
    /// HTTP/1.1 server first ([`http1`]), then, if the connection brings what it leaves
    /// to hyper, hyper's server.
    async fn stream<S>(self: Arc<Self>, stream: S, peer: std::net::SocketAddr)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let served = &self.served;
        let state = crate::serve::bounds::ConnState::new();
        let watchdog = crate::serve::bounds::watchdog(state.clone(), &served.endpoints.bounds);
        tokio::pin!(watchdog);
        let watched = crate::serve::bounds::Watched::new(stream, state.clone());
        let io = match served.endpoints.bounds.http1_server {
            crate::config::server::Http1Server::Own => {
                let own =
                    http1::serve(served, self.loopback, watched, &state, self.stopped.clone());
                // Pinned out here, so a connection the watchdog closes is logged before
                // it closes (select! drops its own futures before running a branch).
                tokio::pin!(own);
                tokio::select! {
                    ended = &mut own => match ended {
                        http1::Ended::Closed => return,
                        http1::Ended::Hyper(io) => io,
                    },
                    expired = &mut watchdog => {
                        log_expired(expired, peer, &served.endpoints.bounds);
                        return;
                    }
                }
            }
            crate::config::server::Http1Server::Hyper => watched,
        };
        let service = {
            let served = served.clone();
            let state = state.clone();
            let loopback = self.loopback;
            hyper::service::service_fn(move |mut req: Request<Incoming>| {
                let served = served.clone();
                let in_flight = state.request();
                req.extensions_mut()
                    .insert(crate::caller::origin::Peer(peer));
                async move {
                    let mut response = handle(served, req, loopback).await;
                    // A streamed answer is in flight until its last chunk.
                    response.body_mut().hold(Box::new(in_flight));
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
                    log_expired(expired, peer, &served.endpoints.bounds);
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
        let bounds = &self.served.endpoints.bounds;
        self.served
            .endpoints
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
    served: Arc<Served>,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    serve_tls(served, listener, None, shutdown).await
}

/// [`serve`], each connection a TLS handshake first when `tls` is given.
pub async fn serve_tls(
    served: Arc<Served>,
    listener: TcpListener,
    tls: Option<Arc<Tls>>,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let broker = served.broker.clone();
    let (serving, stop) = Serving::new(served, is_loopback(listener.local_addr()), tls);
    // Webhook public keys the deployment has the broker fetch: now, then hourly.
    warm_oauth(&broker);
    watch_mcp(&broker);
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
/// has finished or its grace ran out. With `tls`, each connection is a TLS handshake
/// first, on its worker.
pub async fn serve_workers(
    served: Arc<Served>,
    listener: TcpListener,
    workers: usize,
    tls: Option<Arc<Tls>>,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    use std::sync::atomic::Ordering;
    let broker = served.broker.clone();
    let (serving, stop) = Serving::new(served, is_loopback(listener.local_addr()), tls);
    let (cut, cut_seen) = tokio::sync::watch::channel(false);
    let mut threads = Vec::with_capacity(workers);
    let mut pool = Vec::with_capacity(workers);
    // The workers log through the dispatcher of the thread that starts them (the global
    // one in the binary; a test's own, so its lines are its own).
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    for n in 0..workers.max(1) {
        let dispatch = dispatch.clone();
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
                let _logs = tracing::dispatcher::set_default(&dispatch);
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
    watch_mcp(&broker);
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
    let exporter = broker.parts.traces.exporter()?;
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
fn over_cap_body(served: &Served) -> Value {
    let broker = &served.broker;
    let err = CallError::new(
        Classification::RateLimited,
        format!(
            "the broker is at its limit of {} open connections; retry in a moment",
            served.endpoints.bounds.max_connections
        ),
    );
    let meta = Meta {
        trace_id: broker.parts.traces.answer_trace_id(None),
        ..Meta::default()
    };
    envelope::standard_err(&err, meta, &broker.parts.catalog.rules).envelope()
}

/// Routes one HTTP request. `loopback`: the broker listens on a loopback address.
pub async fn handle(served: Arc<Served>, req: Request<Incoming>, loopback: bool) -> HttpResponse {
    into_hyper(route(served, req, loopback).await)
}

/// The reply to one HTTP request: the `Origin`/`Host` rules, then the route.
async fn route(served: Arc<Served>, req: Request<Incoming>, loopback: bool) -> Reply {
    let broker = &served.broker;
    if let Err(refusal) = served.endpoints.origins.check(
        req.headers(),
        req.uri().authority().map(|a| a.as_str()),
        loopback,
    ) {
        let response = calls::refuse_origin(broker, req.uri().path(), req.headers(), refusal.0);
        broker.parts.metrics.record_status(403);
        return response;
    }
    if req.method() == Method::POST
        && let Some(endpoint) = Endpoint::of(req.uri().path())
    {
        return calls::answer_hyper(&served, endpoint, req).await;
    }
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/healthz") => Reply::ok(&json!({ "status": "ok" })),
        (&Method::GET, "/readyz") => readiness(&served).await,
        (&Method::GET, "/metrics") => {
            let mut text = broker.parts.metrics.render(
                &broker.parts.catalog.snapshot_id,
                broker.parts.catalog.tools.len(),
                broker.parts.traces.exporter().map(|e| e.counts()),
            );
            if broker.has_mcp() {
                let drift = broker.mcp_drift();
                let per_service: Vec<(String, usize)> = broker
                    .mcp_listed()
                    .into_keys()
                    .map(|s| {
                        let n = drift.iter().filter(|d| d.service == s).count();
                        (s, n)
                    })
                    .collect();
                crate::telemetry::metrics::render_upstream_drift(&mut text, &per_service);
            }
            connection_metrics(broker, &mut text).await;
            Reply::typed(200, "text/plain; version=0.0.4", text)
        }
        (&Method::GET, "/openapi.json") => {
            let include_legacy = req
                .uri()
                .query()
                .is_some_and(|q| q.split('&').any(|p| p == "include_legacy=true"));
            projection(&served, include_legacy)
        }
        (&Method::GET, path) if crate::caller::oauth::METADATA_PATHS.contains(&path) => {
            protected_resource_metadata(broker)
        }
        (_, path) if path == "/admin" || path.starts_with("/admin/") => {
            let response = super::admin::route(served.clone(), req).await;
            broker
                .parts
                .metrics
                .record_status(response.status);
            response
        }
        (_, path) if path == "/hub" || path.starts_with("/hub/") => {
            let response = super::hub::route(served.clone(), req).await;
            broker
                .parts
                .metrics
                .record_status(response.status);
            response
        }
        (&Method::GET | &Method::POST, path) if path.starts_with("/approvals/") => {
            let response = approvals(served.clone(), req).await;
            broker
                .parts
                .metrics
                .record_status(response.status);
            response
        }
        (&Method::POST, path) if path.starts_with("/webhooks/") => {
            let response = webhook(served.clone(), req).await;
            broker
                .parts
                .metrics
                .record_status(response.status);
            response
        }
        (_, "/mcp") => Reply::json(
            405,
            &json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32600, "message": "this broker answers MCP over POST only (no SSE stream, no session to delete)" } }),
        )
        .with_header("allow", "POST"),
        (_, "/" | "/healthz" | "/readyz" | "/metrics" | "/openapi.json") => Reply::error(
            405,
            "invalid_request",
            "method not allowed: use POST / for tools/call, POST /mcp for MCP; GET /healthz, /readyz, /metrics, /openapi.json",
        ),
        _ => Reply::error(
            404,
            "not_found",
            "not found: POST / takes JSON-RPC tools/call, POST /mcp speaks MCP, POST /mcp/<service>/<tool> runs one tool; GET /openapi.json lists them",
        ),
    }
}

/// `GET /readyz`: ready when the catalog is compiled, the store answers and the broker
/// is not draining. Never the store's location: only its kind.
async fn readiness(served: &Served) -> Reply {
    let broker = &served.broker;
    // Ready: the catalog is compiled and the store answers. Never the store's
    // location: only its kind.
    let draining = served
        .endpoints
        .draining
        .load(std::sync::atomic::Ordering::Acquire);
    let store_ready = !draining && broker.parts.store.ping().await;
    Reply::json(
        if store_ready { 200 } else { 503 },
        &json!({
            "status": if draining { "shutting down" } else if store_ready { "ready" } else { "store unreachable" },
            "snapshotId": broker.parts.catalog.snapshot_id,
            "tools": broker.parts.catalog.tools.len(),
            "store": { "kind": broker.parts.store.kind(), "ready": store_ready },
            "mcp": mcp_readiness(broker),
        }),
    )
}

/// What `/readyz` says of the MCP services: for each, whether its server has been
/// listed, and the tools it now describes otherwise than the catalog pinned (they
/// answer `upstream_changed`; the broker stays ready for the rest). `null` without any.
fn mcp_readiness(broker: &Broker) -> serde_json::Value {
    if !broker.has_mcp() {
        return serde_json::Value::Null;
    }
    let listed = broker.mcp_listed();
    let drift = broker.mcp_drift();
    let services: serde_json::Map<String, serde_json::Value> = listed
        .into_iter()
        .map(|(service, listed)| {
            let drifted: Vec<_> = drift
                .iter()
                .filter(|d| d.service == service)
                .map(|d| json!({ "tool": d.tool, "pinned": d.pinned, "seen": d.seen }))
                .collect();
            (service, json!({ "listed": listed, "drift": drifted }))
        })
        .collect();
    serde_json::Value::Object(services)
}

/// `GET /openapi.json`: the projection's text, built once per form and shared.
fn projection(served: &Served, include_legacy: bool) -> Reply {
    let broker = &served.broker;
    let slot = &served.endpoints.projection[usize::from(include_legacy)];
    let text = match slot.get() {
        Some(text) => text,
        None => match crate::serve::projection::text(&broker.parts.catalog, include_legacy) {
            Ok(text) => slot.get_or_init(|| Bytes::from(text)),
            Err(e) => {
                // Every key is a string, so this does not happen; if it did, the
                // answer says so and nothing is cached.
                tracing::error!(error = %e, "the OpenAPI projection did not serialise");
                return Reply::error(
                    500,
                    "internal_error",
                    "the OpenAPI projection could not be written; see the broker's log",
                );
            }
        },
    };
    Reply::json_text(200, text.clone())
}

/// With MCP services, reads their servers' tool listings at start and every few
/// minutes ([`Broker::refresh_mcp`]) for as long as the broker lives.
fn watch_mcp(broker: &Arc<Broker>) {
    if !broker.has_mcp() {
        return;
    }
    let weak = Arc::downgrade(broker);
    tokio::spawn(async move {
        loop {
            let Some(broker) = weak.upgrade() else { return };
            broker.refresh_mcp().await;
            drop(broker);
            tokio::time::sleep(crate::upstream::mcp::RELIST_AFTER).await;
        }
    });
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
/// The connected accounts' gauge, when services connect by OAuth (a store that does not
/// answer leaves it out, logged).
async fn connection_metrics(broker: &Broker, text: &mut String) {
    let Some(hub) = broker.hub.as_ref().filter(|h| h.connections().any()) else {
        return;
    };
    let services: Vec<String> = hub
        .services()
        .iter()
        .filter(|s| hub.connections().by_flow(s))
        .cloned()
        .collect();
    match broker.parts.store.connection_counts().await {
        Ok(counts) => crate::telemetry::metrics::render_connections(text, &services, &counts),
        Err(e) => tracing::warn!(error = %e, "connections not counted for /metrics"),
    }
}

/// origin (it is public). 404 without `[oauth]`.
fn protected_resource_metadata(broker: &Broker) -> Reply {
    match &broker.callers.oauth {
        Some(oauth) => Reply::json_text(200, oauth.metadata().to_string())
            .with_header("access-control-allow-origin", "*")
            .with_header("cache-control", "max-age=3600"),
        None => Reply::error(
            404,
            "not_found",
            "this broker takes no OAuth access tokens: its config has no [oauth] table",
        ),
    }
}

/// The approval page (`crate::confirm::approval::page`): `GET /approvals/<id>`,
/// `POST /approvals/<id>/sign-in`, `POST /approvals/<id>/decision`; forms of a few KB.
async fn approvals(served: Arc<Served>, req: Request<Incoming>) -> Reply {
    let broker = &served.broker;
    use crate::confirm::approval::page;
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    let rest = path.trim_start_matches("/approvals/");
    let (id, action) = rest.split_once('/').unwrap_or((rest, ""));
    let well_formed = id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit());
    let provider = super::hub::approval_provider(broker, &parts.headers).await;
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
                match read_limited(&served, &parts.headers, path, body, 16 * 1024).await {
                    Ok(body) => Some(if action == "sign-in" {
                        page::sign_in(broker.confirming(), id, &body, &client).await
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
    Reply::from(answer.unwrap_or(page::Page {
        status: 404,
        headers: Vec::new(),
        body: "<!doctype html><title>Not found</title><p>No such approval page.</p>".into(),
    }))
}

/// `POST /webhooks/<service>`: upstream callbacks ([`crate::webhook`]), bodies up to the
/// webhook limit.
async fn webhook(served: Arc<Served>, req: Request<Incoming>) -> Reply {
    let broker = &served.broker;
    let service = req
        .uri()
        .path()
        .strip_prefix("/webhooks/")
        .unwrap_or("")
        .to_string();
    let (parts, body) = req.into_parts();
    let limit = crate::webhook::MAX_BODY_BYTES;
    let bytes = match read_limited(&served, &parts.headers, parts.uri.path(), body, limit).await {
        Ok(bytes) => bytes,
        Err(e) => {
            let status = broker.parts.catalog.rules.status(e.classification);
            let message = if status == 413 {
                "the callback body is over 256 KiB".to_string()
            } else {
                e.message
            };
            return Reply::error(status, e.classification.as_str(), &message);
        }
    };
    crate::webhook::receive(&broker.parts, &service, &parts.uri, &parts.headers, &bytes).await
}
