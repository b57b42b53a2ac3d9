//! Sending a rendered request upstream with the caller's key, and classifying what
//! comes back.
//!
//! The client is hyper-util's pooled client with a rustls connector (the platform's
//! certificate verifier; HTTP/2 when the upstream offers it over TLS). It is built on
//! hyper directly rather than through a higher-level client: the URL is parsed once per
//! call, and there is no redirect layer (the broker never follows redirects). A serving
//! worker thread has its own pool ([`Upstream::own_pool`]) for TLS upstreams and holds
//! its plain-HTTP connections itself, the call speaking HTTP/1.1 on them without a pool
//! or a connection task ([`crate::upstream::held`]); other threads share one pool.
//!
//! The key is placed here and nowhere else (header with prefix, or query parameter, as
//! the service's catalog entry says). Log lines and errors are built without the URL,
//! so a key placed in the query can never reach them.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderName, HeaderValue};

use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde_json::Value;

use crate::catalog::Service;
use crate::catalog::descriptor::Placement;
use crate::error::{CallError, Classification};
use crate::telemetry::trace::context::{TRACEPARENT, TRACESTATE};
use crate::telemetry::trace::{CallTrace, Hop, Span};
use crate::upstream::render::RenderedRequest;

pub(crate) type Pool = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The upstream client: the shared pool, or the calling worker thread's own.
#[derive(Debug, Clone)]
pub struct Upstream {
    pool: Pool,
}

/// A successful (2xx) upstream answer, as it came: parsed by [`UpstreamAnswer::json`],
/// or written in one pass ([`crate::answer::scan`]).
#[derive(Debug, Clone)]
pub struct UpstreamAnswer {
    /// Status.
    pub status: u16,
    /// The body's bytes.
    pub bytes: Bytes,
}

impl UpstreamAnswer {
    /// Whether the body holds nothing but whitespace (then the answer is `null`).
    pub fn is_empty(&self) -> bool {
        self.bytes.iter().all(u8::is_ascii_whitespace)
    }

    /// The body parsed (`null` when empty); an answer that is not JSON is
    /// `upstream_unavailable`, as [`not_json`] says.
    pub fn json(&self, service: &str) -> Result<Value, CallError> {
        if self.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&self.bytes).map_err(|_| not_json(service, self.status))
    }
}

/// A 2xx answer whose body is not JSON.
pub fn not_json(service: &str, status: u16) -> CallError {
    CallError::new(
        Classification::UpstreamUnavailable,
        format!("the `{service}` upstream answered {status} with a body that is not JSON"),
    )
    .with_upstream_status(status)
}

/// A non-2xx answer: status and parsed (or textual) body, not yet redacted.
#[derive(Debug, Clone)]
pub struct UpstreamRefusal {
    /// Status.
    pub status: u16,
    /// Body as JSON, or as a JSON string when it was not JSON.
    pub body: Value,
}

/// What the send produced.
#[derive(Debug)]
pub enum Outcome {
    /// 2xx.
    Answer(UpstreamAnswer),
    /// Non-2xx.
    Refusal(UpstreamRefusal),
}

/// Everything [`Upstream::send`] needs besides the request.
#[derive(Debug)]
pub struct Target<'a> {
    /// Service (credential placement, static headers).
    pub service: &'a Service,
    /// Base URL in effect.
    pub base_url: &'a str,
    /// The caller's (or server-side) upstream key.
    pub key: Option<&'a str>,
    /// The key is an OAuth access token for `Authorization: Bearer`, not a key for
    /// the service's credential placement (a hub connection's `token_placement`).
    pub bearer: bool,
    /// The idempotency key for the service's `idempotency_header`, when the call holds one.
    pub idempotency_key: Option<&'a str>,
    /// Per-tool timeout.
    pub timeout: Duration,
    /// Largest body read.
    pub max_body_bytes: usize,
    /// The call's trace: the request carries its `traceparent`, and is its CLIENT span.
    pub trace: &'a CallTrace,
    /// The tool's path template (the CLIENT span's name and `url.template`: never the
    /// rendered path, which holds argument values); empty for a hook's own request.
    pub path_template: &'a str,
}

