//! MCP servers as catalog services (docs/mcp-upstreams.md), with a stdio server the
//! tests start (`tests/src/bin/mcp-fixture.rs`): imported with `catalog import-mcp`,
//! locked, called through `POST /`, its write confirmed, its answers redacted and
//! bounded, its death survived, and a changed tool refused before anything is sent.

use std::path::Path;

use serde_json::{Value, json};
use tool_broker::cli::{CatalogCommand, catalog};

use crate::support::*;

/// The value the fixture is given in `FIXTURE_TOKEN`: never in an answer or the log.
const TOKEN: &str = "fixture-secret-7f3a9c2e";

/// `catalog/notes/service.toml` for the fixture started with `flags`.
fn service_toml(flags: &[&str]) -> String {
    let mut command = vec![format!("{:?}", env!("CARGO_BIN_EXE_mcp-fixture"))];
    command.extend(flags.iter().map(|f| format!("{f:?}")));
    format!(
        "id = \"notes\"\ntitle = \"Notes\"\ndescription = \"A notes MCP server.\"\n\
         catalog_version = \"2026-11-29.1\"\nversion_format = \"dashed_date\"\n\n\
         [defaults]\ntimeout_ms = 3000\n\n\
         [mcp]\ncommand = [{}]\nenv = [\"FIXTURE_TOKEN\"]\n",
        command.join(", ")
    )
}

/// Runs a catalog command on `dir` off the test's runtime (the MCP commands start one
/// of their own).
async fn run_catalog(dir: &Path, command: CatalogCommand) -> Result<String, String> {
    let root = dir.to_path_buf();
    tokio::task::spawn_blocking(move || catalog(command, &root))
        .await
        .unwrap()
}

/// `catalog import-mcp SERVICE` on `dir`.
fn import_mcp(service: &str) -> CatalogCommand {
    CatalogCommand::ImportMcp {
        service: service.into(),
        url: None,
        key_env: None,
        check: false,
    }
}

/// A scratch catalog root with the notes service, imported from the fixture.
async fn imported(flags: &[&str]) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let (tmp, dir) = scratch_root();
    let service = dir.join("catalog/notes");
    std::fs::create_dir_all(&service).unwrap();
    std::fs::write(service.join("service.toml"), service_toml(flags)).unwrap();
    let out = run_catalog(&dir, import_mcp("notes"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("10 tools"), "{out}");
    let text = std::fs::read_to_string(service.join("mcp.toml")).unwrap();
    (tmp, dir, text)
}

async fn broker(flags: &[&str], mcp_toml: &str) -> TestBroker {
    let service = service_toml(flags);
    let mut setup = Setup {
        sources: Some(sources_with(&[
            ("catalog/notes/service.toml", &service),
            ("catalog/notes/mcp.toml", mcp_toml),
        ])),
        ..Setup::default()
    };
    setup.env.insert("FIXTURE_TOKEN".into(), TOKEN.into());
    TestBroker::start(setup).await
}

fn lock_verifies(dir: &Path) {
    catalog(CatalogCommand::Lock, dir).unwrap_or_else(|e| panic!("{e}"));
    let verified =
        catalog(CatalogCommand::Verify { upstreams: true }, dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        verified.contains("notes: the server lists its 10 tools as the catalog pinned them"),
        "{verified}"
    );
    let lock = std::fs::read_to_string(dir.join("catalog/catalog.lock")).unwrap();
    assert!(lock.contains("notes.echo"), "the lock hashes the MCP tools");
}

