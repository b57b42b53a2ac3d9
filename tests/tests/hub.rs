//! The hub (decision 012): each user's upstream keys stored once, sealed, used
//! for their calls without a key header, asked for by URL when missing. A loopback
//! provider (`support::idp`) publishes its keys and, for the pages' sign-in, a token
//! endpoint answering ID tokens minted here. The canary key is looked for in every
//! answer, the log, the SQLite files and (with PostgreSQL) every table.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::hub::{
    CANARY, CLIENT_SECRET, VAULT, VAULT_SECRET, api, field, hub_setup, request, sign_in,
    token_form, upstream,
};
use crate::support::idp::{Idp, Signer};
use crate::support::{API_KEY, TestBroker, all_logs, classification, logs};

/// The `Authorization` values the upstream received on `GET /v1/customers`.
async fn upstream_keys(server: &MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == "/v1/customers")
        .map(|r| {
            r.headers
                .get("authorization")
                .map(|v| v.to_str().unwrap().to_string())
                .unwrap_or_default()
        })
        .collect()
}

/// `payments.get_customers` on `/mcp` (2025-11-25) as `bearer` with extra headers.
async fn mcp_read(broker: &TestBroker, bearer: &str, extra: &[(&str, &str)]) -> (u16, Value) {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "payments.get_customers", "arguments": {} } });
    let auth = format!("Bearer {bearer}");
    let mut headers = vec![
        ("authorization", auth.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    headers.extend_from_slice(extra);
    let (status, _, text) = request(
        broker,
        reqwest::Method::POST,
        "/mcp",
        &headers,
        Some(body.to_string()),
    )
    .await;
    (status, serde_json::from_str(&text).unwrap())
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario: two users, their keys, and every way a key could leak between them"
)]
#[tokio::test]
async fn a_user_stores_a_key_once_and_calls_use_it_never_anothers() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let mut setup = hub_setup(&idp, &upstream, "");
    setup.store = Some(crate::support::sqlite_store(dir.path()).await);
    let broker = TestBroker::start(setup).await;
    let alice = idp.token("alice", "tools:read tools:write");
    let bob = idp.token("bob", "tools:read tools:write");
    let mut answers = String::new();

    // Nothing stored: the list says so, for the services whose calls take a key.
    let (status, text) = api(
        &broker,
        reqwest::Method::GET,
        "/hub/keys",
        Some(&alice),
        None,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let list: Value = serde_json::from_str(&text).unwrap();
    let services: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["service"].as_str().unwrap())
        .collect();
    assert!(
        services.contains(&"payments") && !services.contains(&"portal"),
        "{list}"
    );
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|e| e["present"] == false && e["setAt"].is_null())
    );

    // Stored through the API: 204; listed present with its time, never its value.
    let (status, text) = api(
        &broker,
        reqwest::Method::PUT,
        "/hub/keys/payments",
        Some(&alice),
        Some(json!({ "key": CANARY })),
    )
    .await;
    assert_eq!((status, text.as_str()), (204, ""));
    let (_, text) = api(
        &broker,
        reqwest::Method::GET,
        "/hub/keys",
        Some(&alice),
        None,
    )
    .await;
    answers.push_str(&text);
    let list: Value = serde_json::from_str(&text).unwrap();
    let payments = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["service"] == "payments")
        .unwrap();
    assert_eq!(payments["present"], true);
    assert!(
        payments["setAt"].as_str().unwrap().ends_with('Z'),
        "{payments}"
    );
    assert!(!text.contains(CANARY));

    // check_connection says her payments key is present, not Bob's.
    for (who, present) in [(&alice, true), (&bob, false)] {
        let (_, body) = broker
            .call_as(
                who,
                "portal.check_connection",
                json!({ "serviceId": "payments" }),
                &[],
            )
            .await;
        assert_eq!(
            body["data"]["services"][0]["credentialPresent"], present,
            "{body}"
        );
    }

    // Alice's MCP call without a key header: the upstream gets her stored key.
    let (status, reply) = mcp_read(&broker, &alice, &[]).await;
    answers.push_str(&reply.to_string());
    assert_eq!(status, 200);
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(upstream_keys(&upstream).await, [format!("Bearer {CANARY}")]);

    // An upstream answer that echoes the stored key is scrubbed of it.
    Mock::given(method("GET"))
        .and(path("/v1/balance"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "balance", "livemode": false, "note": format!("called with {CANARY}")
        })))
        .mount(&upstream)
        .await;
    let (status, body) = broker
        .call_as(&alice, "payments.get_balance", json!({}), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["object"], "balance");
    answers.push_str(&body.to_string());
    assert!(!body.to_string().contains(CANARY), "{body}");
    let sent = upstream_keys(&upstream).await.len();

    // Bob has none: nothing is sent; MCP 2025-11-25 answers -32042 with his connect link.
    let (status, reply) = mcp_read(&broker, &bob, &[]).await;
    answers.push_str(&reply.to_string());
    assert_eq!(status, 200);
    assert_eq!(reply["error"]["code"], -32042, "{reply}");
    let elicitation = &reply["error"]["data"]["elicitations"][0];
    assert_eq!(elicitation["mode"], "url");
    assert!(elicitation["elicitationId"].as_str().unwrap().len() >= 16);
    let link = elicitation["url"].as_str().unwrap();
    assert!(
        link.starts_with(&format!("{}/hub/connect/payments?state=", broker.url)),
        "{link}"
    );
    assert_eq!(upstream_keys(&upstream).await.len(), sent);

    // POST / and REST answer missing_required_credentials with the link.
    let (status, body) = broker
        .call_as(&bob, "payments.get_customers", json!({}), &[])
        .await;
    answers.push_str(&body.to_string());
    assert_eq!(
        (status, classification(&body)),
        (401, "missing_required_credentials"),
        "{body}"
    );
    assert!(
        body["error"]["details"]["connectUrl"]
            .as_str()
            .unwrap()
            .contains("/hub/connect/payments?state=")
    );
    assert_eq!(body["error"]["details"]["service"], "payments");
    let auth = format!("Bearer {bob}");
    let (status, _, text) = request(
        &broker,
        reqwest::Method::POST,
        "/mcp/payments/get_customers",
        &[
            ("authorization", &auth),
            ("content-type", "application/json"),
        ],
        Some("{}".into()),
    )
    .await;
    answers.push_str(&text);
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (status, classification(&body)),
        (401, "missing_required_credentials")
    );
    assert!(body["error"]["details"]["connectUrl"].is_string());
    assert_eq!(
        upstream_keys(&upstream).await.len(),
        sent,
        "bob's calls sent nothing"
    );

    // A header wins over the stored key.
    let (_, reply) = mcp_read(&broker, &alice, &[("x-payments-api-key", "sk_header_wins")]).await;
    assert_eq!(reply["result"]["isError"], false);
    assert_eq!(
        upstream_keys(&upstream).await.last().unwrap(),
        "Bearer sk_header_wins"
    );

    // Replaced, then deleted: the next call sends nothing and asks by URL again.
    let (status, _) = api(
        &broker,
        reqwest::Method::PUT,
        "/hub/keys/payments",
        Some(&alice),
        Some(json!({ "key": format!("{CANARY}_2") })),
    )
    .await;
    assert_eq!(status, 204);
    let (status, text) = api(
        &broker,
        reqwest::Method::DELETE,
        "/hub/keys/payments",
        Some(&alice),
        None,
    )
    .await;
    assert_eq!((status, text.as_str()), (204, ""));
    let sent = upstream_keys(&upstream).await.len();
    let (_, reply) = mcp_read(&broker, &alice, &[]).await;
    assert_eq!(reply["error"]["code"], -32042, "{reply}");
    assert_eq!(upstream_keys(&upstream).await.len(), sent);

    // The audit says who stored, replaced and deleted which service's key; never a value.
    let audit = crate::support::audit(&broker).await;
    let hub: Vec<(String, String, String)> = audit
        .iter()
        .filter(|r| r.tool.starts_with("hub/keys/"))
        .map(|r| {
            (
                r.key_name.clone(),
                r.tool.clone(),
                r.outcome.as_str().to_string(),
            )
        })
        .collect();
    let alice_name = format!("{}#alice", idp.issuer);
    assert_eq!(
        hub,
        [
            (
                alice_name.clone(),
                "hub/keys/payments".into(),
                "key_stored".into()
            ),
            (
                alice_name.clone(),
                "hub/keys/payments".into(),
                "key_replaced".into()
            ),
            (alice_name, "hub/keys/payments".into(), "key_deleted".into()),
        ]
    );

    // The key is never in clear: not in an answer, the log, the store's files.
    for (what, text) in [
        ("answers", answers),
        ("log", all_logs()),
        ("store", crate::support::folder_text(dir.path())),
    ] {
        assert!(!text.contains(CANARY), "{what} holds the key");
        assert!(
            !text.contains(CLIENT_SECRET),
            "{what} holds the client secret"
        );
        assert!(!text.contains(VAULT_SECRET), "{what} holds the vault key");
    }
}

