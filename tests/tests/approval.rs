//! Who confirms a write, mode `human`, on the approval page (engine/core/src/confirm/approval/): a
//! write waits for a person who signs in with an approver credential, sees the exact
//! request and approves or declines it; the flag alone never runs it; forms without
//! their CSRF token change nothing; approvals are single use and expire; what the
//! approver sees is sealed in the store.

use serde_json::{Value, json};
use wiremock::MockServer;

use crate::support::approval::{
    APPROVAL_KEY, CREDENTIAL, KEY, create, csrf, get, human_broker, human_broker_waiting,
    human_broker_with, post_form, sign_in,
};
use crate::support::{Setup, TestBroker, classification, posts};

/// `payments.post_customers`, confirmed, with approval `id`.
async fn with_approval(broker: &TestBroker, id: &str) -> (u16, Value) {
    broker
        .call(
            "payments.post_customers",
            create(json!({ "approvalId": id })),
            &[KEY],
        )
        .await
}

/// Asks for an approval: `(id, url path)`.
async fn ask(broker: &TestBroker) -> (String, String) {
    let (status, body) = broker
        .call("payments.post_customers", create(json!({})), &[KEY])
        .await;
    assert_eq!(status, 428, "{body}");
    assert_eq!(body["error"]["details"]["reason"], "approval_pending");
    let id = body["error"]["details"]["approvalId"]
        .as_str()
        .unwrap()
        .to_string();
    let url = body["error"]["details"]["approvalUrl"].as_str().unwrap();
    let path = url[url.find("/approvals/").unwrap()..].to_string();
    (id, path)
}

#[tokio::test]
async fn a_person_approves_on_the_page_and_the_write_runs_once() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = human_broker(&server, dir.path()).await;
    let (id, page) = ask(&broker).await;
    assert_eq!(posts(&server).await, 0, "the flag alone never runs it");

    // Still pending: refused with the link again.
    let (status, body) = with_approval(&broker, &id).await;
    assert_eq!(
        (status, &body["error"]["details"]["reason"]),
        (428, &json!("approval_pending"))
    );

    // The page wants a sign-in; a wrong credential or a missing CSRF token is refused.
    let (status, html) = get(&broker, &page, None).await;
    assert_eq!(status, 200);
    assert!(html.contains("Sign in") && !html.contains("Customer-Canary-Jo"));
    let token = csrf(&html);
    let (status, _, _) = post_form(
        &broker,
        &format!("{page}/sign-in"),
        &[("credential", "wrong"), ("csrf", &token)],
        None,
    )
    .await;
    assert_eq!(status, 401);
    let (status, _, _) = post_form(
        &broker,
        &format!("{page}/sign-in"),
        &[("credential", CREDENTIAL)],
        None,
    )
    .await;
    assert_eq!(status, 403, "sign-in without its CSRF token");
    // An agent's API key is not an approver credential.
    let (status, _, _) = post_form(
        &broker,
        &format!("{page}/sign-in"),
        &[("credential", crate::support::API_KEY), ("csrf", &token)],
        None,
    )
    .await;
    assert_eq!(status, 401);

    // Signed in: the exact request, escaped; no key anywhere.
    let session = sign_in(&broker, &page).await;
    let (status, html) = get(&broker, &page, Some(&session)).await;
    assert_eq!(status, 200, "{html}");
    for shown in [
        "payments.post_customers",
        "POST",
        "/v1/customers",
        "Customer-Canary-Jo",
        "Approve",
        "Decline",
        "alice",
    ] {
        assert!(html.contains(shown), "`{shown}` not shown: {html}");
    }
    assert!(!html.contains(KEY.1) && !html.contains(crate::support::API_KEY));

    // A decision without the CSRF token (a cross-site post) changes nothing.
    let (status, _, _) = post_form(
        &broker,
        &format!("{page}/decision"),
        &[("decision", "approve")],
        Some(&session),
    )
    .await;
    assert_eq!(status, 403);
    let (_, body) = with_approval(&broker, &id).await;
    assert_eq!(body["error"]["details"]["reason"], "approval_pending");
    // Without a session, neither.
    let decision_csrf = csrf(&get(&broker, &page, Some(&session)).await.1);
    let (status, _, _) = post_form(
        &broker,
        &format!("{page}/decision"),
        &[("decision", "approve"), ("csrf", &decision_csrf)],
        None,
    )
    .await;
    assert_eq!(status, 401);

    // Approved: the write runs once, with the flag; other arguments are refused.
    let (status, _, html) = post_form(
        &broker,
        &format!("{page}/decision"),
        &[("decision", "approve"), ("csrf", &decision_csrf)],
        Some(&session),
    )
    .await;
    assert_eq!(status, 200, "{html}");
    let (status, _, _) = post_form(
        &broker,
        &format!("{page}/decision"),
        &[("decision", "decline"), ("csrf", &decision_csrf)],
        Some(&session),
    )
    .await;
    assert_eq!(status, 409, "decided once");
    let (status, body) = broker
        .call(
            "payments.post_customers",
            json!({ "name": "Someone else", "confirm": true, "approvalId": id }),
            &[KEY],
        )
        .await;
    assert_eq!(
        (status, &body["error"]["details"]["reason"]),
        (428, &json!("other_arguments"))
    );
    let (status, body) = with_approval(&broker, &id).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(posts(&server).await, 1);
    let sent =
        String::from_utf8_lossy(&server.received_requests().await.unwrap()[0].body).to_string();
    assert!(!sent.contains("approvalId") && !sent.contains(&id));
    let (status, body) = with_approval(&broker, &id).await;
    assert_eq!(
        (status, &body["error"]["details"]["reason"]),
        (428, &json!("used"))
    );
    assert_eq!(posts(&server).await, 1);

    // The audit names the approver; the store never holds the argument in the clear.
    let records = crate::support::audit(&broker).await;
    assert!(
        records.iter().any(|r| r.outcome.as_str() == "approved"
            && r.confirmation.as_deref() == Some("human:alice"))
    );
    assert!(records.iter().any(|r| r.outcome.as_str() == "executed"
        && r.confirmation.as_deref() == Some("human")));
    drop(broker);
    let text = crate::support::folder_text(dir.path());
    for secret in ["Customer-Canary-Jo", CREDENTIAL, APPROVAL_KEY, KEY.1] {
        assert!(!text.contains(secret), "`{secret}` is in the store");
    }
}