#[tokio::test]
async fn an_imported_mcp_server_is_called_as_any_service() {
    let (_tmp, dir, mcp_toml) = imported(&[]).await;
    // Every page of tools/list came in; names made safe; risk from the annotations.
    for name in [
        "name = \"echo\"",
        "name = \"add_note\"",
        "name = \"slow\"",
        "name = \"leak\"",
    ] {
        assert!(mcp_toml.contains(name), "{name} in\n{mcp_toml}");
    }
    let root = dir.clone();
    tokio::task::spawn_blocking(move || lock_verifies(&root))
        .await
        .unwrap();
    let broker = broker(&[], &mcp_toml).await;

    // A read answers its text, parsed where it is JSON.
    let (status, body) = broker
        .call("notes.echo", json!({"message": "hi"}), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"], json!("Echo: hi"));

    // A write needs its confirmation: without it nothing is sent.
    let (status, body) = broker
        .call("notes.add_note", json!({"text": "buy milk"}), &[])
        .await;
    assert!(
        status == 428 || body["data"]["dryRun"] == json!(true),
        "{status} {body}"
    );
    let (status, body) = broker
        .call(
            "notes.add_note",
            json!({"text": "buy milk", "confirm": true}),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["text"], "buy milk");
    // The broker's own arguments are not the server's.
    assert_eq!(body["data"]["arguments"], json!({"text": "buy milk"}));

    // The schema the catalog pinned is checked before anything is sent.
    let (status, body) = broker.call("notes.echo", json!({"message": 5}), &[]).await;
    assert_eq!(
        (status, classification(&body)),
        (422, "validation_error"),
        "{body}"
    );

    // A tool that says it failed is an error with its words.
    let (status, body) = broker.call("notes.fail", json!({}), &[]).await;
    assert_eq!(status, 502, "{body}");
    let said = body["error"]["details"]["message"].as_str().unwrap();
    assert!(said.contains("the disk is full"), "{body}");
    assert!(!body.to_string().contains(TOKEN), "{body}");

    // Key names and the passed environment's values are redacted in answers.
    let (status, body) = broker.call("notes.leak", json!({}), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_ne!(body["data"]["password"], "hunter2", "{body}");
    assert!(!body.to_string().contains(TOKEN), "{body}");
    assert_eq!(body["meta"]["redacted"], 2, "{body}");

    // An image: summarized in `POST /`'s data, kept whole on `/mcp`.
    let (status, body) = broker.call("notes.picture", json!({}), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!(["a red dot", {"type": "image", "mimeType": "image/png", "bytes": 8}])
    );
    let (status, reply) = mcp_tools_call(
        &broker,
        json!({"name": "notes.picture", "arguments": {}}),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    let content = reply["result"]["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "{reply}");
    assert_eq!(content[1]["data"], "iVBORw0KGgo=", "{reply}");
    assert_eq!(reply["result"]["structuredContent"]["data"][0], "a red dot");

    // An answer over the size bound is refused, and the server still answers after.
    let limit = embedded_catalog().rules.limits.max_upstream_body_bytes;
    let (status, body) = broker
        .call("notes.big", json!({"bytes": limit + 10}), &[])
        .await;
    assert_eq!(
        (status, classification(&body)),
        (502, "upstream_unavailable"),
        "{body}"
    );
    let (status, _) = broker
        .call("notes.echo", json!({"message": "still here"}), &[])
        .await;
    assert_eq!(status, 200);

    // Too slow is a timeout.
    let (status, body) = broker.call("notes.slow", json!({"ms": 5000}), &[]).await;
    assert_eq!(
        (status, classification(&body)),
        (504, "upstream_timeout"),
        "{body}"
    );

    // A server killed mid-call: that call is unavailable, and a later one starts it again.
    let (status, body) = broker.call("notes.crash", json!({}), &[]).await;
    assert_eq!(
        (status, classification(&body)),
        (502, "upstream_unavailable"),
        "{body}"
    );
    let mut answered = false;
    for _ in 0..40 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let (status, _) = broker
            .call("notes.echo", json!({"message": "again"}), &[])
            .await;
        if status == 200 {
            answered = true;
            break;
        }
    }
    assert!(answered, "the server was started again");

    // Its stderr reached the log with the passed value scrubbed.
    let logs = all_logs();
    assert!(
        logs.contains("fixture starting with token [REDACTED]"),
        "stderr in the log"
    );
    assert!(!logs.contains(TOKEN), "a passed value reached the log");
}

#[tokio::test]
async fn a_tool_the_server_changed_is_refused_before_anything_is_sent() {
    let (_tmp, dir, mcp_toml) = imported(&[]).await;
    let broker = broker(&["--rug-pull"], &mcp_toml).await;
    // The first call runs; the server then changes `echo`'s description and says so.
    let (status, body) = broker.call("notes.slow", json!({"ms": 0}), &[]).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = broker
        .call("notes.echo", json!({"message": "hi"}), &[])
        .await;
    assert_eq!(
        (status, classification(&body)),
        (409, "upstream_changed"),
        "{body}"
    );
    let details = &body["error"]["details"];
    assert_eq!(details["service"], "notes");
    assert_eq!(details["tool"], "echo");
    assert_ne!(details["pinned"], details["seen"]);
    // Its other tools still run.
    let (status, _) = broker.call("notes.slow", json!({"ms": 0}), &[]).await;
    assert_eq!(status, 200);
    // The drift is known to the broker.
    let drift = broker.broker.mcp_drift();
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(drift[0].tool, "notes.echo");
    // ... and shows in readiness (still ready: only that tool is refused) and the metric.
    let (status, _, text) = broker
        .send(reqwest::Method::GET, "/readyz", None, &[])
        .await;
    let ready: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status, 200, "{ready}");
    assert_eq!(ready["mcp"]["notes"]["listed"], true, "{ready}");
    assert_eq!(
        ready["mcp"]["notes"]["drift"][0]["tool"], "notes.echo",
        "{ready}"
    );
    let (_, _, metrics) = broker
        .send(reqwest::Method::GET, "/metrics", None, &[])
        .await;
    assert!(
        metrics.contains("tool_broker_upstream_drift{service=\"notes\"} 1"),
        "{metrics}"
    );

    // `diff-mcp` finds nothing against a server that describes its tools as imported,
    // and names the member that changed against one that does not.
    let diff = || CatalogCommand::DiffMcp {
        service: "notes".into(),
        url: None,
        key_env: None,
    };
    let clean = run_catalog(&dir, diff()).await;
    assert!(clean.is_ok(), "{clean:?}");
    std::fs::write(
        dir.join("catalog/notes/service.toml"),
        service_toml(&["--pulled"]),
    )
    .unwrap();
    let changed = run_catalog(&dir, diff()).await.unwrap_err();
    assert!(changed.contains("changed  echo: description"), "{changed}");
}

#[tokio::test]
async fn garbage_on_a_stdio_server_s_output_is_skipped() {
    let (_tmp, _dir, mcp_toml) = imported(&[]).await;
    let broker = broker(&["--garbage"], &mcp_toml).await;
    for _ in 0..3 {
        let (status, body) = broker
            .call("notes.echo", json!({"message": "hi"}), &[])
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["data"], json!("Echo: hi"));
    }
}

#[tokio::test]
async fn an_mcp_service_is_checked_when_the_catalog_compiles() {
    let both = "id = \"notes\"\ntitle = \"N\"\ndescription = \"N.\"\ncatalog_version = \"2026-11-29.1\"\nversion_format = \"dashed_date\"\n[mcp]\nurl = \"http://127.0.0.1:1/mcp\"\ncommand = [\"x\"]\n";
    let tool = "[[tool]]\nname = \"echo\"\ntitle = \"Echo\"\ndescription = \"Echo.\"\ntier = \"agent_ready\"\nrisk = \"read\"\n[tool.arguments]\ntype = \"object\"\n[tool.mcp]\ntool = \"echo\"\nsha256 = \"abc\"\n";
    let sources = sources_with(&[
        ("catalog/notes/service.toml", both),
        ("catalog/notes/mcp.toml", tool),
    ]);
    let problems = tool_broker::catalog::compile::compile(&sources)
        .unwrap_err()
        .to_string();
    assert!(problems.contains("both `url` and `command`"), "{problems}");
    assert!(problems.contains("64 lowercase hex digits"), "{problems}");
}

/// Another broker's `/mcp` as the service `peer` of a scratch catalog root (its
/// credential the caller's `x-peer-key`), imported with the test key: the root, the
/// service's `service.toml` and the imported `mcp.toml`.
async fn imported_peer(
    upstream: &TestBroker,
) -> (tempfile::TempDir, std::path::PathBuf, String, String) {
    let service = format!(
        "id = \"peer\"\ntitle = \"Peer\"\ndescription = \"Another broker.\"\n\
         catalog_version = \"2026-11-29.1\"\nversion_format = \"dashed_date\"\n\n\
         [credential]\nheader = \"x-peer-key\"\nplacement = \"header\"\nname = \"Authorization\"\nprefix = \"Bearer \"\n\n\
         [mcp]\nurl = \"{}/mcp\"\n",
        upstream.url
    );
    let (tmp, dir) = scratch_root();
    std::fs::create_dir_all(dir.join("catalog/peer")).unwrap();
    std::fs::write(dir.join("catalog/peer/service.toml"), &service).unwrap();
    let root = dir.clone();
    let imported = tokio::task::spawn_blocking(move || {
        let catalog = tool_broker::cli::CatalogRoot::from(&root).load()?;
        let reach = tool_broker::cli::Reach {
            url: None,
            key: Some(API_KEY.to_string()),
        };
        tool_broker::cli::import_mcp(&catalog, &root, "peer", reach, false)
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(imported.contains("tools"), "{imported}");
    let mcp_toml = std::fs::read_to_string(dir.join("catalog/peer/mcp.toml")).unwrap();
    (tmp, dir, service, mcp_toml)
}

/// A Streamable HTTP server's answer over the catalog's size bound is refused
/// (`upstream_unavailable`), as a stdio server's is.
#[tokio::test]
async fn an_http_server_s_answer_over_the_size_bound_is_refused() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, ResponseTemplate};
    let api = wiremock::MockServer::start().await;
    let customers: Vec<Value> = (0..20)
        .map(|i| json!({"id": format!("cus_{i}"), "description": "x".repeat(100_000)}))
        .collect();
    Mock::given(method("GET"))
        .and(path("/v1/customers"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "data": customers })))
        .mount(&api)
        .await;
    let mut upstreams = std::collections::BTreeMap::new();
    upstreams.insert("payments".to_string(), api.uri());
    let upstream = TestBroker::start(Setup {
        upstreams,
        ..Setup::default()
    })
    .await;
    let (_tmp, _dir, service, mcp_toml) = imported_peer(&upstream).await;
    // The peer's payments calls carry a key of their own.
    let service = format!("{service}\n[static_headers]\nx-payments-api-key = \"sk_test_peer\"\n");
    // The peer's answer is about 4 MB; this broker reads 1 MB at most.
    let limits = std::fs::read_to_string(root().join("rules/limits.toml"))
        .unwrap()
        .replace(
            "max_upstream_body_bytes = 8388608",
            "max_upstream_body_bytes = 1000000",
        );
    assert!(limits.contains("= 1000000"));
    let broker = TestBroker::start(Setup {
        sources: Some(sources_with(&[
            ("catalog/peer/service.toml", &service),
            ("catalog/peer/mcp.toml", &mcp_toml),
            ("rules/limits.toml", &limits),
        ])),
        ..Setup::default()
    })
    .await;
    // The peer lists its discovery tools; its `call_tool` (a write) runs the read.
    let (status, body) = broker
        .call(
            "peer.call_tool",
            json!({"name": "payments.get_customers", "arguments": {"response_mode": "full"}, "confirm": true}),
            &[("x-peer-key", API_KEY)],
        )
        .await;
    assert_eq!(
        (status, classification(&body)),
        (502, "upstream_unavailable"),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("answer to `tools/call` is larger than the broker's limit")),
        "{body}"
    );
}

