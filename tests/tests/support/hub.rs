//! A hub deployment: vault, `[oauth]` naming a loopback provider, its sign-in; the pages' and the API's requests.

use crate::support::idp::{Idp, Signer};
use crate::support::{Setup, TestBroker, mount_customers};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub const VAULT: &str = "TOOL_BROKER_VAULT_KEY";

pub const VAULT_SECRET: &str = "hub-test-vault-secret-0123456789abcdefXYZ";

pub const CLIENT_SECRET: &str = "hub-client-secret-canary-5150";

pub const CANARY: &str = "sk_hub_canary_4242";

/// The config of a hub deployment: vault, `[oauth]` naming the provider, its sign-in.
pub fn hub_config(idp: &Idp, extra: &str) -> String {
    format!(
        "vault_key_env = \"{VAULT}\"\npublic_url = \"{{broker_url}}\"\n{}",
        idp.config(&format!(
            "{extra}\n[oauth.sign_in]\nclient_id = \"broker-hub\"\nclient_secret_env = \"HUB_CLIENT_SECRET\"\napprover_role = \"approver\"\n"
        ))
    )
}

pub fn hub_setup(idp: &Idp, upstream: &MockServer, extra: &str) -> Setup {
    let mut setup = Setup::all_upstreams(&upstream.uri());
    setup.config = Some(hub_config(idp, extra));
    setup.env.insert(VAULT.into(), VAULT_SECRET.into());
    setup
        .env
        .insert("HUB_CLIENT_SECRET".into(), CLIENT_SECRET.into());
    setup
}

pub async fn upstream() -> MockServer {
    let server = MockServer::start().await;
    mount_customers(&server).await;
    server
}

/// A client that does not follow redirects (the pages answer 303s).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// One request: `(status, headers, body text)`, redirects not followed.
pub async fn request(
    broker: &TestBroker,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<String>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let body = body.map(String::into_bytes);
    broker
        .send_with(&client(), method, path, body, headers)
        .await
}

/// The JSON API as `bearer`: `(status, body)`.
pub async fn api(
    broker: &TestBroker,
    method: reqwest::Method,
    path: &str,
    bearer: Option<&str>,
    body: Option<Value>,
) -> (u16, String) {
    let auth = bearer.map(|b| format!("Bearer {b}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(auth) = &auth {
        headers.push(("authorization", auth));
    }
    let (status, _, text) =
        request(broker, method, path, &headers, body.map(|b| b.to_string())).await;
    (status, text)
}

/// A cookie's `name=value` from a response's `Set-Cookie` headers.
pub fn set_cookie(headers: &reqwest::header::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")) && !v.starts_with(&format!("{name}=;")))
        .map(|v| v.split(';').next().unwrap().to_string())
}

/// Signs `subject` in to the hub's pages through the provider: `/hub/login`, the
/// provider's redirect (its token endpoint answers an ID token minted here with the
/// nonce the broker asked for), `/hub/callback`. Gives the session cookie.
pub async fn sign_in(broker: &TestBroker, idp: &Idp, subject: &str, roles: &[&str]) -> String {
    let (status, headers, _) = request(
        broker,
        reqwest::Method::GET,
        "/hub/login?next=%2Fhub",
        &[],
        None,
    )
    .await;
    assert_eq!(status, 303);
    let location = url::Url::parse(headers["location"].to_str().unwrap()).unwrap();
    assert_eq!(location.path(), "/authorize");
    let query: std::collections::BTreeMap<String, String> =
        location.query_pairs().into_owned().collect();
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], "broker-hub");
    assert_eq!(query["code_challenge_method"], "S256");
    assert!(
        query["scope"].split(' ').any(|s| s == "openid"),
        "{}",
        query["scope"]
    );
    assert_eq!(
        query["redirect_uri"],
        format!("{}/hub/callback", broker.url)
    );
    let login = set_cookie(&headers, "tb_hub_login").unwrap();
    let now = jiff::Timestamp::now().as_second();
    let id_token = idp.token_by(
        Signer::Ec,
        &json!({
            "iss": idp.issuer, "aud": "broker-hub", "sub": subject, "nonce": query["nonce"],
            "iat": now, "exp": now + 300, "roles": roles, "preferred_username": subject,
        }),
    );
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "access_token": "opaque", "token_type": "Bearer", "id_token": id_token,
        })))
        .up_to_n_times(1)
        .mount(&idp.server)
        .await;
    let callback = format!("/hub/callback?code=code-{subject}&state={}", query["state"]);
    let (status, headers, body) = request(
        broker,
        reqwest::Method::GET,
        &callback,
        &[("cookie", &login)],
        None,
    )
    .await;
    assert_eq!(status, 303, "{body}");
    assert_eq!(headers["location"], "/hub");
    // The code went to the token endpoint with the PKCE verifier and the client secret.
    let token_request = last_token_request(idp).await;
    let form = form_of(&token_request);
    assert_eq!(form["code"], format!("code-{subject}"));
    use base64::Engine as _;
    use sha2::Digest as _;
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(form["code_verifier"].as_bytes()));
    assert_eq!(challenge, query["code_challenge"]);
    // The client secret: in the form (client_secret_post), else HTTP Basic (default).
    if let Some(secret) = form.get("client_secret") {
        assert_eq!(
            (secret.as_str(), form["client_id"].as_str()),
            (CLIENT_SECRET, "broker-hub")
        );
        assert!(!token_request.headers.contains_key("authorization"));
    } else {
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("broker-hub:{CLIENT_SECRET}"));
        assert_eq!(
            token_request.headers["authorization"],
            format!("Basic {basic}").as_str()
        );
    }
    set_cookie(&headers, "tb_hub").unwrap()
}

/// A hidden form field's value in a page.
pub fn field(page: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = page
        .find(&marker)
        .unwrap_or_else(|| panic!("no `{name}` in {page}"))
        + marker.len();
    let end = page[start..].find('"').unwrap() + start;
    page[start..end].replace("&amp;", "&")
}

/// The last request the provider's token endpoint received.
pub async fn last_token_request(idp: &Idp) -> wiremock::Request {
    idp.server
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .rev()
        .find(|r| r.url.path() == "/token")
        .unwrap()
}

/// A form-encoded request's fields.
pub fn form_of(request: &wiremock::Request) -> std::collections::BTreeMap<String, String> {
    url::form_urlencoded::parse(&request.body)
        .into_owned()
        .collect()
}

/// The form of the last request the provider's token endpoint received.
pub async fn token_form(idp: &Idp) -> std::collections::BTreeMap<String, String> {
    form_of(&last_token_request(idp).await)
}

/// The `Authorization` values the upstream received on `GET /v1/customers`.
pub async fn upstream_keys(server: &MockServer) -> Vec<String> {
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
pub async fn mcp_read(broker: &TestBroker, bearer: &str, extra: &[(&str, &str)]) -> (u16, Value) {
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
