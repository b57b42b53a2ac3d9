//! Human confirmation through the MCP client's own interface (decision 008):
//! the 2026-07-28 multi-round trip with an `elicitation/create` input request.
//!
//! When a `tools/call` on `/mcp` declares the elicitation capability in its `_meta`, a
//! write under `human` that asks to run answers an input-required result instead of an
//! approval link: one form-mode elicitation (key [`INPUT_KEY`]) showing the person what
//! will be sent, and a sealed `requestState` bound like a confirmation token (caller,
//! tool, descriptor hash, the arguments' digest, an expiry). The client shows the form
//! and repeats the call with `inputResponses` and the `requestState`; the broker opens the
//! state, spends it (once across replicas, like a token), and runs the write only when
//! the person accepted with `approve = true`. A decline or a cancel is
//! `confirmation_declined`. A state that is altered, expired, spent or bound to other
//! arguments, and a retry without the response, are JSON-RPC errors (`-32602`) on the
//! MCP endpoint; nothing is sent upstream in any of these cases.
//!
//! Inside the engine the rounds travel as ordinary refusals whose `details.reason` is
//! [`INPUT_REQUIRED`] or [`STATE_REFUSED`]; the MCP endpoint turns them into its own shapes
//! (`mcp::mod`), and no other endpoint ever sees them (only `/mcp` brings an
//! [`crate::run::Elicitation`]).

use serde_json::{Value, json};

use crate::catalog::Tool;
use crate::confirm::Context;
use crate::error::{CallError, Classification};

/// The key of the one input request the broker sends.
pub const INPUT_KEY: &str = "approval";
/// The form's one field: the person ticks it to approve.
pub const FIELD: &str = "approve";
/// `details.reason` of a refusal that is an input-required round.
pub const INPUT_REQUIRED: &str = "input_required";
/// `details.reason` of a refused `requestState` (or a retry without the response).
pub const STATE_REFUSED: &str = "request_state_refused";
/// The seal purpose of request states.
const PURPOSE: &str = "elicit";
/// How much of the request body the message shows before it says it was cut.
const MAX_BODY_CHARS: usize = 8_000;

fn list(value: &Value) -> String {
    value
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// The text the person reads: tool, caller key, method and path, the redacted body,
/// risk, kinds of change, credits and the expiry.
pub fn message(tool: &Tool, key_name: &str, preview: &Value, expires_at: &str) -> String {
    let request = &preview["request"];
    let target = request["url"]
        .as_str()
        .or(request["path"].as_str())
        .unwrap_or("");
    let body = match preview["plan"].as_array() {
        Some(plan) => Value::Array(
            plan.iter()
                .map(|w| w.get("body").cloned().unwrap_or(Value::Null))
                .collect(),
        ),
        None => request
            .get("body")
            .or(request.get("json"))
            .cloned()
            .unwrap_or_else(|| preview["arguments"].clone()),
    };
    let mut body = serde_json::to_string_pretty(&body).unwrap_or_default();
    let total = body.chars().count();
    if total > MAX_BODY_CHARS {
        body = body.chars().take(MAX_BODY_CHARS).collect();
        body.push_str(&format!(
            "\n... ({} more characters not shown)",
            total - MAX_BODY_CHARS
        ));
    }
    let method = request["method"].as_str().unwrap_or("");
    let request_line = match preview["plan"].as_array() {
        // A tool that runs others: the approval covers exactly these writes.
        Some(plan) => {
            let mut lines = format!(
                "{} write{}, in this order:",
                plan.len(),
                if plan.len() == 1 { "" } else { "s" }
            );
            for (i, write) in plan.iter().enumerate() {
                lines.push_str(&format!(
                    "\n  {}. {} {} ({})",
                    i + 1,
                    write["method"].as_str().unwrap_or(""),
                    write["path"].as_str().unwrap_or(""),
                    write["tool"].as_str().unwrap_or("")
                ));
            }
            lines
        }
        None if method.is_empty() && target.is_empty() => "(run by the broker itself)".to_string(),
        None => format!("{method} {target}"),
    };
    format!(
        "Approve this write? Nothing is sent unless you approve.\n\
Tool: {} ({})\nAsked by: {}\nRequest: {request_line}\n\
Risk: {}; kinds of change: {}; spends credits: {}\nValid until: {expires_at}\n\
What would be sent:\n{body}",
        preview["title"].as_str().unwrap_or(""),
        tool.full_name,
        super::page::asked_by(key_name),
        preview["risk"].as_str().unwrap_or("write"),
        list(&preview["classes"]),
        if preview["consumesCredits"] == true {
            "yes"
        } else {
            "no"
        },
    )
}

/// The form: one required boolean the person must tick.
pub fn requested_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            FIELD: {
                "type": "boolean",
                "title": "Approve this write",
                "description": "Tick to run it once, exactly as shown; decline to send nothing.",
                "default": false
            }
        },
        "required": [FIELD]
    })
}

fn store_down(e: &crate::store::StoreError) -> CallError {
    tracing::error!(error = %e, "request-state store unavailable");
    CallError::new(
        Classification::NotConfigured,
        "the broker cannot seal or check the approval state right now (its store does not answer); nothing was sent; retry shortly",
    )
}

