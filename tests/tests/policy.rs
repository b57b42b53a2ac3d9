//! Cedar policies typed by the catalog (docs/policy.md): the schema `policy schema`
//! prints; a folder validated in strict mode at start and by `policy check`; the table
//! of decisions in tests/policy/cases.toml through every call door and every discovery
//! path; `@confirm`; a pinned descriptor hash; the audit; a reload.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};
use tool_broker::cli::{CatalogRoot, Format, PolicyCommand, SchemaFormat, policy};
use wiremock::MockServer;

use crate::support::{Setup, TestBroker, config_error, root};

const PAYMENTS_KEY: (&str, &str) = ("x-payments-api-key", "pk_policy_canary_4");

/// The keys of the table: name -> roles. Each key's token is `token-<name>`.
const KEYS: [(&str, &[&str]); 5] = [
    ("nobody", &[]),
    ("support", &["support"]),
    ("admin", &["admin"]),
    ("support-and-sales", &["support", "sales"]),
    ("contractor-admin", &["contractor", "admin"]),
];

fn token(key: &str) -> String {
    format!("token-{key}")
}

/// `[policy]` over `dir` and the table's keys, every tool listed.
fn config(dir: &std::path::Path, extra: &str) -> String {
    let mut text = format!(
        "toolset = \"all\"\n{extra}\n[policy]\ndir = \"{}\"\n",
        dir.display()
    );
    for (name, roles) in KEYS {
        let roles: Vec<String> = roles.iter().map(|r| format!("\"{r}\"")).collect();
        text.push_str(&format!(
            "\n[[keys]]\nname = \"{name}\"\nsha256 = \"{}\"\nroles = [{}]\n",
            tool_broker::catalog::identity::sha256_hex(token(name).as_bytes()),
            roles.join(", ")
        ));
    }
    text
}

fn policy_dir() -> std::path::PathBuf {
    root().join("tests/policy/policies")
}

/// An upstream answering every request with an empty object.
async fn upstream() -> MockServer {
    use wiremock::matchers::any;
    use wiremock::{Mock, ResponseTemplate};
    let server = MockServer::builder().start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "id": "x", "data": [] })))
        .mount(&server)
        .await;
    server
}

async fn broker_with(server: &MockServer, dir: &std::path::Path, extra: &str) -> TestBroker {
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(config(dir, extra));
    TestBroker::start(setup).await
}

#[derive(Debug, Deserialize)]
struct Cases {
    case: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    key: String,
    tool: String,
    arguments: Value,
    allowed: bool,
    policies: Vec<String>,
    visible: Option<bool>,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(root().join("tests/policy/cases.toml")).unwrap();
    toml::from_str::<Cases>(&text).unwrap().case
}