#[tokio::test]
async fn the_api_refuses_what_it_must() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = TestBroker::start(hub_setup(
        &idp,
        &upstream,
        "[[oauth.roles]]\nname = \"crm-only\"\nservices = [\"crm\"]\n",
    ))
    .await;
    let alice = idp.token("alice", "tools:read");
    let put = |bearer: Option<String>, path: &'static str, body: Value| {
        let broker = &broker;
        async move {
            api(
                broker,
                reqwest::Method::PUT,
                path,
                bearer.as_deref(),
                Some(body),
            )
            .await
        }
    };
    // No token: 401 with the challenge, nothing stored.
    let (status, headers, text) = request(
        &broker,
        reqwest::Method::PUT,
        "/hub/keys/payments",
        &[("content-type", "application/json")],
        Some(json!({ "key": CANARY }).to_string()),
    )
    .await;
    assert_eq!(status, 401, "{text}");
    assert!(
        headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer resource_metadata=")
    );
    // An API key has no hub.
    let (status, text) = put(
        Some(API_KEY.into()),
        "/hub/keys/payments",
        json!({ "key": CANARY }),
    )
    .await;
    assert_eq!(status, 403, "{text}");
    // A service without caller keys, an unknown one, a malformed segment: 404.
    for path in [
        "/hub/keys/portal",
        "/hub/keys/nope",
        "/hub/keys/Pay%20ments",
    ] {
        let (status, text) = put(Some(alice.clone()), path, json!({ "key": CANARY })).await;
        assert_eq!(status, 404, "{path}: {text}");
    }
    // Bad bodies and keys: 400, saying what is wrong.
    for (body, says) in [
        (json!({ "value": CANARY }), "{\\\"key\\\""),
        (json!({ "key": 42 }), "as a string"),
        (json!({ "key": "  " }), "empty"),
        (json!({ "key": "two words" }), "visible ASCII"),
    ] {
        let (status, text) = put(Some(alice.clone()), "/hub/keys/payments", body).await;
        assert_eq!(status, 400, "{text}");
        assert!(text.contains(says), "{text}");
    }
    let (status, _, text) = request(
        &broker,
        reqwest::Method::PUT,
        "/hub/keys/payments",
        &[("authorization", &format!("Bearer {alice}"))],
        Some("not json".into()),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    // A role may narrow the services a user keeps keys for.
    let mut claims = idp.claims("carol", "tools:read");
    claims["roles"] = json!(["crm-only"]);
    let carol = idp.token_by(Signer::Rsa, &claims);
    let (status, _) = put(
        Some(carol.clone()),
        "/hub/keys/payments",
        json!({ "key": CANARY }),
    )
    .await;
    assert_eq!(status, 404);
    let (_, text) = api(
        &broker,
        reqwest::Method::GET,
        "/hub/keys",
        Some(&carol),
        None,
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!([{ "service": "crm", "present": false, "setAt": null }])
    );
    // Another method: 405.
    let (status, _) = api(
        &broker,
        reqwest::Method::POST,
        "/hub/keys",
        Some(&alice),
        None,
    )
    .await;
    assert_eq!(status, 405);
    assert!(
        broker
            .broker
            .store
            .hub_keys_of(&idp.issuer, "alice")
            .await
            .unwrap()
            .is_empty()
    );
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario from the refused call to the stored key, across two users"
)]
#[tokio::test]
async fn a_connect_link_stores_only_for_the_user_who_made_the_call() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = TestBroker::start(hub_setup(&idp, &upstream, "")).await;
    let alice = idp.token("alice", "tools:read");
    let (_, body) = broker
        .call_as(&alice, "payments.get_customers", json!({}), &[])
        .await;
    let link = body["error"]["details"]["connectUrl"]
        .as_str()
        .unwrap()
        .to_string();
    let link_path = link.strip_prefix(&broker.url).unwrap().to_string();

    // Not signed in: the page offers the sign-in, returning to the link.
    let (status, _, page) = request(&broker, reqwest::Method::GET, &link_path, &[], None).await;
    assert_eq!(status, 200);
    assert!(
        page.contains("/hub/login?next=%2Fhub%2Fconnect%2Fpayments%3Fstate%3D"),
        "{page}"
    );

    // Bob signed in opens Alice's link: refused, nothing stored, with or without a form.
    let bob = sign_in(&broker, &idp, "bob", &[]).await;
    let (status, _, page) = request(
        &broker,
        reqwest::Method::GET,
        &link_path,
        &[("cookie", &bob)],
        None,
    )
    .await;
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("another account") && !page.contains("name=\"csrf\""));
    // Nor with a form token of his own (from his own link's page) and Alice's state.
    let bob_token = idp.token("bob", "tools:read");
    let (_, body) = broker
        .call_as(&bob_token, "payments.get_customers", json!({}), &[])
        .await;
    let bob_link = body["error"]["details"]["connectUrl"]
        .as_str()
        .unwrap()
        .strip_prefix(&broker.url)
        .unwrap()
        .to_string();
    let (status, _, bob_page) = request(
        &broker,
        reqwest::Method::GET,
        &bob_link,
        &[("cookie", &bob)],
        None,
    )
    .await;
    assert_eq!(status, 200);
    let state = link.split("state=").nth(1).unwrap();
    let forged = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("state", state)
        .append_pair("csrf", &field(&bob_page, "csrf"))
        .append_pair("key", CANARY)
        .finish();
    let (status, _, page) = request(
        &broker,
        reqwest::Method::POST,
        "/hub/connect/payments",
        &[
            ("cookie", &bob),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        Some(forged),
    )
    .await;
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("another account"), "{page}");
    for who in ["alice", "bob"] {
        assert!(
            broker
                .broker
                .store
                .hub_keys_of(&idp.issuer, who)
                .await
                .unwrap()
                .is_empty()
        );
    }

    // Alice signed in: the page's form stores her key, with its CSRF token only.
    let alice_session = sign_in(&broker, &idp, "alice", &[]).await;
    let (status, _, page) = request(
        &broker,
        reqwest::Method::GET,
        &link_path,
        &[("cookie", &alice_session)],
        None,
    )
    .await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("type=\"password\""));
    let form = |csrf: &str| {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("state", &field(&page, "state"))
            .append_pair("csrf", csrf)
            .append_pair("key", CANARY)
            .finish()
    };
    let headers = [
        ("cookie", alice_session.as_str()),
        ("content-type", "application/x-www-form-urlencoded"),
    ];
    let (status, _, _) = request(
        &broker,
        reqwest::Method::POST,
        "/hub/connect/payments",
        &headers,
        Some(form("forged")),
    )
    .await;
    assert_eq!(status, 403);
    assert!(
        broker
            .broker
            .store
            .hub_keys_of(&idp.issuer, "alice")
            .await
            .unwrap()
            .is_empty()
    );
    let (status, _, done) = request(
        &broker,
        reqwest::Method::POST,
        "/hub/connect/payments",
        &headers,
        Some(form(&field(&page, "csrf"))),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert!(!done.contains(CANARY));
    assert!(
        broker
            .broker
            .store
            .hub_keys_of(&idp.issuer, "bob")
            .await
            .unwrap()
            .is_empty()
    );

    // The retried call runs with the stored key.
    let (status, body) = broker
        .call_as(&alice, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(upstream_keys(&upstream).await, [format!("Bearer {CANARY}")]);

    // An altered link is stale.
    let altered = link_path.replacen("state=", "state=x", 1);
    let (status, _, _) = request(
        &broker,
        reqwest::Method::GET,
        &altered,
        &[("cookie", &alice_session)],
        None,
    )
    .await;
    assert_eq!(status, 400);
    // Another service's link is not this one's.
    let other = link_path.replacen("/payments?", "/crm?", 1);
    let (status, _, _) = request(
        &broker,
        reqwest::Method::GET,
        &other,
        &[("cookie", &alice_session)],
        None,
    )
    .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn the_hub_page_lists_stores_replaces_and_deletes_with_csrf() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = TestBroker::start(hub_setup(&idp, &upstream, "")).await;
    let (status, headers, page) = request(&broker, reqwest::Method::GET, "/hub", &[], None).await;
    assert_eq!(status, 200);
    assert!(page.contains("href=\"/hub/login?next=%2Fhub\""), "{page}");
    assert_eq!(headers["x-frame-options"], "DENY");
    let session = sign_in(&broker, &idp, "dana", &[]).await;
    let cookie = [("cookie", session.as_str())];
    let (_, _, page) = request(&broker, reqwest::Method::GET, "/hub", &cookie, None).await;
    assert!(
        page.contains("Signed in as dana") && page.contains("action=\"/hub/set/payments\""),
        "{page}"
    );
    // The set form's token is for payments only.
    let set_form = &page[page.find("action=\"/hub/set/payments\"").unwrap()..];
    let csrf = field(set_form, "csrf");
    let post = |path: &'static str, body: String| {
        let broker = &broker;
        let session = session.clone();
        async move {
            request(
                broker,
                reqwest::Method::POST,
                path,
                &[
                    ("cookie", &session),
                    ("content-type", "application/x-www-form-urlencoded"),
                ],
                Some(body),
            )
            .await
        }
    };
    let body = format!(
        "csrf={}&key={CANARY}",
        url::form_urlencoded::byte_serialize(csrf.as_bytes()).collect::<String>()
    );
    let (status, _, _) = post("/hub/set/crm", body.clone()).await;
    assert_eq!(status, 403, "a token for payments does not store crm");
    let (status, headers, _) = post("/hub/set/payments", body).await;
    assert_eq!(
        (status, headers["location"].to_str().unwrap()),
        (303, "/hub")
    );
    let (_, _, page) = request(&broker, reqwest::Method::GET, "/hub", &cookie, None).await;
    assert!(
        page.contains("stored 20")
            && page.contains("Replace")
            && page.contains("action=\"/hub/delete/payments\"")
    );
    assert!(!page.contains(CANARY));
    let delete_form = &page[page.find("action=\"/hub/delete/payments\"").unwrap()..];
    let csrf = field(delete_form, "csrf");
    let (status, _, _) = post(
        "/hub/delete/payments",
        format!(
            "csrf={}",
            url::form_urlencoded::byte_serialize(csrf.as_bytes()).collect::<String>()
        ),
    )
    .await;
    assert_eq!(status, 303);
    assert!(
        broker
            .broker
            .store
            .hub_keys_of(&idp.issuer, "dana")
            .await
            .unwrap()
            .is_empty()
    );
    // The same session is the JSON API's caller too.
    let (status, _, text) =
        request(&broker, reqwest::Method::GET, "/hub/keys", &cookie, None).await;
    assert_eq!(status, 200, "{text}");
    // A forged or stale sign-in callback is refused.
    let (status, _, _) = request(
        &broker,
        reqwest::Method::GET,
        "/hub/callback?code=c&state=s",
        &[],
        None,
    )
    .await;
    assert_eq!(status, 400);
    // Signing out takes its form's token and ends the session's cookie.
    let (_, _, page) = request(&broker, reqwest::Method::GET, "/hub", &cookie, None).await;
    let logout_form = &page[page.find("action=\"/hub/logout\"").unwrap()..];
    let csrf = field(logout_form, "csrf");
    let (status, _, _) = post("/hub/logout", "csrf=forged".into()).await;
    assert_eq!(status, 403);
    let body = format!(
        "csrf={}",
        url::form_urlencoded::byte_serialize(csrf.as_bytes()).collect::<String>()
    );
    let (status, headers, _) = post("/hub/logout", body).await;
    assert_eq!(status, 200);
    let cleared: Vec<&str> = headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert!(
        cleared
            .iter()
            .any(|c| c.starts_with("tb_hub=;") && c.contains("Max-Age=0")),
        "{cleared:?}"
    );
}

