//! The operator's console (docs/console.md): who may open it (a hub session or an
//! access token with an `[admin]` role; never an API key), its JSON API and pages
//! (overview, catalog, audit with filters, cursor and exports, configuration), and
//! that no key, token or stored secret reaches any of them.

use serde_json::{Value, json};
use tool_broker::store::audit::{AuditRecord, Outcome};

use crate::hub::{CANARY, CLIENT_SECRET, VAULT_SECRET, api, hub_setup, request, sign_in, upstream};
use crate::support::idp::{Idp, Signer};
use crate::support::{API_KEY, Setup, TestBroker, config_error};

const ADMIN: &str = "[admin]\nroles = [\"admin\"]\nauditor_roles = [\"auditor\"]\n";

/// A hub deployment with the console, `top` prepended (top-level keys) and `tables`
/// appended.
fn console_setup(idp: &Idp, upstream: &wiremock::MockServer, top: &str, tables: &str) -> Setup {
    let mut setup = hub_setup(idp, upstream, "");
    setup.config = Some(format!(
        "{top}\n{}\n{ADMIN}{tables}",
        setup.config.take().unwrap_or_default()
    ));
    setup.config_as_file = true;
    setup
}

/// An access token of `subject` with `roles`.
fn token(idp: &Idp, subject: &str, roles: &[&str]) -> String {
    let mut claims = idp.claims(subject, "tools:read tools:write");
    claims["roles"] = json!(roles);
    idp.token_by(Signer::Rsa, &claims)
}

async fn get(broker: &TestBroker, path: &str, bearer: Option<&str>) -> (u16, Value) {
    let (status, text) = api(broker, reqwest::Method::GET, path, bearer, None).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: not JSON: {text}")),
    )
}

/// A page with a session cookie: `(status, headers, html)`.
async fn page(
    broker: &TestBroker,
    path: &str,
    cookie: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let headers: Vec<(&str, &str)> = cookie.map(|c| ("cookie", c)).into_iter().collect();
    request(broker, reqwest::Method::GET, path, &headers, None).await
}