#[tokio::test]
async fn a_declined_approval_never_runs() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = human_broker(&server, dir.path()).await;
    let (id, page) = ask(&broker).await;
    let session = sign_in(&broker, &page).await;
    let token = csrf(&get(&broker, &page, Some(&session)).await.1);
    let (status, _, _) = post_form(
        &broker,
        &format!("{page}/decision"),
        &[("decision", "decline"), ("csrf", &token)],
        Some(&session),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = with_approval(&broker, &id).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(classification(&body), "confirmation_declined");
    assert_eq!(posts(&server).await, 0);
    // Unknown and malformed approval pages are 404.
    let (status, _) = get(
        &broker,
        "/approvals/0123456789abcdef0123456789abcdef",
        Some(&session),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = get(&broker, "/approvals/../etc", None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_repeat_waits_for_the_decision_within_its_bound() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    // One replica waits; the approver decides on another.
    let waiting = human_broker_waiting(&server, dir.path(), 30).await;
    let deciding = human_broker(&server, dir.path()).await;
    let (id, page) = ask(&waiting).await;
    let session = sign_in(&deciding, &page).await;
    let token = csrf(&get(&deciding, &page, Some(&session)).await.1);
    let repeat = with_approval(&waiting, &id);
    let decide = async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        post_form(
            &deciding,
            &format!("{page}/decision"),
            &[("decision", "approve"), ("csrf", &token)],
            Some(&session),
        )
        .await
    };
    let ((status, body), (decided, _, _)) = tokio::join!(repeat, decide);
    assert_eq!(decided, 200);
    assert_eq!(status, 200, "the waiting repeat ran once approved: {body}");
    assert_eq!(posts(&server).await, 1);

    // A wait that ends without a decision answers pending, as without a wait.
    let short = human_broker_waiting(&server, dir.path(), 1).await;
    let (id, _) = ask(&short).await;
    let (status, body) = with_approval(&short, &id).await;
    assert_eq!(
        (status, &body["error"]["details"]["reason"]),
        (428, &json!("approval_pending"))
    );
    assert_eq!(posts(&server).await, 1);
}

#[tokio::test]
async fn sign_in_is_bounded_its_cookie_follows_public_url_and_forms_are_small() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = human_broker(&server, dir.path()).await;
    let (_, page) = ask(&broker).await;
    let token = csrf(&get(&broker, &page, None).await.1);
    let attempt = |credential: &'static str, proto: &'static str| {
        let body: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs([("credential", credential), ("csrf", token.as_str())])
            .finish();
        let url = format!("{}{page}/sign-in", broker.url);
        async move {
            let response = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap()
                .post(url)
                .header("content-type", "application/x-www-form-urlencoded")
                .header("x-forwarded-proto", proto)
                .body(body)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            (status, headers, response.text().await.unwrap())
        }
    };
    // Without a public URL the cookie is not Secure, whatever a request's headers say
    // (`X-Forwarded-Proto: https` included): no request decides how cookies are written.
    let (status, headers, _) = attempt(CREDENTIAL, "https").await;
    assert_eq!(status, 303);
    let cookie = headers["set-cookie"].to_str().unwrap();
    assert!(
        cookie.starts_with("tb_approver=")
            && cookie.contains("HttpOnly")
            && !cookie.contains("Secure"),
        "{cookie}"
    );
    let (_, headers, _) = attempt(CREDENTIAL, "http").await;
    assert!(!headers["set-cookie"].to_str().unwrap().contains("Secure"));
    // Ten attempts per approval in fifteen minutes, right or wrong; then 429.
    for _ in 2..10 {
        assert_eq!(attempt("a guess", "http").await.0, 401);
    }
    let (status, headers, html) = attempt(CREDENTIAL, "http").await;
    assert_eq!(status, 429, "{html}");
    assert!(headers.contains_key("retry-after") && !headers.contains_key("set-cookie"));
    assert!(html.contains("Too many sign-in attempts"));
    // A form over 16 KiB is refused before it is read.
    let (status, _, _) = broker
        .send(
            reqwest::Method::POST,
            &format!("{page}/decision"),
            Some(vec![b'a'; 17 * 1024]),
            &[("content-type", "application/x-www-form-urlencoded")],
        )
        .await;
    assert_eq!(status, 413);
}

