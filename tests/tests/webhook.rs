//! `POST /webhooks/<service>` (engine/core/src/webhook/): imagegen's callbacks, verified by
//! the shared bearer secret the deployment configures, and agent task events, verified
//! by RSA signature over the message the catalog states with a freshness window, update
//! the jobs callers submitted; anything unverified stores nothing; a redelivery changes
//! nothing; no callback makes an upstream call.

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

/// A refused callback's body: the one error shape (docs/behaviour.md, "Error bodies"),
/// with `classification` and a message that says something.
fn refusal(answer: &Value, classification: &str) {
    assert_eq!(
        answer["error"]["classification"], classification,
        "{answer}"
    );
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "{answer}");
    assert_eq!(
        answer.as_object().map(serde_json::Map::len),
        Some(1),
        "{answer}"
    );
    assert_eq!(
        answer["error"].as_object().map(serde_json::Map::len),
        Some(2),
        "{answer}"
    );
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
    let store = crate::support::sqlite_store(dir.path()).await;
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
        refusal(&answer, "unauthorized");
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
    let (status, answer) = post(&broker, b"not json", Some(SECRET)).await;
    assert_eq!(status, 400);
    refusal(&answer, "invalid_request");
    let big = vec![b' '; 300 * 1024];
    let (status, answer) = post(&broker, &big, Some(SECRET)).await;
    assert_eq!(status, 413);
    refusal(&answer, "payload_too_large");

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
    refusal(&answer, "not_configured");
    let (status, _, text) = broker
        .send(
            reqwest::Method::POST,
            "/webhooks/hosting",
            Some(body.clone()),
            &[],
        )
        .await;
    assert_eq!(status, 404);
    refusal(&serde_json::from_str(&text).unwrap(), "not_found");
    let (_, config) = broker
        .call("imagegen.check_configuration", json!({}), &[])
        .await;
    assert_eq!(config["data"]["webhookReceiver"], false);
    // A config naming a service without [webhook] is refused at start.
    let err = crate::support::config_error("[webhook_secrets.hosting]\nenv = \"X\"\n").await;
    assert!(err.contains("has no [webhook]"), "{err}");
}

/// An RSA key pair like the agent upstream's, and its public key as PEM.
fn agent_signer() -> (aws_lc_rs::rsa::KeyPair, String) {
    use aws_lc_rs::encoding::AsDer;
    use aws_lc_rs::signature::KeyPair as _;
    use base64::Engine as _;
    let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let der = pair.public_key().as_der().unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let pem = format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
        lines.join("\n")
    );
    (pair, pem)
}