/// The first round: the input request and a sealed state for exactly this call.
pub async fn ask(
    cx: Context<'_>,
    tool: &Tool,
    ctx: &crate::run::RequestCtx<'_>,
    caller: &str,
    digest: crate::confirm::Bind<'_>,
    preview: &Value,
) -> CallError {
    let issued = match crate::confirm::bound::seal_claims(
        cx,
        PURPOSE,
        cx.confirmations.approval_ttl_seconds,
        tool,
        caller,
        digest,
    )
    .await
    {
        Ok(issued) => issued,
        Err(e) => return store_down(&e),
    };
    let expires_at = issued.expires_at.to_string();
    let mut e = CallError::new(
        Classification::ConfirmationRequired,
        format!(
            "the user must approve this write in the MCP client: nothing was sent yet (until {expires_at})"
        ),
    );
    e.details = Some(json!({
        "reason": INPUT_REQUIRED,
        "inputRequests": {
            INPUT_KEY: {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": message(tool, &ctx.caller.name, preview, &expires_at),
                    "requestedSchema": requested_schema(),
                }
            }
        },
        "requestState": issued.token,
        "expiresAt": expires_at,
    }));
    e
}

fn refused(tool: &Tool, reason: &str, what: &str) -> CallError {
    let mut e = CallError::new(
        Classification::ConfirmationRequired,
        format!(
            "{what}: nothing was sent; call `{}` again without requestState to ask the user anew",
            tool.full_name
        ),
    );
    e.details = Some(json!({ "reason": STATE_REFUSED, "refusal": reason }));
    e
}

/// The person's decision, as the retry carries it.
enum Choice {
    Approve,
    Decline(&'static str),
}

fn read_decision(tool: &Tool, responses: Option<&Value>) -> Result<Choice, CallError> {
    let Some(response) = responses.and_then(|r| r.get(INPUT_KEY)) else {
        return Err(refused(
            tool,
            "no_response",
            &format!("the retry carries a requestState but no `inputResponses.{INPUT_KEY}`"),
        ));
    };
    match response.get("action").and_then(Value::as_str) {
        Some("accept") => Ok(
            if response.pointer(&format!("/content/{FIELD}")) == Some(&Value::Bool(true)) {
                Choice::Approve
            } else {
                Choice::Decline("accepted the form without ticking approve")
            },
        ),
        Some("decline") => Ok(Choice::Decline("declined")),
        Some("cancel") => Ok(Choice::Decline("dismissed the request")),
        _ => Err(refused(
            tool,
            "bad_response",
            &format!(
                "`inputResponses.{INPUT_KEY}.action` must be \"accept\", \"decline\" or \"cancel\""
            ),
        )),
    }
}

/// The retry of a tool that runs others, looked at before its plan is read again: a
/// decline ends it here (spent and audited by [`answer`]); an approval's state is
/// checked but not spent, since [`answer`] spends it once the plan is known unchanged.
pub async fn check(
    cx: Context<'_>,
    tool: &Tool,
    ctx: &crate::run::RequestCtx<'_>,
    caller: &str,
    digest: crate::confirm::Bind<'_>,
    elicitation: &crate::run::Elicitation,
) -> Result<(), CallError> {
    if !matches!(
        read_decision(tool, elicitation.responses.as_ref())?,
        Choice::Approve
    ) {
        return answer(cx, tool, ctx, caller, digest, elicitation).await;
    }
    check_state(cx, tool, caller, digest, elicitation, false).await
}

/// The retry's `requestState` checked against `(caller, tool, digest)`; with `spend`,
/// spent (once across replicas).
async fn check_state(
    cx: Context<'_>,
    tool: &Tool,
    caller: &str,
    digest: crate::confirm::Bind<'_>,
    elicitation: &crate::run::Elicitation,
    spend: bool,
) -> Result<(), CallError> {
    let state = elicitation.state.as_deref().unwrap_or("");
    let refusal =
        crate::confirm::bound::check_claims(cx, PURPOSE, tool, caller, digest, state, spend)
            .await
            .map_err(|e| store_down(&e))?;
    match refusal {
        Some(r) => Err(refused(
            tool,
            r.as_str(),
            &format!("the requestState {}", r.words()),
        )),
        None => Ok(()),
    }
}

/// The retry: checks the response and the state, spends the state, audits the
/// decision. `Ok` lets the write run (once).
pub async fn answer(
    cx: Context<'_>,
    tool: &Tool,
    ctx: &crate::run::RequestCtx<'_>,
    caller: &str,
    digest: crate::confirm::Bind<'_>,
    elicitation: &crate::run::Elicitation,
) -> Result<(), CallError> {
    let answer = read_decision(tool, elicitation.responses.as_ref())?;
    check_state(cx, tool, caller, digest, elicitation, true).await?;
    let approve = matches!(answer, Choice::Approve);
    crate::confirm::audit::decided(
        cx.parts,
        crate::confirm::audit::Decided {
            key_name: &ctx.caller.name,
            tool: &tool.full_name,
            descriptor_hash: &tool.descriptor_hash,
            args_sha256: digest.args,
            approve,
            by: "human:elicitation".into(),
            trace_id: ctx.trace.id.clone(),
        },
    )
    .await;
    match answer {
        Choice::Approve => Ok(()),
        Choice::Decline(how) => Err(CallError::new(
            Classification::ConfirmationDeclined,
            format!(
                "the user {how} in the MCP client: nothing was sent; do not retry this write unless the user asks again"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_is_one_required_boolean() {
        let schema = requested_schema();
        assert_eq!(schema["required"], json!([FIELD]));
        assert_eq!(schema["properties"][FIELD]["type"], "boolean");
    }
}