/// A broker's `/mcp` as another broker's MCP service over Streamable HTTP: the
/// stateless revision settled by `server/discover`, the caller's key in the service's
/// credential header, the upstream's tools imported over HTTP and called through.
#[tokio::test]
async fn a_streamable_http_server_is_imported_and_called_with_the_caller_s_key() {
    let upstream = TestBroker::start(Setup::default()).await;
    let (_tmp, dir, service, mcp_toml) = imported_peer(&upstream).await;
    // Importing needs the key too: the peer refuses a list without one.
    let refused = run_catalog(&dir, import_mcp("peer")).await.unwrap_err();
    assert!(refused.contains("refused the key"), "{refused}");
    assert!(mcp_toml.contains("tool = \"find_tools\""), "{mcp_toml}");

    let broker = TestBroker::start(Setup {
        sources: Some(sources_with(&[
            ("catalog/peer/service.toml", &service),
            ("catalog/peer/mcp.toml", &mcp_toml),
        ])),
        ..Setup::default()
    })
    .await;
    // Without the caller's key nothing is sent.
    let (status, body) = broker
        .call("peer.find_tools", json!({"query": "dns records"}), &[])
        .await;
    assert_eq!(
        (status, classification(&body)),
        (401, "missing_required_credentials"),
        "{body}"
    );
    // With it, the peer answers its own envelope as the data.
    let (status, body) = broker
        .call(
            "peer.find_tools",
            json!({"query": "dns records"}),
            &[("x-peer-key", API_KEY)],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"].to_string().contains("hosting."), "{body}");
    // The caller's key is a secret of the call: never in the answer.
    assert!(!body.to_string().contains(API_KEY));
}

/// The console's overview lists the tools a server changed, with how to review them.
#[tokio::test]
async fn the_console_shows_a_tool_its_server_changed() {
    use crate::support::console::{console_setup, get, token};
    let (_tmp, _dir, mcp_toml) = imported(&[]).await;
    let idp = crate::support::idp::Idp::start().await;
    let upstream = wiremock::MockServer::start().await;
    let mut setup = console_setup(&idp, &upstream, "", "");
    let service = service_toml(&["--pulled"]);
    setup.sources = Some(sources_with(&[
        ("catalog/notes/service.toml", &service),
        ("catalog/notes/mcp.toml", &mcp_toml),
    ]));
    let broker = TestBroker::start(setup).await;
    let (status, body) = broker
        .call("notes.echo", json!({"message": "hi"}), &[])
        .await;
    assert_eq!(
        (status, classification(&body)),
        (409, "upstream_changed"),
        "{body}"
    );
    let admin = token(&idp, "ada", &["admin"]);
    let (status, overview) = get(&broker, "/admin/api/overview", Some(&admin)).await;
    assert_eq!(status, 200, "{overview}");
    assert_eq!(overview["mcp"]["listed"]["notes"], true, "{overview}");
    assert_eq!(
        overview["mcp"]["drift"][0]["tool"], "notes.echo",
        "{overview}"
    );
    let (status, _, html) = broker
        .send(
            reqwest::Method::GET,
            "/admin",
            None,
            &[("authorization", &format!("Bearer {admin}"))],
        )
        .await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains("tool-broker catalog diff-mcp notes"),
        "{html}"
    );
}