#[tokio::test]
async fn the_approval_key_rotates_without_losing_approvals_in_flight() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let before = human_broker(&server, dir.path()).await;
    let (_, page) = ask(&before).await;
    // The new key seals; the old one, listed as previous, still opens the preview.
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(format!(
        "confirmation = \"human\"\napproval_key_env = \"NEW_KEY\"\n\
         approval_previous_key_envs = [\"APPROVAL_KEY\"]\napproval_wait_seconds = 0\n\
         [[approvers]]\nname = \"alice\"\nsha256 = \"{}\"\n",
        tool_broker::catalog::identity::sha256_hex(CREDENTIAL.as_bytes())
    ));
    setup.env.insert("APPROVAL_KEY".into(), APPROVAL_KEY.into());
    setup.env.insert(
        "NEW_KEY".into(),
        "a new approval sealing key, 32+ chars".into(),
    );
    setup.store = Some(crate::support::sqlite_store(dir.path()).await);
    let after = TestBroker::start(setup).await;
    let session = sign_in(&after, &page).await;
    let (status, html) = get(&after, &page, Some(&session)).await;
    assert_eq!(status, 200);
    assert!(html.contains("Customer-Canary-Jo"), "{html}");
}

#[tokio::test]
async fn human_needs_approvers_and_an_approval_key() {
    let err = crate::support::config_error("confirmation = \"human\"\n").await;
    assert!(
        err.contains("[[approvers]]") && err.contains("approval_key_env"),
        "{err}"
    );
    let err = crate::support::config_error("approval_wait_seconds = 61\n").await;
    assert!(
        err.contains("approval_wait_seconds = 61: at most 60"),
        "{err}"
    );
    let err = crate::support::config_error(
        "approval_key_env = \"SOME_KEY\"\napproval_previous_key_envs = [\"NOT_SET_ANYWHERE\"]\n",
    )
    .await;
    assert!(
        err.contains("NOT_SET_ANYWHERE") && err.contains("is not set"),
        "{err}"
    );
}