#[tokio::test]
async fn a_signed_in_user_reads_what_their_calls_spent_on_the_page_and_in_json() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "task_id": "t1" })))
        .mount(&upstream)
        .await;
    let budget = "[[budgets]]\nname = \"daily\"\nunit = \"credits\"\nlimit = 5\nwindow = \"1d\"\napplies_to = \"each-user\"\n";
    let broker = TestBroker::start(hub_setup(&idp, &upstream, budget)).await;
    let erin = idp.token("erin", "tools:read tools:write");
    let task = json!({ "message": { "content": "hi" }, "confirm": true });
    let (status, body) = broker
        .call_as(
            &erin,
            "agent.create_task",
            task,
            &[("x-agent-api-key", "ak_hub_budget_7")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // The same user signed in to the hub: the JSON with the session cookie, and the page.
    let session = sign_in(&broker, &idp, "erin", &[]).await;
    let cookie = [("cookie", session.as_str())];
    let (status, _, text) =
        request(&broker, reqwest::Method::GET, "/hub/budget", &cookie, None).await;
    assert_eq!(status, 200, "{text}");
    let budgets: Value = serde_json::from_str(&text).unwrap();
    let daily = &budgets["budgets"][0];
    assert_eq!(
        (&daily["name"], &daily["used"], &daily["remaining"]),
        (&json!("daily"), &json!(1), &json!(4)),
        "{budgets}"
    );
    let (_, _, page) = request(&broker, reqwest::Method::GET, "/hub", &cookie, None).await;
    let line = format!(
        "Budget daily: 4 of 5 credits left until {}.",
        daily["resetsAt"].as_str().unwrap()
    );
    assert!(page.contains(&line), "{line}\nin\n{page}");
    // Another user's session reads their own, untouched budget.
    let other = sign_in(&broker, &idp, "frank", &[]).await;
    let (_, _, text) = request(
        &broker,
        reqwest::Method::GET,
        "/hub/budget",
        &[("cookie", other.as_str())],
        None,
    )
    .await;
    assert!(text.contains("\"used\":0"), "{text}");
}

#[tokio::test]
async fn the_client_secret_may_go_in_the_form() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let mut setup = hub_setup(&idp, &upstream, "");
    setup.config = Some(setup.config.unwrap_or_default().replace(
        "approver_role = ",
        "token_endpoint_auth = \"client_secret_post\"\napprover_role = ",
    ));
    let broker = TestBroker::start(setup).await;
    let session = sign_in(&broker, &idp, "gina", &[]).await;
    let form = token_form(&idp).await;
    assert_eq!(
        form.get("client_secret").map(String::as_str),
        Some(CLIENT_SECRET)
    );
    let (status, _, page) = request(
        &broker,
        reqwest::Method::GET,
        "/hub",
        &[("cookie", &session)],
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(page.contains("Signed in as gina"), "{page}");
}

#[tokio::test]
async fn a_person_with_the_approver_role_approves_through_the_provider() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let mut setup = hub_setup(&idp, &upstream, "");
    setup.config = Some(format!(
        "confirmation = \"human\"\napproval_key_env = \"APPROVAL_KEY\"\n{}",
        setup.config.unwrap()
    ));
    setup.env.insert(
        "APPROVAL_KEY".into(),
        "approval-key-of-at-least-32-characters!!".into(),
    );
    let broker = TestBroker::start(setup).await;
    let (_, body) = broker
        .call(
            "payments.post_customers",
            json!({ "email": "a@example.com", "confirm": true }),
            &[("x-payments-api-key", "sk_x")],
        )
        .await;
    let id = body["error"]["details"]["approvalId"]
        .as_str()
        .unwrap()
        .to_string();
    let page_path = format!("/approvals/{id}");
    let (_, _, page) = request(&broker, reqwest::Method::GET, &page_path, &[], None).await;
    assert!(
        page.contains(&format!("/hub/login?next=%2Fapprovals%2F{id}")),
        "{page}"
    );
    // Signed in without the role: still the sign-in form.
    let plain = sign_in(&broker, &idp, "erin", &["reader"]).await;
    let (_, _, page) = request(
        &broker,
        reqwest::Method::GET,
        &page_path,
        &[("cookie", &plain)],
        None,
    )
    .await;
    assert!(page.contains("Sign in to review"), "{page}");
    // With it: the request and the decision form; the decision is audited by name.
    let approver = sign_in(&broker, &idp, "frank", &["approver"]).await;
    let (_, _, page) = request(
        &broker,
        reqwest::Method::GET,
        &page_path,
        &[("cookie", &approver)],
        None,
    )
    .await;
    assert!(
        page.contains("Review a write") && page.contains("frank (signed in at"),
        "{page}"
    );
    let csrf = field(&page, "csrf");
    let body = format!(
        "csrf={}&decision=approve",
        url::form_urlencoded::byte_serialize(csrf.as_bytes()).collect::<String>()
    );
    let (status, _, page) = request(
        &broker,
        reqwest::Method::POST,
        &format!("{page_path}/decision"),
        &[
            ("cookie", &approver),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        Some(body),
    )
    .await;
    assert_eq!(status, 200, "{page}");
    let approval = broker.broker.store.approval(&id).await.unwrap().unwrap();
    assert_eq!(
        approval.approver.as_deref(),
        Some(format!("{}#frank", idp.issuer).as_str())
    );
}

#[tokio::test]
async fn modern_clients_get_an_input_required_url_round_and_retry() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = TestBroker::start(hub_setup(&idp, &upstream, "")).await;
    let alice = idp.token("alice", "tools:read");
    let auth = format!("Bearer {alice}");
    let call = |params: Value, capabilities: Value| {
        let broker = &broker;
        let auth = auth.clone();
        async move {
            let mut params = params;
            params["name"] = json!("payments.get_customers");
            params["arguments"] = json!({});
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities,
                "io.modelcontextprotocol/clientInfo": { "name": "test", "version": "1" }
            });
            let body =
                json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params });
            let (status, _, text) = request(
                broker,
                reqwest::Method::POST,
                "/mcp",
                &[
                    ("authorization", &auth),
                    ("content-type", "application/json"),
                    ("accept", "application/json, text/event-stream"),
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "payments.get_customers"),
                ],
                Some(body.to_string()),
            )
            .await;
            (status, serde_json::from_str::<Value>(&text).unwrap())
        }
    };
    let url_mode = json!({ "elicitation": { "url": {} } });
    // Without URL-mode elicitation: the tool error with the link in its envelope.
    let (_, reply) = call(json!({}), json!({ "elicitation": { "form": {} } })).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(reply["result"]["structuredContent"]["error"]["details"]["connectUrl"].is_string());
    // With it: one URL-mode input request and a sealed state.
    let (status, reply) = call(json!({}), url_mode.clone()).await;
    assert_eq!(status, 200);
    let result = &reply["result"];
    assert_eq!(result["resultType"], "input_required", "{reply}");
    let request_params = &result["inputRequests"]["hub_connect"]["params"];
    assert_eq!(
        result["inputRequests"]["hub_connect"]["method"],
        "elicitation/create"
    );
    assert_eq!(request_params["mode"], "url");
    assert!(
        request_params["url"]
            .as_str()
            .unwrap()
            .contains("/hub/connect/payments?state=")
    );
    let state = result["requestState"].as_str().unwrap().to_string();
    // An altered state is refused (-32602); nothing sent.
    let (status, reply) = call(json!({ "inputResponses": { "hub_connect": { "action": "accept" } }, "requestState": format!("{state}x") }), url_mode.clone()).await;
    assert_eq!(
        (status, reply["error"]["code"].as_i64()),
        (400, Some(-32602)),
        "{reply}"
    );
    // Declined: the tool error, not another round.
    let (_, reply) = call(json!({ "inputResponses": { "hub_connect": { "action": "decline" } }, "requestState": state }), url_mode.clone()).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(
        reply["result"]["structuredContent"]["error"]["classification"],
        "missing_required_credentials"
    );
    // The person stored the key at the link; the retry runs.
    let (status, _) = api(
        &broker,
        reqwest::Method::PUT,
        "/hub/keys/payments",
        Some(&alice),
        Some(json!({ "key": CANARY })),
    )
    .await;
    assert_eq!(status, 204);
    let (_, reply) = call(json!({ "inputResponses": { "hub_connect": { "action": "accept" } }, "requestState": state }), url_mode).await;
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(upstream_keys(&upstream).await, [format!("Bearer {CANARY}")]);
    // Another user's state is refused.
    let bob = idp.token("bob", "tools:read");
    let body = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "payments.get_customers", "arguments": {}, "inputResponses": { "hub_connect": { "action": "accept" } }, "requestState": state,
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/clientInfo": { "name": "t", "version": "1" } } } });
    let (status, _, text) = request(
        &broker,
        reqwest::Method::POST,
        "/mcp",
        &[
            ("authorization", &format!("Bearer {bob}")),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "payments.get_customers"),
        ],
        Some(body.to_string()),
    )
    .await;
    assert_eq!(status, 400, "{text}");
}