/// Policies, costs and budgets, and traces hold for an MCP server's tools as for any:
/// a Cedar policy on its typed argument, a budget on its price, `traceparent` in the
/// request's `_meta`.
#[tokio::test]
async fn policies_budgets_and_traces_hold_for_mcp_tools() {
    let (_tmp, dir, mcp_toml) = imported(&[]).await;
    let policies = dir.join("policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(
        policies.join("notes.cedar"),
        "@id(\"everyone\")\npermit(principal, action, resource);\n\n\
         @id(\"no-urgent-notes\")\nforbid(principal, action == Action::\"notes.add_note\", resource)\n\
         when { context.arguments has priority && context.arguments.priority > 3 };\n",
    )
    .unwrap();
    let service = service_toml(&[]);
    let mut setup = Setup {
        sources: Some(sources_with(&[
            ("catalog/notes/service.toml", &service),
            ("catalog/notes/mcp.toml", &mcp_toml),
        ])),
        config: Some(format!(
            "[policy]\ndir = {:?}\n\n[costs]\nunits = [\"notes\"]\n\n\
             [[costs.cost]]\ntool = \"notes.add_note\"\nunit = \"notes\"\nconstant = 1\n\n\
             [[budgets]]\nname = \"notes-per-key\"\nunit = \"notes\"\nlimit = 2\nwindow = \"1d\"\napplies_to = \"each-key\"\n",
            policies.display().to_string()
        )),
        ..Setup::default()
    };
    setup.env.insert("FIXTURE_TOKEN".into(), TOKEN.into());
    let broker = TestBroker::start(setup).await;

    // The policy reads the MCP tool's argument, typed from the server's schema.
    let (status, body) = broker
        .call(
            "notes.add_note",
            json!({"text": "now!", "priority": 5, "confirm": true}),
            &[],
        )
        .await;
    assert_eq!(
        (status, classification(&body)),
        (403, "forbidden"),
        "{body}"
    );
    // The budget admits two notes a day, then refuses before anything is sent.
    for n in 0..2 {
        let (status, body) = broker
            .call(
                "notes.add_note",
                json!({"text": format!("note {n}"), "confirm": true}),
                &[],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["meta"]["cost"]["estimate"]["notes"], 1, "{body}");
    }
    let (status, body) = broker
        .call(
            "notes.add_note",
            json!({"text": "one too many", "confirm": true}),
            &[],
        )
        .await;
    assert_eq!(
        (status, classification(&body)),
        (402, "budget_exceeded"),
        "{body}"
    );

    // The request carries the call's trace in `_meta`.
    let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let (status, body) = broker
        .call("notes.slow", json!({"ms": 0}), &[("traceparent", parent)])
        .await;
    assert_eq!(status, 200, "{body}");
    let sent = body["data"]["meta"]["traceparent"].as_str().unwrap();
    // The caller's trace goes on (a span of the broker's own where it records one).
    assert!(
        sent.starts_with("00-0af7651916cd43dd8448eb211c80319c-"),
        "{body}"
    );
}

