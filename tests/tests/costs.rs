//! What a call costs (docs/budgets.md): `meta.cost` on priced calls, their previews and
//! their settled answers; a deployment's own units and costs; costs that do not compile.

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker, config_error};

async fn upstream(answer: Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&server)
        .await;
    server
}

/// The shipped constant cost: estimated and charged; a preview shows the estimate only.
#[tokio::test]
async fn a_constant_cost_is_estimated_and_charged_and_a_preview_spends_nothing() {
    let server = upstream(json!({ "ok": true, "task_id": "t1" })).await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let key = [("x-agent-api-key", "ak_1")];
    let args = json!({ "message": { "content": "hi" } });
    let (status, preview) = broker.call("agent.create_task", args.clone(), &key).await;
    assert_eq!(status, 200, "{preview}");
    assert_eq!(preview["meta"]["dryRun"], true, "{preview}");
    assert_eq!(
        preview["meta"]["cost"],
        json!({ "estimate": { "credits": 1 } })
    );
    let mut confirmed = args;
    confirmed["confirm"] = json!(true);
    let (status, body) = broker.call("agent.create_task", confirmed, &key).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["meta"]["cost"],
        json!({ "estimate": { "credits": 1 }, "actual": { "credits": 1 } }),
        "{body}"
    );
    // A tool without a price says nothing.
    let (_, read) = broker
        .call(
            "agent.get_task_detail",
            json!({ "task_id": "t1" }),
            &[("x-agent-api-key", "ak_1")],
        )
        .await;
    assert!(read["meta"].get("cost").is_none(), "{read}");
}

/// Per item of an array argument, at most so many a call, settled by the answer's figure.
#[tokio::test]
async fn a_per_item_cost_counts_items_refuses_too_many_and_settles_to_the_answer() {
    let server = upstream(json!({ "credits_consumed": 2, "matches": [] })).await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let key = [("x-leads-api-key", "lk_1")];
    let people = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| json!({ "email": format!("p{i}@example.com") }))
            .collect()
    };
    let (status, body) = broker
        .call(
            "leads.leads_post_people_bulk_match",
            json!({ "body": { "details": people(3) }, "confirm": true }),
            &key,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["meta"]["cost"],
        json!({ "estimate": { "credits": 3 }, "actual": { "credits": 2 } }),
        "{body}"
    );
    let sent = server.received_requests().await.unwrap().len();
    let (status, body) = broker
        .call(
            "leads.leads_post_people_bulk_match",
            json!({ "body": { "details": people(11) }, "confirm": true }),
            &key,
        )
        .await;
    // The catalog's own bulk limit refuses it first; a price's `max_items` holds the
    // same line for tools without one (unit tests of `catalog::costs`).
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["classification"], "validation_error");
    assert_eq!(server.received_requests().await.unwrap().len(), sent);
}

/// Charged only when the answer holds what was paid for.
#[tokio::test]
async fn a_charge_depends_on_what_the_answer_holds() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "transcript": null })))
        .mount(&server)
        .await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let (status, body) = broker
        .call(
            "scraper.facebook_ad_library_ad_transcript",
            json!({ "id": "123" }),
            &[("x-scraper-api-key", "sk_1")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["meta"]["cost"],
        json!({ "estimate": { "credits": 1 }, "actual": { "credits": 0 } }),
        "{body}"
    );
}

/// A deployment's unit and an argument's value as the cost, in one currency only.
#[tokio::test]
async fn a_deployment_prices_refunds_by_their_amount_in_one_currency() {
    let server = upstream(json!({ "id": "re_1", "status": "succeeded" })).await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(
        r#"
[costs]
units = ["usd_cents"]

[[costs.cost]]
tool = "payments.post_refunds"
unit = "usd_cents"
amount = "/amount"
currency = { argument = "/currency", equals = "usd" }
"#
        .into(),
    );
    let broker = TestBroker::start(setup).await;
    let key = [("x-payments-api-key", "pk_1")];
    for (args, cost) in [
        (
            json!({ "charge": "ch_1", "amount": 4200, "currency": "usd", "confirm": true }),
            json!({ "estimate": { "usd_cents": 4200 }, "actual": { "usd_cents": 4200 } }),
        ),
        (
            json!({ "charge": "ch_1", "amount": 4200, "currency": "eur", "confirm": true }),
            json!({ "estimate": { "usd_cents": null } }),
        ),
    ] {
        let (status, body) = broker.call("payments.post_refunds", args, &key).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["meta"]["cost"], cost, "{body}");
    }
}

/// A deployment's costs compile with the catalog's: each mistake named.
#[tokio::test]
async fn a_deployment_cost_that_does_not_compile_stops_the_broker() {
    for (cost, expected) in [
        (
            "tool = \"agent.create_tsk\"\nconstant = 1",
            "did you mean `agent.create_task`?",
        ),
        ("service = \"nowhere\"\nconstant = 1", "match no tool"),
        (
            "tool = \"agent.create_task\"\nper_item = \"/messages\"",
            "has no argument `/messages`",
        ),
        (
            "tool = \"agent.create_task\"\nper_unit = \"/title\"",
            "is not of type integer",
        ),
        (
            "tool = \"agent.create_task\"\nconstant = 1\nunit = \"usd_cents\"",
            "unit `usd_cents` is not declared",
        ),
        (
            "tool = \"agent.create_task\"\nconstant = 1\nactual = \"$.nothing_here\"",
            "cannot match the answer",
        ),
        (
            "tool = \"agent.create_task\"\nconstant = 1\nper_unit = \"/title\"",
            "exactly one of",
        ),
    ] {
        let err = config_error(&format!("[[costs.cost]]\n{cost}\n")).await;
        assert!(err.contains(expected), "{cost}: {err}");
    }
}