/// Signs like the agent upstream: RSA-SHA256 over `{timestamp}.{url}.{sha256 hex of body}`.
fn agent_sign(pair: &aws_lc_rs::rsa::KeyPair, at: i64, url: &str, body: &[u8]) -> String {
    use base64::Engine as _;
    use sha2::Digest;
    let digest: String = sha2::Sha256::digest(body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let message = format!("{at}.{url}.{digest}");
    let mut signature = vec![0; pair.public_modulus_len()];
    pair.sign(
        &aws_lc_rs::signature::RSA_PKCS1_SHA256,
        &aws_lc_rs::rand::SystemRandom::new(),
        message.as_bytes(),
        &mut signature,
    )
    .unwrap();
    base64::engine::general_purpose::STANDARD.encode(signature)
}

const AGENT_KEY: (&str, &str) = ("x-agent-api-key", "ak_caller_canary_31");
const AGENT_FETCH_KEY: &str = "ak_deployment_fetch_canary_59";
const AGENT_URL: &str = "https://broker.example.test/webhooks/agent";

fn task_event(event: &str, task: &str, stop_reason: Option<&str>) -> Vec<u8> {
    let mut detail = json!({ "task_id": task, "task_title": "Quarterly report",
                             "task_url": format!("https://agent.example/app/{task}") });
    if let Some(reason) = stop_reason {
        detail["stop_reason"] = json!(reason);
        detail["message"] = json!("done; token=sk_live_in_message");
    }
    json!({ "event_id": event, "event_type": if stop_reason.is_some() { "task_stopped" } else { "task_created" },
            "task_detail": detail })
    .to_string()
    .into_bytes()
}

async fn post_agent(
    broker: &TestBroker,
    body: &[u8],
    signature: &str,
    timestamp: &str,
) -> (u16, Value) {
    let headers = [
        ("content-type", "application/json"),
        ("x-webhook-signature", signature),
        ("x-webhook-timestamp", timestamp),
    ];
    let (status, _, text) = broker
        .send(
            reqwest::Method::POST,
            "/webhooks/agent",
            Some(body.to_vec()),
            &headers,
        )
        .await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn agent_tasks(broker: &TestBroker) -> Value {
    let (status, body) = broker
        .call("agent.list_my_tasks", json!({}), &[AGENT_KEY])
        .await;
    assert_eq!(status, 200, "{body}");
    body["data"]["jobs"].clone()
}

#[expect(
    clippy::too_many_lines,
    reason = "one table of signed events and the refusals of each way a signature can be wrong"
)]
#[tokio::test]
async fn agent_task_events_are_verified_by_rsa_signature_over_the_stated_message() {
    let server = MockServer::start().await;
    let (pair, pem) = agent_signer();
    Mock::given(method("POST"))
        .and(path("/v2/task.create"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({ "ok": true, "task_id": "task-7" })),
        )
        .mount(&server)
        .await;
    // The key is fetched with the deployment's key, once, never from a callback.
    Mock::given(method("GET"))
        .and(path("/v2/webhook.publicKey"))
        .and(wiremock::matchers::header(
            "x-manus-api-key",
            AGENT_FETCH_KEY,
        ))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "ok": true, "public_key": pem, "algorithm": "RSA-SHA256" })),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/task.detail"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(
                json!({ "ok": true, "task": { "id": "task-7", "status": "waiting" } }),
            ),
        )
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(format!(
        "[webhook_secrets.agent]\napi_key_env = \"AGENT_FETCH_KEY\"\nurl = \"{AGENT_URL}\"\n"
    ));
    setup
        .env
        .insert("AGENT_FETCH_KEY".into(), AGENT_FETCH_KEY.into());
    let broker = TestBroker::start(setup).await;

    let (status, body) = broker
        .call(
            "agent.create_task",
            json!({ "message": { "content": "write the report" }, "confirm": true }),
            &[AGENT_KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(agent_tasks(&broker).await[0]["id"], "task-7");

    // The receiver is ready once the background fetch has the key (bounded wait).
    let mut ready = false;
    for _ in 0..100 {
        let (_, config) = broker
            .call("agent.check_configuration", json!({}), &[])
            .await;
        if config["data"]["webhookReceiver"] == true {
            ready = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(ready, "the public key was never fetched");

    let now = jiff::Timestamp::now().as_second();
    let stopped = task_event("evt-stop-1", "task-7", Some("finish"));
    let good = agent_sign(&pair, now, AGENT_URL, &stopped);

    // Refused, nothing stored: a signature over other bytes, over another URL, by
    // another key, not base64, missing; a stale or future timestamp (signed correctly),
    // a timestamp other than the signed one.
    let other_body = task_event("evt-stop-1", "task-7", Some("ask"));
    let (other_pair, _) = agent_signer();
    let stale = now - 400; // 100 s outside the 300 s window either way,
    let future = now + 400; // so a slow run cannot bring either inside it
    let cases: Vec<(String, String, &str)> = vec![
        (
            agent_sign(&pair, now, AGENT_URL, &other_body),
            now.to_string(),
            "other body",
        ),
        (
            agent_sign(
                &pair,
                now,
                "https://elsewhere.test/webhooks/agent",
                &stopped,
            ),
            now.to_string(),
            "other url",
        ),
        (
            agent_sign(&other_pair, now, AGENT_URL, &stopped),
            now.to_string(),
            "other key",
        ),
        ("not base64 !!".into(), now.to_string(), "garbage"),
        (String::new(), now.to_string(), "missing"),
        (
            agent_sign(&pair, stale, AGENT_URL, &stopped),
            stale.to_string(),
            "stale",
        ),
        (
            agent_sign(&pair, future, AGENT_URL, &stopped),
            future.to_string(),
            "future",
        ),
        (good.clone(), (now - 1).to_string(), "unsigned timestamp"),
        (good.clone(), String::new(), "no timestamp"),
    ];
    for (signature, timestamp, case) in &cases {
        let (status, answer) = post_agent(&broker, &stopped, signature, timestamp).await;
        assert_eq!(status, 401, "{case}: {answer}");
        refusal(&answer, "unauthorized");
    }
    assert_eq!(
        agent_tasks(&broker).await[0]["status"],
        Value::Null,
        "nothing stored"
    );

    // Verified: the task is updated, mapped to its job state; a redelivery changes nothing.
    let (status, answer) = post_agent(&broker, &stopped, &good, &now.to_string()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["jobsUpdated"], 1);
    let listed = agent_tasks(&broker).await;
    assert_eq!(
        (&listed[0]["status"], &listed[0]["state"]),
        (&json!("finish"), &json!("succeeded"))
    );
    let (status, answer) = post_agent(&broker, &stopped, &good, &now.to_string()).await;
    assert_eq!((status, &answer["duplicate"]), (200, &json!(true)));
    // Listings filter by the job state too.
    for (state, total) in [("succeeded", 1), ("running", 0)] {
        let (_, body) = broker
            .call(
                "agent.list_my_tasks",
                json!({ "state": state }),
                &[AGENT_KEY],
            )
            .await;
        assert_eq!(body["data"]["total"], total, "{state}: {body}");
    }

    // Another event shape: the id and status come from the first path that holds.
    let created = task_event("evt-created-1", "task-7", None);
    let signed = agent_sign(&pair, now, AGENT_URL, &created);
    let (status, answer) = post_agent(&broker, &created, &signed, &now.to_string()).await;
    assert_eq!(
        (status, &answer["jobsUpdated"]),
        (200, &json!(1)),
        "{answer}"
    );
    assert_eq!(agent_tasks(&broker).await[0]["state"], "running");

    // Get Task Detail keeps the record current too (a read that reports a job status).
    let (status, body) = broker
        .call(
            "agent.get_task_detail",
            json!({ "task_id": "task-7" }),
            &[AGENT_KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let listed = agent_tasks(&broker).await;
    assert_eq!(
        (&listed[0]["status"], &listed[0]["state"]),
        (&json!("waiting"), &json!("needs_input"))
    );

    // No callback made an upstream call: the key was fetched once (checked on drop).
    let calls = server.received_requests().await.unwrap();
    assert_eq!(
        calls
            .iter()
            .filter(|r| r.url.path() == "/v2/webhook.publicKey")
            .count(),
        1
    );
    // The fetch key and the caller key never reach the logs or an answer.
    let logs = crate::support::all_logs();
    assert!(!logs.contains(AGENT_FETCH_KEY));
}

#[tokio::test]
async fn a_configured_agent_public_key_needs_no_fetch_and_bad_settings_stop_the_start() {
    let server = MockServer::start().await;
    let (pair, pem) = agent_signer();
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some("[webhook_secrets.agent]\npublic_key_env = \"AGENT_WEBHOOK_PEM\"\n".into());
    setup.env.insert("AGENT_WEBHOOK_PEM".into(), pem.clone());
    let broker = TestBroker::start(setup).await;
    // Without a configured URL the signed URL is rebuilt from the request.
    let url = format!(
        "http://127.0.0.1:{}/webhooks/agent",
        broker.url.rsplit(':').next().unwrap()
    );
    let now = jiff::Timestamp::now().as_second();
    let body = task_event("evt-unknown", "task-unknown", Some("finish"));
    let signature = agent_sign(&pair, now, &url, &body);
    let (status, answer) = post_agent(&broker, &body, &signature, &now.to_string()).await;
    assert_eq!(
        (status, &answer["jobsUpdated"]),
        (200, &json!(0)),
        "{answer}"
    );
    assert!(
        server.received_requests().await.unwrap().is_empty(),
        "no upstream call"
    );

    // Settings that cannot work are refused at start, naming the fix.
    for (config, expected) in [
        (
            "[webhook_secrets.agent]\nenv = \"X\"\n",
            "set `public_key_env`",
        ),
        (
            "[webhook_secrets.agent]\nurl = \"https://x.test/webhooks/agent\"\n",
            "needs `public_key_env`",
        ),
        (
            "[webhook_secrets.agent]\npublic_key_env = \"X\"\nurl = \"/webhooks/agent\"\n",
            "absolute http(s) URL",
        ),
        (
            "[webhook_secrets.imagegen]\npublic_key_env = \"X\"\n",
            "set `env` only",
        ),
    ] {
        let err = crate::support::config_error(config).await;
        assert!(err.contains(expected), "{config}: {err}");
    }
}
