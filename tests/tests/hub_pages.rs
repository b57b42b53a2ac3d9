//! The hub's pages and the provider's sign-in (decision 012): the key page with its
//! CSRF tokens, what a user's calls spent, the client secret in the token request's
//! form, an approver signing in through the provider, and a modern MCP client sent
//! to the hub's URL for a missing key and retrying.

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, ResponseTemplate};

use crate::support::TestBroker;
use crate::support::hub::{
    CANARY, CLIENT_SECRET, api, field, hub_setup, request, sign_in, token_form, upstream,
    upstream_keys,
};
use crate::support::idp::Idp;

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
            .parts
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
    let approval = broker
        .broker
        .parts
        .store
        .approval(&id)
        .await
        .unwrap()
        .unwrap();
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
