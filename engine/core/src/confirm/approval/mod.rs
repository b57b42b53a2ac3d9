//! Human confirmation (decision 008, mode `human`) on the approval page: a write
//! a person must approve.
//!
//! A write called without an `approvalId` records a pending approval in the store
//! ([`crate::store::approvals`]), bound like a confirmation token to the caller, the
//! tool, its descriptor hash and the arguments, and answers `confirmation_required` with
//! the approval's id and URL. An approver opens the URL, signs in with an approver
//! credential of the deployment (`[[approvers]]`, never an agent's API key), sees the
//! exact request and approves or declines it ([`page`]). The agent repeats the call with
//! the `approvalId` (and the contract's flag): pending is still `confirmation_required`,
//! declined is `confirmation_declined`, approved runs once.
//!
//! What the approver is shown holds argument values, which the store never keeps in the
//! clear (decision 009): the preview is sealed with AES-256-GCM under a key the
//! deployment gives in the environment (`approval_key_env`), shared by its replicas and
//! absent from the store.

pub mod elicit;
pub mod page;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::catalog::Tool;
use crate::confirm::Context;
use crate::error::{CallError, Classification};
use crate::store::approvals::{Approval, ApprovalState};

/// Default approval lifetime.
pub const DEFAULT_TTL_SECONDS: u64 = 900;
/// How long a repeat waits on a pending approval by default.
pub const DEFAULT_WAIT_SECONDS: u64 = 20;
/// The most a repeat may wait.
pub const MAX_WAIT_SECONDS: u64 = 60;
/// How often a waiting repeat reads the approval.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// The deployment's approvers: names and sha256 of their credentials.
#[derive(Debug, Default)]
pub struct Approvers(Vec<(String, [u8; 32])>);

impl Approvers {
    /// From `[[approvers]]`; a malformed hash is an error.
    pub fn from_config(entries: &[crate::config::ApproverEntry]) -> Result<Self, String> {
        let mut out = Vec::new();
        for e in entries {
            let hex = e.sha256.to_ascii_lowercase();
            let mut hash = [0u8; 32];
            let ok = hex.len() == 64
                && hash.iter_mut().enumerate().all(|(i, b)| {
                    hex.get(i * 2..i * 2 + 2)
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                        .map(|v| *b = v)
                        .is_some()
                });
            if !ok {
                return Err(format!(
                    "approver `{}`: sha256 must be 64 hex digits (the sha256 of the credential)",
                    e.name
                ));
            }
            out.push((e.name.clone(), hash));
        }
        Ok(Self(out))
    }

    /// Whether none is configured.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether an approver of this name is configured.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _)| n == name)
    }

    /// The approver a credential belongs to; every hash is compared in constant time.
    pub fn authenticate(&self, credential: &str) -> Option<&str> {
        let hash: [u8; 32] = Sha256::digest(credential.as_bytes()).into();
        let mut found = None;
        for (name, stored) in &self.0 {
            if bool::from(stored.ct_eq(&hash)) && found.is_none() {
                found = Some(name.as_str());
            }
        }
        found
    }
}

/// Seals what approvers are shown (AES-256-GCM, a random nonce per preview). The
/// first key seals; every key opens, so the deployment's key rotates without losing
/// approvals in flight.
pub struct PreviewCipher(Vec<LessSafeKey>);

impl std::fmt::Debug for PreviewCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PreviewCipher")
    }
}

fn preview_key(secret: &str) -> Result<LessSafeKey, String> {
    if secret.len() < 32 {
        return Err("the approval key must be at least 32 characters".into());
    }
    // The derived bytes are wiped once aws-lc holds the key.
    let key = zeroize::Zeroizing::new(<[u8; 32]>::from(Sha256::digest(secret.as_bytes())));
    let unbound = UnboundKey::new(&AES_256_GCM, key.as_slice())
        .map_err(|_| "the approval key is unusable")?;
    Ok(LessSafeKey::new(unbound))
}

impl PreviewCipher {
    /// A cipher keyed by the sha256 of the deployment's secret (at least 32 bytes).
    pub fn new(secret: &str) -> Result<Self, String> {
        Self::with_previous(secret, &[])
    }

    /// A cipher sealing with `secret` and opening with it or any of `previous`.
    pub fn with_previous(secret: &str, previous: &[String]) -> Result<Self, String> {
        let mut keys = vec![preview_key(secret)?];
        for old in previous {
            keys.push(preview_key(old).map_err(|e| format!("a previous key: {e}"))?);
        }
        Ok(Self(keys))
    }