/// A `tools/call` posted to `/mcp` in the 2025-11-25 revision, taking a stream: the
/// response, still being read.
async fn streamed_call(broker: &TestBroker, params: Value) -> reqwest::Response {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    broker
        .client
        .post(format!("{}/mcp", broker.url))
        .header("authorization", format!("Bearer {API_KEY}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

/// A `tools/call` sent by hand with a chunked body (which the broker's own server
/// hands to hyper's) and `Connection: close`: the whole answer's text.
async fn raw_chunked_call(broker: &TestBroker, message: &Value) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = message.to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {API_KEY}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2025-11-25\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
         {:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(broker.url.trim_start_matches("http://"))
        .await
        .unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(20),
        stream.read_to_end(&mut out),
    )
    .await
    .unwrap()
    .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

/// The events of a stream as they come: each one's JSON-RPC message (comments skipped).
struct Events {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl Events {
    fn of(response: reqwest::Response) -> Self {
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "a streamed answer"
        );
        Self {
            response,
            buffer: Vec::new(),
        }
    }

    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(at) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buffer.drain(..at + 2).collect();
                let text = String::from_utf8(event).unwrap();
                let data: Vec<&str> = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .collect();
                if data.is_empty() {
                    continue;
                }
                return Some(serde_json::from_str(&data.join("\n")).unwrap());
            }
            let chunk =
                tokio::time::timeout(std::time::Duration::from_secs(20), self.response.chunk())
                    .await
                    .expect("the stream said nothing for 20 s")
                    .unwrap()?;
            self.buffer.extend_from_slice(&chunk);
        }
    }
}

