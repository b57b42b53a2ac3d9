//! `POST /webhooks/<service>` (engine/src/webhook.rs): imagegen's callbacks, verified
//! by the shared bearer secret the deployment configures, update the jobs callers
//! submitted; anything unverified stores nothing; a redelivery changes nothing.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker};

const SECRET: &str = "whsec_canary_0123456789";
const IMAGEGEN_KEY: (&str, &str) = ("x-imagegen-api-key", "ik_webhook_key");

async fn broker(server: &MockServer, with_secret: bool) -> TestBroker {
    broker_on(server, with_secret, None).await
}

async fn broker_on(
    server: &MockServer,
    with_secret: bool,
    store: Option<tool_broker::store::Store>,
) -> TestBroker {
    Mock::given(method("POST"))
        .and(path("/generations"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "sdGenerationJob": { "generationId": "gen-42" } })),
        )
        .mount(server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.store = store;
    if with_secret {
        setup.config =
            Some("[webhook_secrets.imagegen]\nenv = \"IMAGEGEN_WEBHOOK_SECRET\"\n".into());
        setup
            .env
            .insert("IMAGEGEN_WEBHOOK_SECRET".into(), SECRET.into());
    }
    TestBroker::start(setup).await
}

fn callback(id: &str, status: &str) -> Value {
    json!({
        "type": "image_generation.complete",
        "object": "generation",
        "timestamp": "2026-11-23T01:00:00Z",
        "data": { "object": { "id": id, "status": status, "prompt": "a lighthouse",
                               "apiKey": "leaked-upstream-key" } }
    })
}

async fn post(broker: &TestBroker, body: &[u8], auth: Option<&str>) -> (u16, Value) {
    let bearer = auth.map(|a| format!("Bearer {a}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(b) = &bearer {
        headers.push(("authorization", b.as_str()));
    }
    let (status, _, text) = broker
        .send(
            reqwest::Method::POST,
            "/webhooks/imagegen",
            Some(body.to_vec()),
            &headers,
        )
        .await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn jobs(broker: &TestBroker) -> Value {
    let (status, body) = broker
        .call("imagegen.list_generation_jobs", json!({}), &[IMAGEGEN_KEY])
        .await;
    assert_eq!(status, 200, "{body}");
    body["data"]["jobs"].clone()
}

#[tokio::test]
async fn a_verified_callback_updates_the_job_once_and_nothing_else_is_stored() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = tool_broker::store::Store::open(&tool_broker::store::StoreConfig::Sqlite(
        dir.path().to_path_buf(),
    ))
    .await
    .unwrap();
    let broker = broker_on(&server, true, Some(store)).await;
    let (status, _) = broker
        .call(
            "imagegen.create_generation",
            json!({ "prompt": "a lighthouse", "confirm": true }),
            &[IMAGEGEN_KEY],
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(jobs(&broker).await[0]["status"], Value::Null);
    let body = callback("gen-42", "COMPLETE").to_string().into_bytes();

    // Unverified: no proof, a wrong one, a bare secret without its prefix.
    for auth in [None, Some("wrong"), Some(&SECRET[..SECRET.len() - 1])] {
        let (status, answer) = post(&broker, &body, auth).await;
        assert_eq!(status, 401, "{answer}");
        assert!(!answer.to_string().contains(SECRET));
    }
    assert_eq!(
        jobs(&broker).await[0]["status"],
        Value::Null,
        "nothing stored"
    );

    let (status, answer) = post(&broker, &body, Some(SECRET)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({ "received": true, "duplicate": false, "jobsUpdated": 1 })
    );
    let listed = jobs(&broker).await;
    assert_eq!(listed[0]["id"], "gen-42");
    assert_eq!(listed[0]["status"], "COMPLETE");
    assert_eq!(listed[0]["state"], "succeeded", "the catalog's states map");

    // A redelivery changes nothing, even after a later status was noted.
    let failed = callback("gen-42", "FAILED").to_string().into_bytes();
    let (_, answer) = post(&broker, &failed, Some(SECRET)).await;
    assert_eq!(answer["jobsUpdated"], 1);
    let (status, answer) = post(&broker, &body, Some(SECRET)).await;
    assert_eq!((status, &answer["duplicate"]), (200, &json!(true)));
    assert_eq!(jobs(&broker).await[0]["status"], "FAILED");

    // An unknown job is received and changes nothing; no upstream call is ever made.
    let (status, answer) = post(
        &broker,
        &callback("gen-unknown", "COMPLETE").to_string().into_bytes(),
        Some(SECRET),
    )
    .await;
    assert_eq!((status, &answer["jobsUpdated"]), (200, &json!(0)));
    let calls = server.received_requests().await.unwrap().len();
    assert_eq!(calls, 1, "only the submit reached the upstream");

    // Not JSON, and too big.
    let (status, _) = post(&broker, b"not json", Some(SECRET)).await;
    assert_eq!(status, 400);
    let big = vec![b' '; 300 * 1024];
    let (status, _) = post(&broker, &big, Some(SECRET)).await;
    assert_eq!(status, 413);

    // check_configuration says the receiver is ready, never the secret.
    let (_, config) = broker
        .call("imagegen.check_configuration", json!({}), &[])
        .await;
    assert_eq!(config["data"]["webhookReceiver"], true, "{config}");
    assert!(!config.to_string().contains(SECRET));
    let (_, setup) = broker
        .call("imagegen.get_callback_setup", json!({}), &[])
        .await;
    assert_eq!(
        setup["data"]["receiver"],
        json!({ "path": "/webhooks/imagegen", "secretConfigured": true }),
        "{setup}"
    );
    assert!(!setup.to_string().contains(SECRET));

    // The stored payloads are redacted like any answer: no secret, no credential value.
    drop(broker);
    let text = crate::support::folder_text(dir.path());
    assert!(
        text.contains("image_generation.complete"),
        "the events are stored"
    );
    for secret in [SECRET, "leaked-upstream-key", IMAGEGEN_KEY.1] {
        assert!(!text.contains(secret), "`{secret}` is in the store");
    }
}

#[tokio::test]
async fn without_a_secret_or_a_webhook_spec_callbacks_are_refused() {
    let server = MockServer::start().await;
    let broker = broker(&server, false).await;
    let body = callback("gen-42", "COMPLETE").to_string().into_bytes();
    let (status, answer) = post(&broker, &body, Some(SECRET)).await;
    assert_eq!(status, 503, "{answer}");
    let (status, _, _) = broker
        .send(
            reqwest::Method::POST,
            "/webhooks/hosting",
            Some(body.clone()),
            &[],
        )
        .await;
    assert_eq!(status, 404);
    let (_, config) = broker
        .call("imagegen.check_configuration", json!({}), &[])
        .await;
    assert_eq!(config["data"]["webhookReceiver"], false);
    // A config naming a service without [webhook] is refused at start.
    let err = crate::support::config_error("[webhook_secrets.hosting]\nenv = \"X\"\n").await;
    assert!(err.contains("has no [webhook]"), "{err}");
}