#[tokio::test]
async fn the_console_opens_for_its_roles_only_and_never_for_an_api_key() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = TestBroker::start(console_setup(&idp, &upstream, "", "")).await;

    // The API: 401 without a credential or with a bad one; 403 for an API key and for
    // a person without a console role; 200 for admins and auditors.
    let (status, body) = get(&broker, "/admin/api/overview", None).await;
    assert_eq!(
        (status, body["error"]["classification"].as_str()),
        (401, Some("unauthorized"))
    );
    let (status, _) = get(&broker, "/admin/api/overview", Some("not-a-token")).await;
    assert_eq!(status, 401);
    let (status, body) = get(&broker, "/admin/api/overview", Some(API_KEY)).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("API key"),
        "{body}"
    );
    for roles in [&[][..], &["support"][..]] {
        let (status, body) = get(
            &broker,
            "/admin/api/overview",
            Some(&token(&idp, "sam", roles)),
        )
        .await;
        assert_eq!(status, 403, "{roles:?}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("admin, auditor"),
            "{body}"
        );
    }
    for role in ["admin", "auditor"] {
        let (status, body) = get(
            &broker,
            "/admin/api/overview",
            Some(&token(&idp, "ana", &[role])),
        )
        .await;
        assert_eq!(status, 200, "{role}: {body}");
        assert_eq!(body["lastHour"]["perMinute"].as_array().unwrap().len(), 60);
        assert_eq!(
            body["upstreams"].as_array().unwrap().len(),
            broker.broker.catalog.services.len()
        );
        assert_eq!(body["catalog"]["tools"], broker.broker.catalog.tools.len());
    }
    let admin = token(&idp, "ana", &["admin"]);
    let (status, _) = api(
        &broker,
        reqwest::Method::POST,
        "/admin/api/overview",
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, 405);
    let (status, body) = get(&broker, "/admin/api/nothing", Some(&admin)).await;
    assert_eq!(status, 404, "{body}");

    // The pages: a sign-in link that comes back here; 403 for a person without a role;
    // the overview for an auditor, marked read only.
    let (status, _, html) = page(&broker, "/admin/audit?outcome=refused", None).await;
    assert_eq!(status, 401);
    assert!(
        html.contains("/hub/login?next=%2Fadmin%2Faudit%3Foutcome%3Drefused"),
        "{html}"
    );
    let nobody = sign_in(&broker, &idp, "nobody", &["support"]).await;
    let (status, _, html) = page(&broker, "/admin", Some(&nobody)).await;
    assert_eq!(status, 403);
    assert!(html.contains("none of the console"), "{html}");
    let auditor = sign_in(&broker, &idp, "audrey", &["auditor"]).await;
    let (status, headers, html) = page(&broker, "/admin", Some(&auditor)).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains("auditor, read only") && html.contains("aria-current=\"page\""),
        "{html}"
    );
    // Its one script carries the answer's nonce; no other script can run.
    let csp = headers["content-security-policy"].to_str().unwrap();
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap();
    assert!(
        html.contains(&format!("<script nonce=\"{nonce}\">")),
        "{csp}"
    );
    assert_eq!(html.matches("<script").count(), 1);
    assert!(csp.starts_with("default-src 'none'") && csp.contains("frame-ancestors 'none'"));
    // The hub's pages share the look and keep the strict policy (no script).
    let (_, headers, html) = page(&broker, "/hub", Some(&auditor)).await;
    assert!(html.contains("<header class=\"bar\">") && !html.contains("<script"));
    assert!(
        !headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("script-src")
    );

    // A broker without [admin] has no console.
    let plain = TestBroker::start(hub_setup(&idp, &upstream, "")).await;
    let (status, _) = get(&plain, "/admin/api/overview", Some(&admin)).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn an_admin_table_the_console_could_not_honour_is_refused_at_start() {
    let err = config_error("[admin]\nroles = [\"admin\"]\n").await;
    assert!(err.contains("[admin] needs an [oauth] table"), "{err}");
    let oauth = "[oauth]\nissuer = \"http://127.0.0.1:1\"\nresource = \"http://127.0.0.1/mcp\"\ndefault_role = \"reader\"\n[[oauth.roles]]\nname = \"reader\"\nrisks = [\"read\"]\n";
    for (admin, says) in [
        ("roles = []", "roles is empty"),
        ("roles = [\"reader\"]", "the [oauth] default_role"),
        (
            "roles = [\"ops\"]\nauditor_roles = [\"ops\"]",
            "in both roles and auditor_roles",
        ),
        (
            "roles = [\"ops\"]\ncolour = \"red\"",
            "unknown field `colour`",
        ),
    ] {
        let text = format!("{oauth}\n[admin]\n{admin}\n");
        let err = match toml::from_str::<tool_broker::config::ConfigFile>(&text) {
            Err(e) => e.to_string(),
            Ok(_) => config_error(&text).await,
        };
        assert!(err.contains(says), "{admin}: {err}");
    }
}

