//! `POST /webhooks/<service_id>`: callbacks from upstreams about their jobs
//! (decision 009). How a callback is verified and how its event maps to a job
//! are catalog data of the service (`[webhook]` in service.toml); the secret is the
//! deployment's (`[webhook_secrets.<service>] env = ...`).
//!
//! In order: the service must have a `[webhook]` (else 404) and a configured secret
//! (else 503); the body must fit [`MAX_BODY_BYTES`] (413); the proof must match, compared
//! in constant time (401, and nothing is stored); the body must be JSON (400). Then the
//! event is recorded once: a redelivery (same event id, or the same body when the
//! catalog names no event id) changes nothing. The job it names is updated for whoever
//! submitted it; an unknown job changes nothing. The stored payload is redacted like
//! any upstream answer. No upstream call is made. No bearer token is asked for: the
//! upstream cannot hold one; the webhook's own proof is the authentication.
//!
//! May import: [`crate::run`] (the key refresh runs a tool through its pipeline) and
//! the stages below it; never the call driver or an endpoint.

use serde_json::{Value, json};
use subtle::ConstantTimeEq;

use crate::answer::response::select;
use crate::reply::Reply;
use crate::run::Parts;

pub mod keys;
use crate::catalog::webhook::MessagePart;

/// Largest callback body read.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// A refused callback: the one error body, its classification read off the status.
fn refuse(status: u16, message: &str) -> Reply {
    let classification = match status {
        400 => "invalid_request",
        401 => "unauthorized",
        404 => "not_found",
        413 => "payload_too_large",
        _ => "not_configured",
    };
    Reply::error(status, classification, message)
}

