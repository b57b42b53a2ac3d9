//! Browser origins and DNS rebinding (engine/identity/src/caller/origin.rs): a request whose `Origin` is
//! neither the broker's own nor allowed, or whose `Host` is not a loopback name on a
//! loopback broker, is 403 on every endpoint before any tool runs; requests without
//! `Origin` are unaffected.

use reqwest::Method;
use serde_json::{Value, json};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{API_KEY, Setup, TestBroker, check_envelope, classification};

/// A broker whose every upstream answers 200 to anything, and that upstream.
async fn start(listen: Option<&'static str>, config: &str) -> (MockServer, TestBroker) {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "items": [] })))
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.listen = listen;
    setup.config = Some(config.to_string());
    let broker = TestBroker::start(setup).await;
    (server, broker)
}

/// What each endpoint answers for a set of extra headers: `(status, body text)` for a
/// proxied tool call through `POST /`, `POST /mcp` and the REST path, and `GET /healthz`.
async fn endpoints(broker: &TestBroker, extra: &[(&str, &str)]) -> Vec<(u16, String)> {
    let bearer = format!("Bearer {API_KEY}");
    let mut headers = vec![
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    headers.extend_from_slice(extra);
    let call = json!({ "jsonrpc": "2.0", "id": "o-1", "method": "tools/call",
                       "params": { "name": "agent.list_tasks", "arguments": {} } });
    let mut out = Vec::new();
    for (method, path, body) in [
        (Method::POST, "/", Some(call.to_string())),
        (Method::POST, "/mcp", Some(call.to_string())),
        (
            Method::POST,
            "/mcp/agent/list-tasks",
            Some("{}".to_string()),
        ),
        (Method::GET, "/healthz", None),
    ] {
        let mut h = headers.clone();
        h.push(("x-agent-api-key", "ak_origin_test"));
        let (status, _, text) = broker
            .send(method, path, body.map(String::into_bytes), &h)
            .await;
        out.push((status, text));
    }
    out
}

fn assert_refused(answers: &[(u16, String)], what: &str) {
    for (i, (status, text)) in answers.iter().enumerate() {
        assert_eq!(*status, 403, "{what}, endpoint {i}: {text}");
        let body: Value = serde_json::from_str(text).unwrap();
        match i {
            // POST / and the REST path: the standard envelope, `forbidden`.
            0 | 2 => {
                check_envelope(&body);
                assert_eq!(classification(&body), "forbidden", "{body}");
            }
            // /mcp: a JSON-RPC error.
            1 => assert_eq!(body["error"]["code"], -32600, "{body}"),
            // Any other path: the one error body of the surfaces.
            _ => assert_eq!(body["error"]["classification"], "forbidden", "{body}"),
        }
        assert!(!text.contains(API_KEY) && !text.contains("ak_origin_test"));
    }
}

fn assert_served(answers: &[(u16, String)], what: &str) {
    for (i, (status, text)) in answers.iter().enumerate() {
        assert_eq!(*status, 200, "{what}, endpoint {i}: {text}");
    }
}

#[tokio::test]
async fn a_loopback_broker_refuses_rebinding_and_foreign_origins_before_any_tool_runs() {
    let (server, broker) = start(None, "").await;
    let port = broker.url.rsplit(':').next().unwrap().to_string();
    let own = format!("127.0.0.1:{port}");

    // A page on a public name rebound to 127.0.0.1: Host and Origin both foreign.
    let rebinding = endpoints(
        &broker,
        &[
            ("host", "evil.example.com"),
            ("origin", "http://evil.example.com"),
        ],
    )
    .await;
    assert_refused(&rebinding, "rebinding");
    // The Host alone (a non-browser client sends no Origin) is enough on loopback.
    assert_refused(
        &endpoints(&broker, &[("host", "evil.example.com:8080")]).await,
        "host",
    );
    // A foreign page posting to the broker by its loopback address.
    let foreign = endpoints(&broker, &[("origin", "https://evil.example")]).await;
    assert_refused(&foreign, "foreign origin");
    // Another local port is another origin; `null` is no origin.
    let other_port = endpoints(&broker, &[("origin", "http://127.0.0.1:1")]).await;
    assert_refused(&other_port, "other port");
    assert_refused(
        &endpoints(&broker, &[("origin", "null")]).await,
        "null origin",
    );
    assert!(
        server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty(),
        "a refused request reached the upstream"
    );

    // No Origin: every non-browser client. The broker's own origin, by any loopback name.
    assert_served(&endpoints(&broker, &[]).await, "no origin");
    let own_origin = format!("http://{own}");
    assert_served(
        &endpoints(&broker, &[("origin", &own_origin)]).await,
        "own origin",
    );
    let localhost = format!("localhost:{port}");
    let localhost_origin = format!("http://localhost:{port}");
    assert_served(
        &endpoints(
            &broker,
            &[("host", &localhost), ("origin", &localhost_origin)],
        )
        .await,
        "localhost",
    );
}

#[tokio::test]
async fn allowed_origins_admit_listed_browsers_only() {
    let config = "allowed_origins = [\"https://console.example.com\", \"http://localhost:5173\"]\n";
    let (_server, broker) = start(None, config).await;
    for origin in [
        "https://console.example.com",
        "http://localhost:5173",
        "HTTPS://Console.Example.com:443",
    ] {
        assert_served(&endpoints(&broker, &[("origin", origin)]).await, origin);
    }
    // A listed origin's host is a Host this broker answers too (a proxy in front).
    assert_served(
        &endpoints(
            &broker,
            &[
                ("host", "console.example.com"),
                ("origin", "https://console.example.com"),
            ],
        )
        .await,
        "listed host",
    );
    assert_refused(
        &endpoints(
            &broker,
            &[("origin", "https://console.example.com.evil.io")],
        )
        .await,
        "look-alike",
    );

    // Beyond loopback, once a list exists it alone decides.
    let (_server, public) = start(Some("0.0.0.0:0"), config).await;
    assert_served(
        &endpoints(&public, &[("host", "broker.example.com")]).await,
        "any host, no origin",
    );
    assert_served(
        &endpoints(
            &public,
            &[
                ("host", "broker.example.com"),
                ("origin", "https://console.example.com"),
            ],
        )
        .await,
        "listed",
    );
    assert_refused(
        &endpoints(
            &public,
            &[
                ("host", "broker.example.com"),
                ("origin", "https://broker.example.com"),
            ],
        )
        .await,
        "unlisted own name",
    );
}

#[tokio::test]
async fn a_malformed_allowed_origin_is_a_config_error() {
    let err =
        crate::support::config_error("allowed_origins = [\"https://console.example.com/app\"]")
            .await;
    assert!(
        err.contains("`https://console.example.com/app` is not an origin"),
        "{err}"
    );
}