/// Rekey: keys sealed under the old vault key open under the new one after `vault
/// rekey`, and only then is the old one droppable. A row copied to another user opens
/// for no one. `store` names the backend.
async fn rekey_round_trip(
    store_args: tool_broker::cli::StoreArgs,
    store: tool_broker::store::Store,
) {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let mut setup = hub_setup(&idp, &upstream, "");
    setup.store = Some(store.clone());
    let broker = TestBroker::start(setup).await;
    let alice = idp.token("alice", "tools:read");
    let bob = idp.token("bob", "tools:read");
    for (who, key) in [(&alice, CANARY), (&bob, "sk_bob_key_1")] {
        let (status, _) = api(
            &broker,
            reqwest::Method::PUT,
            "/hub/keys/payments",
            Some(who),
            Some(json!({ "key": key })),
        )
        .await;
        assert_eq!(status, 204);
    }
    let before = store
        .hub_key(&idp.issuer, "alice", "payments")
        .await
        .unwrap()
        .unwrap();

    // A swapped row: Alice's seal under Bob's name opens for neither, and sends nothing.
    let mut swapped = before.clone();
    swapped.subject = "bob".into();
    store.put_hub_key(&swapped).await.unwrap();
    let (status, body) = broker
        .call_as(&bob, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(
        (status, classification(&body)),
        (401, "missing_required_credentials"),
        "{body}"
    );
    assert!(upstream_keys(&upstream).await.is_empty());
    assert!(logs().contains("a stored hub key does not open"));

    // Rotation: the new key first, the old one listed; rekey re-seals every row.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("broker.toml");
    std::fs::write(
        &config,
        "vault_key_env = \"NEW\"\nvault_previous_key_envs = [\"OLD\"]\n",
    )
    .unwrap();
    let new_secret = "a-new-vault-secret-of-more-than-32-chars!";
    let env = move |name: &str| match name {
        "NEW" => Some(new_secret.to_string()),
        "OLD" => Some(VAULT_SECRET.to_string()),
        _ => None,
    };
    let command = tool_broker::cli::VaultCommand::Rekey { config };
    let store_for_cli = store_args.clone();
    let out =
        tokio::task::spawn_blocking(move || tool_broker::cli::vault(command, &store_for_cli, &env))
            .await
            .unwrap();
    // Bob's swapped row opens under no key: said, and the command fails.
    let err = out.unwrap_err();
    assert!(
        err.contains("re-sealed 1 key(s)") && err.contains("1 key(s) open under no vault key"),
        "{err}"
    );
    let after = store
        .hub_key(&idp.issuer, "alice", "payments")
        .await
        .unwrap()
        .unwrap();
    assert_ne!(after.key_id, before.key_id);
    assert_ne!(after.sealed, before.sealed);
    assert!(!after.sealed.contains(CANARY));

    // A broker with only the new key reads Alice's key.
    let mut setup = hub_setup(&idp, &upstream, "");
    setup.store = Some(store.clone());
    setup.env.insert(VAULT.into(), new_secret.into());
    let rotated = TestBroker::start(setup).await;
    let (status, body) = rotated
        .call_as(&alice, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(upstream_keys(&upstream).await, [format!("Bearer {CANARY}")]);
}

#[tokio::test]
async fn rekey_round_trip_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::support::sqlite_store(dir.path()).await;
    let args = tool_broker::cli::StoreArgs {
        data_dir: dir.path().to_path_buf(),
        database_url: None,
    };
    rekey_round_trip(args, store).await;
    assert!(!crate::support::folder_text(dir.path()).contains(CANARY));
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set TOOL_BROKER_TEST_DATABASE_URL and run with --ignored (.ci/run does)"]
async fn rekey_round_trip_on_postgres_and_no_table_holds_a_key() {
    let config = crate::support::store::postgres("hub");
    let tool_broker::store::StoreConfig::Postgres {
        url,
        schema: Some(schema),
    } = &config
    else {
        unreachable!()
    };
    let store = tool_broker::store::Store::open(&config).await.unwrap();
    let args = tool_broker::cli::StoreArgs {
        data_dir: std::path::PathBuf::from("unused"),
        database_url: Some(format!("{url}?options=-csearch_path%3D{schema}")),
    };
    rekey_round_trip(args, store).await;
    // Every table of the schema, every row as text: no key, no secret.
    let pool = sqlx::PgPool::connect(url).await.unwrap();
    let tables: Vec<(String,)> = sqlx::query_as(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1",
    )
    .bind(schema)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(tables.iter().any(|t| t.0 == "hub_keys"), "{tables:?}");
    let mut seen = 0;
    for (table,) in tables {
        let sql = format!("SELECT COALESCE(string_agg(t::text, '\n'), '') FROM {schema}.{table} t");
        let (text,): (String,) = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .fetch_one(&pool)
            .await
            .unwrap();
        seen += text.len();
        for secret in [CANARY, "sk_bob_key_1", VAULT_SECRET, CLIENT_SECRET] {
            assert!(!text.contains(secret), "{table} holds a secret");
        }
    }
    assert!(seen > 0);
}

/// A config, the variables set, what the refusal must say.
type Misconfigured<'a> = (String, &'a [(&'a str, &'a str)], &'a str);

#[tokio::test]
async fn a_hub_misconfigured_is_refused_at_start_saying_what_to_do() {
    let oauth = "[oauth]\nissuer = \"https://idp.example.com\"\nresource = \"https://broker.example.com/mcp\"\n";
    let sign_in = "[oauth.sign_in]\nclient_id = \"hub\"\nclient_secret_env = \"SECRET\"\n";
    let cases: [Misconfigured<'_>; 10] = [
        (
            "vault_key_env = \"V\"\n".to_string(),
            &[("V", VAULT_SECRET)],
            "needs an [oauth] table",
        ),
        (
            format!("vault_key_env = \"V\"\n{oauth}"),
            &[],
            "`V`, which is empty or not set",
        ),
        (
            format!("vault_key_env = \"V\"\n{oauth}"),
            &[("V", "short")],
            "at least 32 characters",
        ),
        (
            format!("vault_key_env = \"V\"\nvault_previous_key_envs = [\"OLD\"]\n{oauth}"),
            &[("V", VAULT_SECRET)],
            "vault_previous_key_envs names the variable `OLD`",
        ),
        (
            format!("{oauth}{sign_in}"),
            &[("SECRET", "s")],
            "needs `vault_key_env`",
        ),
        (
            format!("vault_key_env = \"V\"\n{oauth}{sign_in}"),
            &[("V", VAULT_SECRET), ("SECRET", "s")],
            "[oauth.sign_in] needs public_url",
        ),
        (
            "session_idle_minutes = 0\n".to_string(),
            &[],
            "session_idle_minutes is 0: from 1 to 480",
        ),
        (
            "session_idle_minutes = 481\n".to_string(),
            &[],
            "session_idle_minutes is 481: from 1 to 480",
        ),
        (
            format!("{oauth}keys_max_age_seconds = 0\n"),
            &[],
            "keys_max_age_seconds is 0: at least 1",
        ),
        (
            format!(
                "vault_key_env = \"V\"\npublic_url = \"https://broker.example.com\"\n{oauth}{sign_in}redirect_url = \"https://broker.example.com/elsewhere\"\n"
            ),
            &[("V", VAULT_SECRET), ("SECRET", "s")],
            "must be the broker's /hub/callback",
        ),
    ];
    for (config, env, says) in cases {
        let file: tool_broker::config::ConfigFile = toml::from_str(&config).unwrap();
        let store = tool_broker::store::Store::open(&tool_broker::store::StoreConfig::Memory)
            .await
            .unwrap();
        let env: std::collections::BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        let lookup = move |name: &str| env.get(name).cloned();
        let err = tool_broker::call::Broker::new(
            crate::support::embedded_catalog(),
            &file,
            &lookup,
            store,
        )
        .err()
        .unwrap_or_else(|| panic!("accepted: {config}"));
        assert!(err.contains(says), "{config}\n=> {err}");
        assert!(!err.contains(VAULT_SECRET));
    }
}

/// Seconds added to the real clock by the brokers of
/// [`sessions_end_everywhere_on_sign_out_revoke_and_idle`].
static SESSION_SHIFT: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

fn session_clock() -> jiff::Timestamp {
    let now = jiff::Timestamp::now();
    let shift = SESSION_SHIFT.load(std::sync::atomic::Ordering::SeqCst);
    now.checked_add(jiff::SignedDuration::from_secs(shift))
        .unwrap_or(now)
}

/// Hub sessions are rows of the shared store: a session started on one replica is
/// honoured on another, and ends on both at once when its owner signs out, when an
/// operator runs `tool-broker sessions revoke --user`, or after the idle time (a use
/// within it keeps it alive).
#[tokio::test]
async fn sessions_end_everywhere_on_sign_out_revoke_and_idle() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let config = tool_broker::store::StoreConfig::Sqlite(dir.path().to_path_buf());
    let replica = |store: tool_broker::store::Store| {
        let mut setup = hub_setup(&idp, &upstream, "");
        setup.store = Some(store);
        setup.clock = Some(session_clock);
        TestBroker::start(setup)
    };
    let (a, b) = tokio::join!(
        tool_broker::store::Store::open(&config),
        tool_broker::store::Store::open(&config)
    );
    let one = replica(a.unwrap()).await;
    let two = replica(b.unwrap()).await;
    let signed_in = |broker: &TestBroker, cookie: &str| {
        let cookie = [("cookie", cookie.to_string())];
        let url = broker.url.clone();
        async move {
            let response = reqwest::Client::new()
                .get(format!("{url}/hub"))
                .header(cookie[0].0, &cookie[0].1)
                .send()
                .await
                .unwrap();
            let page = response.text().await.unwrap();
            page.contains("action=\"/hub/logout\"")
        }
    };
    let frank = format!("{}#frank", idp.issuer);

    // Started on one, honoured on two.
    let cookie = sign_in(&one, &idp, "frank", &["approver"]).await;
    assert!(signed_in(&one, &cookie).await && signed_in(&two, &cookie).await);

    // An operator ends frank's sessions: refused on both at once.
    let args = tool_broker::cli::StoreArgs {
        data_dir: dir.path().to_path_buf(),
        database_url: None,
    };
    let command = tool_broker::cli::SessionsCommand::Revoke {
        user: frank.clone(),
    };
    let revoke_args = args.clone();
    let out =
        tokio::task::spawn_blocking(move || tool_broker::cli::sessions(command, &revoke_args))
            .await
            .unwrap()
            .unwrap();
    assert!(out.starts_with("ended 1 session(s)"), "{out}");
    assert!(!signed_in(&one, &cookie).await && !signed_in(&two, &cookie).await);

    // Signing out on two ends the session on one.
    let cookie = sign_in(&one, &idp, "frank", &[]).await;
    let (_, _, page) = request(
        &two,
        reqwest::Method::GET,
        "/hub",
        &[("cookie", &cookie)],
        None,
    )
    .await;
    let logout_form = &page[page.find("action=\"/hub/logout\"").unwrap()..];
    let body = format!(
        "csrf={}",
        url::form_urlencoded::byte_serialize(field(logout_form, "csrf").as_bytes())
            .collect::<String>()
    );
    let (status, _, _) = request(
        &two,
        reqwest::Method::POST,
        "/hub/logout",
        &[
            ("cookie", &cookie),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        Some(body),
    )
    .await;
    assert_eq!(status, 200);
    assert!(!signed_in(&one, &cookie).await);

    // Idle: a use within 30 minutes keeps a session, 30 minutes unused end it.
    let cookie = sign_in(&one, &idp, "frank", &[]).await;
    SESSION_SHIFT.store(20 * 60, std::sync::atomic::Ordering::SeqCst);
    assert!(signed_in(&two, &cookie).await, "used at 20 minutes");
    SESSION_SHIFT.store(45 * 60, std::sync::atomic::Ordering::SeqCst);
    assert!(
        signed_in(&one, &cookie).await,
        "25 minutes after its last use"
    );
    SESSION_SHIFT.store(76 * 60, std::sync::atomic::Ordering::SeqCst);
    assert!(!signed_in(&one, &cookie).await, "31 minutes unused");
    SESSION_SHIFT.store(0, std::sync::atomic::Ordering::SeqCst);
    let listed = tokio::task::spawn_blocking(move || {
        tool_broker::cli::sessions(tool_broker::cli::SessionsCommand::List { limit: 10 }, &args)
    })
    .await
    .unwrap()
    .unwrap();
    assert!(listed.ends_with("0 session(s)\n"), "{listed}");
}
