//! A missing upstream key asked for by URL on the MCP endpoint (decision 012).
//!
//! A call of a user with no key for the service answers, inside the engine, the
//! refusal `missing_required_credentials` with `details.connectUrl` (the hub's connect
//! link, sealed for that user). This endpoint turns it into the protocol's own request:
//!
//! - 2026-07-28, a client that declares URL-mode elicitation: an input-required result
//!   with one `elicitation/create` request in mode `url` (key [`INPUT_KEY`]) and a
//!   sealed `requestState` naming the caller. The retry carries the person's response
//!   and the state: the state is checked (caller, expiry, seal) and taken out, and the
//!   call runs again, with the key now stored. A decline or cancel answers the ordinary
//!   tool error instead of asking again.
//! - 2025-11-25 (the `MCP-Protocol-Version` header says so): JSON-RPC error `-32042`
//!   (URL elicitation required) with the elicitation in `data.elicitations`.
//! - any other client: the tool error, whose envelope holds the link.
//!
//! API keys are never collected by form elicitation: only the hub's page takes them.

use serde_json::{Value, json};

use super::{SERVER_INFO_KEY, code, error, result, server_info};
use crate::call::Broker;
use crate::caller::Caller;
use crate::hub::{CONNECT_TTL_MS, ROUND_PURPOSE};
use crate::reply::Reply;
use crate::run::Elicitation;

/// The key of the input request of a connect round.
pub const INPUT_KEY: &str = "hub_connect";
/// MCP 2025-11-25: URL elicitation required.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

/// How this request may be asked for a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// 2026-07-28 with URL-mode elicitation declared: an input-required result.
    InputRequired,
    /// 2025-11-25: error -32042.
    Error,
    /// Not at all: the tool error carries the link.
    No,
}

/// How a request of this era and these params may be asked: `modern` with the
/// client's declared capabilities, else by the negotiated version header.
pub fn ask_of(modern: bool, params: &Value, version_header: Option<&str>) -> Ask {
    if modern {
        let url_mode = super::client_capabilities(params)
            .and_then(|c| c.get("elicitation"))
            .and_then(|e| e.get("url"))
            .is_some_and(Value::is_object);
        return if url_mode {
            Ask::InputRequired
        } else {
            Ask::No
        };
    }
    if version_header == Some("2025-11-25") {
        Ask::Error
    } else {
        Ask::No
    }
}

/// Takes a connect round's response and state out of a retry, checking the state is
/// this deployment's, live and the caller's. `Ok(true)` when the person declined (the
/// call then answers its tool error rather than asking again); a refused state is the
/// `-32602` reply.
pub fn take_round(
    broker: &Broker,
    caller: &Caller,
    elicitation: &mut Elicitation,
    id: &Value,
) -> Result<bool, Reply> {
    let Some(response) = elicitation
        .responses
        .as_mut()
        .and_then(Value::as_object_mut)
        .and_then(|r| r.remove(INPUT_KEY))
    else {
        return Ok(false);
    };
    if elicitation
        .responses
        .as_ref()
        .and_then(Value::as_object)
        .is_some_and(serde_json::Map::is_empty)
    {
        elicitation.responses = None;
    }
    let state = elicitation.state.take();
    let opened = broker.hub.as_ref().and_then(|hub| {
        hub.cipher.open_statement(
            ROUND_PURPOSE,
            state.as_deref()?,
            broker.parts.now().as_millisecond(),
        )
    });
    let Some(claims) = opened.filter(|c| c["caller"] == caller.name.as_str()) else {
        return Err(error(
            id,
            code::INVALID_PARAMS,
            "the requestState of this connect round is stale, altered or another caller's: call the tool again without it",
            Some(json!({ "reason": "request_state_refused" })),
        ));
    };
    let _ = claims;
    Ok(response.get("action").and_then(Value::as_str) != Some("accept"))
}

/// The round a missing key answers on this endpoint, or `None` when `response` is not a
/// missing key with a connect link, or `ask` is [`Ask::No`].
pub fn round(
    broker: &Broker,
    caller: &Caller,
    id: &Value,
    response: &crate::answer::envelope::Enveloped,
    ask: Ask,
) -> Option<Reply> {
    if ask == Ask::No {
        return None;
    }
    let failure = response.body.get("error")?;
    let details = failure.get("details")?;
    let url = details.get("connectUrl")?.as_str()?;
    let service = details.get("service")?.as_str()?;
    let title = broker
        .parts
        .catalog
        .services
        .get(service)
        .map_or(service, |s| s.title.as_str());
    let by_oauth = broker
        .hub
        .as_ref()
        .is_some_and(|h| h.connections().by_flow(service));
    let message = if by_oauth {
        format!(
            "Connect your {title} account: open the link, sign in at {title} and agree; the broker's hub keeps the access it grants (never shown to the agent). Then the call can run."
        )
    } else {
        format!(
            "Connect your {title} account: open the link and store your key in the broker's hub (it is never shown to the agent). Then the call can run."
        )
    };
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw).ok()?;
    let elicitation_id = crate::catalog::identity::hex(&raw);
    let elicitation = json!({
        "mode": "url",
        "message": message,
        "url": url,
        "elicitationId": elicitation_id,
    });
    match ask {
        Ask::InputRequired => {
            let state = broker.hub.as_ref()?.cipher.seal_statement(
                ROUND_PURPOSE,
                &json!({
                    "caller": caller.name,
                    "svc": service,
                    "exp": broker.parts.now().as_millisecond() + CONNECT_TTL_MS,
                }),
            )?;
            Some(result(
                id,
                json!({
                    "resultType": "input_required",
                    "inputRequests": {
                        INPUT_KEY: { "method": "elicitation/create", "params": elicitation }
                    },
                    "requestState": state,
                    "_meta": { SERVER_INFO_KEY: server_info() },
                }),
            ))
        }
        Ask::Error => Some(error(
            id,
            URL_ELICITATION_REQUIRED,
            failure
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("this call needs your key"),
            Some(json!({ "elicitations": [elicitation] })),
        )),
        Ask::No => None,
    }
}
