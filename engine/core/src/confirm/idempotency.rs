//! Idempotent writes (decision 009): `Idempotency-Key` on `POST /` and the REST
//! paths (request header), and on MCP `tools/call` (the header, or
//! `params._meta.idempotencyKey`).
//!
//! For a write with a key, the call first claims `(caller, tool, key)` in the store:
//! - the first call runs; when its write ran upstream (whatever the upstream answered),
//!   its answer is kept for 24 hours; when it did not run (refused before sending, a
//!   dry-run preview) the key is released, so the caller can fix the call and reuse it;
//! - a repeat with the same arguments gets the kept answer, status and envelope, with
//!   `Idempotent-Replayed: true`, and no upstream call;
//! - the same key with other arguments is `idempotency_conflict` (409);
//! - a repeat while the first still runs (another replica, a client retry) waits for
//!   its answer, up to the tool's timeout plus five seconds, then is
//!   `idempotency_conflict` saying the first is still running.
//!
//! The caller is the broker key's name plus the upstream key's fingerprint (the job
//! owner). Reads ignore the key. Where the upstream takes an idempotency header of its
//! own (catalog: `idempotency_header` in service.toml, payments), the broker sends one
//! derived from the caller, tool and key, so even the provider sees one write.

use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::answer::envelope::Enveloped;
use crate::catalog::Tool;
use crate::error::{CallError, Classification};
use crate::store::Store;
use crate::store::idempotency::Claim;

/// How long a completed answer is kept.
pub const TTL_MS: i64 = 24 * 60 * 60 * 1000;
/// Longest key accepted.
pub const MAX_KEY_CHARS: usize = 200;
/// The request header.
pub const HEADER: hyper::header::HeaderName =
    hyper::header::HeaderName::from_static("idempotency-key");
/// The answer header on a replayed answer.
pub const REPLAYED: &str = "idempotent-replayed";

/// A key this call holds: complete or release it when the call ends.
#[derive(Debug, Clone)]
pub struct Held {
    owner: String,
    tool: String,
    key: String,
    /// The key sent upstream where the service takes one.
    pub upstream: String,
}

/// What a write with a key does.
#[derive(Debug)]
pub enum Begin {
    /// Run it, holding the key.
    Run(Held),
    /// Answer this (a kept answer).
    Replay(Enveloped),
}

/// The key of a call: given explicitly (MCP `_meta`) or in the `Idempotency-Key`
/// header. Empty or longer than [`MAX_KEY_CHARS`]: `invalid_request`.
pub fn key_of(
    given: Option<&str>,
    headers: &hyper::HeaderMap,
) -> Result<Option<String>, CallError> {
    let header = headers.get(HEADER).map(|v| v.to_str().map_err(|_| ()));
    let key = match (given, header) {
        (Some(k), _) => k.to_string(),
        (None, Some(Ok(k))) => k.trim().to_string(),
        (None, Some(Err(()))) => {
            return Err(CallError::invalid_request(
                "the Idempotency-Key header must be visible ASCII text",
            ));
        }
        (None, None) => return Ok(None),
    };
    if key.is_empty() || key.chars().count() > MAX_KEY_CHARS {
        return Err(CallError::invalid_request(format!(
            "an Idempotency-Key is 1 to {MAX_KEY_CHARS} characters"
        )));
    }
    Ok(Some(key))
}

/// The key sent upstream: sha256 over caller, tool and key, so no two callers share one
/// and the caller's own text never leaves the broker.
fn upstream_key(owner: &str, tool: &str, key: &str) -> String {
    let digest = Sha256::digest(format!("{owner}\u{1f}{tool}\u{1f}{key}").as_bytes());
    format!("tb-{}", crate::catalog::identity::hex(&digest[..20]))
}

fn conflict(message: String) -> CallError {
    CallError::new(Classification::IdempotencyConflict, message)
}