    /// Seals `text` for the approval `id` (the id is authenticated with it); `None`
    /// only without an entropy source.
    pub fn seal(&self, id: &str, text: &str) -> Option<String> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).ok()?;
        let mut buf = text.as_bytes().to_vec();
        self.0
            .first()?
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(id.as_bytes()),
                &mut buf,
            )
            .ok()?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&buf);
        Some(B64.encode(out))
    }

    /// Opens what [`PreviewCipher::seal`] sealed for `id`.
    pub fn open(&self, id: &str, sealed: &str) -> Option<String> {
        let bytes = B64.decode(sealed.as_bytes()).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let (nonce, rest) = bytes.split_at(NONCE_LEN);
        self.0.iter().find_map(|key| {
            let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
            let mut buf = rest.to_vec();
            let plain = key
                .open_in_place(nonce, Aad::from(id.as_bytes()), &mut buf)
                .ok()?;
            String::from_utf8(plain.to_vec()).ok()
        })
    }
}

fn store_down(e: &crate::store::StoreError) -> CallError {
    tracing::error!(error = %e, "approval store unavailable");
    CallError::new(
        Classification::NotConfigured,
        "the broker cannot record or read approvals right now (its store does not answer); nothing was sent; retry shortly",
    )
}

/// What the approver of `approval` is shown: its sealed preview, opened (`null` when
/// this deployment cannot open it).
pub fn preview(confirmations: &crate::confirm::Confirmations, approval: &Approval) -> Value {
    confirmations
        .approval_cipher
        .as_ref()
        .and_then(|c| c.open(&approval.id, &approval.preview))
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

/// Where `approval` stands at `now_ms`: its state, or `expired` when it waited past its
/// expiry undecided.
pub fn state_at(approval: &Approval, now_ms: i64) -> &'static str {
    if approval.state == ApprovalState::Pending && approval.expires_ms <= now_ms {
        "expired"
    } else {
        approval.state.as_str()
    }
}

/// Where approvers open approval `id`: the deployment's `public_url`, else the host the
/// call came to ([`crate::caller::origin::public_base`]).
pub fn url(cx: Context<'_>, headers: &hyper::HeaderMap, id: &str) -> String {
    let base = crate::caller::origin::public_base(cx.confirmations.public_url.as_deref(), headers);
    format!("{base}/approvals/{id}")
}

/// Records a pending approval for this call and answers the refusal that names it.
pub async fn ask(
    cx: Context<'_>,
    tool: &Tool,
    ctx: &crate::run::RequestCtx<'_>,
    caller: &str,
    digest: crate::confirm::Bind<'_>,
    preview: &Value,
) -> CallError {
    let Some(cipher) = &cx.confirmations.approval_cipher else {
        return CallError::new(
            Classification::NotConfigured,
            "this deployment confirms writes by a person but has no approval key; nothing was sent",
        );
    };
    let mut raw = [0u8; 16];
    if getrandom::fill(&mut raw).is_err() {
        return CallError::internal();
    }
    let id = crate::catalog::identity::hex(&raw);
    let now = cx.now();
    let ttl = i64::try_from(cx.confirmations.approval_ttl_seconds).unwrap_or(i64::MAX);
    let expires_ms = now
        .as_millisecond()
        .saturating_add(ttl.saturating_mul(1000));
    let Some(sealed) = cipher.seal(&id, &preview.to_string()) else {
        return CallError::internal();
    };
    let approval = Approval {
        id: id.clone(),
        caller: caller.to_string(),
        key_name: ctx.caller.name.clone(),
        tool: tool.full_name.clone(),
        descriptor_hash: tool.descriptor_hash.clone(),
        args_sha256: digest.args.to_string(),
        plan_sha256: digest.plan().map(str::to_string),
        preview: sealed,
        state: ApprovalState::Pending,
        approver: None,
        created_ms: now.as_millisecond(),
        expires_ms,
    };
    if let Err(e) = cx.store.create_approval(&approval).await {
        return store_down(&e);
    }
    let link = url(cx, ctx.headers, &id);
    let expires_at = jiff::Timestamp::from_millisecond(expires_ms)
        .map(|t| t.to_string())
        .unwrap_or_default();
    let mut e = CallError::new(
        Classification::ConfirmationRequired,
        format!(
            "a person must approve this write: nothing was sent. Give the user the approval link {link}; once an approver has approved it, call `{}` again with the same arguments, `approvalId` \"{id}\" and the confirmation flag (until {expires_at}).",
            tool.full_name
        ),
    );
    e.details = Some(json!({
        "reason": "approval_pending",
        "approvalId": id,
        "approvalUrl": link,
        "approvalExpiresAt": expires_at,
    }));
    e
}

fn refusal(tool: &Tool, reason: &str, what: &str) -> CallError {
    let mut e = CallError::new(
        Classification::ConfirmationRequired,
        format!(
            "the approval {what}: nothing was sent; call `{}` without an approvalId to ask for a new approval",
            tool.full_name
        ),
    );
    e.details = Some(json!({ "reason": reason }));
    e
}

