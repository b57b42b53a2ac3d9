//! Human confirmation through the MCP client (engine/core/src/confirm/approval/elicit.rs): a
//! 2026-07-28 client that declares elicitation gets an input-required result showing
//! the write; the retry with the person's acceptance runs it once; a decline sends
//! nothing; an altered, replayed, expired or rebound `requestState` is a JSON-RPC error
//! with nothing sent; previews stay free.

use serde_json::{Value, json};
use wiremock::MockServer;

use crate::support::approval::{KEY, create, human_broker};
use crate::support::{TestBroker, posts};

/// A 2026-07-28 `tools/call` with the headers that must match it; `elicit` declares the
/// capability. Returns `(status, JSON-RPC reply)`.
async fn call(
    broker: &TestBroker,
    name: &str,
    arguments: Value,
    elicit: bool,
    round: Option<(Value, &str)>,
) -> (u16, Value) {
    let capabilities = if elicit {
        json!({ "elicitation": { "form": {} } })
    } else {
        json!({})
    };
    let mut params = json!({ "name": name, "arguments": arguments });
    if let Some((responses, state)) = round {
        params["inputResponses"] = responses;
        params["requestState"] = json!(state);
    }
    crate::support::mcp_modern(broker, "tools/call", params, capabilities, name, &[KEY]).await
}

const TOOL: &str = "payments.post_customers";

/// The first round: `(reply result, requestState)`.
async fn ask(broker: &TestBroker, arguments: Value) -> (Value, String) {
    let (status, reply) = call(broker, TOOL, arguments, true, None).await;
    assert_eq!(status, 200, "{reply}");
    let result = reply["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{reply}");
    let state = result["requestState"].as_str().unwrap().to_string();
    (result, state)
}

fn accept(approve: bool) -> Value {
    json!({ "approval": { "action": "accept", "content": { "approve": approve } } })
}

/// The retry of a round of the tool's usual call: `response` with `state`.
async fn answer(broker: &TestBroker, response: Value, state: &str) -> (u16, Value) {
    call(
        broker,
        TOOL,
        create(json!({})),
        true,
        Some((response, state)),
    )
    .await
}

fn state_reason(reply: &Value) -> &str {
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    reply["error"]["data"]["reason"].as_str().unwrap_or("")
}

#[tokio::test]
async fn the_person_approves_in_the_client_and_the_write_runs_once() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = human_broker(&server, dir.path()).await;
    let (result, state) = ask(&broker, create(json!({}))).await;
    assert_eq!(posts(&server).await, 0, "asking sends nothing");
    let request = &result["inputRequests"]["approval"];
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["mode"], "form");
    let message = request["params"]["message"].as_str().unwrap();
    for shown in [
        TOOL,
        "POST",
        "/v1/customers",
        "Customer-Canary-Jo",
        "Risk: write",
        "spends credits: no",
    ] {
        assert!(message.contains(shown), "`{shown}` not in: {message}");
    }
    assert!(!message.contains(KEY.1) && !result.to_string().contains(KEY.1));
    assert_eq!(
        request["params"]["requestedSchema"]["properties"]["approve"]["type"],
        "boolean"
    );
    assert!(!state.contains("Customer-Canary-Jo"));

    // The retry without the response is refused and keeps the state usable.
    let (status, reply) = answer(&broker, json!({}), &state).await;
    assert_eq!((status, state_reason(&reply)), (400, "no_response"));

    let (status, reply) = answer(&broker, accept(true), &state).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(reply["result"]["structuredContent"]["data"]["id"], "cus_1");
    assert_eq!(posts(&server).await, 1);
    let sent =
        String::from_utf8_lossy(&server.received_requests().await.unwrap()[0].body).to_string();
    assert!(!sent.contains("requestState") && !sent.contains(&state));

    // Replayed: refused, nothing sent.
    let (status, reply) = answer(&broker, accept(true), &state).await;
    assert_eq!((status, state_reason(&reply)), (400, "used"));
    assert_eq!(posts(&server).await, 1);

    let records = crate::support::audit(&broker).await;
    assert!(
        records.iter().any(|r| r.outcome.as_str() == "approved"
            && r.confirmation.as_deref() == Some("human:elicitation")),
        "{records:?}"
    );
    assert_eq!(
        records
            .iter()
            .filter(|r| r.outcome.as_str() == "executed")
            .count(),
        1
    );
    assert!(!crate::support::all_logs().contains(&state));
}

