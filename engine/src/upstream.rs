//! Sending a rendered request upstream with the caller's key, and classifying what
//! comes back. One pooled client for the whole process.
//!
//! The key is placed here and nowhere else (header with prefix, or query parameter, as
//! the service's catalog entry says). Log lines and errors are built without the URL,
//! so a key placed in the query can never reach them.

use std::time::Duration;

use serde_json::Value;

use crate::catalog::Service;
use crate::descriptor::Placement;
use crate::error::{CallError, Classification};
use crate::render::RenderedRequest;

/// The shared upstream client.
#[derive(Debug, Clone)]
pub struct Upstream {
    client: reqwest::Client,
}

/// A successful (2xx) upstream answer, parsed.
#[derive(Debug, Clone)]
pub struct UpstreamAnswer {
    /// Status.
    pub status: u16,
    /// Parsed JSON body (`null` when empty).
    pub body: Value,
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
    /// The idempotency key for the service's `idempotency_header`, when the call holds one.
    pub idempotency_key: Option<&'a str>,
    /// Per-tool timeout.
    pub timeout: Duration,
    /// Largest body read.
    pub max_body_bytes: usize,
}

impl Upstream {
    /// Builds the pooled client.
    pub fn new() -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("tool-broker/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the upstream HTTP client: {e}"))?;
        Ok(Self { client })
    }

    fn build(&self, req: &RenderedRequest, target: &Target<'_>) -> reqwest::RequestBuilder {
        let mut query = req.query_string();
        if let (Some(cred), Some(key)) = (&target.service.credential, target.key)
            && cred.placement == Placement::Query
        {
            let pair = crate::render::encode_pairs(&[(
                cred.name.clone(),
                format!("{}{key}", cred.prefix),
            )]);
            query = if query.is_empty() {
                pair
            } else {
                format!("{query}&{pair}")
            };
        }
        let url = if query.is_empty() {
            format!("{}{}", target.base_url, req.path)
        } else {
            format!("{}{}?{query}", target.base_url, req.path)
        };
        let mut builder = self
            .client
            .request(req.method.clone(), url)
            .timeout(target.timeout)
            .header("accept", "application/json");
        for (k, v) in &target.service.static_headers {
            // A tool's own header of the same name wins (crm `Version` per product).
            if !req.headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(k)) {
                builder = builder.header(k.as_str(), v.as_str());
            }
        }
        for (k, v) in &req.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        if let (Some(header), Some(value), true) = (
            &target.service.idempotency_header,
            target.idempotency_key,
            req.method != reqwest::Method::GET,
        ) {
            builder = builder.header(header.as_str(), value);
        }
        if let (Some(cred), Some(key)) = (&target.service.credential, target.key)
            && cred.placement == Placement::Header
        {
            let mut value =
                reqwest::header::HeaderValue::from_str(&format!("{}{key}", cred.prefix))
                    .unwrap_or_else(|_| reqwest::header::HeaderValue::from_static(""));
            value.set_sensitive(true);
            builder = builder.header(cred.name.as_str(), value);
        }
        if let Some((bytes, content_type)) = req.body_bytes() {
            builder = builder.header("content-type", content_type).body(bytes);
        }
        builder
    }

    /// Sends the request; idempotent reads are retried once on a connection error.
    pub async fn send(
        &self,
        req: &RenderedRequest,
        target: &Target<'_>,
    ) -> Result<Outcome, CallError> {
        let idempotent = matches!(req.method, reqwest::Method::GET | reqwest::Method::HEAD);
        let mut attempt = 0;
        let response = loop {
            attempt += 1;
            match self.build(req, target).send().await {
                Ok(r) => break r,
                Err(e) if e.is_connect() && idempotent && attempt == 1 => {
                    tracing::warn!(service = %target.service.id, "upstream connection failed; retrying once");
                }
                Err(e) => return Err(classify(&e, &target.service.id)),
            }
        };
        let status = response.status().as_u16();
        let bytes = read_capped(response, target.max_body_bytes, &target.service.id).await?;
        let parsed = if bytes.iter().all(u8::is_ascii_whitespace) {
            Ok(Value::Null)
        } else {
            serde_json::from_slice::<Value>(&bytes)
        };
        if (200..300).contains(&status) {
            match parsed {
                Ok(body) => Ok(Outcome::Answer(UpstreamAnswer { status, body })),
                Err(_) => Err(CallError::new(
                    Classification::UpstreamUnavailable,
                    format!(
                        "the `{}` upstream answered {status} with a body that is not JSON",
                        target.service.id
                    ),
                )
                .with_upstream_status(status)),
            }
        } else {
            let body = parsed
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
            Ok(Outcome::Refusal(UpstreamRefusal { status, body }))
        }
    }
}

async fn read_capped(
    mut response: reqwest::Response,
    max: usize,
    service: &str,
) -> Result<Vec<u8>, CallError> {
    let mut out = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if out.len() + chunk.len() > max {
                    return Err(CallError::new(
                        Classification::UpstreamUnavailable,
                        format!(
                            "the `{service}` upstream answer is larger than the broker's limit of {max} bytes"
                        ),
                    ));
                }
                out.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(out),
            Err(e) => return Err(classify(&e, service)),
        }
    }
}

/// Turns a transport error into a classification, without its URL.
fn classify(err: &reqwest::Error, service: &str) -> CallError {
    if err.is_timeout() {
        tracing::warn!(service, "upstream timed out");
        CallError::new(
            Classification::UpstreamTimeout,
            format!("the `{service}` upstream did not answer within the tool's timeout"),
        )
    } else {
        let kind = if err.is_connect() {
            "connection failed"
        } else if err.is_body() || err.is_decode() {
            "the answer was cut off"
        } else {
            "the request failed"
        };
        tracing::warn!(service, kind, "upstream unavailable");
        CallError::new(
            Classification::UpstreamUnavailable,
            format!("the `{service}` upstream could not be reached: {kind}"),
        )
    }
}
