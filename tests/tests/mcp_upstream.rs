//! MCP servers as catalog services (docs/mcp-upstreams.md), with a stdio server the
//! tests start (`tests/src/bin/mcp-fixture.rs`): imported with `catalog import-mcp`,
//! locked, called through `POST /`, its write confirmed, its answers redacted and
//! bounded, its death survived, and a changed tool refused before anything is sent.

use std::path::Path;

use serde_json::json;
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
    assert!(out.contains("8 tools"), "{out}");
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
        verified.contains("notes: the server lists its 8 tools as the catalog pinned them"),
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

/// A broker's `/mcp` as another broker's MCP service over Streamable HTTP: the
/// stateless revision settled by `server/discover`, the caller's key in the service's
/// credential header, the upstream's tools imported over HTTP and called through.
#[tokio::test]
async fn a_streamable_http_server_is_imported_and_called_with_the_caller_s_key() {
    let upstream = TestBroker::start(Setup::default()).await;
    let service = format!(
        "id = \"peer\"\ntitle = \"Peer\"\ndescription = \"Another broker.\"\n\
         catalog_version = \"2026-11-29.1\"\nversion_format = \"dashed_date\"\n\n\
         [credential]\nheader = \"x-peer-key\"\nplacement = \"header\"\nname = \"Authorization\"\nprefix = \"Bearer \"\n\n\
         [mcp]\nurl = \"{}/mcp\"\n",
        upstream.url
    );
    let (_tmp, dir) = scratch_root();
    std::fs::create_dir_all(dir.join("catalog/peer")).unwrap();
    std::fs::write(dir.join("catalog/peer/service.toml"), &service).unwrap();
    // Importing needs the key too: the peer refuses a list without one.
    let refused = run_catalog(&dir, import_mcp("peer")).await.unwrap_err();
    assert!(refused.contains("refused the key"), "{refused}");
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
