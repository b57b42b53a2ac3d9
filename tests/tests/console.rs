//! The operator's console (docs/console.md): who may open it (a hub session or an
//! access token with an `[admin]` role; never an API key), its JSON API and pages
//! (overview, configuration), and that no key, token or stored secret reaches any
//! page or answer. The other pages: `console_audit_page`, `console_catalog`,
//! `console_users`, `console_approvals`.

use serde_json::json;

use crate::support::console::{console_setup, get, page, token};
use crate::support::hub::{
    CANARY, CLIENT_SECRET, VAULT_SECRET, api, hub_setup, request, sign_in, upstream,
};
use crate::support::idp::Idp;
use crate::support::{API_KEY, TestBroker, config_error};

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
            broker.broker.parts.catalog.services.len()
        );
        assert_eq!(
            body["catalog"]["tools"],
            broker.broker.parts.catalog.tools.len()
        );
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