/// Posts to `/mcp` as `key`; the JSON-RPC reply.
async fn mcp(broker: &TestBroker, key: &str, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let bearer = format!("Bearer {}", token(key));
    let (status, _, text) = broker
        .send(
            reqwest::Method::POST,
            "/mcp",
            Some(body.to_string().into_bytes()),
            &[
                ("authorization", bearer.as_str()),
                ("content-type", "application/json"),
                ("mcp-protocol-version", "2025-11-25"),
                PAYMENTS_KEY,
            ],
        )
        .await;
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// The envelope of one call through each door: `(door, status, envelope)`.
async fn through_every_door(broker: &TestBroker, case: &Case) -> Vec<(&'static str, u16, Value)> {
    let mut out = Vec::new();
    let (status, body) = broker
        .call_as(
            &token(&case.key),
            &case.tool,
            case.arguments.clone(),
            &[PAYMENTS_KEY],
        )
        .await;
    out.push(("POST /", status, body));
    let reply = mcp(
        broker,
        &case.key,
        "tools/call",
        json!({ "name": case.tool, "arguments": case.arguments }),
    )
    .await;
    let result = &reply["result"];
    out.push((
        "/mcp tools/call",
        mcp_status(result),
        result["structuredContent"].clone(),
    ));
    let reply = mcp(
        broker,
        &case.key,
        "tools/call",
        json!({ "name": "call_tool", "arguments": { "name": case.tool, "arguments": case.arguments } }),
    )
    .await;
    let result = &reply["result"];
    out.push((
        "/mcp call_tool",
        mcp_status(result),
        result["structuredContent"].clone(),
    ));
    let (service, tool) = case.tool.split_once('.').unwrap();
    let path = format!("/mcp/{service}/{}", tool.replace('_', "-"));
    let bearer = format!("Bearer {}", token(&case.key));
    let (status, _, text) = broker
        .send(
            reqwest::Method::POST,
            &path,
            Some(case.arguments.to_string().into_bytes()),
            &[
                ("authorization", bearer.as_str()),
                ("content-type", "application/json"),
                PAYMENTS_KEY,
            ],
        )
        .await;
    out.push(("REST", status, serde_json::from_str(&text).unwrap()));
    out
}

/// A tool result as a status: 200 when it succeeded, else the status its
/// classification has on `POST /` (403 for `forbidden`).
fn mcp_status(result: &Value) -> u16 {
    match result["isError"].as_bool() {
        Some(false) => 200,
        _ if result["structuredContent"]["error"]["classification"] == "forbidden" => 403,
        _ => 0,
    }
}

#[tokio::test]
async fn the_table_decides_alike_through_every_door() {
    let server = upstream().await;
    let broker = broker_with(&server, &policy_dir(), "").await;
    for case in cases() {
        for (door, status, envelope) in through_every_door(&broker, &case).await {
            let what = format!("{} ({door}): {envelope}", case.name);
            if case.allowed {
                assert_eq!(status, 200, "{what}");
            } else {
                assert_eq!(status, 403, "{what}");
                let error = &envelope["error"];
                assert_eq!(error["classification"], "forbidden", "{what}");
                assert_eq!(error["details"]["reason"], "policy", "{what}");
                assert_eq!(error["details"]["policies"], json!(case.policies), "{what}");
                // Never an argument value in a refusal.
                assert!(!envelope.to_string().contains("ch_1"), "{what}");
            }
        }
    }
}

#[tokio::test]
async fn discovery_shows_what_some_call_could_run() {
    let server = upstream().await;
    let broker = broker_with(&server, &policy_dir(), "").await;
    let mut listed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, _) in KEYS {
        // Every page of the list.
        let mut names = Vec::new();
        let mut params = json!({});
        loop {
            let reply = mcp(&broker, key, "tools/list", params).await;
            names.extend(
                reply["result"]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(String::from)),
            );
            match reply["result"]["nextCursor"].as_str() {
                Some(cursor) => params = json!({ "cursor": cursor }),
                None => break,
            }
        }
        listed.insert(key.to_string(), names);
    }
    for case in cases() {
        let visible = case.visible.unwrap_or(case.allowed);
        let listed_name = case.tool.replace('.', "_");
        let in_list = listed[&case.key].contains(&listed_name);
        assert_eq!(in_list, visible, "tools/list: {}", case.name);
        let reference = mcp(
            &broker,
            &case.key,
            "tools/call",
            json!({ "name": "get_tool_reference", "arguments": { "name": case.tool } }),
        )
        .await;
        let shown = reference["result"]["isError"] == false;
        assert_eq!(
            shown, visible,
            "get_tool_reference: {}: {reference}",
            case.name
        );
        if !visible {
            assert_eq!(
                reference["result"]["structuredContent"]["error"]["details"]["reason"],
                "policy"
            );
        }
        let found = mcp(
            &broker,
            &case.key,
            "tools/call",
            json!({ "name": "find_tools", "arguments": { "query": case.tool.replace(['.', '_'], " "), "limit": 50 } }),
        )
        .await;
        let hits: Vec<&str> = found["result"]["structuredContent"]["data"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["fullName"].as_str())
            .collect();
        if !visible {
            assert!(
                !hits.contains(&case.tool.as_str()),
                "find_tools: {}",
                case.name
            );
        }
    }
    // A key no policy permits any write sees reads only.
    let nobody = &listed["nobody"];
    assert!(nobody.contains(&"payments_get_customers".to_string()));
    assert!(!nobody.contains(&"payments_post_customers".to_string()));
    assert!(listed["admin"].len() > nobody.len());
}

