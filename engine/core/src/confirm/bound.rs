//! Bound confirmation (decision 008, mode `bound`): a write runs only with the
//! `confirmationToken` its preview answered.
//!
//! A token is sealed ([`crate::confirm::seal`]) claims: a random id, the caller (key name and
//! upstream key fingerprint, as for jobs), the tool, its descriptor hash, the sha256 of
//! the bound arguments and an expiry. The bound arguments are what the caller sent but
//! the broker's own confirmation arguments (the contract's flags, the preview switch, the
//! token), so the preview call and the confirmed call bind the same. A token is spent
//! in the store when its write is let through, once across every replica. Every refusal
//! is `confirmation_required` with its reason and sends nothing.

use serde_json::{Map, Value, json};

use crate::catalog::Tool;
use crate::catalog::descriptor::ConfirmationMode;
use crate::catalog::rules::Confirmation;
use crate::confirm::{Bind, Context};
use crate::error::{CallError, Classification};

/// The broker argument carrying a token. Accepted by every write, never sent upstream.
pub const TOKEN_ARG: &str = "confirmationToken";
/// The seal purpose of confirmation tokens.
const PURPOSE: &str = "confirm";
/// Default token lifetime.
pub const DEFAULT_TTL_SECONDS: u64 = 300;

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not a token this deployment sealed, or altered.
    Invalid,
    /// Past its expiry.
    Expired,
    /// Used before.
    Used,
    /// Issued for another tool (or another version of this one).
    OtherTool,
    /// Issued for other arguments.
    OtherArguments,
    /// Issued for another plan: the writes the tool would send changed since the preview.
    PlanChanged,
    /// Issued to another caller.
    OtherCaller,
}

impl Refusal {
    /// The reason word, in the error's `details.reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Invalid => "invalid",
            Self::Expired => "expired",
            Self::Used => "used",
            Self::OtherTool => "other_tool",
            Self::OtherArguments => "other_arguments",
            Self::PlanChanged => "plan_changed",
            Self::OtherCaller => "other_caller",
        }
    }

    /// What is wrong with the sealed value, as a predicate ("has expired"); shared by
    /// confirmation tokens and MCP request states.
    pub fn words(self) -> &'static str {
        match self {
            Self::Invalid => "is not one this cx issued (or was altered)",
            Self::Expired => "has expired",
            Self::Used => "was already used",
            Self::OtherTool => "was issued for another tool or another version of it",
            Self::OtherArguments => "was issued for other arguments",
            Self::PlanChanged => {
                "was issued for another plan: the plan changed since the preview (other writes or other bodies)"
            }
            Self::OtherCaller => "was issued to another caller",
        }
    }

    fn message(self, tool: &str) -> String {
        format!(
            "the confirmationToken {}: nothing was sent; call `{tool}` without a token to get its preview and a new token, and run it only after the user approves that preview",
            self.words()
        )
    }

    /// The refusal as a call error (428 `confirmation_required`).
    pub fn error(self, tool: &Tool) -> CallError {
        let mut e = CallError::new(
            Classification::ConfirmationRequired,
            self.message(&tool.full_name),
        );
        e.details = Some(json!({ "reason": self.as_str() }));
        e
    }
}

/// Removes the token argument from a call's arguments (every tool, every mode: it is
/// never validated against a tool's schema and never sent upstream).
pub fn take_token(arguments: &mut Option<Value>) -> Option<String> {
    take_arg(arguments, TOKEN_ARG)
}

/// Removes a broker argument (`confirmationToken`, `approvalId`) from a call's
/// arguments; a value that is not text is kept as its JSON text (and refused as invalid).
pub fn take_arg(arguments: &mut Option<Value>, name: &str) -> Option<String> {
    let map = arguments.as_mut()?.as_object_mut()?;
    match map.remove(name)? {
        Value::String(s) => Some(s),
        other => Some(other.to_string()),
    }
}

/// sha256 (hex) of the bound arguments: the arguments without the confirmation flags,
/// the preview switch and the token, in canonical JSON (sorted keys).
pub fn digest(tool: &Tool, args: Option<&Map<String, Value>>, rules: &Confirmation) -> String {
    let mut bound = args.cloned().unwrap_or_default();
    for name in [
        Some(rules.confirm_arg.as_str()),
        Some(rules.apply_arg.as_str()),
        tool.preview_arg.as_deref(),
        Some(TOKEN_ARG),
        Some(crate::confirm::APPROVAL_ARG),
    ]
    .into_iter()
    .flatten()
    {
        bound.remove(name);
    }
    // serde_json maps are ordered by key: the text is canonical.
    let text = Value::Object(bound).to_string();
    crate::catalog::identity::sha256_hex(text.as_bytes())
}

/// Whether a call asks to run (rather than to be previewed): the flag its confirmation
/// rule reads is set, or its rule reads none, and no preview was asked for.
pub fn asks_to_run(tool: &Tool, args: Option<&Map<String, Value>>, rules: &Confirmation) -> bool {
    let get = |name: &str| args.and_then(|a| a.get(name));
    if tool
        .preview_arg
        .as_deref()
        .is_some_and(|p| get(p) == Some(&Value::Bool(true)))
    {
        return false;
    }
    match tool.confirmation {
        ConfirmationMode::None | ConfirmationMode::Auto => true,
        ConfirmationMode::ConfirmFlag | ConfirmationMode::DryRunDefault => {
            get(&rules.confirm_arg) == Some(&Value::Bool(true))
        }
        ConfirmationMode::ConfirmApply => {
            get(&rules.apply_arg).and_then(Value::as_str) == Some(rules.apply_phrase.as_str())
        }
    }
}

