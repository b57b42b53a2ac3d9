//! A broker whose writes a person approves (`confirmation = "human"`), its approval page and sign-in.

use crate::support::{Setup, TestBroker};
use serde_json::{Value, json};
use wiremock::MockServer;

/// The credential approver `alice` signs in to the approval page with.
pub const CREDENTIAL: &str = "approver-credential-canary-93";

/// The key approvals are sealed under (`approval_key_env = "APPROVAL_KEY"`).
pub const APPROVAL_KEY: &str = "approval-sealing-key-of-at-least-32-chars";

/// The payments key every human-mode call sends (a canary: never in a page or log).
pub const KEY: (&str, &str) = ("x-payments-api-key", "pk_human_canary_6");

/// A human-mode broker on the store in `dir` whose repeats answer a pending approval at
/// once.
pub async fn human_broker(server: &MockServer, dir: &std::path::Path) -> TestBroker {
    human_broker_waiting(server, dir, 0).await
}

pub fn create(extra: Value) -> Value {
    let mut args = json!({ "name": "Customer-Canary-Jo", "confirm": true });
    if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
        a.extend(e.clone());
    }
    args
}

/// A page: `(status, headers, html)`.
pub async fn get(broker: &TestBroker, path: &str, cookie: Option<&str>) -> (u16, String) {
    let mut headers = vec![];
    if let Some(c) = cookie {
        headers.push(("cookie", c));
    }
    let (status, _, html) = broker
        .send(reqwest::Method::GET, path, None, &headers)
        .await;
    (status, html)
}

/// Signs in as alice on an approval page: the session cookie.
pub async fn sign_in(broker: &TestBroker, page: &str) -> String {
    let (_, html) = get(broker, page, None).await;
    let token = csrf(&html);
    let (status, headers, _) = post_form(
        broker,
        &format!("{page}/sign-in"),
        &[("credential", CREDENTIAL), ("csrf", &token)],
        None,
    )
    .await;
    assert_eq!(status, 303);
    let set = headers.get("set-cookie").unwrap().to_str().unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    set.split(';').next().unwrap().to_string()
}

/// A human-mode broker whose repeats wait up to `wait` seconds for a decision.
pub async fn human_broker_waiting(
    server: &MockServer,
    dir: &std::path::Path,
    wait: u64,
) -> TestBroker {
    human_broker_with(server, dir, &format!("approval_wait_seconds = {wait}")).await
}

/// The value of a hidden `csrf` field in a page.
pub fn csrf(html: &str) -> String {
    let at = html.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    html[at..at + html[at..].find('"').unwrap()].to_string()
}

pub async fn post_form(
    broker: &TestBroker,
    path: &str,
    form: &[(&str, &str)],
    cookie: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    // A browser would follow the redirect after sign-in; the test reads it.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut request = client
        .post(format!("{}{path}", broker.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    if let Some(c) = cookie {
        request = request.header("cookie", c);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

/// A human-mode broker with `extra` top-level config lines.
pub async fn human_broker_with(
    server: &MockServer,
    dir: &std::path::Path,
    extra: &str,
) -> TestBroker {
    crate::support::mount_customers(server).await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(format!(
        "confirmation = \"human\"\napproval_key_env = \"APPROVAL_KEY\"\n{extra}\n\
         [[approvers]]\nname = \"alice\"\nsha256 = \"{}\"\n",
        tool_broker::catalog::identity::sha256_hex(CREDENTIAL.as_bytes())
    ));
    setup.env.insert("APPROVAL_KEY".into(), APPROVAL_KEY.into());
    setup.store = Some(crate::support::sqlite_store(dir).await);
    TestBroker::start(setup).await
}