/// The text at a JSONPath, as a string (numbers too).
fn text_at(path: &crate::catalog::JsonPath, body: &Value) -> Option<String> {
    match select(path, body)? {
        Value::String(s) if !s.is_empty() => Some(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Whether a service's callbacks can be verified now: a `[webhook]` in the catalog and
/// its secret or public key at hand.
pub fn ready(parts: &Parts, service: &str) -> bool {
    parts
        .catalog
        .services
        .get(service)
        .is_some_and(|s| s.webhook.is_some())
        && parts.callbacks.ready(service)
}

/// The first of `paths` that holds a value.
fn first_text(paths: &[crate::catalog::JsonPath], body: &Value) -> Option<String> {
    paths.iter().find_map(|p| text_at(p, body))
}

fn header<'a>(headers: &'a hyper::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The callback URL as the upstream was given it: configured, else rebuilt from the
/// request (`X-Forwarded-Proto` or http, `Host`, path and query).
fn callback_url(configured: Option<&str>, uri: &hyper::Uri, headers: &hyper::HeaderMap) -> String {
    if let Some(url) = configured {
        return url.to_string();
    }
    let proto = match header(headers, "x-forwarded-proto") {
        "" => "http",
        p => p.split(',').next().unwrap_or("http").trim(),
    };
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    format!("{proto}://{}{path}", header(headers, "host"))
}

/// Why a callback failed verification (logged; the answer says only "failed").
fn verify(
    parts: &Parts,
    service_id: &str,
    webhook: &crate::catalog::Webhook,
    uri: &hyper::Uri,
    headers: &hyper::HeaderMap,
    body: &[u8],
) -> Result<(), &'static str> {
    let receiver = parts.callbacks.get(service_id).ok_or("no receiver")?;
    let proof = header(headers, &webhook.spec.header)
        .strip_prefix(webhook.spec.prefix.as_str())
        .ok_or("the proof header is missing or lacks its prefix")?;
    if let Some(name) = &webhook.spec.timestamp_header {
        let at: i64 = header(headers, name)
            .trim()
            .parse()
            .map_err(|_| "the timestamp header is missing or not Unix seconds")?;
        let window = webhook
            .spec
            .max_age_seconds
            .unwrap_or(crate::catalog::webhook::DEFAULT_MAX_AGE_SECONDS);
        let skew = parts.now().as_second().abs_diff(at);
        if skew > window {
            return Err("the timestamp is outside the freshness window");
        }
    }
    match &receiver.proof {
        crate::caller::callbacks::Proof::Bearer(secret) => {
            if bool::from(proof.as_bytes().ct_eq(secret.as_bytes())) {
                Ok(())
            } else {
                Err("the secret does not match")
            }
        }
        crate::caller::callbacks::Proof::Rsa { .. } => {
            let key = parts
                .callbacks
                .rsa_key(service_id)
                .ok_or("no public key yet")?;
            let signature = base64::Engine::decode(
                &base64::engine::general_purpose::STANDARD,
                proof.trim().as_bytes(),
            )
            .map_err(|_| "the signature is not base64")?;
            let mut message = Vec::with_capacity(body.len() + 128);
            for part in &webhook.message {
                match part {
                    MessagePart::Text(t) => message.extend_from_slice(t.as_bytes()),
                    MessagePart::Timestamp => message.extend_from_slice(
                        header(
                            headers,
                            webhook.spec.timestamp_header.as_deref().unwrap_or(""),
                        )
                        .trim()
                        .as_bytes(),
                    ),
                    MessagePart::Url => message.extend_from_slice(
                        callback_url(receiver.url.as_deref(), uri, headers).as_bytes(),
                    ),
                    MessagePart::BodySha256Hex => message.extend_from_slice(hex(body).as_bytes()),
                    MessagePart::Body => message.extend_from_slice(body),
                }
            }
            aws_lc_rs::signature::UnparsedPublicKey::new(
                &aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256,
                &key,
            )
            .verify(&message, &signature)
            .map_err(|_| "the signature does not match")
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    crate::catalog::identity::sha256_hex(bytes)
}

/// Handles one callback whose body has been read (at most `MAX_BODY_BYTES + 1` bytes).
pub async fn receive(
    parts: &Parts,
    service_id: &str,
    uri: &hyper::Uri,
    headers: &hyper::HeaderMap,
    body: &[u8],
) -> Reply {
    let Some(webhook) = parts
        .catalog
        .services
        .get(service_id)
        .and_then(|s| s.webhook.as_ref())
    else {
        return refuse(404, "no webhook is received for this service");
    };
    if parts.callbacks.get(service_id).is_none() {
        return refuse(
            503,
            "this broker has no webhook secret or key configured for the service; callbacks are refused",
        );
    }
    if !parts.callbacks.ready(service_id) {
        // The key is fetched in the background; the upstream retries the callback.
        return refuse(
            503,
            "this broker has not yet fetched the service's webhook public key; send the callback again",
        );
    }
    if body.len() > MAX_BODY_BYTES {
        return refuse(413, "the callback body is over 256 KiB");
    }
    if let Err(why) = verify(parts, service_id, webhook, uri, headers, body) {
        tracing::warn!(service = %service_id, reason = why, "webhook refused: verification failed");
        return refuse(
            401,
            "the callback's verification failed; nothing was stored",
        );
    }
    let Ok(mut payload) = serde_json::from_slice::<Value>(body) else {
        return refuse(400, "the callback body is not JSON");
    };
    let event_id = match &webhook.event_id {
        Some(path) => text_at(path, &payload),
        None => None,
    }
    .unwrap_or_else(|| format!("sha256:{}", hex(body)));
    let job_id = first_text(&webhook.job_id, &payload);
    // Kept as the upstream says it, like the statuses watchers read; listings add the
    // job state the catalog maps it to (`states`).
    let status = first_text(&webhook.status, &payload);
    let secrets = parts.secrets(headers);
    crate::answer::redact::redact(&mut payload, &parts.catalog.rules.redaction, &[], &secrets);
    let now = parts.now();
    let new = match parts
        .store
        .record_webhook_event(
            service_id,
            &event_id,
            job_id.as_deref(),
            status.as_deref(),
            &payload.to_string(),
            now,
        )
        .await
    {
        Ok(new) => new,
        Err(e) => {
            // The upstream retries a callback that fails: nothing is lost by a 503.
            tracing::error!(error = %e, service = %service_id, "webhook event not stored");
            return refuse(
                503,
                "the broker cannot store the callback right now; send it again",
            );
        }
    };
    let mut updated = 0;
    if new && let (Some(job), Some(status)) = (&job_id, &status) {
        match parts
            .store
            .update_job_from_upstream(service_id, job, status, now)
            .await
        {
            Ok(n) => updated = n,
            Err(e) => {
                tracing::error!(error = %e, service = %service_id, "job not updated from a webhook");
                return refuse(
                    503,
                    "the broker cannot store the callback right now; send it again",
                );
            }
        }
    }
    tracing::info!(service = %service_id, duplicate = !new, jobs_updated = updated, "webhook received");
    Reply::json(
        200,
        &json!({ "received": true, "duplicate": !new, "jobsUpdated": updated }),
    )
}
