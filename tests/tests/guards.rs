//! Guards as data (docs/guards.md, decision 021): the shipped rules on every call, at
//! every door. Arguments are read before they are validated, priced and sent (a
//! redacted card number is what leaves, and what a preview shows; a blocking rule
//! sends nothing); answers are read after their secrets are swept, in one pass and as
//! a tree alike; `meta.guards` names the rules that acted, never a value.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker, classification, logs, mcp_tools_call, sources_with};

const KEY: (&str, &str) = ("x-probe-api-key", "hk_GUARD_probe_key_9c2");

const SERVICE: &str = r#"
id = "probe"
title = "Guard probe"
description = "A test service whose tools read and write notes."
catalog_version = "probe-2026.11.30.1"
version_format = "service_dotted_date"
[credential]
header = "x-probe-api-key"
placement = "header"
name = "x-api-key"
"#;

/// `plain` is written in one pass; `whole` selects `$` (the tree path); `note` writes.
const TOOLS: &str = r#"
[[tool]]
name = "plain"
title = "Plain"
description = "Reads the notes as they are."
tier = "agent_ready"
risk = "read"
[tool.http]
method = "GET"
path = "/notes"
[tool.arguments]
type = "object"

[[tool]]
name = "whole"
title = "Whole"
description = "Reads the notes through a selection of all of them."
tier = "agent_ready"
risk = "read"
[tool.http]
method = "GET"
path = "/notes"
[tool.arguments]
type = "object"
[tool.response]
data = "$"

[[tool]]
name = "note"
title = "Note"
description = "Writes a note."
tier = "agent_ready"
risk = "write"
confirmation = "dry_run_default"
[tool.http]
method = "POST"
path = "/notes"
body = "args | pick('text', 'tags')"
[tool.arguments]
type = "object"
required = ["text"]
[tool.arguments.properties.text]
type = "string"
maxLength = 64
[tool.arguments.properties.tags]
type = "array"
items = { type = "string" }
[tool.arguments.properties.confirm]
type = "boolean"
"#;

/// A rule of the deployment's own that blocks, added to the shipped ones.
const BLOCKING: &str = r#"
[[rule]]
id = "ticket-secret"
kind = "secret"
description = "an internal ticket secret (TKS-)"
pattern = 'TKS-[0-9]{6}'
keywords = ["TKS-"]
action = "block"
matches = ["TKS-123456"]
ignores = ["TKS-12"]
"#;

/// A card number that passes Luhn (not one of the test numbers the rule allows), an
/// AWS access key id of the documented form (not AWS's own example), a bidi override.
const CARD: &str = "4539 1488 0343 6467";
const AWS: &str = "AKIAZ7QW3ERT5YUI2OPL";

async fn probe(answer: &str) -> (MockServer, TestBroker) {
    probe_with(answer, None).await
}

/// [`probe`] under a deployment config (read as the file `broker.toml`).
async fn probe_with(answer: &str, config: Option<&str>) -> (MockServer, TestBroker) {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/notes"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(answer.as_bytes().to_vec(), "application/json"),
        )
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/notes"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({ "id": "n1" })))
        .mount(&server)
        .await;
    let shipped = std::fs::read_to_string(crate::support::root().join("rules/guards.toml"))
        .unwrap_or_default();
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.sources = Some(sources_with(&[
        ("catalog/probe/service.toml", SERVICE),
        ("catalog/probe/tools.toml", TOOLS),
        ("rules/guards.toml", &format!("{shipped}\n{BLOCKING}")),
    ]));
    setup.upstreams.insert("probe".into(), server.uri());
    setup.config = config.map(String::from);
    setup.config_as_file = true;
    (server, TestBroker::start(setup).await)
}

/// The bodies the upstream was sent.
async fn sent(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
        .collect()
}

/// A confirmed `probe.note` with `text`.
async fn note(broker: &TestBroker, text: &str) -> (u16, Value) {
    broker
        .call(
            "probe.note",
            json!({ "text": text, "confirm": true }),
            &[KEY],
        )
        .await
}