/// Checks approval `id` against `(caller, tool, digest)`; with `spend`, uses it (once
/// across replicas). `Ok` lets the call through.
pub async fn redeem(
    cx: Context<'_>,
    tool: &Tool,
    ctx: &crate::run::RequestCtx<'_>,
    caller: &str,
    digest: crate::confirm::Bind<'_>,
    id: &str,
    spend: bool,
) -> Result<(), CallError> {
    let approval = cx.store.approval(id).await.map_err(|e| store_down(&e))?;
    let Some(mut a) = approval else {
        return Err(refusal(tool, "invalid", "is not one this cx asked for"));
    };
    if a.tool != tool.full_name || a.descriptor_hash != tool.descriptor_hash {
        return Err(refusal(
            tool,
            "other_tool",
            "was asked for another tool or another version of it",
        ));
    }
    if a.caller != caller {
        return Err(refusal(tool, "other_caller", "was asked by another caller"));
    }
    if a.args_sha256 != digest.args {
        return Err(refusal(
            tool,
            "other_arguments",
            "was asked for other arguments",
        ));
    }
    if digest
        .plan
        .is_some_and(|plan| a.plan_sha256.as_deref() != plan)
    {
        return Err(refusal(
            tool,
            "plan_changed",
            "was asked for another plan: the plan changed since the preview (other writes or other bodies)",
        ));
    }
    // A bounded wait for the person's decision: the store is read every 250 ms, so a
    // decision on any replica ends it.
    let deadline = tokio::time::Instant::now()
        + std::time::Duration::from_secs(cx.confirmations.approval_wait_seconds);
    while a.state == ApprovalState::Pending
        && a.expires_ms > cx.now().as_millisecond()
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(WAIT_POLL.min(deadline - tokio::time::Instant::now())).await;
        match cx.store.approval(id).await {
            Ok(Some(fresh)) => a = fresh,
            Ok(None) => break,
            Err(e) => return Err(store_down(&e)),
        }
    }
    let now = cx.now().as_millisecond();
    match a.state {
        ApprovalState::Declined => {
            return Err(CallError::new(
                Classification::ConfirmationDeclined,
                format!(
                    "{} declined this write: nothing was sent; do not retry it unless the user asks again",
                    a.approver.as_deref().unwrap_or("the approver")
                ),
            ));
        }
        ApprovalState::Used => return Err(refusal(tool, "used", "was already used")),
        _ if a.expires_ms <= now => return Err(refusal(tool, "expired", "has expired")),
        ApprovalState::Pending => {
            let mut e = refusal(tool, "approval_pending", "is still waiting for a person");
            e.message = format!(
                "the approval is still waiting for a person: nothing was sent; ask the user to open {} and try again after they decide",
                url(cx, ctx.headers, id)
            );
            e.details = Some(json!({
                "reason": "approval_pending",
                "approvalId": id,
                "approvalUrl": url(cx, ctx.headers, id),
            }));
            return Err(e);
        }
        ApprovalState::Approved => {}
    }
    if spend {
        let used = cx
            .store
            .use_approval(id, now)
            .await
            .map_err(|e| store_down(&e))?;
        if !used {
            return Err(refusal(tool, "used", "was already used"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_open_only_for_their_approval_and_key() {
        let cipher = PreviewCipher::new("an approval key of thirty-two chars!").unwrap();
        // A canary long enough that random base64 cannot contain it by chance.
        let sealed = cipher.seal("ap1", r#"{"name":"Canary-Jo"}"#).unwrap();
        assert!(!sealed.contains("Canary-Jo"));
        assert_eq!(
            cipher.open("ap1", &sealed).as_deref(),
            Some(r#"{"name":"Canary-Jo"}"#)
        );
        assert_eq!(cipher.open("ap2", &sealed), None, "bound to its id");
        let other = PreviewCipher::new("another approval key, thirty-two+").unwrap();
        assert_eq!(other.open("ap1", &sealed), None);
        assert!(PreviewCipher::new("short").is_err());
        // Rotation: the new key seals, the previous one still opens what it sealed.
        let rotated = PreviewCipher::with_previous(
            "another approval key, thirty-two+",
            &["an approval key of thirty-two chars!".to_string()],
        )
        .unwrap();
        assert_eq!(
            rotated.open("ap1", &sealed).as_deref(),
            Some(r#"{"name":"Canary-Jo"}"#)
        );
        let fresh = rotated.seal("ap2", "new").unwrap();
        assert_eq!(other.open("ap2", &fresh).as_deref(), Some("new"));
        assert_eq!(cipher.open("ap2", &fresh), None, "sealed with the new key");
        assert!(
            PreviewCipher::with_previous("an approval key of thirty-two chars!", &["short".into()])
                .is_err()
        );
    }

    #[test]
    fn approvers_sign_in_by_credential_hash() {
        let entry = crate::config::ApproverEntry {
            name: "alice".into(),
            sha256: Sha256::digest(b"alice-credential")
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        };
        let approvers = Approvers::from_config(&[entry]).unwrap();
        assert_eq!(approvers.authenticate("alice-credential"), Some("alice"));
        assert_eq!(approvers.authenticate("alice-credentia"), None);
        let bad = crate::config::ApproverEntry {
            name: "x".into(),
            sha256: "zz".into(),
        };
        assert!(Approvers::from_config(&[bad]).is_err());
    }
}