#[tokio::test]
async fn a_decline_or_an_unticked_form_sends_nothing() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = human_broker(&server, dir.path()).await;
    for response in [
        json!({ "approval": { "action": "decline" } }),
        json!({ "approval": { "action": "cancel" } }),
        accept(false),
    ] {
        let (_, state) = ask(&broker, create(json!({}))).await;
        let (status, reply) = answer(&broker, response.clone(), &state).await;
        assert_eq!(status, 200, "{reply}");
        assert_eq!(reply["result"]["isError"], true, "{response}");
        assert_eq!(
            reply["result"]["structuredContent"]["error"]["classification"],
            "confirmation_declined"
        );
        // A declined state cannot be answered again with an acceptance.
        let (status, reply) = answer(&broker, accept(true), &state).await;
        assert_eq!((status, state_reason(&reply)), (400, "used"));
    }
    assert_eq!(posts(&server).await, 0);
}

#[tokio::test]
async fn an_altered_or_rebound_state_is_a_protocol_error() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = human_broker(&server, dir.path()).await;
    let (_, state) = ask(&broker, create(json!({}))).await;
    // One character changed in the sealed body.
    let mut altered: Vec<char> = state.chars().collect();
    let i = altered.len() / 2;
    altered[i] = if altered[i] == 'A' { 'B' } else { 'A' };
    let altered: String = altered.into_iter().collect();
    let other_args = create(json!({ "name": "Someone-Else" }));
    for (arguments, sealed, reason) in [
        (create(json!({})), altered.as_str(), "invalid"),
        (create(json!({})), "not-a-state", "invalid"),
        (other_args, state.as_str(), "other_arguments"),
    ] {
        let (status, reply) =
            call(&broker, TOOL, arguments, true, Some((accept(true), sealed))).await;
        assert_eq!((status, state_reason(&reply)), (400, reason), "{reply}");
    }
    // Another tool with the same state.
    let (status, reply) = call(
        &broker,
        "payments.post_products",
        json!({ "name": "x", "confirm": true }),
        true,
        Some((accept(true), &state)),
    )
    .await;
    assert_eq!(
        (status, state_reason(&reply)),
        (400, "other_tool"),
        "{reply}"
    );
    // Malformed rounds are invalid params too.
    let (status, reply) = answer(
        &broker,
        json!({ "approval": { "action": "maybe" } }),
        &state,
    )
    .await;
    assert_eq!((status, state_reason(&reply)), (400, "bad_response"));
    assert_eq!(posts(&server).await, 0);
    // The state was never spent by these: the person's acceptance still runs it.
    let (_, reply) = answer(&broker, accept(true), &state).await;
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(posts(&server).await, 1);
}

#[tokio::test]
async fn a_state_spent_on_one_replica_is_spent_on_the_other() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let one = human_broker(&server, dir.path()).await;
    let two = human_broker(&server, dir.path()).await;
    let (_, state) = ask(&one, create(json!({}))).await;
    let round = || Some((accept(true), state.as_str()));
    let (_, reply) = call(&two, TOOL, create(json!({})), true, round()).await;
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let (status, reply) = call(&one, TOOL, create(json!({})), true, round()).await;
    assert_eq!((status, state_reason(&reply)), (400, "used"));
    assert_eq!(posts(&server).await, 1);
}

#[tokio::test]
async fn clients_that_cannot_elicit_get_the_page_and_previews_stay_free() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = human_broker(&server, dir.path()).await;
    let (status, reply) = call(&broker, TOOL, create(json!({})), false, None).await;
    assert_eq!(status, 200);
    assert_eq!(reply["result"]["resultType"], "complete");
    assert_eq!(
        reply["result"]["structuredContent"]["error"]["details"]["reason"],
        "approval_pending"
    );
    // Without the flag the call does not ask to run: the contract's own answer (here its
    // refusal naming the flag), with no approval and no round asked for.
    let (_, reply) = call(
        &broker,
        TOOL,
        json!({ "name": "Customer-Canary-Jo" }),
        true,
        None,
    )
    .await;
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    let envelope = &reply["result"]["structuredContent"];
    assert_eq!(envelope["error"]["classification"], "confirmation_required");
    assert!(envelope["error"].get("details").is_none(), "{reply}");
    // Through the discovery tools's call_tool, the round is the same.
    let (status, reply) = call(
        &broker,
        "call_tool",
        json!({ "name": TOOL, "arguments": create(json!({})) }),
        true,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    let state = reply["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, reply) = call(
        &broker,
        "call_tool",
        json!({ "name": TOOL, "arguments": create(json!({})) }),
        true,
        Some((accept(true), &state)),
    )
    .await;
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(posts(&server).await, 1);
}