fn record(i: i64, now_ms: i64) -> AuditRecord {
    AuditRecord {
        seq: 0,
        at: jiff::Timestamp::from_millisecond(now_ms - 600_000 + i * 1_000)
            .unwrap()
            .to_string(),
        key_name: if i % 2 == 0 {
            "agent-a"
        } else {
            "=cmd|' /C calc'!A0"
        }
        .into(),
        tool: if i % 3 == 0 {
            "payments.get_refunds"
        } else {
            "crm.contacts_create_contact"
        }
        .into(),
        descriptor_hash: "ab".repeat(32),
        catalog_version: "2026-11-22.1".into(),
        args_sha256: format!("{i:064x}"),
        outcome: if i % 4 == 0 {
            Outcome::Refused
        } else {
            Outcome::Executed
        },
        upstream_status: (i % 4 != 0).then_some(201),
        classification: if i % 4 == 0 {
            "confirmation_required"
        } else {
            "ok"
        }
        .into(),
        trace_id: format!("trace-{i}"),
        duration_ms: 7,
        confirmation: Some("flag".into()),
        policies: (i % 5 == 0).then(|| vec!["support-refunds".into()]),
        cost: None,
    }
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one audit, read every way the console offers: API pages, filters, refusals, exports, the page"
)]
async fn the_audit_filters_pages_and_exports() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = TestBroker::start(console_setup(
        &idp,
        &upstream,
        "audit_retention_days = 30",
        "",
    ))
    .await;
    let now = jiff::Timestamp::now().as_millisecond();
    for i in 0..40 {
        broker
            .broker
            .store
            .append_audit(&record(i, now))
            .await
            .unwrap();
    }
    let auditor = token(&idp, "audrey", &["auditor"]);

    // Filtered, newest first, paged by cursor.
    let (status, body) = get(
        &broker,
        "/admin/api/audit?principal=agent-a&limit=8",
        Some(&auditor),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let first = body["records"].as_array().unwrap();
    assert_eq!(first.len(), 8);
    assert!(first.iter().all(|r| r["keyName"] == "agent-a"));
    assert!(
        first
            .windows(2)
            .all(|w| w[0]["seq"].as_i64() > w[1]["seq"].as_i64())
    );
    assert_eq!(body["retention"]["days"], 30);
    assert!(body["retention"]["oldest"].is_string());
    let cursor = body["nextCursor"].as_str().unwrap().to_string();
    let (_, body) = get(
        &broker,
        &format!("/admin/api/audit?principal=agent-a&limit=8&cursor={cursor}"),
        Some(&auditor),
    )
    .await;
    let second = body["records"].as_array().unwrap();
    assert_eq!(second.len(), 8);
    assert!(second[0]["seq"].as_i64() < first[7]["seq"].as_i64());
    let (_, body) = get(
        &broker,
        &format!(
            "/admin/api/audit?principal=agent-a&limit=8&cursor={}",
            body["nextCursor"].as_str().unwrap()
        ),
        Some(&auditor),
    )
    .await;
    assert_eq!(body["records"].as_array().unwrap().len(), 4);
    assert!(body["nextCursor"].is_null());
    for (query, expected) in [
        ("service=payments", 14),
        ("tool=crm.contacts_create_contact&outcome=refused", 6),
        ("policy=support-refunds", 8),
        ("outcome=executed&service=crm", 20),
    ] {
        let (status, body) = get(
            &broker,
            &format!("/admin/api/audit?{query}&limit=500"),
            Some(&auditor),
        )
        .await;
        assert_eq!(
            (status, body["records"].as_array().unwrap().len()),
            (200, expected),
            "{query}"
        );
    }
    for (query, says) in [
        ("outcome=won", "outcome `won`"),
        ("limit=0", "limit `0`"),
        ("since=yesterday", "since:"),
        ("cursor=-4", "cursor `-4`"),
        ("colour=red", "unknown parameter `colour`"),
        ("format=xml", "format `xml`"),
    ] {
        let (status, body) = get(
            &broker,
            &format!("/admin/api/audit?{query}"),
            Some(&auditor),
        )
        .await;
        assert_eq!(status, 400, "{query}");
        assert!(
            body["error"]["message"].as_str().unwrap().starts_with(says),
            "{query}: {body}"
        );
    }

    // Exports: CSV with a header row and no formula a spreadsheet would run; JSON Lines
    // a record per line; a Link to the rest when the limit cut it.
    let auth = format!("Bearer {auditor}");
    let (status, headers, csv) = request(
        &broker,
        reqwest::Method::GET,
        "/admin/api/audit?format=csv",
        &[("authorization", &auth)],
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    assert!(
        headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment; filename=\"audit-")
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 41);
    assert!(lines[0].starts_with("seq,at,principal,tool,outcome"));
    assert!(lines.iter().skip(1).all(|l| !l.contains(",=cmd")), "{csv}");
    assert!(csv.contains(",'=cmd|' /C calc'!A0,"), "{csv}");
    let (status, headers, jsonl) = request(
        &broker,
        reqwest::Method::GET,
        "/admin/api/audit?format=jsonl&service=crm&limit=5",
        &[("authorization", &auth)],
        None,
    )
    .await;
    assert_eq!(status, 200);
    let rows: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 5);
    let link = headers["link"].to_str().unwrap();
    assert!(
        link.starts_with("</admin/api/audit?")
            && link.contains("cursor=")
            && link.contains("format=jsonl")
            && link.ends_with("; rel=\"next\""),
        "{link}"
    );

    // The page: the filter kept in the form, the rows, export links, the pager.
    let cookie = sign_in(&broker, &idp, "audrey", &["auditor"]).await;
    let (status, _, html) = page(
        &broker,
        "/admin/audit?outcome=refused&limit=3",
        Some(&cookie),
    )
    .await;
    assert_eq!(status, 200, "{html}");
    assert_eq!(
        html.matches("<span class=\"tag\">refused</span>").count(),
        3,
        "{html}"
    );
    assert!(html.contains("<option selected>refused</option>"));
    assert!(html.contains("Records are kept 30 days"));
    assert!(html.contains("format=csv") && html.contains("Older records"));
    // Who links to their records; a catalog tool to its page.
    assert!(
        html.contains("href=\"/admin/audit?principal=agent-a\""),
        "{html}"
    );
    assert!(
        html.contains("href=\"/admin/tools/crm.contacts_create_contact\""),
        "{html}"
    );
    let (status, _, html) = page(&broker, "/admin/audit?principal=nobody", Some(&cookie)).await;
    assert_eq!(status, 200);
    assert!(html.contains("No record matches this filter."));
    let (status, _, html) = page(&broker, "/admin/audit?since=soon", Some(&cookie)).await;
    assert_eq!(status, 400);
    assert!(
        html.contains("role=\"alert\"") && html.contains("since: `soon`"),
        "{html}"
    );
}