/// A token issued: the text and its expiry.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The token.
    pub token: String,
    /// When it expires.
    pub expires_at: jiff::Timestamp,
}

/// Issues a token for `(caller, tool, bind)`.
pub async fn issue(
    cx: Context<'_>,
    tool: &Tool,
    caller: &str,
    digest: Bind<'_>,
) -> Result<Issued, CallError> {
    seal_claims(
        cx,
        PURPOSE,
        cx.confirmations.confirmation_ttl_seconds,
        tool,
        caller,
        digest,
    )
    .await
    .map_err(|e| store_down(&e))
}

/// Seals claims binding `(caller, tool, descriptor hash, digest)` for `purpose`, valid
/// for `ttl_seconds`: what a confirmation token and an MCP `requestState` both are.
pub async fn seal_claims(
    cx: Context<'_>,
    purpose: &str,
    ttl_seconds: u64,
    tool: &Tool,
    caller: &str,
    digest: Bind<'_>,
) -> Result<Issued, crate::store::StoreError> {
    let now = cx.now();
    let expires_at = now
        .checked_add(jiff::SignedDuration::from_secs(
            i64::try_from(ttl_seconds).unwrap_or(i64::MAX),
        ))
        .unwrap_or(now);
    let id: String = {
        let mut buf = [0u8; 16];
        let _ = getrandom::fill(&mut buf);
        crate::catalog::identity::hex(&buf)
    };
    let claims = json!({
        "id": id,
        "caller": caller,
        "tool": tool.full_name,
        "hash": tool.descriptor_hash,
        "args": digest.args,
        "plan": digest.plan(),
        "exp": expires_at.as_millisecond(),
    });
    let token = cx
        .confirmations
        .sealer
        .seal(&cx.store, now.as_millisecond(), purpose, &claims)
        .await?;
    Ok(Issued { token, expires_at })
}

fn store_down(e: &crate::store::StoreError) -> CallError {
    tracing::error!(error = %e, "confirmation store unavailable");
    CallError::new(
        Classification::NotConfigured,
        "the broker cannot issue or check confirmation tokens right now (its store does not answer); nothing was sent; retry shortly",
    )
}

/// Checks a token against `(caller, tool, digest)`; with `spend`, spends it (once
/// across replicas). `Ok` lets the call through.
pub async fn redeem(
    cx: Context<'_>,
    tool: &Tool,
    caller: &str,
    digest: Bind<'_>,
    token: &str,
    spend: bool,
) -> Result<(), CallError> {
    match check_claims(cx, PURPOSE, tool, caller, digest, token, spend).await {
        Ok(None) => Ok(()),
        Ok(Some(refusal)) => Err(refusal.error(tool)),
        Err(e) => Err(store_down(&e)),
    }
}

/// Opens what [`seal_claims`] sealed for `purpose` and checks it against `(caller,
/// tool, digest)` and the clock; with `spend`, spends its id (once across replicas).
/// `Ok(None)` lets the call through; `Ok(Some(_))` says why not.
pub async fn check_claims(
    cx: Context<'_>,
    purpose: &str,
    tool: &Tool,
    caller: &str,
    digest: Bind<'_>,
    sealed: &str,
    spend: bool,
) -> Result<Option<Refusal>, crate::store::StoreError> {
    let Ok(claims) = cx
        .confirmations
        .sealer
        .open(&cx.store, purpose, sealed)
        .await?
    else {
        return Ok(Some(Refusal::Invalid));
    };
    let text = |k: &str| claims.get(k).and_then(Value::as_str).unwrap_or("");
    let expires = claims.get("exp").and_then(Value::as_i64).unwrap_or(0);
    let refusal = if text("tool") != tool.full_name || text("hash") != tool.descriptor_hash {
        Some(Refusal::OtherTool)
    } else if text("caller") != caller {
        Some(Refusal::OtherCaller)
    } else if text("args") != digest.args {
        Some(Refusal::OtherArguments)
    } else if digest
        .plan
        .is_some_and(|plan| claims.get("plan").and_then(Value::as_str) != plan)
    {
        Some(Refusal::PlanChanged)
    } else if expires <= cx.now().as_millisecond() {
        Some(Refusal::Expired)
    } else {
        None
    };
    if refusal.is_some() || !spend {
        return Ok(refusal);
    }
    prune_now_and_then(cx).await;
    let fresh = cx.store.spend_token(text("id"), expires).await?;
    Ok((!fresh).then_some(Refusal::Used))
}

/// How often a replica prunes spent-token ids (at most).
const PRUNE_EVERY_MS: i64 = 10 * 60 * 1000;
/// When this process last pruned.
static PRUNED: crate::store::Every = crate::store::Every::new();

/// Keeps `spent_tokens` small: ids of tokens expired for an hour are deleted, at most
/// every ten minutes per process, on the way to spending a token. A failure is logged
/// and changes nothing else.
async fn prune_now_and_then(cx: Context<'_>) {
    let now = cx.now().as_millisecond();
    if !PRUNED.due(now, PRUNE_EVERY_MS) {
        return;
    }
    match cx.store.prune_spent_tokens(now - 3_600_000).await {
        Ok(n) if n > 0 => tracing::info!(pruned = n, "expired spent-token ids pruned"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "spent-token ids not pruned"),
    }
}