#[tokio::test]
async fn sign_in_is_bounded_per_client_address_across_approvals() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = human_broker(&server, dir.path()).await;
    let client = reqwest::Client::new();
    let attempt = |page: String, token: String, forwarded: Option<&'static str>| {
        let client = client.clone();
        let url = format!("{}{page}/sign-in", broker.url);
        async move {
            let body: String = url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs([("credential", "a guess"), ("csrf", token.as_str())])
                .finish();
            let mut request = client
                .post(url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body);
            if let Some(address) = forwarded {
                request = request.header("x-forwarded-for", address);
            }
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    // Thirty guesses from one address over three approvals (ten each, the per-approval
    // limit); the thirty-first, on a fourth approval, is refused for the address.
    let mut pages = Vec::new();
    for _ in 0..4 {
        let (_, page) = ask(&broker).await;
        let token = csrf(&get(&broker, &page, None).await.1);
        pages.push((page, token));
    }
    for (page, token) in &pages[..3] {
        for _ in 0..10 {
            assert_eq!(attempt(page.clone(), token.clone(), None).await.0, 401);
        }
    }
    let (page, token) = pages[3].clone();
    let (status, html) = attempt(page.clone(), token.clone(), None).await;
    assert_eq!(status, 429, "{html}");
    assert!(
        html.contains("Your address has made 30 sign-in attempts"),
        "{html}"
    );
    // Behind a proxy on this host, the address it names counts instead.
    assert_eq!(
        attempt(page, token, Some("203.0.113.9")).await.0,
        401,
        "another client behind the proxy is not refused"
    );
}

/// With an https `public_url` the approver's session cookie is `Secure` and carries the
/// `__Host-` prefix (so `Path=/` and no `Domain`), whatever the request says; the
/// session is a row in the store, ended by an operator's revoke at once.
#[tokio::test]
async fn an_https_public_url_makes_host_only_secure_cookies_and_sessions_can_be_ended() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let broker = human_broker_with(
        &server,
        dir.path(),
        "public_url = \"https://broker.example\"",
    )
    .await;
    let (_, page) = ask(&broker).await;
    let cookie = approver_sign_in(&broker, &page).await;
    assert!(
        cookie.starts_with("__Host-tb_approver=")
            && cookie.contains("; Path=/;")
            && !cookie.contains("Domain")
            && cookie.contains("SameSite=Strict")
            && cookie.ends_with("; Secure"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    let (status, html) = get(&broker, &page, Some(&pair)).await;
    assert_eq!(status, 200);
    assert!(html.contains("Approve"), "signed in: {html}");
    // The unprefixed name is not this site's cookie.
    let plain = pair.replacen("__Host-", "", 1);
    let (_, html) = get(&broker, &page, Some(&plain)).await;
    assert!(html.contains("Sign in to review"), "{html}");
    // An operator ends alice's sessions: the next view asks her to sign in again.
    let ended = broker
        .broker
        .parts
        .store
        .end_sessions_of("alice")
        .await
        .unwrap();
    assert_eq!(ended, 1);
    let (_, html) = get(&broker, &page, Some(&pair)).await;
    assert!(html.contains("Sign in to review"), "{html}");
}

/// An approver credential removed from the config opens no page with a session it
/// started before: another replica (or a restart) configured without it refuses it.
#[tokio::test]
async fn a_removed_approver_loses_the_sessions_it_had() {
    let server = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let before = human_broker_with(&server, dir.path(), "").await;
    let (_, page) = ask(&before).await;
    let cookie = approver_sign_in(&before, &page).await;
    let cookie = cookie.split(';').next().unwrap().to_string();
    let (_, html) = get(&before, &page, Some(&cookie)).await;
    assert!(!html.contains("Sign in to review"), "signed in: {html}");
    // The same store, alice no longer an approver (bob is).
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(format!(
        "confirmation = \"human\"\napproval_key_env = \"APPROVAL_KEY\"\n\
         [[approvers]]\nname = \"bob\"\nsha256 = \"{}\"\n",
        tool_broker::catalog::identity::sha256_hex(b"bob-credential")
    ));
    setup.env.insert("APPROVAL_KEY".into(), APPROVAL_KEY.into());
    setup.store = Some(crate::support::sqlite_store(dir.path()).await);
    let after = TestBroker::start(setup).await;
    let (_, html) = get(&after, &page, Some(&cookie)).await;
    assert!(html.contains("Sign in to review"), "{html}");
}

/// Signs the approver in on an approval page (its own form's CSRF token, the request
/// saying `X-Forwarded-Proto: http`); the session's whole `Set-Cookie` value.
async fn approver_sign_in(broker: &TestBroker, page: &str) -> String {
    let token = csrf(&get(broker, page, None).await.1);
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([("credential", CREDENTIAL), ("csrf", token.as_str())])
        .finish();
    let response = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(format!("{}{page}/sign-in", broker.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-forwarded-proto", "http")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_string()
}
