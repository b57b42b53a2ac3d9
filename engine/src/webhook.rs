//! `POST /webhooks/<service_id>`: callbacks from upstreams about their jobs
//! (DECISIONS section 9). How a callback is verified and how its event maps to a job
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

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::call::Broker;
use crate::descriptor::WebhookScheme;
use crate::response::select;

/// Largest callback body read.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// What to answer: status and JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Body.
    pub body: Value,
}

fn answer(status: u16, body: Value) -> Answer {
    Answer { status, body }
}

fn refuse(status: u16, message: &str) -> Answer {
    answer(status, json!({ "error": message }))
}

/// The text at a JSONPath, as a string (numbers too).
fn text_at(path: &crate::catalog::JsonPath, body: &Value) -> Option<String> {
    match select(path, body)? {
        Value::String(s) if !s.is_empty() => Some(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Whether a service has a webhook receiver ready (spec and secret).
pub fn ready(broker: &Broker, service: &str) -> bool {
    broker
        .catalog
        .services
        .get(service)
        .is_some_and(|s| s.webhook.is_some())
        && broker.webhook_secrets.contains_key(service)
}

/// Handles one callback whose body has been read (at most `MAX_BODY_BYTES + 1` bytes).
pub async fn receive(
    broker: &Broker,
    service_id: &str,
    headers: &hyper::HeaderMap,
    body: &[u8],
) -> Answer {
    let Some(webhook) = broker
        .catalog
        .services
        .get(service_id)
        .and_then(|s| s.webhook.as_ref())
    else {
        return refuse(404, "no webhook is received for this service");
    };
    let Some(secret) = broker.webhook_secrets.get(service_id) else {
        return refuse(
            503,
            "this broker has no webhook secret configured for the service; callbacks are refused",
        );
    };
    if body.len() > MAX_BODY_BYTES {
        return refuse(413, "the callback body is over 256 KiB");
    }
    let proof = headers
        .get(webhook.spec.header.as_str())
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let verified = match webhook.spec.scheme {
        WebhookScheme::Bearer => {
            let expected = format!("{}{secret}", webhook.spec.prefix);
            bool::from(proof.as_bytes().ct_eq(expected.as_bytes()))
        }
    };
    if !verified {
        tracing::warn!(service = %service_id, "webhook refused: verification failed");
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
    .unwrap_or_else(|| {
        let digest = Sha256::digest(body);
        format!(
            "sha256:{}",
            digest
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        )
    });
    let job_id = text_at(&webhook.job_id, &payload);
    // Kept as the upstream says it, like the statuses watchers read; listings add the
    // job state the catalog maps it to (`states`).
    let status = text_at(&webhook.status, &payload);
    let secrets = broker.secrets(headers);
    crate::redact::redact(&mut payload, &broker.catalog.rules.redaction, &[], &secrets);
    let now = broker.now();
    let new = match broker
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
        match broker
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
    answer(
        200,
        json!({ "received": true, "duplicate": !new, "jobsUpdated": updated }),
    )
}
