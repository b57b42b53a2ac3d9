//! The operator's console (docs/console.md): who may open it (a hub session or an
//! access token with an `[admin]` role; never an API key), its JSON API and pages
//! (overview, catalog, users and keys, audit with filters, cursor and exports,
//! configuration), an admin's actions and their audit records, and that no key, token
//! or stored secret reaches any of them.

use serde_json::{Value, json};
use tool_broker::store::audit::{AuditRecord, Outcome};

use crate::support::hub::{
    CANARY, CLIENT_SECRET, VAULT_SECRET, api, hub_setup, request, sign_in, upstream,
};
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

/// An API action by `DELETE` as `bearer`: `(status, body text)`.
async fn delete(broker: &TestBroker, path: &str, bearer: Option<&str>) -> (u16, String) {
    api(broker, reqwest::Method::DELETE, path, bearer, None).await
}

/// A decision on approval `id` through the API as `bearer`: `(status, body text)`.
async fn decide(
    broker: &TestBroker,
    id: &str,
    bearer: Option<&str>,
    body: Option<Value>,
) -> (u16, String) {
    let path = format!("/admin/api/approvals/{id}/decision");
    api(broker, reqwest::Method::POST, &path, bearer, body).await
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
    // A browser never reads the API's JSON as anything else, answer or refusal.
    for (path, bearer) in [
        ("/admin/api/overview", Some(admin.as_str())),
        ("/admin/api/overview", None),
    ] {
        let bearer = bearer.map(|b| format!("Bearer {b}"));
        let headers: Vec<(&str, &str)> = bearer
            .as_deref()
            .map(|b| vec![("authorization", b)])
            .unwrap_or_default();
        let (_, answered, _) = broker
            .send(reqwest::Method::GET, path, None, &headers)
            .await;
        assert_eq!(answered["x-content-type-options"], "nosniff", "{path}");
    }

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
        "/admin/api/users",
        "/admin/api/keys",
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
        "/admin/users",
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

/// The CSRF token of a page's form posting to `action` (for `user`, when given).
fn form_csrf(html: &str, action: &str, user: &str) -> String {
    html.split("<form ")
        .find(|form| {
            form.contains(&format!("action=\"{action}\""))
                && (user.is_empty() || form.contains(&format!("name=\"user\" value=\"{user}\"")))
        })
        .and_then(|form| form.split("name=\"csrf\" value=\"").nth(1))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no {action} form for {user}"))
        .to_string()
}

const USER_BUDGETS: &str = "[[budgets]]\nname = \"each-user\"\nunit = \"credits\"\nlimit = 100\nwindow = \"1d\"\napplies_to = \"each-user\"\n\
    [[budgets]]\nname = \"support-shared\"\nunit = \"credits\"\nlimit = 50\nwindow = \"1d\"\napplies_to = \"role:support\"\nshared = true\n\
    [[keys]]\nname = \"ci-bot\"\nsha256 = \"0000000000000000000000000000000000000000000000000000000000000001\"\nservices = [\"crm\"]\n";

/// Charges `units` to `budget`'s current window for `scope`.
async fn charge(broker: &TestBroker, budget: usize, scope: &str, units: u64) {
    use tool_broker::store::budgets::Charge;
    let now = jiff::Timestamp::now().as_millisecond();
    let b = &broker.broker.budgets[budget];
    let hold = format!("hold-{scope}-{units}");
    let charged = broker
        .broker
        .store
        .reserve_budgets(
            &hold,
            &[Charge {
                budget: &b.name,
                scope,
                window_ms: b.window.around(now).0,
                limit: b.limit,
                unit: &b.unit,
            }],
            units,
            "agent.create_task",
            now,
        )
        .await
        .unwrap();
    assert_eq!(charged, tool_broker::store::budgets::Reserved::Held);
    broker
        .broker
        .store
        .settle_budgets(&hold, units, units)
        .await
        .unwrap();
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one story: a user holds keys, sessions and budget use; the console shows them, refuses the wrong hands and acts, audited"
)]
async fn the_users_page_shows_what_each_holds_and_an_admin_ends_sessions_and_deletes_keys() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = TestBroker::start(console_setup(&idp, &upstream, "", USER_BUDGETS)).await;
    let dana_id = format!("{}#dana", idp.issuer);
    let dana = token(&idp, "dana", &["support"]);
    let (status, text) = api(
        &broker,
        reqwest::Method::PUT,
        "/hub/keys/payments",
        Some(&dana),
        Some(json!({ "key": CANARY })),
    )
    .await;
    assert_eq!(status, 204, "{text}");
    let dana_cookie = sign_in(&broker, &idp, "dana", &["support"]).await;
    charge(&broker, 0, &format!("user:{dana_id}"), 7).await;
    charge(&broker, 1, "role:support", 3).await;

    // What the API shows of her: name and roles from her session, her write (the
    // stored key), her session, the service whose key she stored, her budget use.
    let admin = token(&idp, "olive", &["admin"]);
    let (status, body) = get(&broker, "/admin/api/users", Some(&admin)).await;
    assert_eq!(status, 200, "{body}");
    let users = body["users"].as_array().unwrap();
    let her = users
        .iter()
        .find(|u| u["user"] == dana_id.as_str())
        .unwrap();
    assert_eq!(
        (&her["name"], &her["roles"]),
        (&json!("dana"), &json!(["support"]))
    );
    assert_eq!(her["writes"], 1);
    assert!(her["lastWrite"].is_string() && her["lastSeen"].is_string());
    assert_eq!(her["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(her["sessions"][0]["kind"], "hub");
    assert_eq!(her["storedKeys"].as_array().unwrap().len(), 1);
    assert_eq!(her["storedKeys"][0]["service"], "payments");
    assert_eq!(
        (
            &her["budgets"][0]["budget"],
            &her["budgets"][0]["used"],
            &her["budgets"][0]["remaining"]
        ),
        (&json!("each-user"), &json!(7), &json!(93))
    );
    assert_eq!(body["sharedBudgets"][0]["role"], "support");
    assert_eq!(body["sharedBudgets"][0]["budgets"][0]["used"], 3);
    let (_, found) = get(&broker, "/admin/api/users?q=DAN", Some(&admin)).await;
    assert_eq!(found["users"].as_array().unwrap().len(), 1);
    let (_, found) = get(&broker, "/admin/api/users?q=nobody-here", Some(&admin)).await;
    assert!(found["users"].as_array().unwrap().is_empty());
    let (status, body) = get(&broker, "/admin/api/users?name=dana", Some(&admin)).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown parameter `name`")
    );

    // Keys: by name with what each may call, never a hash; stored keys by user.
    let (status, body) = get(&broker, "/admin/api/keys", Some(&admin)).await;
    assert_eq!(status, 200, "{body}");
    let bot = body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "ci-bot")
        .unwrap();
    assert_eq!(
        (&bot["services"], &bot["writes"]),
        (&json!(["crm"]), &json!(0))
    );
    assert!(
        body["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["name"] == "env:TOOL_BROKER_API_KEY" && k["services"].is_null())
    );
    assert!(
        !body
            .to_string()
            .contains("0000000000000000000000000000000000000000000000000000000000000001")
    );
    assert!(
        body["hub"]["services"]
            .as_array()
            .unwrap()
            .contains(&json!("payments"))
    );
    assert_eq!(
        body["storedKeys"],
        json!([{ "user": dana_id, "service": "payments", "setAt": her["storedKeys"][0]["setAt"] }])
    );

    // The wrong hands: an auditor may not act; the API does not act on a cookie alone;
    // an API key never opens it.
    let encoded: String = url::form_urlencoded::byte_serialize(dana_id.as_bytes()).collect();
    let delete_path = format!("/admin/api/users/{encoded}/keys/payments");
    let auditor = token(&idp, "audrey", &["auditor"]);
    let (status, text) = delete(&broker, &delete_path, Some(&auditor)).await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("read only"), "{text}");
    let (status, text) = delete(&broker, &delete_path, Some(API_KEY)).await;
    assert_eq!(status, 403, "{text}");
    let olive_cookie = sign_in(&broker, &idp, "olive", &["admin"]).await;
    let (status, _, text) = request(
        &broker,
        reqwest::Method::DELETE,
        &delete_path,
        &[("cookie", &olive_cookie)],
        None,
    )
    .await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("access token"), "{text}");
    let (status, _) = get(&broker, "/admin/api/users", Some(&admin)).await;
    assert_eq!(status, 200);
    let (_, _, auditor_page) = page(
        &broker,
        "/admin/users",
        Some(&sign_in(&broker, &idp, "audrey", &["auditor"]).await),
    )
    .await;
    assert!(
        auditor_page.contains(&dana_id)
            && !auditor_page
                .contains("<form class=\"inline\" method=\"post\" action=\"/admin/users/")
    );

    // The page: her row with its forms; ending her sessions takes the form's own token.
    let (status, _, html) = page(&broker, "/admin/users", Some(&olive_cookie)).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains("aria-current=\"page\">Users and keys")
            && html.contains("ci-bot")
            && html.contains("support-shared")
    );
    assert!(!html.contains(CANARY));
    let end_csrf = form_csrf(&html, "/admin/users/end-sessions", &dana_id);
    let delete_csrf = form_csrf(&html, "/admin/users/delete-key", &dana_id);
    let post = |path: &'static str, body: String| {
        let broker = &broker;
        let cookie = olive_cookie.clone();
        async move {
            request(
                broker,
                reqwest::Method::POST,
                path,
                &[
                    ("cookie", &cookie),
                    ("content-type", "application/x-www-form-urlencoded"),
                ],
                Some(body),
            )
            .await
        }
    };
    let form = |csrf: &str| {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("user", &dana_id)
            .append_pair("csrf", csrf)
            .finish()
    };
    // Another form's token, or none, changes nothing.
    for csrf in [delete_csrf.as_str(), ""] {
        let (status, _, text) = post("/admin/users/end-sessions", form(csrf)).await;
        assert_eq!(status, 403, "{text}");
    }
    let (_, body) = get(&broker, "/admin/api/users", Some(&admin)).await;
    assert_eq!(
        body["users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["user"] == dana_id.as_str())
            .unwrap()["sessions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let (status, headers, _) = post("/admin/users/end-sessions", form(&end_csrf)).await;
    assert_eq!(status, 303);
    let back = headers["location"].to_str().unwrap();
    assert!(
        back.starts_with("/admin/users?q=") && back.ends_with("done=sessions"),
        "{back}"
    );
    let (_, _, html) = page(&broker, back, Some(&olive_cookie)).await;
    assert!(html.contains("The sessions ended"), "{html}");
    // Her cookie no longer opens the hub as her.
    let (_, _, hub_page) = page(&broker, "/hub", Some(&dana_cookie)).await;
    assert!(!hub_page.contains("Sign out"), "{hub_page}");

    // The API deletes her stored key; a second time there is none.
    let (status, text) = delete(&broker, &delete_path, Some(&admin)).await;
    assert_eq!(status, 200, "{text}");
    let done: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        done,
        json!({ "user": dana_id, "service": "payments", "deleted": true })
    );
    let (status, text) = delete(&broker, &delete_path, Some(&admin)).await;
    assert_eq!(status, 404, "{text}");
    let (status, text) = delete(
        &broker,
        &format!("/admin/api/users/{encoded}/keys/nowhere"),
        Some(&admin),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    let (status, text) = delete(
        &broker,
        &format!("/admin/api/users/{encoded}/sessions"),
        Some(&admin),
    )
    .await;
    assert_eq!(
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap()["ended"].as_u64()
        ),
        (200, Some(0)),
        "{text}"
    );

    // The audit says who did each, on her records.
    let (_, audit) = get(
        &broker,
        &format!("/admin/api/audit?principal={encoded}"),
        Some(&admin),
    )
    .await;
    let records = audit["records"].as_array().unwrap();
    let by_olive = json!(format!("console:{}#olive", idp.issuer));
    let outcomes: Vec<(&str, &str, &Value)> = records
        .iter()
        .map(|r| {
            (
                r["outcome"].as_str().unwrap(),
                r["tool"].as_str().unwrap(),
                &r["confirmation"],
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ("sessions_ended", "hub/sessions", &by_olive),
            ("key_deleted", "hub/keys/payments", &by_olive),
            ("sessions_ended", "hub/sessions", &by_olive),
            ("key_stored", "hub/keys/payments", &json!("hub:api")),
        ]
    );
    let (_, filtered) = get(
        &broker,
        "/admin/api/audit?outcome=sessions_ended",
        Some(&admin),
    )
    .await;
    assert_eq!(filtered["records"].as_array().unwrap().len(), 2);
}

/// A console broker whose writes wait for a person (mode `human`, approvers by role).
async fn human_console(idp: &Idp, upstream: &wiremock::MockServer) -> TestBroker {
    let mut setup = console_setup(
        idp,
        upstream,
        "confirmation = \"human\"\napproval_key_env = \"APPROVAL_KEY\"",
        "",
    );
    setup.env.insert(
        "APPROVAL_KEY".into(),
        "approval-key-of-at-least-32-characters!!".into(),
    );
    TestBroker::start(setup).await
}

const UPSTREAM_KEY: (&str, &str) = ("x-payments-api-key", "sk_console_canary_77");

/// A write that waits for a person: its approval id.
async fn pending(broker: &TestBroker, email: &str) -> String {
    let (status, body) = broker
        .call(
            "payments.post_customers",
            json!({ "email": email, "confirm": true }),
            &[UPSTREAM_KEY],
        )
        .await;
    assert_eq!(status, 428, "{body}");
    body["error"]["details"]["approvalId"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one story: two writes wait; the console lists them, shows what each would send, refuses the wrong hands and decides both ways, audited"
)]
async fn the_approvals_page_shows_what_a_person_approves_and_an_approver_admin_decides() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = human_console(&idp, &upstream).await;
    let first = pending(&broker, "first@example.com").await;
    // Asked in another millisecond: the list's order is by when each was asked (two in
    // one millisecond are ordered by their random ids).
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let second = pending(&broker, "second@example.com").await;

    // Listed newest first, paged; one approval shows what its approver is shown.
    let auditor = token(&idp, "audrey", &["auditor"]);
    let (status, body) = get(
        &broker,
        "/admin/api/approvals?state=pending",
        Some(&auditor),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let ids: Vec<&str> = body["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![second.as_str(), first.as_str()]);
    assert_eq!(body["approvals"][0]["tool"], "payments.post_customers");
    assert_eq!(body["approvals"][0]["askedBy"], "env:TOOL_BROKER_API_KEY");
    let (_, page1) = get(&broker, "/admin/api/approvals?limit=1", Some(&auditor)).await;
    let (_, page2) = get(
        &broker,
        &format!(
            "/admin/api/approvals?limit=1&cursor={}",
            page1["nextCursor"].as_str().unwrap()
        ),
        Some(&auditor),
    )
    .await;
    assert_eq!(
        (
            page1["approvals"][0]["id"].as_str(),
            page2["approvals"][0]["id"].as_str()
        ),
        (Some(second.as_str()), Some(first.as_str()))
    );
    assert!(page2["nextCursor"].is_null());
    let (_, none) = get(
        &broker,
        "/admin/api/approvals?state=decided",
        Some(&auditor),
    )
    .await;
    assert!(none["approvals"].as_array().unwrap().is_empty());
    let (status, body) = get(
        &broker,
        "/admin/api/approvals?state=waiting",
        Some(&auditor),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, one) = get(
        &broker,
        &format!("/admin/api/approvals/{first}"),
        Some(&auditor),
    )
    .await;
    assert_eq!(status, 200, "{one}");
    assert!(
        one["preview"].to_string().contains("first@example.com"),
        "{one}"
    );
    assert!(!one.to_string().contains(UPSTREAM_KEY.1));
    let (status, _) = get(&broker, "/admin/api/approvals/nope", Some(&auditor)).await;
    assert_eq!(status, 404);

    // The wrong hands: an auditor, an admin without the approver role, a cookie alone.
    let approve = Some(json!({ "decision": "approve" }));
    for (bearer, says) in [
        (auditor.clone(), "read only"),
        (token(&idp, "olive", &["admin"]), "approver role"),
    ] {
        let (status, text) = decide(&broker, &first, Some(&bearer), approve.clone()).await;
        assert_eq!(status, 403, "{text}");
        assert!(text.contains(says), "{text}");
    }
    let approver_admin = token(&idp, "olive", &["admin", "approver"]);
    let (status, text) = decide(
        &broker,
        &first,
        Some(&approver_admin),
        Some(json!({ "decision": "maybe" })),
    )
    .await;
    assert_eq!(status, 400, "{text}");

    // Through the API: approved once; a second decision is a conflict. The write runs.
    let (status, text) = decide(&broker, &first, Some(&approver_admin), approve.clone()).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({ "id": first, "state": "approved" })
    );
    let (status, text) = decide(&broker, &first, Some(&approver_admin), approve.clone()).await;
    assert_eq!(status, 409, "{text}");
    let (status, body) = broker
        .call(
            "payments.post_customers",
            json!({ "email": "first@example.com", "confirm": true, "approvalId": first }),
            &[UPSTREAM_KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // On the page: what would be sent, and the buttons for an approver admin only.
    let olive = sign_in(&broker, &idp, "olive", &["admin", "approver"]).await;
    let (status, _, html) =
        page(&broker, &format!("/admin/approvals/{second}"), Some(&olive)).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains("What would be sent") && html.contains("second@example.com"),
        "{html}"
    );
    assert!(!html.contains(UPSTREAM_KEY.1));
    let action = format!("/admin/approvals/{second}/decision");
    assert!(html.contains(&format!("action=\"{action}\"")), "{html}");
    let (_, _, plain_admin) = page(
        &broker,
        &format!("/admin/approvals/{second}"),
        Some(&sign_in(&broker, &idp, "adam", &["admin"]).await),
    )
    .await;
    assert!(
        !plain_admin.contains(&format!("action=\"{action}\""))
            && plain_admin.contains("approver role")
    );
    let csrf = form_csrf(&html, &action, "");
    let form = |csrf: &str, decision: &str| {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("csrf", csrf)
            .append_pair("decision", decision)
            .finish()
    };
    let post = |body: String| {
        let broker = &broker;
        let cookie = olive.clone();
        let action = action.clone();
        async move {
            request(
                broker,
                reqwest::Method::POST,
                &action,
                &[
                    ("cookie", &cookie),
                    ("content-type", "application/x-www-form-urlencoded"),
                ],
                Some(body),
            )
            .await
        }
    };
    let (status, _, text) = post(form("stale", "decline")).await;
    assert_eq!(status, 403, "{text}");
    let (status, headers, _) = post(form(&csrf, "decline")).await;
    assert_eq!(status, 303);
    let back = headers["location"].to_str().unwrap().to_string();
    assert_eq!(back, format!("/admin/approvals/{second}?done=decided"));
    let (_, _, html) = page(&broker, &back, Some(&olive)).await;
    assert!(
        html.contains("Decided; the audit records who decided") && html.contains("declined"),
        "{html}"
    );
    assert!(!html.contains(&format!("action=\"{action}\"")));
    let (_, list) = get(&broker, "/admin/api/approvals", Some(&auditor)).await;
    let states: Vec<&str> = list["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, vec!["declined", "used"]);
    let (_, _, list_page) = page(&broker, "/admin/approvals", Some(&olive)).await;
    assert!(
        list_page.contains(&format!("/admin/approvals/{first}"))
            && list_page.contains("aria-current=\"page\">Approvals")
    );

    // The audit names the console and the admin on both decisions.
    let (_, audit) = get(
        &broker,
        "/admin/api/audit?tool=payments.post_customers",
        Some(&auditor),
    )
    .await;
    let by_olive = format!("console:{}#olive", idp.issuer);
    let decisions: Vec<(&str, &str)> = audit["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["confirmation"] == by_olive.as_str())
        .map(|r| {
            (
                r["outcome"].as_str().unwrap(),
                r["traceId"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        decisions,
        vec![
            ("declined", format!("approval-{second}").as_str()),
            ("approved", format!("approval-{first}").as_str())
        ]
    );
}

#[tokio::test]
async fn the_tasks_page_lists_tasks_and_jobs_across_callers_without_their_results() {
    use tool_broker::store::tasks::StoredTask;
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = TestBroker::start(console_setup(&idp, &upstream, "", "")).await;
    let store = &broker.broker.store;
    let now = jiff::Timestamp::now().as_millisecond();
    let task = |id: &str, owner: &str, at: i64| StoredTask {
        id: id.into(),
        owner: owner.into(),
        tool: "media.slow_job".into(),
        status: "working".into(),
        result: None,
        created_ms: at,
        updated_ms: at,
        heartbeat_ms: at,
        expires_ms: now + 3_600_000,
    };
    store
        .create_task(&task("t-old", "agent-a:0123456789abcdef", now - 120_000))
        .await
        .unwrap();
    store
        .create_task(&task("t-new", "https://idp#ana:fedcba9876543210", now))
        .await
        .unwrap();
    store
        .settle_task(
            "t-old",
            "failed",
            Some(r#"{"code":-32603,"message":"upstream said no"}"#),
            now,
        )
        .await
        .unwrap();
    store
        .settle_task(
            "t-new",
            "completed",
            Some(r#"{"content":[{"type":"text","text":"result-canary-31"}]}"#),
            now,
        )
        .await
        .unwrap();
    store
        .create_task(&task("t-stalled", "agent-b", now - 60_000))
        .await
        .unwrap();
    store
        .record_job(
            "imagegen",
            "agent-a:0123456789abcdef",
            "job-1",
            "imagegen.generate",
            jiff::Timestamp::now(),
        )
        .await
        .unwrap();

    let auditor = token(&idp, "audrey", &["auditor"]);
    let (status, body) = get(&broker, "/admin/api/tasks", Some(&auditor)).await;
    assert_eq!(status, 200, "{body}");
    let tasks: Vec<(&str, &str, &str)> = body["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap(),
                t["owner"].as_str().unwrap(),
                t["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tasks,
        vec![
            ("t-new", "https://idp#ana", "completed"),
            ("t-stalled", "agent-b", "stalled"),
            ("t-old", "agent-a", "failed"),
        ]
    );
    assert_eq!(body["tasks"][2]["error"], "upstream said no");
    assert_eq!(
        (
            &body["jobs"][0]["id"],
            &body["jobs"][0]["owner"],
            &body["jobs"][0]["service"]
        ),
        (&json!("job-1"), &json!("agent-a"), &json!("imagegen"))
    );
    let text = body.to_string();
    assert!(
        !text.contains("result-canary-31") && !text.contains("0123456789abcdef"),
        "{text}"
    );
    let (_, failed) = get(&broker, "/admin/api/tasks?status=failed", Some(&auditor)).await;
    assert_eq!(failed["tasks"].as_array().unwrap().len(), 1);
    assert!(failed["jobs"].as_array().unwrap().is_empty());
    let (_, first) = get(&broker, "/admin/api/tasks?limit=2", Some(&auditor)).await;
    let (_, rest) = get(
        &broker,
        &format!(
            "/admin/api/tasks?limit=2&taskCursor={}",
            first["nextTaskCursor"].as_str().unwrap()
        ),
        Some(&auditor),
    )
    .await;
    assert_eq!(rest["tasks"][0]["id"], "t-old");
    assert!(rest["nextTaskCursor"].is_null());
    let (status, body) = get(&broker, "/admin/api/tasks?status=done", Some(&auditor)).await;
    assert_eq!(status, 400, "{body}");

    let cookie = sign_in(&broker, &idp, "audrey", &["auditor"]).await;
    let (status, _, html) = page(&broker, "/admin/tasks", Some(&cookie)).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("t-new") || html.contains("media.slow_job"));
    assert!(
        html.contains("job-1") && html.contains("stalled") && html.contains("upstream said no")
    );
    assert!(!html.contains("result-canary-31"));
}