/// A request for an upstream as a call builds it once (`Upstream::build`): written
/// straight onto a held connection ([`crate::upstream::held`]), or made an `http::Request` for the
/// pooled client. Its headers are a list in the order they go out, not a map: a call
/// sends a few, and no name is looked up. Not `Debug`: its URI may hold the key (query
/// placement), and its headers do.
pub struct Outgoing {
    /// Method.
    pub method: hyper::Method,
    /// Absolute URI.
    pub uri: hyper::Uri,
    /// Headers, each checked by `http` (no line break can be in a name or a value).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Body (empty when none).
    pub body: Bytes,
}

impl Outgoing {
    /// Adds a header after the others of its name.
    fn append(&mut self, name: HeaderName, value: HeaderValue) {
        self.headers.push((name, value));
    }

    /// Sets a header, replacing every earlier one of its name.
    fn insert(&mut self, name: HeaderName, value: HeaderValue) {
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value));
    }

    /// Whether a header of `name` is set.
    pub fn has(&self, name: &HeaderName) -> bool {
        self.headers.iter().any(|(n, _)| n == name)
    }

    /// The request for the pooled client.
    pub fn to_request(&self) -> hyper::Request<Bytes> {
        let mut request = hyper::Request::new(self.body.clone());
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        let headers = request.headers_mut();
        for (name, value) in &self.headers {
            headers.append(name.clone(), value.clone());
        }
        request
    }
}

thread_local! {
    /// The pool of a serving worker thread ([`Upstream::own_pool`]).
    static OWN_POOL: std::cell::OnceCell<Pool> = const { std::cell::OnceCell::new() };
}

const USER_AGENT: &str = concat!("tool-broker/", env!("CARGO_PKG_VERSION"));

/// A pooled client with the rustls connector (the MCP client's too).
pub(crate) fn pool() -> Result<Pool, String> {
    let mut http = HttpConnector::new();
    // The TLS layer takes `https://`; plain `http://` upstreams (loopback, tests) pass.
    http.enforce_http(false);
    http.set_connect_timeout(Some(Duration::from_secs(10)));
    http.set_nodelay(true);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .try_with_platform_verifier()
        .map_err(|e| format!("cannot load the platform's certificate verifier: {e}"))?
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(60))
        .pool_timer(TokioTimer::new())
        .build(https))
}

/// The calling serving worker's own pool ([`Upstream::own_pool`]), else `shared`: a
/// connection is then driven on the thread that uses it, with no wake-up of another.
pub(crate) fn here_or(shared: &Pool) -> Pool {
    OWN_POOL
        .with(|own| own.get().cloned())
        .unwrap_or_else(|| shared.clone())
}

/// A header a call sends; a name or value that HTTP cannot carry refuses the call.
fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), CallError> {
    let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
        CallError::new(
            Classification::ValidationError,
            format!("`{name}` is not a valid HTTP header name"),
        )
    })?;
    let value = HeaderValue::from_str(value).map_err(|_| {
        // The value is the caller's input and may be anything: never quoted.
        CallError::new(
            Classification::ValidationError,
            format!("the value for the `{name}` header holds characters HTTP headers cannot carry (line breaks or control characters)"),
        )
    })?;
    Ok((name, value))
}

impl Upstream {
    /// Builds the shared pool.
    pub fn new() -> Result<Self, String> {
        Ok(Self { pool: pool()? })
    }

    /// Gives the calling thread its own connection pool, used by every call sent from
    /// it. For threads that run one current-thread runtime for their whole life (the
    /// serving workers): a pooled connection is driven by a task of the runtime that
    /// opened it, so a pool must not outlive its runtime, and a call that finds its
    /// connection on its own thread needs no wake-up from another.
    pub fn own_pool() {
        crate::upstream::held::hold_here();
        match pool() {
            Ok(pool) => OWN_POOL.with(|own| {
                let _ = own.set(pool);
            }),
            // The shared pool serves this thread instead.
            Err(e) => tracing::warn!(error = %e, "a worker uses the shared upstream pool"),
        }
    }