#[tokio::test]
async fn the_catalog_searches_like_find_tools_and_a_tool_page_shows_its_policies() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let policies = crate::support::root().join("tests/policy/policies");
    let tables = format!("\n[policy]\ndir = \"{}\"\n", policies.display());
    let broker = TestBroker::start(console_setup(&idp, &upstream, "", &tables)).await;
    let admin = token(&idp, "ana", &["admin"]);

    let (status, body) = get(
        &broker,
        "/admin/api/tools?q=refund%20a%20payment&service=payments&limit=5",
        Some(&admin),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 5);
    assert!(
        tools[0]["fullName"].as_str().unwrap().contains("refund"),
        "{body}"
    );
    assert!(tools.iter().all(|t| t["service"] == "payments"));
    let (_, body) = get(
        &broker,
        "/admin/api/tools?risk=write&class=destructive&limit=2000",
        Some(&admin),
    )
    .await;
    let total = body["total"].as_u64().unwrap();
    let expected = broker
        .broker
        .catalog
        .tools
        .iter()
        .filter(|t| {
            t.risk.as_str() == "write"
                && t.classes
                    .contains(&tool_broker::catalog::descriptor::Class::Destructive)
        })
        .count();
    assert_eq!(total as usize, expected);
    assert!(total > 0);
    for (query, says) in [
        ("risk=maybe", "risk `maybe`"),
        ("service=nowhere", "service `nowhere`"),
        ("sort=name", "unknown parameter"),
    ] {
        let (status, body) = get(&broker, &format!("/admin/api/tools?{query}"), Some(&admin)).await;
        assert_eq!(status, 400, "{query}");
        assert!(
            body["error"]["message"].as_str().unwrap().starts_with(says),
            "{body}"
        );
    }

    let (status, body) = get(
        &broker,
        "/admin/api/tools/payments.post_refunds",
        Some(&admin),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let tool = broker
        .broker
        .catalog
        .resolve("payments.post_refunds")
        .unwrap();
    assert_eq!(
        body["descriptor"]["descriptorHash"],
        tool.descriptor_hash.as_str()
    );
    let ids: Vec<&str> = body["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"support-refunds")
            && ids.contains(&"no-live-refund-previews-for-contractors"),
        "{ids:?}"
    );
    assert!(!ids.contains(&"sales-customers"), "{ids:?}");
    let (status, _) = get(
        &broker,
        "/admin/api/tools/payments.nothing_here",
        Some(&admin),
    )
    .await;
    assert_eq!(status, 404);

    let cookie = sign_in(&broker, &idp, "ana", &["admin"]).await;
    let (status, _, html) =
        page(&broker, "/admin/tools/payments.post_refunds", Some(&cookie)).await;
    assert_eq!(status, 200);
    assert!(
        html.contains(tool.descriptor_hash.as_str()) && html.contains("support-refunds"),
        "{html}"
    );
    let (status, _, html) = page(
        &broker,
        "/admin/tools?q=refund&service=payments",
        Some(&cookie),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        html.contains("best match first") && html.contains("/admin/tools/payments."),
        "{html}"
    );
    let (_, _, html) = page(&broker, "/admin/tools?q=zzzzqqqq", Some(&cookie)).await;
    assert!(html.contains("No tool matches"), "{html}");
}