#[tokio::test]
async fn a_confirm_annotation_turns_a_flag_call_into_an_approval() {
    let server = upstream().await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(config(
        &policy_dir(),
        &format!(
            "approval_key_env = \"APPROVAL_KEY\"\n[[approvers]]\nname = \"alice\"\nsha256 = \"{}\"\n",
            tool_broker::catalog::identity::sha256_hex(b"approver-credential")
        ),
    ));
    setup.env.insert(
        "APPROVAL_KEY".into(),
        "approval-sealing-key-of-at-least-32-chars".into(),
    );
    let broker = TestBroker::start(setup).await;
    let args = json!({ "name": "Jo", "confirm": true });
    // Sales: permitted by `sales-customers`, which asks a person.
    let (status, body) = broker
        .call_as(
            &token("support-and-sales"),
            "payments.post_customers",
            args.clone(),
            &[PAYMENTS_KEY],
        )
        .await;
    assert_eq!(status, 428, "{body}");
    assert_eq!(
        body["error"]["details"]["reason"], "approval_pending",
        "{body}"
    );
    assert_eq!(crate::support::posts(&server).await, 0);
    // An admin: permitted by a policy without `@confirm`: the flag runs it.
    let (status, body) = broker
        .call_as(
            &token("admin"),
            "payments.post_customers",
            args,
            &[PAYMENTS_KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn the_audit_names_the_policies_that_decided_a_write() {
    let server = upstream().await;
    let broker = broker_with(&server, &policy_dir(), "").await;
    let refund = |amount: i64| json!({ "charge": "ch_1", "amount": amount, "confirm": true });
    let (status, _) = broker
        .call_as(
            &token("support"),
            "payments.post_refunds",
            refund(100),
            &[PAYMENTS_KEY],
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = broker
        .call_as(
            &token("contractor-admin"),
            "payments.post_refunds",
            refund(100),
            &[PAYMENTS_KEY],
        )
        .await;
    assert_eq!(status, 403);
    let audit = crate::support::audit(&broker).await;
    let rows: Vec<(&str, &str, Option<Vec<String>>)> = audit
        .iter()
        .map(|r| {
            (
                r.key_name.as_str(),
                r.classification.as_str(),
                r.policies.clone(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("support", "ok", Some(vec!["support-refunds".to_string()])),
            (
                "contractor-admin",
                "forbidden",
                Some(vec!["no-live-refund-previews-for-contractors".to_string()])
            ),
        ]
    );
}

#[tokio::test]
async fn a_policy_pinned_to_a_descriptor_hash_holds_while_the_tool_is_unchanged() {
    let catalog = crate::support::embedded_catalog();
    let hash = &catalog
        .resolve("payments.get_customers")
        .unwrap()
        .descriptor_hash;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pinned.cedar"),
        format!(
            "@id(\"reviewed-list\")\npermit(principal, action == Action::\"payments.get_customers\", resource)\nwhen {{ resource.descriptorHash == \"{hash}\" }};\n\
             @id(\"stale\")\npermit(principal, action == Action::\"payments.get_balance\", resource)\nwhen {{ resource.descriptorHash == \"sha256:0000\" }};\n"
        ),
    )
    .unwrap();
    let server = upstream().await;
    let broker = broker_with(&server, dir.path(), "").await;
    let (status, body) = broker
        .call_as(
            &token("nobody"),
            "payments.get_customers",
            json!({}),
            &[PAYMENTS_KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = broker
        .call_as(
            &token("nobody"),
            "payments.get_balance",
            json!({}),
            &[PAYMENTS_KEY],
        )
        .await;
    assert_eq!(status, 403, "{body}");
    // `policy check` warns of the hash no tool has.
    let report = check_dir(dir.path().to_path_buf(), Format::Text).unwrap();
    assert!(
        report.contains(
            "pinned.cedar:4: policy `stale` pins resource.descriptorHash to \"sha256:0000\""
        ),
        "{report}"
    );
    assert!(!report.contains("`reviewed-list` pins"), "{report}");
}

/// `policy check --dir` on the embedded catalog.
fn check_dir(dir: std::path::PathBuf, format: Format) -> Result<String, String> {
    policy(
        PolicyCommand::Check {
            config: None,
            dir: Some(dir),
            format,
        },
        &CatalogRoot::Embedded,
    )
}

/// A folder with one file, checked: the error text.
fn check_error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.cedar"), text).unwrap();
    check_dir(dir.path().to_path_buf(), Format::Text).unwrap_err()
}

#[test]
fn an_invalid_policy_is_refused_with_its_position() {
    let cases = [
        (
            "permit(principal, action == Action::\"payments.post_refunds\", resource)\nwhen { context.arguments.amout <= 5 };",
            "p.cedar:2:8:",
            "did you mean `amount`?",
        ),
        (
            "permit(principal, action == Action::\"payments.post_refunds\", resource)\nwhen { context.arguments has amount && context.arguments.amount == \"5\" };",
            "p.cedar:2:",
            "type",
        ),
        (
            "permit(principal, action == Action::\"payments.refund_everything\", resource);",
            "p.cedar:1:",
            "unrecognized action `Action::\"payments.refund_everything\"`",
        ),
        (
            "permit(principal in Group::\"support\", action, resource);",
            "p.cedar:1:",
            "Group",
        ),
        (
            "permit(principal, action, resource)",
            "p.cedar:1:",
            "unexpected end of input",
        ),
        (
            "@confirm(\"maybe\")\npermit(principal, action, resource);",
            "p.cedar:1:",
            "\"human\" (a person approves) or \"bound\"",
        ),
        (
            "@id(\"x\")\npermit(principal, action, resource);\n@id(\"x\")\nforbid(principal, action, resource);",
            "p.cedar:3:",
            "also the id of the policy at p.cedar:1",
        ),
        (
            "permit(principal == ?principal, action, resource);",
            "p.cedar:1:",
            "template",
        ),
    ];
    for (text, place, what) in cases {
        let err = check_error(text);
        let first = err.lines().next().unwrap_or_default();
        assert!(first.starts_with(place), "{text}\n{err}");
        assert!(err.contains(what), "{text}\n{err}");
    }
}

#[tokio::test]
async fn serve_does_not_start_on_an_invalid_set() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.cedar"),
        "permit(principal, action == Action::\"payments.post_refunds\", resource)\nwhen { context.arguments.amout <= 5 };",
    )
    .unwrap();
    let err = config_error(&format!("[policy]\ndir = \"{}\"\n", dir.path().display())).await;
    assert!(
        err.contains("bad.cedar:2:8:") && err.contains("amout"),
        "{err}"
    );
    let err = config_error("[policy]\ndir = \"/nonexistent/policies\"\n").await;
    assert!(err.contains("cannot be read"), "{err}");
}

#[tokio::test]
async fn a_reload_takes_a_valid_set_and_keeps_the_old_one_for_an_invalid_one() {
    let dir = tempfile::tempdir().unwrap();
    let write = |text: &str| std::fs::write(dir.path().join("p.cedar"), text).unwrap();
    write("@id(\"reads\")\npermit(principal, action in Action::\"read\", resource);");
    let server = upstream().await;
    let broker = broker_with(&server, dir.path(), "").await;
    let nobody = token("nobody");
    let call = || {
        broker.call_as(
            &nobody,
            "payments.get_customers",
            json!({}),
            &[PAYMENTS_KEY],
        )
    };
    assert_eq!(call().await.0, 200);
    write("@id(\"nothing\")\nforbid(principal, action, resource);");
    broker.broker.parts.reload_policies();
    let (status, body) = call().await;
    assert_eq!(status, 403);
    assert_eq!(body["error"]["details"]["policies"], json!(["nothing"]));
    write("forbid(principal, action, resource) when { context.nope };");
    broker.broker.parts.reload_policies();
    // Still the last valid set.
    assert_eq!(
        call().await.1["error"]["details"]["policies"],
        json!(["nothing"])
    );
    let (_, _, metrics) = broker
        .send(reqwest::Method::GET, "/metrics", None, &[])
        .await;
    assert!(
        metrics.contains("tool_broker_policy_reloads_total{outcome=\"accepted\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("tool_broker_policy_reloads_total{outcome=\"rejected\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_call_in_flight_finishes_under_the_set_it_started_with() {
    use crate::support::poll::{GENERATION_ID, IMAGEGEN_KEY, generation, mount_status};
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, ResponseTemplate};
    let dir = tempfile::tempdir().unwrap();
    let write = |text: &str| std::fs::write(dir.path().join("p.cedar"), text).unwrap();
    write("@id(\"open\")\npermit(principal, action, resource);");
    // A submit answered after a while, then a finished generation: the call's second
    // step (the status read) is decided after the reload below. The while is long
    // (6 s): the reload compiles the set against the catalog's schema, which a debug
    // build on a loaded machine once took longer than 1.5 s to do.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/generations"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "sdGenerationJob": { "generationId": GENERATION_ID } }))
                .set_delay(std::time::Duration::from_millis(6_000)),
        )
        .mount(&server)
        .await;
    mount_status(&server, 200, generation("COMPLETE")).await;
    let broker = broker_with(
        &server,
        dir.path(),
        "[settings.imagegen]\npoll_interval_ms = 5",
    )
    .await;
    let generate = || {
        broker.call(
            "imagegen.generate_image_and_wait",
            json!({ "prompt": "a lighthouse", "confirm": true }),
            &[IMAGEGEN_KEY],
        )
    };
    let status_reads = || async {
        let requests = server.received_requests().await.unwrap_or_default();
        requests
            .iter()
            .filter(|r| r.method.as_str() == "GET")
            .count()
    };
    let reload = async {
        // Once the submit is upstream: a set that refuses everything.
        while server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
        {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        write(
            "@id(\"closed\")\nforbid(principal, action, resource);\npermit(principal, action, resource);",
        );
        broker.broker.parts.reload_policies();
        assert_eq!(
            status_reads().await,
            0,
            "the reload came before the status step"
        );
    };
    let ((status, body), ()) = tokio::join!(generate(), reload);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "COMPLETE", "{body}");
    assert!(
        status_reads().await > 0,
        "the status step ran under the first set"
    );
    // A call that starts now is decided by the new set.
    let (status, body) = generate().await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["details"]["policies"], json!(["closed"]));
}

#[test]
fn the_schema_has_an_action_per_tool_in_its_groups() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("broker.toml");
    std::fs::write(
        &config,
        "[policy]\ndir = \"policies\"\nclaims = [\"email\"]\nset_claims = [\"groups\"]\n",
    )
    .unwrap();
    let json = policy(
        PolicyCommand::Schema {
            config: Some(config.clone()),
            format: SchemaFormat::Json,
        },
        &CatalogRoot::Embedded,
    )
    .unwrap();
    let json: Value = serde_json::from_str(&json).unwrap();
    let types = &json[""]["entityTypes"];
    assert_eq!(types["Tool"]["memberOfTypes"], json!(["Service"]));
    assert_eq!(types["Key"]["memberOfTypes"], json!(["Role"]));
    assert_eq!(
        types["User"]["shape"]["attributes"]["email"],
        json!({ "type": "String", "required": false })
    );
    assert_eq!(
        types["User"]["shape"]["attributes"]["groups"],
        json!({ "type": "Set", "element": { "type": "String" }, "required": false })
    );
    let actions = json[""]["actions"].as_object().unwrap();
    // Every tool; the nine services' groups; call, read, write and the five classes.
    assert_eq!(actions.len(), 1_818 + 9 + 8);
    let refund = &actions["payments.post_refunds"];
    let groups: Vec<&str> = refund["memberOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["id"].as_str())
        .collect();
    assert_eq!(groups, ["call", "payments", "write", "spend"]);
    let context = &refund["appliesTo"]["context"]["attributes"];
    assert_eq!(
        context["arguments"]["attributes"]["amount"],
        json!({ "type": "Long", "required": false })
    );
    assert_eq!(context["dryRun"]["type"], "Boolean");
    assert_eq!(
        context["now"],
        json!({ "type": "Extension", "name": "datetime", "required": true })
    );
    // The call's estimated cost, one optional Long per unit the costs name.
    assert_eq!(
        context["cost"],
        json!({ "type": "Record", "required": true,
                "attributes": { "credits": { "type": "Long", "required": false } } })
    );
    let destructive = actions
        .values()
        .filter(|a| {
            a["memberOf"]
                .as_array()
                .is_some_and(|m| m.iter().any(|g| g["id"] == "destructive"))
        })
        .count();
    assert!(destructive > 10, "{destructive}");
    // The same schema in Cedar's own syntax.
    let text = policy(
        PolicyCommand::Schema {
            config: Some(config),
            format: SchemaFormat::Cedar,
        },
        &CatalogRoot::Embedded,
    )
    .unwrap();
    assert!(
        text.contains("entity Tool in [Service] = {"),
        "{}",
        &text[..400]
    );
    assert!(text.contains("action \"payments.post_refunds\" in [Action::\"call\", Action::\"payments\", Action::\"write\", Action::\"spend\"]"));
    assert!(!text.contains("__cedar::"));
}

#[tokio::test]
async fn a_user_is_in_its_roles_with_its_claims_as_attributes() {
    use crate::support::idp::{Idp, Signer};
    let idp = Idp::start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("users.cedar"),
        "@id(\"finance-reads\")\npermit(principal is User, action in Action::\"read\", resource)\n\
         when { principal has department && principal.department == \"finance\" && principal has groups && principal.groups.contains(\"ledger\") };\n\
         @id(\"auditors-read\")\npermit(principal in Role::\"auditor\", action in Action::\"read\", resource);\n",
    )
    .unwrap();
    let server = upstream().await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(format!(
        "[policy]\ndir = \"{}\"\nclaims = [\"department\"]\nset_claims = [\"groups\"]\n\n{}",
        dir.path().display(),
        idp.config("")
    ));
    let broker = TestBroker::start(setup).await;
    let token = |subject: &str, extra: Value| {
        let mut claims = idp.claims(subject, "tools:read");
        claims
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        idp.token_by(Signer::Rsa, &claims)
    };
    let read = async |bearer: String| {
        broker
            .call_as(
                &bearer,
                "payments.get_customers",
                json!({}),
                &[PAYMENTS_KEY],
            )
            .await
    };
    let (status, body) = read(token(
        "ann",
        json!({ "department": "finance", "groups": ["ledger", "x"] }),
    ))
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = read(token(
        "bob",
        json!({ "department": "sales", "groups": ["ledger"] }),
    ))
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["details"]["policies"], json!([]));
    // A claim of the wrong type is absent, not an error.
    let (status, _) = read(token(
        "cy",
        json!({ "department": ["finance"], "groups": ["ledger"] }),
    ))
    .await;
    assert_eq!(status, 403);
    // The roles claim: `Role::"auditor"`, configured in [oauth] or not.
    let (status, body) = read(token("dee", json!({ "roles": ["auditor"] }))).await;
    assert_eq!(status, 200, "{body}");
}

#[test]
fn every_cookbook_rule_of_the_docs_is_valid() {
    let doc = std::fs::read_to_string(root().join("docs/policy.md")).unwrap();
    let blocks: Vec<&str> = doc
        .split("```cedar\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .collect();
    assert!(blocks.len() >= 9, "{}", blocks.len());
    let dir = tempfile::tempdir().unwrap();
    for (i, block) in blocks.iter().enumerate() {
        std::fs::write(dir.path().join(format!("{i:02}.cedar")), block).unwrap();
    }
    let config = dir.path().join("broker.toml");
    std::fs::write(
        &config,
        format!(
            "[policy]\ndir = \"{}\"\nclaims = [\"email\", \"department\", \"tenant\"]\nset_claims = [\"groups\"]\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let report = policy(
        PolicyCommand::Check {
            config: Some(config),
            dir: None,
            format: Format::Json,
        },
        &CatalogRoot::Embedded,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let report: Value = serde_json::from_str(&report).unwrap();
    // Every rule reaches some tool; only the pinned example's placeholder hash warns.
    for p in report["policies"].as_array().unwrap() {
        assert!(!p["tools"].as_array().unwrap().is_empty(), "{p}");
    }
    let warnings = report["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].as_str().unwrap().contains("reviewed-payouts"));
}

fn before_june() -> jiff::Timestamp {
    "2026-05-31T23:59:59Z".parse().unwrap()
}

fn after_june() -> jiff::Timestamp {
    "2026-06-01T00:00:01Z".parse().unwrap()
}

#[tokio::test]
async fn a_time_boxed_rule_reads_when_the_call_is_decided() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("until.cedar"),
        "@id(\"until-june\")\npermit(principal, action in Action::\"read\", resource)\n\
         when { context.now < datetime(\"2026-06-01T00:00:00Z\") };\n",
    )
    .unwrap();
    let server = upstream().await;
    for (clock, expected) in [
        (before_june as fn() -> jiff::Timestamp, 200),
        (after_june, 403),
    ] {
        let mut setup = Setup::all_upstreams(&server.uri());
        setup.config = Some(config(dir.path(), ""));
        setup.clock = Some(clock);
        let broker = TestBroker::start(setup).await;
        let (status, body) = broker
            .call_as(
                &token("nobody"),
                "payments.get_customers",
                json!({}),
                &[PAYMENTS_KEY],
            )
            .await;
        assert_eq!(status, expected, "{body}");
    }
}