    fn pool(&self) -> Pool {
        here_or(&self.pool)
    }

    fn build(req: &RenderedRequest, target: &Target<'_>, hop: &Hop) -> Result<Outgoing, CallError> {
        let mut query = req.query_string();
        if let (Some(cred), Some(key), false) =
            (&target.service.credential, target.key, target.bearer)
            && cred.placement == Placement::Query
        {
            let pair = crate::upstream::render::encode_pairs(&[(
                cred.name.clone(),
                format!("{}{key}", cred.prefix),
            )]);
            if !query.is_empty() {
                query.push('&');
            }
            query.push_str(&pair);
        }
        let mut url =
            String::with_capacity(target.base_url.len() + req.path.len() + query.len() + 1);
        url.push_str(target.base_url);
        url.push_str(&req.path);
        if !query.is_empty() {
            url.push('?');
            url.push_str(&query);
        }
        // Never quoted: the query may hold the key.
        let uri = hyper::Uri::try_from(url).map_err(|_| {
            CallError::new(
                Classification::ValidationError,
                format!(
                    "the request for the `{}` upstream does not form a valid URL",
                    target.service.id
                ),
            )
        })?;
        let (body, content_type) = match req.body_bytes() {
            Some((bytes, content_type)) => (Bytes::from(bytes), Some(content_type)),
            None => (Bytes::new(), None),
        };
        let parsed = &target.service.headers;
        let mut request = Outgoing {
            method: req.method.clone(),
            uri,
            headers: Vec::with_capacity(6 + parsed.fixed.len() + req.headers.len()),
            body,
        };
        let headers = &mut request;
        headers.append(
            hyper::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        headers.append(
            hyper::header::USER_AGENT,
            HeaderValue::from_static(USER_AGENT),
        );
        for (k, v) in &parsed.fixed {
            // A tool's own header of the same name wins (crm `Version` per product).
            if !req
                .headers
                .iter()
                .any(|(h, _)| h.eq_ignore_ascii_case(k.as_str()))
            {
                headers.append(k.clone(), v.clone());
            }
        }
        for (k, v) in &req.headers {
            let (k, v) = header(k, v)?;
            headers.append(k, v);
        }
        if let (Some(name), Some(value), true) = (
            &parsed.idempotency,
            target.idempotency_key,
            req.method != hyper::Method::GET,
        ) {
            let value = HeaderValue::from_str(value).map_err(|_| {
                // The key is the caller's input and may be anything: never quoted.
                CallError::new(
                    Classification::ValidationError,
                    format!("the idempotency key for the `{name}` header holds characters HTTP headers cannot carry (line breaks or control characters)"),
                )
            })?;
            headers.append(name.clone(), value);
        }
        if let (true, Some(key)) = (target.bearer, target.key) {
            let mut value = HeaderValue::from_maybe_shared(Bytes::from(format!("Bearer {key}")))
                .unwrap_or_else(|_| HeaderValue::from_static(""));
            value.set_sensitive(true);
            headers.insert(hyper::header::AUTHORIZATION, value);
        } else if let (Some(cred), Some(name), Some(key)) =
            (&target.service.credential, &parsed.upstream_key, target.key)
        {
            // Joined by hand: `format!` costs a thousand instructions per call here.
            let mut text = String::with_capacity(cred.prefix.len() + key.len());
            text.push_str(&cred.prefix);
            text.push_str(key);
            let mut value = HeaderValue::from_maybe_shared(Bytes::from(text))
                .unwrap_or_else(|_| HeaderValue::from_static(""));
            value.set_sensitive(true);
            headers.insert(name.clone(), value);
        }
        // The call's trace goes on (W3C Trace Context), replacing any a tool might set.
        headers.insert(TRACEPARENT, hop.traceparent.clone());
        if let Some(state) = &hop.tracestate {
            headers.insert(TRACESTATE, state.clone());
        }
        if let Some(content_type) = content_type {
            headers.insert(
                hyper::header::CONTENT_TYPE,
                HeaderValue::from_static(content_type),
            );
        }
        Ok(request)
    }

    /// Sends the request; idempotent reads are retried once on a connection error.
    pub async fn send(
        &self,
        req: &RenderedRequest,
        target: &Target<'_>,
    ) -> Result<Outcome, CallError> {
        let hop = target.trace.hop();
        let request = Self::build(req, target, &hop)?;
        let mut attempts = 0;
        let answer = self.exchange(req, &request, target, &mut attempts).await;
        target.trace.finish_hop(
            hop,
            || match target.path_template {
                "" => req.method.to_string(),
                template => format!("{} {template}", req.method),
            },
            |span| client_span(span, &request, target, attempts, &answer),
        );
        answer
    }

    /// The exchange of [`Upstream::send`]: `attempts` counts the requests made.
    async fn exchange(
        &self,
        req: &RenderedRequest,
        request: &Outgoing,
        target: &Target<'_>,
        attempts: &mut u32,
    ) -> Result<Outcome, CallError> {
        let service = target.service.id.as_str();
        let exchange = async {
            let idempotent = matches!(req.method, hyper::Method::GET | hyper::Method::HEAD);
            loop {
                *attempts += 1;
                let sent = match crate::upstream::held::origin(&request.uri) {
                    // A serving worker's own connection (plain HTTP, crate::upstream::held).
                    Some(origin) => {
                        crate::upstream::held::exchange(&origin, request, target.max_body_bytes)
                            .await
                            .map(|answer| (answer.status, answer.body))
                    }
                    None => {
                        self.pooled(request.to_request(), target.max_body_bytes)
                            .await
                    }
                };
                match sent {
                    Ok(answer) => return Ok(answer),
                    Err(crate::upstream::http1::Failed::Connect)
                        if idempotent && *attempts == 1 =>
                    {
                        tracing::warn!(service, "upstream connection failed; retrying once");
                    }
                    Err(failed) => return Err(failure(service, failed, target.max_body_bytes)),
                }
            }
        };
        let (status, bytes) = match tokio::time::timeout(target.timeout, exchange).await {
            Ok(exchanged) => exchanged?,
            Err(_) => {
                tracing::warn!(service, "upstream timed out");
                return Err(CallError::new(
                    Classification::UpstreamTimeout,
                    format!("the `{service}` upstream did not answer within the tool's timeout"),
                ));
            }
        };
        if (200..300).contains(&status) {
            return Ok(Outcome::Answer(UpstreamAnswer { status, bytes }));
        }
        let body = if bytes.iter().all(u8::is_ascii_whitespace) {
            Value::Null
        } else {
            serde_json::from_slice::<Value>(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Ok(Outcome::Refusal(UpstreamRefusal { status, body }))
    }

    /// An exchange through the pooled client (TLS upstreams, threads that hold no
    /// connections): the status and the body, up to `max` bytes.
    async fn pooled(
        &self,
        request: hyper::Request<Bytes>,
        max: usize,
    ) -> Result<(u16, Bytes), crate::upstream::http1::Failed> {
        use crate::upstream::http1::Failed;
        let response = self
            .pool()
            .request(request.map(Full::new))
            .await
            .map_err(|e| {
                if e.is_connect() {
                    Failed::Connect
                } else {
                    Failed::Request
                }
            })?;
        let status = response.status().as_u16();
        let mut body = response.into_body();
        // One frame (the usual small answer) is kept as it came, without a copy.
        let mut first: Option<Bytes> = None;
        let mut more: Vec<u8> = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| Failed::CutOff)?;
            let Ok(chunk) = frame.into_data() else {
                continue; // trailers
            };
            let held = first.as_ref().map_or(0, Bytes::len) + more.len();
            if held + chunk.len() > max {
                return Err(Failed::TooLarge);
            }
            match &first {
                None if more.is_empty() => first = Some(chunk),
                _ => {
                    if let Some(f) = first.take() {
                        more.extend_from_slice(&f);
                    }
                    more.extend_from_slice(&chunk);
                }
            }
        }
        Ok((status, first.unwrap_or_else(|| Bytes::from(more))))
    }
}

/// An upstream request's CLIENT span attributes (OpenTelemetry HTTP conventions): the
/// method, the server, the path template (never the rendered path or the query: they
/// hold argument values, and a query may hold the key), the status, and `error.type`
/// (the classification, or the status from 400 on).
fn client_span(
    span: &mut Span,
    request: &Outgoing,
    target: &Target<'_>,
    attempts: u32,
    answer: &Result<Outcome, CallError>,
) {
    span.text("http.request.method", request.method.as_str());
    let scheme = request.uri.scheme_str().unwrap_or("http");
    span.text("url.scheme", scheme);
    if !target.path_template.is_empty() {
        span.text("url.template", target.path_template);
    }
    if let Some(host) = request.uri.host() {
        span.text("server.address", host);
    }
    let port = request
        .uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    span.int("server.port", i64::from(port));
    span.text("tool_broker.service", target.service.id.as_str());
    if attempts > 1 {
        span.int("http.request.resend_count", i64::from(attempts - 1));
    }
    let status = match answer {
        Ok(Outcome::Answer(a)) => Some(a.status),
        Ok(Outcome::Refusal(r)) => Some(r.status),
        Err(e) => {
            span.text("error.type", e.classification.as_str());
            span.error = true;
            e.upstream_status
        }
    };
    if let Some(status) = status {
        span.int("http.response.status_code", i64::from(status));
        if status >= 400 && !span.error {
            span.text("error.type", status.to_string());
            span.error = true;
        }
    }
}

/// What a failed exchange is to the caller: `upstream_unavailable`, saying what failed
/// but never the URL.
fn failure(service: &str, failed: crate::upstream::http1::Failed, max: usize) -> CallError {
    use crate::upstream::http1::Failed;
    match failed {
        Failed::Connect => unavailable(service, "connection failed"),
        Failed::Request => unavailable(service, "the request failed"),
        Failed::Malformed => unavailable(service, "the answer was not HTTP/1.1"),
        Failed::CutOff => unavailable(service, "the answer was cut off"),
        Failed::TooLarge => CallError::new(
            Classification::UpstreamUnavailable,
            format!(
                "the `{service}` upstream answer is larger than the broker's limit of {max} bytes"
            ),
        ),
    }
}

/// `upstream_unavailable`, saying what failed but never the URL.
fn unavailable(service: &str, kind: &str) -> CallError {
    tracing::warn!(service, kind, "upstream unavailable");
    CallError::new(
        Classification::UpstreamUnavailable,
        format!("the `{service}` upstream could not be reached: {kind}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_set_and_added_as_a_header_map_would() {
        let value = HeaderValue::from_static;
        let mut out = Outgoing {
            method: hyper::Method::POST,
            uri: "http://upstream.test/x".parse().unwrap(),
            headers: Vec::new(),
            body: Bytes::from_static(b"{}"),
        };
        out.append(hyper::header::ACCEPT, value("a/1"));
        out.append(hyper::header::ACCEPT, value("a/2"));
        out.append(hyper::header::CONTENT_TYPE, value("c/1"));
        out.insert(hyper::header::ACCEPT, value("a/3"));
        assert!(out.has(&hyper::header::CONTENT_TYPE));
        assert!(!out.has(&hyper::header::HOST));
        let request = out.to_request();
        let mut map = hyper::HeaderMap::new();
        map.append(hyper::header::ACCEPT, value("a/1"));
        map.append(hyper::header::ACCEPT, value("a/2"));
        map.append(hyper::header::CONTENT_TYPE, value("c/1"));
        map.insert(hyper::header::ACCEPT, value("a/3"));
        assert_eq!(request.headers(), &map);
        assert_eq!(
            (request.method(), request.uri(), request.body()),
            (&out.method, &out.uri, &out.body)
        );
    }
}
