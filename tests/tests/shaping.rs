//! payments answers: compact by default, `response_mode = "full"`, `fields` projection;
//! none of the three is sent upstream.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker};

const KEY: (&str, &str) = ("x-payments-api-key", "pk_shape_key");

fn customers() -> Value {
    json!({
        "object": "list", "url": "/v1/customers", "has_more": true,
        "data": [{
            "id": "cus_1", "object": "customer", "email": "a@example.invalid", "name": "Ada",
            "balance": 0, "created": 1700000000, "livemode": false,
            "address": { "city": "Oslo", "line1": "Street 1" },
            "metadata": { "plan": "gold" },
            "default_source": { "id": "card_1", "object": "card", "last4": "4242" },
            "tax_ids": { "object": "list", "data": [] }
        }]
    })
}

async fn call(args: Value) -> (Value, Vec<(String, String)>) {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/customers"))
        .respond_with(ResponseTemplate::new(200).set_body_json(customers()))
        .mount(&server)
        .await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let (status, body) = broker.call("payments.get_customers", args, &[KEY]).await;
    assert_eq!(status, 200, "{body}");
    let request = server.received_requests().await.unwrap().remove(0);
    let query = request
        .url
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    (body["data"].clone(), query)
}

#[tokio::test]
async fn compact_is_the_default() {
    let (data, query) = call(json!({ "limit": 1 })).await;
    assert_eq!(query, vec![("limit".to_string(), "1".to_string())]);
    assert_eq!(
        data,
        json!({
            "object": "list", "url": "/v1/customers", "has_more": true,
            "data": [{ "id": "cus_1", "object": "customer", "email": "a@example.invalid",
                       "name": "Ada", "balance": 0, "created": 1700000000 }]
        })
    );
}

#[tokio::test]
async fn full_returns_whole_objects() {
    let (data, query) = call(json!({ "response_mode": "full" })).await;
    assert!(query.is_empty(), "{query:?}");
    assert_eq!(data["data"][0]["address"]["city"], "Oslo");
    assert_eq!(data["data"][0]["default_source"]["last4"], "4242");
}

#[tokio::test]
async fn fields_keep_exactly_the_named_paths() {
    let (data, query) = call(json!({ "fields": ["id", "address.city", "metadata.plan"] })).await;
    assert!(query.is_empty(), "{query:?}");
    assert_eq!(
        data["data"][0],
        json!({ "id": "cus_1", "address": { "city": "Oslo" }, "metadata": { "plan": "gold" } })
    );
}

#[tokio::test]
async fn a_bad_mode_or_field_path_is_refused_before_sending() {
    let server = MockServer::start().await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    for args in [
        json!({ "response_mode": "tiny" }),
        json!({ "fields": ["address..city"] }),
    ] {
        let (status, body) = broker.call("payments.get_customers", args, &[KEY]).await;
        assert_eq!(status, 422, "{body}");
    }
    assert!(server.received_requests().await.unwrap().is_empty());
}