#[tokio::test]
async fn progress_and_questions_of_a_server_reach_its_mcp_caller() {
    let (_tmp, _dir, mcp_toml) = imported(&[]).await;
    let broker = broker(&[], &mcp_toml).await;

    // Progress under the caller's own token, then the result, in one stream.
    let response = streamed_call(
        &broker,
        json!({"name": "notes.count", "arguments": {"n": 3}, "_meta": {"progressToken": "p-7"}}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let mut events = Events::of(response);
    for step in 1..=3 {
        let progress = events.next().await.unwrap();
        assert_eq!(
            progress,
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "p-7", "progress": step, "total": 3, "message": format!("step {step}")}})
        );
    }
    let last = events.next().await.unwrap();
    assert_eq!(last["id"], 1, "{last}");
    assert_eq!(
        last["result"]["structuredContent"]["data"], "counted to 3",
        "{last}"
    );
    assert!(
        events.next().await.is_none(),
        "the stream ends with the answer"
    );

    // The same stream from hyper's server (a chunked request body is handed to it).
    let text = raw_chunked_call(
        &broker,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "notes.count", "arguments": {"n": 2}, "_meta": {"progressToken": 5}}}),
    )
    .await;
    let head = text.to_ascii_lowercase();
    assert!(head.contains("content-type: text/event-stream"), "{text}");
    assert!(head.contains("transfer-encoding: chunked"), "{text}");
    assert_eq!(text.matches("notifications/progress").count(), 2, "{text}");
    assert!(text.contains(r#""progressToken":5"#), "{text}");
    assert!(text.contains("counted to 2"), "{text}");

    // No token: nothing to hear, the answer is plain JSON.
    let response = streamed_call(
        &broker,
        json!({"name": "notes.count", "arguments": {"n": 2}}),
    )
    .await;
    assert_eq!(response.headers()["content-type"], "application/json");
    let reply: Value = response.json().await.unwrap();
    assert_eq!(
        reply["result"]["structuredContent"]["data"], "counted to 2",
        "{reply}"
    );

    // A question: put to the caller in the stream, the server's secret swept out,
    // answered by a POST of the caller's, the answer reaching the server.
    let response = streamed_call(&broker, json!({"name": "notes.ask", "arguments": {}})).await;
    let mut events = Events::of(response);
    let question = events.next().await.unwrap();
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let asked = question["params"]["message"].as_str().unwrap();
    assert!(
        !asked.contains(TOKEN) && asked.contains("[REDACTED]"),
        "{asked}"
    );
    let id = question["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("tb-q-"), "{id}");
    let answer = |id: &str| {
        json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"name": "Ada"}}})
            .to_string()
            .into_bytes()
    };
    let bearer = format!("Bearer {API_KEY}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, _, text) = broker
        .send(
            reqwest::Method::POST,
            "/mcp",
            Some(answer("tb-q-0000")),
            &headers,
        )
        .await;
    assert_eq!(status, 400, "an answer to no question is refused: {text}");
    assert!(text.contains("no open question"), "{text}");
    let (status, _, text) = broker
        .send(reqwest::Method::POST, "/mcp", Some(answer(&id)), &headers)
        .await;
    assert_eq!(status, 202, "{text}");
    let last = events.next().await.unwrap();
    assert_eq!(
        last["result"]["structuredContent"]["data"],
        r#"answer: {"action":"accept","content":{"name":"Ada"}}"#,
        "{last}"
    );
    let (status, _, _) = broker
        .send(reqwest::Method::POST, "/mcp", Some(answer(&id)), &headers)
        .await;
    assert_eq!(status, 400, "a question is answered once");

    // A caller that cannot be asked: the server hears why, the caller gets its error.
    let (status, body) = broker.call("notes.ask", json!({}), &[]).await;
    assert_eq!(
        (status, classification(&body)),
        (502, "upstream_http_error"),
        "{body}"
    );
    assert!(
        body["error"]["details"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("cannot be asked a question")),
        "{body}"
    );
    // A stateless caller that answers forms is asked by an input-required result; its
    // retry carries the answer, and the held call goes on to its result.
    let ask = |extra: Value| {
        let mut params = json!({"name": "notes.ask", "arguments": {}});
        if let (Some(p), Value::Object(more)) = (params.as_object_mut(), extra) {
            p.extend(more);
        }
        params
    };
    let (status, reply) = mcp_modern(
        &broker,
        "tools/call",
        ask(json!({})),
        json!({"elicitation": {}}),
        "notes.ask",
        &[],
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    let state = reply["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_string();
    let request = &reply["result"]["inputRequests"][&state];
    assert_eq!(request["method"], "elicitation/create", "{reply}");
    assert!(
        request["params"]["message"]
            .as_str()
            .unwrap()
            .contains("[REDACTED]"),
        "{reply}"
    );
    let retry = |state: &str| {
        ask(json!({
            "requestState": state,
            "inputResponses": { state: {"action": "accept", "content": {"name": "Grace"}} },
        }))
    };
    let (status, reply) = mcp_modern(
        &broker,
        "tools/call",
        retry("tb-q-00"),
        json!({"elicitation": {}}),
        "notes.ask",
        &[],
    )
    .await;
    assert_eq!(status, 400, "a state that names no question: {reply}");
    let (status, reply) = mcp_modern(
        &broker,
        "tools/call",
        retry(&state),
        json!({"elicitation": {}}),
        "notes.ask",
        &[],
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(
        reply["result"]["structuredContent"]["data"],
        r#"answer: {"action":"accept","content":{"name":"Grace"}}"#,
        "{reply}"
    );
    // One that declares no elicitation is not asked: its server hears why.
    let (status, reply) = mcp_modern(
        &broker,
        "tools/call",
        ask(json!({})),
        json!({}),
        "notes.ask",
        &[],
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    // The progress of a caller on POST / is dropped; its answer is whole.
    let (status, body) = broker.call("notes.count", json!({"n": 2}), &[]).await;
    assert_eq!(
        (status, &body["data"]),
        (200, &json!("counted to 2")),
        "{body}"
    );
}

/// An HTTP MCP server that is an OAuth resource server (the MCP authorization spec):
/// the broker finds its authorization server from the server's protected resource
/// metadata (RFC 9728), registers itself there (RFC 7591), and connects a user's
/// account with the server's URL as the resource (RFC 8707) on every request; the
/// user's calls then reach the server with that account's token.
#[expect(
    clippy::too_many_lines,
    reason = "one flow: metadata, registration, consent, exchange, the call"
)]
#[tokio::test]
async fn an_mcp_server_that_is_a_resource_server_is_connected_through_its_metadata() {
    use crate::support::hub::{form_of, hub_setup, request, sign_in};
    use crate::support::idp::{Idp, Signer};
    use wiremock::matchers::{body_string_contains, method, path};
    use wiremock::{Mock, ResponseTemplate};
    let idp = Idp::start().await;
    // The server: a broker whose /mcp takes the provider's tokens for its own URL.
    let peer = TestBroker::start(Setup {
        config: Some(format!(
            "[oauth]\nissuer = \"{}\"\nresource = \"{{broker_url}}/mcp\"\n",
            idp.issuer
        )),
        ..Setup::default()
    })
    .await;
    let resource = format!("{}/mcp", peer.url);
    let (_tmp, _dir, service, mcp_toml) = imported_peer(&peer).await;
    // The provider offers registration.
    Mock::given(method("GET"))
        .and(path("/.well-known/openid-configuration"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "issuer": idp.issuer,
            "jwks_uri": format!("{}/jwks", idp.issuer),
            "authorization_endpoint": format!("{}/authorize", idp.issuer),
            "token_endpoint": format!("{}/token", idp.issuer),
            "registration_endpoint": format!("{}/register", idp.issuer),
            "response_types_supported": ["code"],
        })))
        .with_priority(1)
        .mount(&idp.server)
        .await;
    Mock::given(method("POST"))
        .and(path("/register"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({
            "client_id": "registered-broker",
            "client_secret": "registered-secret-canary-3141",
            "token_endpoint_auth_method": "client_secret_basic",
        })))
        .mount(&idp.server)
        .await;
    let api = wiremock::MockServer::start().await;
    let mut setup = hub_setup(&idp, &api, "[connect.peer]\nscopes = [\"tools:read\"]\n");
    setup.sources = Some(sources_with(&[
        ("catalog/peer/service.toml", &service),
        ("catalog/peer/mcp.toml", &mcp_toml),
    ]));
    let broker = TestBroker::start(setup).await;
    let session = sign_in(&broker, &idp, "dana", &[]).await;

    // Connect: the page's form, on to the provider with the server as the resource.
    let (_, _, page) = request(
        &broker,
        reqwest::Method::GET,
        "/hub",
        &[("cookie", &session)],
        None,
    )
    .await;
    let form = &page[page
        .find("action=\"/hub/connect/peer\"")
        .unwrap_or_else(|| panic!("{page}"))..];
    let csrf = crate::support::hub::field(form, "csrf");
    let (status, headers, text) = request(
        &broker,
        reqwest::Method::POST,
        "/hub/connect/peer",
        &[
            ("cookie", &session),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        Some(format!(
            "csrf={}",
            url::form_urlencoded::byte_serialize(csrf.as_bytes()).collect::<String>()
        )),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let onward = headers["refresh"]
        .to_str()
        .unwrap()
        .strip_prefix("0; url=")
        .unwrap();
    let query: std::collections::BTreeMap<String, String> = url::Url::parse(onward)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(query["client_id"], "registered-broker");
    assert_eq!(query["resource"], resource);
    assert_eq!(query["scope"], "tools:read");
    let registrations: Vec<_> = idp
        .server
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.url.path() == "/register")
        .collect();
    assert_eq!(registrations.len(), 1);
    let registered: Value = serde_json::from_slice(&registrations[0].body).unwrap();
    assert_eq!(
        registered["redirect_uris"],
        json!([format!("{}/hub/oauth/peer/callback", broker.url)])
    );
    // The provider grants a token for the server.
    let mut claims = idp.claims("dana", "tools:read tools:write");
    claims["aud"] = json!(resource);
    let granted = idp.token_by(Signer::Rsa, &claims);
    Mock::given(method("POST"))
        .and(path("/token"))
        .and(body_string_contains("grant_type=authorization_code"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "access_token": granted, "token_type": "Bearer", "expires_in": 300,
        })))
        .mount(&idp.server)
        .await;
    let callback = format!(
        "/hub/oauth/peer/callback?code=peer-code&state={}",
        query["state"]
    );
    let (status, _, text) = request(
        &broker,
        reqwest::Method::GET,
        &callback,
        &[("cookie", &session)],
        None,
    )
    .await;
    assert_eq!(status, 303, "{text}");
    let exchange = idp
        .server
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .rev()
        .find(|r| r.url.path() == "/token")
        .unwrap();
    let form = form_of(&exchange);
    assert_eq!(form["resource"], resource);
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD
        .encode("registered-broker:registered-secret-canary-3141");
    assert_eq!(
        exchange.headers["authorization"],
        format!("Basic {basic}").as_str()
    );

    // Dana's calls reach the server with her account's token; eve has none.
    let dana = idp.token("dana", "tools:read tools:write");
    let (status, body) = broker
        .call_as(
            &dana,
            "peer.find_tools",
            json!({"query": "dns records"}),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"].to_string().contains("hosting."), "{body}");
    let eve = idp.token("eve", "tools:read tools:write");
    let (status, body) = broker
        .call_as(
            &eve,
            "peer.find_tools",
            json!({"query": "dns records"}),
            &[],
        )
        .await;
    assert_eq!(
        (status, classification(&body)),
        (401, "missing_required_credentials"),
        "{body}"
    );
    assert!(!crate::support::logs().contains("registered-secret-canary-3141"));
}