fn unavailable(e: &crate::store::StoreError, tool: &Tool) -> CallError {
    tracing::error!(error = %e, tool = %tool.full_name, "idempotency key not claimed; the write is not run");
    let mut err = conflict(
        "the broker cannot check this Idempotency-Key right now, so the write was not run; retry shortly".into(),
    );
    err.retry_after_seconds = Some(5);
    err
}

/// Claims the key for a write, waiting for a running call with the same key.
pub async fn begin(
    store: &Store,
    tool: &Tool,
    owner: &str,
    key: &str,
    args_sha256: &str,
    now: impl Fn() -> jiff::Timestamp,
) -> Result<Begin, CallError> {
    let wait = (tool.timeout + Duration::from_secs(5)).min(Duration::from_secs(120));
    let deadline = tokio::time::Instant::now() + wait;
    let mut pause = Duration::from_millis(25);
    loop {
        let claimed = store
            .claim_idempotency(
                owner,
                &tool.full_name,
                key,
                args_sha256,
                crate::store::millis(now()),
                TTL_MS,
            )
            .await
            .map_err(|e| unavailable(&e, tool))?;
        match claimed {
            Claim::Owned => {
                return Ok(Begin::Run(Held {
                    owner: owner.to_string(),
                    tool: tool.full_name.clone(),
                    key: key.to_string(),
                    upstream: upstream_key(owner, &tool.full_name, key),
                }));
            }
            Claim::Completed { status, envelope } => {
                let body: Value =
                    serde_json::from_str(&envelope).map_err(|_| CallError::internal())?;
                return Ok(Begin::Replay(Enveloped {
                    status,
                    body,
                    meta: None,
                    data: None,
                    ok_members: false,
                    headers: vec![(REPLAYED, "true".to_string())],
                }));
            }
            Claim::OtherArguments => {
                return Err(conflict(format!(
                    "this Idempotency-Key was already used for `{}` with other arguments; use a new key for a new call",
                    tool.full_name
                )));
            }
            Claim::InFlight { created_ms } => {
                if tokio::time::Instant::now() >= deadline {
                    let age = (crate::store::millis(now()) - created_ms).max(0) / 1000;
                    let mut err = conflict(format!(
                        "a call to `{}` with this Idempotency-Key started {age} s ago and has not finished; repeat the call later to get its answer",
                        tool.full_name
                    ));
                    err.retry_after_seconds = Some(5);
                    return Err(err);
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(250));
            }
        }
    }
}

/// Ends a held key: the answer is kept when the write ran, else the key is freed.
pub async fn finish(store: &Store, held: &Held, ran: bool, response: &Enveloped) {
    let done = if ran {
        store
            .complete_idempotency(
                &held.owner,
                &held.tool,
                &held.key,
                response.status,
                &String::from_utf8(response.to_json()).unwrap_or_default(),
            )
            .await
    } else {
        store
            .release_idempotency(&held.owner, &held.tool, &held.key)
            .await
    };
    if let Err(e) = done {
        // The answer still goes back; a repeat will find the key pending and wait,
        // then say so, never run the write twice.
        tracing::error!(error = %e, tool = %held.tool, "idempotency record not finished");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_and_derived_keys_differ_by_caller() {
        let mut headers = hyper::HeaderMap::new();
        assert_eq!(key_of(None, &headers).ok(), Some(None));
        headers.insert(HEADER, hyper::header::HeaderValue::from_static("order-1"));
        assert_eq!(key_of(None, &headers).ok(), Some(Some("order-1".into())));
        assert_eq!(key_of(Some("m-1"), &headers).ok(), Some(Some("m-1".into())));
        assert!(key_of(Some(""), &headers).is_err());
        assert!(key_of(Some(&"x".repeat(201)), &headers).is_err());
        let a = upstream_key("agent:aaaa", "payments.post_refunds", "k");
        let b = upstream_key("agent:bbbb", "payments.post_refunds", "k");
        assert_ne!(a, b);
        assert!(!a.contains('k') || a.starts_with("tb-"));
        assert_eq!(a.len(), 43);
    }
}