fn guards(body: &Value) -> Vec<&str> {
    body["meta"]["guards"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn arguments_are_redacted_before_they_are_validated_previewed_and_sent() {
    let (server, broker) = probe("[]").await;
    let text = format!("card {CARD} key {AWS}");
    let (status, body) = broker
        .call(
            "probe.note",
            json!({ "text": text, "tags": ["iban DE44 5001 0517 5407 3249 31"] }),
            &[KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["dryRun"], true,
        "a write without confirm is previewed: {body}"
    );
    let shown = body["data"]["request"]["body"].to_string();
    assert!(
        shown.contains("[REDACTED:card]") && shown.contains("[REDACTED:aws-access-key]"),
        "the preview shows the redacted request: {shown}"
    );
    assert!(!body.to_string().contains("4539") && !body.to_string().contains(AWS));
    assert_eq!(guards(&body), ["aws-access-key", "card", "iban"], "{body}");
    assert!(sent(&server).await.is_empty());

    let (status, body) = broker
        .call(
            "probe.note",
            json!({ "text": text, "tags": ["DE44 5001 0517 5407 3249 31"], "confirm": true }),
            &[KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        sent(&server).await,
        [
            json!({ "text": "card [REDACTED:card] key [REDACTED:aws-access-key]", "tags": ["[REDACTED:iban]"] })
        ]
    );
    assert_eq!(guards(&body), ["aws-access-key", "card", "iban"]);

    // A text the redaction brings within the schema's bound is valid: the schema reads
    // the redacted arguments (64 characters at most: 65 with the number, 61 without).
    let long = format!("{} {CARD}", "x".repeat(45));
    let (status, body) = broker
        .call(
            "probe.note",
            json!({ "text": long, "confirm": true }),
            &[KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // Test numbers and a number that fails Luhn are left alone, and no rule is named.
    let (status, body) = broker
        .call(
            "probe.note",
            json!({ "text": "test 4242 4242 4242 4242 or 4539 1488 0343 6468", "confirm": true }),
            &[KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["meta"].get("guards").is_none(), "{body}");
    assert_eq!(
        sent(&server).await.last().cloned(),
        Some(json!({ "text": "test 4242 4242 4242 4242 or 4539 1488 0343 6468" }))
    );
}

#[tokio::test]
async fn a_blocking_rule_refuses_the_arguments_with_its_pointer_and_never_the_text() {
    let (server, broker) = probe("[]").await;
    for args in [
        json!({ "text": "ok", "tags": ["fine", "see TKS-424242"], "confirm": true }),
        json!({ "text": "ok", "tags": ["fine", "see TKS-424242"] }),
    ] {
        let (status, body) = broker.call("probe.note", args, &[KEY]).await;
        assert_eq!(
            (status, classification(&body)),
            (422, "guard_blocked"),
            "{body}"
        );
        assert_eq!(
            body["error"]["details"],
            json!({ "rule": "ticket-secret", "where": "arguments", "pointer": "/tags/1" })
        );
        assert_eq!(guards(&body), ["ticket-secret"]);
        assert!(!body.to_string().contains("424242"), "{body}");
        assert_eq!(body["error"]["retryable"], false);
    }
    assert!(sent(&server).await.is_empty(), "nothing was sent");
    assert!(!logs().contains("424242"), "no log line holds the text");
}

#[tokio::test]
async fn answers_are_guarded_in_one_pass_and_as_a_tree_alike() {
    // A bidi override written as a JSON escape, a tag character as it is.
    let answer = format!(
        "[{{\"id\":\"n1\",\"text\":\"pay with {CARD}\",\"at\":\"2026-11-30T10:00:00Z\"}},{{\"id\":\"n2\",\"text\":\"hidden\\u202eevil \u{E0041}tag\",\"n\":1234567890123}},{{\"id\":\"n3\",\"text\":\"plain words\"}}]"
    );
    let (_server, broker) = probe(&answer).await;
    let mut seen = Vec::new();
    for tool in ["probe.plain", "probe.whole"] {
        let (status, body) = broker.call(tool, json!({}), &[KEY]).await;
        assert_eq!(status, 200, "{tool}: {body}");
        assert_eq!(
            body["data"][0]["text"], "pay with [REDACTED:card]",
            "{tool}"
        );
        assert_eq!(
            body["data"][1]["text"], "hiddenevil tag",
            "{tool}: stripped"
        );
        assert_eq!(
            body["data"][1]["n"], 1234567890123_u64,
            "numbers are not text"
        );
        assert_eq!(body["data"][2]["text"], "plain words");
        assert_eq!(guards(&body), ["card", "invisible-characters"], "{tool}");
        seen.push(body["data"].clone());
    }
    assert_eq!(seen[0], seen[1], "both paths give the same answer");

    // An answer with nothing to guard is written in one pass, and names no rule.
    let (_server, calm) =
        probe(r#"[{"id":"n1","text":"calm","at":"2026-11-30T10:00:00Z","n":1234567890123}]"#).await;
    let (status, body) = calm.call("probe.plain", json!({}), &[KEY]).await;
    assert_eq!(status, 200);
    assert!(body["meta"].get("guards").is_none(), "{body}");
}

#[tokio::test]
async fn a_blocking_rule_in_an_answer_returns_nothing_of_it() {
    let (_server, broker) = probe(r#"{"items":[{"text":"ref TKS-777777"}],"secret":"x"}"#).await;
    for tool in ["probe.plain", "probe.whole"] {
        let (status, body) = broker.call(tool, json!({}), &[KEY]).await;
        assert_eq!(
            (status, classification(&body)),
            (422, "guard_blocked"),
            "{tool}: {body}"
        );
        assert_eq!(
            body["error"]["details"],
            json!({ "rule": "ticket-secret", "where": "answer", "pointer": "/items/0/text" })
        );
        assert!(body["data"].is_null() && !body.to_string().contains("777777"));
    }
}

#[tokio::test]
async fn every_door_guards_the_same_way() {
    let (server, broker) = probe(&format!(r#"{{"text":"card {CARD}"}}"#)).await;
    // /mcp.
    let (status, reply) = mcp_tools_call(
        &broker,
        json!({ "name": "probe.plain", "arguments": {} }),
        &[KEY],
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    let envelope = &reply["result"]["structuredContent"];
    assert_eq!(envelope["data"]["text"], "card [REDACTED:card]", "{reply}");
    assert_eq!(guards(envelope), ["card"]);
    assert!(!reply.to_string().contains("4539"), "{reply}");
    let (_, reply) = mcp_tools_call(
        &broker,
        json!({ "name": "probe.note", "arguments": { "text": "TKS-101010", "confirm": true } }),
        &[KEY],
    )
    .await;
    let envelope = &reply["result"]["structuredContent"];
    assert_eq!(classification(envelope), "guard_blocked", "{reply}");
    assert!(!reply.to_string().contains("101010"));
    // The REST projection.
    let (status, _, text) = broker
        .send(
            reqwest::Method::POST,
            "/mcp/probe/note",
            Some(
                json!({ "text": "TKS-202020", "confirm": true })
                    .to_string()
                    .into_bytes(),
            ),
            &[
                (
                    "authorization",
                    &format!("Bearer {}", crate::support::API_KEY),
                ),
                ("content-type", "application/json"),
                KEY,
            ],
        )
        .await;
    assert_eq!(status, 422, "{text}");
    assert!(
        text.contains("guard_blocked") && !text.contains("202020"),
        "{text}"
    );
    assert!(sent(&server).await.is_empty());
}

#[tokio::test]
async fn a_tool_run_inside_another_is_guarded_and_its_rules_reach_the_door() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/medias/folder"))
        .respond_with(
            ResponseTemplate::new(201)
                .set_body_json(json!({ "id": "f1", "note": format!("card {CARD}") })),
        )
        .mount(&server)
        .await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let crm = [
        ("x-crm-api-key", "ck_guard_canary_3"),
        ("x-crm-location-id", "loc1"),
    ];
    let (status, body) = broker
        .call(
            "crm.crm_media_storage_write",
            json!({
                "toolName": "medias_create_media_folder",
                "confirm": true,
                "confirmApply": "CONFIRM APPLY",
                "arguments": { "body": { "name": format!("for {AWS}") } },
            }),
            &crm,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["meta"]["dispatchedTo"],
        "crm.medias_create_media_folder"
    );
    let sent = server.received_requests().await.unwrap_or_default();
    let sent: Value = serde_json::from_slice(&sent[0].body).unwrap_or_default();
    assert_eq!(sent["name"], "for [REDACTED:aws-access-key]", "{sent}");
    assert!(!body.to_string().contains("4539"), "{body}");
    assert_eq!(guards(&body), ["aws-access-key", "card"], "{body}");
}

/// The deployment's rules: one extends `card` to block card numbers in arguments (the
/// shipped `card` still redacts them in answers); a tool-specific rule of the same family
/// turns it off for one tool; a shipped rule that is off is turned on by its id.
const DEPLOYED: &str = r#"
[[guards.rule]]
id = "no-cards-out"
extends = "card"
looks_at = "arguments"
action = "block"

[[guards.rule]]
id = "email"
on = true
"#;

const NOTES_TAKE_CARDS: &str = r#"
[[guards.rule]]
id = "notes-take-cards"
extends = "no-cards-out"
tool = "probe.note"
on = false
"#;

#[tokio::test]
async fn a_deployment_extends_changes_and_selects_rules_and_the_most_specific_wins() {
    let answer = format!(r#"{{"text":"card {CARD}, mail dana@acme.io, doc jo@example.com"}}"#);
    let (server, broker) = probe_with(&answer, Some(DEPLOYED)).await;
    let (status, body) = note(&broker, &format!("card {CARD}")).await;
    assert_eq!(
        (status, classification(&body)),
        (422, "guard_blocked"),
        "{body}"
    );
    assert_eq!(body["error"]["details"]["rule"], "no-cards-out");
    assert!(sent(&server).await.is_empty());
    let (status, body) = broker.call("probe.plain", json!({}), &[KEY]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["text"], "card [REDACTED:card], mail [REDACTED:email], doc jo@example.com",
        "answers: the shipped card rule, and email turned on (example.com allowed)"
    );
    assert_eq!(guards(&body), ["card", "email"]);

    // One tool named: its family's rule for that tool wins, and it is off there.
    let (server, broker) =
        probe_with(&answer, Some(&format!("{DEPLOYED}{NOTES_TAKE_CARDS}"))).await;
    let (status, body) = note(&broker, &format!("card {CARD}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        sent(&server).await,
        [json!({ "text": format!("card {CARD}") })]
    );
    assert!(body["meta"].get("guards").is_none(), "{body}");
}

/// The error a deployment's rules are refused with at start, read as `broker.toml`.
async fn refused(config: &str) -> String {
    let mut file: tool_broker::config::ConfigFile =
        toml::from_str(config).unwrap_or_else(|e| panic!("{e}"));
    file.file = Some(("broker.toml".into(), config.into()));
    let store = tool_broker::store::Store::open(&tool_broker::store::StoreConfig::Memory)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    match tool_broker::call::Broker::new(
        crate::support::embedded_catalog(),
        &file,
        &|_| None,
        store,
    ) {
        Ok(_) => panic!("accepted: {config}"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn a_deployment_rule_that_cannot_hold_is_refused_at_start_with_its_line() {
    let cases = [
        (
            "[[guards.rule]]\nid = \"x\"\nextends = \"card\"\ntool = \"crm.no_such_tool\"\n",
            "broker.toml:1: rule `x` names no tool `crm.no_such_tool`",
        ),
        (
            "[[guards.rule]]\nid = \"x\"\nextends = \"card\"\nservice = \"nowhere\"\n",
            "broker.toml:1: rule `x`'s selectors match no tool",
        ),
        (
            "\n[[guards.rule]]\nid = \"a\"\nextends = \"card\"\nservice = \"crm\"\n\n[[guards.rule]]\nid = \"b\"\nextends = \"card\"\nservice = \"crm\"\n",
            "as specifically",
        ),
        (
            "[[guards.rule]]\nid = \"x\"\nextends = \"cards\"\n",
            "broker.toml:1: rule `x` extends `cards`, which is no rule before it",
        ),
        (
            "[[guards.rule]]\nid = \"card\"\nallow = [\"4539 1488 0343 6467\"]\n",
            "swallows its own example",
        ),
    ];
    for (config, expected) in cases {
        let error = refused(config).await;
        assert!(error.contains(expected), "{expected}: {error}");
        assert!(
            error.starts_with("the guard rules do not compile"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn policies_read_the_rules_that_fired_and_the_audit_and_metric_name_them() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        dir.path().join("guards.cedar"),
        "@id(\"all\")\npermit(principal, action, resource);\n\n\
         @id(\"no-cards-in-writes\")\nforbid(principal, action in Action::\"write\", resource)\n\
         when { context.guards.contains(\"card\") };\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let config = format!("[policy]\ndir = \"{}\"\n", dir.path().display());
    let answer = format!(r#"{{"text":"card {CARD}"}}"#);
    let (server, broker) = probe_with(&answer, Some(&config)).await;
    // A card number in a write's arguments: redacted, and the policy refuses it.
    let (status, body) = note(&broker, &format!("card {CARD}")).await;
    assert_eq!(
        (status, classification(&body)),
        (403, "forbidden"),
        "{body}"
    );
    assert_eq!(
        body["error"]["details"]["policies"],
        json!(["no-cards-in-writes"])
    );
    assert_eq!(guards(&body), ["card"]);
    // An AWS key is redacted, and the policy reads no card: it runs.
    let (status, body) = note(&broker, &format!("key {AWS}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(sent(&server).await.len(), 1);
    // A read's answer with a card is not the arguments: the policy lets it through.
    let (status, body) = broker.call("probe.plain", json!({}), &[KEY]).await;
    assert_eq!(status, 200, "{body}");

    let records = crate::support::audit(&broker).await;
    let noted: Vec<(&str, Option<Vec<String>>)> = records
        .iter()
        .map(|r| (r.classification.as_str(), r.guards.clone()))
        .collect();
    assert_eq!(
        noted,
        [
            ("forbidden", Some(vec!["card".to_string()])),
            ("ok", Some(vec!["aws-access-key".to_string()])),
        ]
    );
    let (_, _, metrics) = broker
        .send(reqwest::Method::GET, "/metrics", None, &[])
        .await;
    for line in [
        r#"tool_broker_guard_hits_total{rule="card",direction="arguments",action="redact"} 1"#,
        r#"tool_broker_guard_hits_total{rule="card",direction="answers",action="redact"} 1"#,
        r#"tool_broker_guard_hits_total{rule="aws-access-key",direction="arguments",action="redact"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line}\n{metrics}");
    }
    assert_eq!(
        broker
            .broker
            .parts
            .metrics
            .guard_hits_last_hour()
            .get("card"),
        Some(&2)
    );
}

#[tokio::test]
async fn the_console_lists_the_rules_in_effect_with_their_hits_in_the_last_hour() {
    use crate::support::console::{ADMIN, get, page, token};
    let idp = crate::support::idp::Idp::start().await;
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/customers"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "data": [{ "id": "cus_1", "description": format!("card {CARD}") }] }),
        ))
        .mount(&upstream)
        .await;
    let setup = crate::support::console::console_setup(
        &idp,
        &upstream,
        "",
        "\n[[guards.rule]]\nid = \"no-cards-out\"\nextends = \"card\"\nlooks_at = \"arguments\"\naction = \"block\"\n",
    );
    assert!(setup.config.as_deref().unwrap_or_default().contains(ADMIN));
    let broker = TestBroker::start(setup).await;
    let dana = token(&idp, "dana", &["admin"]);
    let (status, body) = broker
        .call_as(
            &dana,
            "payments.get_customers",
            json!({}),
            &[("x-payments-api-key", "pk_guard_console_1")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(guards(&body), ["card"]);
    let (status, config) = get(&broker, "/admin/api/config", Some(&dana)).await;
    assert_eq!(status, 200);
    let rules = config["guards"].as_array().cloned().unwrap_or_default();
    let card = rules
        .iter()
        .find(|r| r["id"] == "card")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (
            card["on"].clone(),
            card["action"].clone(),
            card["hitsLastHour"].clone()
        ),
        (json!(true), json!("redact"), json!(1))
    );
    let added = rules
        .iter()
        .find(|r| r["id"] == "no-cards-out")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (added["family"].clone(), added["looksAt"].clone()),
        (json!("card"), json!("arguments"))
    );
    let email = rules
        .iter()
        .find(|r| r["id"] == "email")
        .cloned()
        .unwrap_or_default();
    assert_eq!(email["on"], false);
    let cookie = crate::support::hub::sign_in(&broker, &idp, "dana", &["admin"]).await;
    let (status, _, html) = page(&broker, "/admin/config", Some(&cookie)).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("<h2>Guards</h2>") && html.contains("no-cards-out"),
        "{html}"
    );
    assert!(!html.contains("4539"));
}
