//! A service's own authorization server, as a connected account meets it: codes a
//! person consented to (PKCE checked, the redirect URI exact, a code used once),
//! refresh tokens rotated on every use (a spent one refused with `invalid_grant`),
//! revocation (RFC 7009), failures on demand, and counts of what it did.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use serde_json::json;
use sha2::Digest as _;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The client the broker is at this provider.
pub const CLIENT_ID: &str = "broker-payments";
/// Its secret (a canary: never in a log or an answer).
pub const CLIENT_SECRET: &str = "provider-client-secret-canary-7731";
/// The variable the config names for it.
pub const SECRET_ENV: &str = "PAYMENTS_OAUTH_SECRET";

/// What the provider knows and did.
#[derive(Default)]
pub struct State {
    /// Codes a person consented to: code -> (challenge, redirect URI).
    codes: BTreeMap<String, (String, String)>,
    /// Refresh tokens, live or spent.
    refresh: BTreeMap<String, bool>,
    issued: usize,
    /// Refreshes asked (whatever the answer).
    pub refreshes: usize,
    /// Refreshes answered 503 before any other answer.
    pub fail_next: usize,
    /// Seconds an access token lives.
    pub expires_in: i64,
    /// Tokens revoked, with their hint.
    pub revoked: Vec<(String, String)>,
}

/// The provider: its server and state.
pub struct Provider {
    /// The server.
    pub server: MockServer,
    /// Its state.
    pub state: Arc<Mutex<State>>,
}

struct Token(Arc<Mutex<State>>, Duration);

fn refusal(status: u16, error: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_json(json!({ "error": error, "error_description": "refused" }))
}

impl Respond for Token {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let form: BTreeMap<String, String> = url::form_urlencoded::parse(&request.body)
            .into_owned()
            .collect();
        let basic = base64::engine::general_purpose::STANDARD
            .encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
        if request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            != Some(format!("Basic {basic}").as_str())
        {
            return refusal(401, "invalid_client");
        }
        // The table's `token_params` ride along on every token request.
        if form.get("user_type").map(String::as_str) != Some("Location") {
            return refusal(400, "invalid_request");
        }
        let mut state = self.0.lock().unwrap();
        let rotated = |state: &mut State| {
            state.issued += 1;
            let n = state.issued;
            state.refresh.insert(format!("prov-rt-{n}"), true);
            ResponseTemplate::new(200).set_body_json(json!({
                "access_token": format!("prov-at-{n}"),
                "token_type": "Bearer",
                "expires_in": state.expires_in,
                "refresh_token": format!("prov-rt-{n}"),
                "scope": "customers:read customers:write",
            }))
        };
        match form.get("grant_type").map(String::as_str) {
            Some("authorization_code") => {
                let Some((challenge, redirect)) = state.codes.remove(&form["code"]) else {
                    return refusal(400, "invalid_grant");
                };
                let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                let derived = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(sha2::Sha256::digest(verifier.as_bytes()));
                if derived != challenge || form.get("redirect_uri") != Some(&redirect) {
                    return refusal(400, "invalid_grant");
                }
                rotated(&mut state)
            }
            Some("refresh_token") => {
                state.refreshes += 1;
                if state.fail_next > 0 {
                    state.fail_next -= 1;
                    return ResponseTemplate::new(503);
                }
                let token = form.get("refresh_token").cloned().unwrap_or_default();
                match state.refresh.get_mut(&token) {
                    Some(live) if *live => {
                        *live = false;
                        rotated(&mut state).set_delay(self.1)
                    }
                    _ => refusal(400, "invalid_grant"),
                }
            }
            _ => refusal(400, "unsupported_grant_type"),
        }
    }
}

struct Revoke(Arc<Mutex<State>>);

impl Respond for Revoke {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let form: BTreeMap<String, String> = url::form_urlencoded::parse(&request.body)
            .into_owned()
            .collect();
        let mut state = self.0.lock().unwrap();
        let token = form.get("token").cloned().unwrap_or_default();
        if let Some(live) = state.refresh.get_mut(&token) {
            *live = false;
        }
        let hint = form.get("token_type_hint").cloned().unwrap_or_default();
        state.revoked.push((token, hint));
        ResponseTemplate::new(200)
    }
}

impl Provider {
    /// Starts one whose access tokens live `expires_in` seconds and whose refreshes
    /// take `delay` to answer.
    pub async fn start(expires_in: i64, delay: Duration) -> Self {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State {
            expires_in,
            ..State::default()
        }));
        Mock::given(method("POST"))
            .and(path("/oauth/token"))
            .respond_with(Token(state.clone(), delay))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/oauth/revoke"))
            .respond_with(Revoke(state.clone()))
            .mount(&server)
            .await;
        Self { server, state }
    }

    /// The `[connect.payments]` table naming this provider.
    pub fn config(&self, extra: &str) -> String {
        let uri = self.server.uri();
        format!(
            "[connect.payments]\nauthorization_url = \"{uri}/oauth/authorize\"\ntoken_url = \"{uri}/oauth/token\"\nrevocation_url = \"{uri}/oauth/revoke\"\nscopes = [\"customers:read\", \"customers:write\"]\nclient_id = \"{CLIENT_ID}\"\nclient_secret_env = \"{SECRET_ENV}\"\nauthorization_params = {{ access_type = \"offline\" }}\ntoken_params = {{ user_type = \"Location\" }}\n{extra}\n"
        )
    }

    /// The person consents at the authorization URL: the code the provider will send
    /// back, and the `state` to send with it.
    pub fn consent(&self, authorization_url: &str) -> (String, String) {
        let url = url::Url::parse(authorization_url).unwrap();
        assert_eq!(url.path(), "/oauth/authorize");
        let query: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
        assert_eq!(query["response_type"], "code");
        assert_eq!(query["client_id"], CLIENT_ID);
        assert_eq!(query["code_challenge_method"], "S256");
        assert_eq!(query["scope"], "customers:read customers:write");
        assert_eq!(query["access_type"], "offline");
        let mut state = self.state.lock().unwrap();
        let code = format!("prov-code-{}", state.codes.len() + state.issued + 1);
        state.codes.insert(
            code.clone(),
            (
                query["code_challenge"].clone(),
                query["redirect_uri"].clone(),
            ),
        );
        (code, query["state"].clone())
    }

    /// Spends every refresh token (the user revoked the broker at the provider).
    pub fn revoke_all(&self) {
        for live in self.state.lock().unwrap().refresh.values_mut() {
            *live = false;
        }
    }
}