#[tokio::test]
async fn no_page_or_answer_of_the_console_holds_a_secret() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = TestBroker::start(console_setup(&idp, &upstream, "", "")).await;
    // A user stores a key in the hub; calls are made; the console is read everywhere.
    let dana = token(&idp, "dana", &["admin"]);
    let (status, text) = api(
        &broker,
        reqwest::Method::PUT,
        "/hub/keys/payments",
        Some(&dana),
        Some(json!({ "key": CANARY })),
    )
    .await;
    assert_eq!(status, 204, "{text}");
    let (status, _) = broker
        .call_as(&dana, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(status, 200);
    let cookie = sign_in(&broker, &idp, "dana", &["admin"]).await;
    let session_value = cookie.split_once('=').unwrap().1.to_string();
    let mut seen = String::new();
    for path in [
        "/admin/api/overview",
        "/admin/api/tools?limit=5",
        "/admin/api/tools/payments.get_customers",
        "/admin/api/audit",
        "/admin/api/audit?format=csv",
        "/admin/api/audit?format=jsonl",
        "/admin/api/config",
    ] {
        let auth = format!("Bearer {dana}");
        let (status, headers, body) = request(
            &broker,
            reqwest::Method::GET,
            path,
            &[("authorization", &auth)],
            None,
        )
        .await;
        assert_eq!(status, 200, "{path}: {body}");
        seen.push_str(&format!("{headers:?}{body}"));
    }
    for path in [
        "/admin",
        "/admin/tools",
        "/admin/tools/payments.get_customers",
        "/admin/audit",
        "/admin/config",
    ] {
        let (status, headers, body) = page(&broker, path, Some(&cookie)).await;
        assert_eq!(status, 200, "{path}: {body}");
        seen.push_str(&format!("{headers:?}{body}"));
    }
    // The audit shows the key was stored, by whom; never the key.
    assert!(seen.contains("hub/keys/payments") && seen.contains("key_stored"));
    // The config shows the variables by name, set or not.
    let (_, config) = get(&broker, "/admin/api/config", Some(&dana)).await;
    assert_eq!(
        config["config"]["written"]["vault_key_env"],
        json!({ "variable": "TOOL_BROKER_VAULT_KEY", "set": true })
    );
    assert_eq!(
        config["config"]["written"]["oauth"]["sign_in"]["client_secret_env"]["set"],
        true
    );
    for secret in [
        CANARY,
        VAULT_SECRET,
        CLIENT_SECRET,
        API_KEY,
        dana.as_str(),
        session_value.as_str(),
    ] {
        assert!(
            !seen.contains(secret),
            "a secret reached the console: {}...",
            &secret[..6]
        );
    }
}
