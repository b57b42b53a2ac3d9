//! Accounts connected by OAuth (decision 020): the flow with PKCE and a `state` taken
//! once and bound to the session that started it, calls carrying the token, refresh
//! with rotation by one replica of two, a transient failure that deletes nothing, a
//! revoked refresh token answering the reconnect link, disconnecting revoking at the
//! provider, and no token, code or secret ever in an answer or a log line.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::hub::{api, field, hub_setup, request, sign_in, upstream, upstream_keys};
use crate::support::idp::{Idp, Signer};
use crate::support::provider::{CLIENT_SECRET, Provider, SECRET_ENV};
use crate::support::{Setup, TestBroker, classification};

/// A user's access token to the broker, good for an hour (the tests move the broker's
/// clock by minutes).
fn token(idp: &Idp, subject: &str) -> String {
    let mut claims = idp.claims(subject, "tools:read tools:write");
    claims["exp"] = json!(jiff::Timestamp::now().as_second() + 3600);
    idp.token_by(Signer::Rsa, &claims)
}

fn setup(idp: &Idp, upstream: &wiremock::MockServer, provider: &Provider) -> Setup {
    let mut setup = hub_setup(idp, upstream, &provider.config(""));
    setup.env.insert(SECRET_ENV.into(), CLIENT_SECRET.into());
    setup
}

/// The hub page's Connect form, posted: the provider's authorization URL.
async fn start(broker: &TestBroker, session: &str) -> String {
    let cookie = [("cookie", session)];
    let (status, _, page) = request(broker, reqwest::Method::GET, "/hub", &cookie, None).await;
    assert_eq!(status, 200, "{page}");
    let form = &page[page
        .find("action=\"/hub/connect/payments\"")
        .unwrap_or_else(|| panic!("{page}"))..];
    let csrf = field(form, "csrf");
    let body = format!(
        "csrf={}",
        url::form_urlencoded::byte_serialize(csrf.as_bytes()).collect::<String>()
    );
    let (status, headers, text) = request(
        broker,
        reqwest::Method::POST,
        "/hub/connect/payments",
        &[
            ("cookie", session),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        Some(body),
    )
    .await;
    // On to the provider by `Refresh` and a link (a redirect would break the pages'
    // `form-action 'self'`).
    assert_eq!(status, 200, "{text}");
    let url = headers["refresh"]
        .to_str()
        .unwrap()
        .strip_prefix("0; url=")
        .unwrap()
        .to_string();
    assert!(text.contains(&url.replace('&', "&amp;")), "{text}");
    url
}

/// The provider's redirect back, in the browser holding `session`.
async fn callback(broker: &TestBroker, session: &str, code: &str, state: &str) -> (u16, String) {
    let path = format!("/hub/oauth/payments/callback?code={code}&state={state}");
    let (status, _, text) = request(
        broker,
        reqwest::Method::GET,
        &path,
        &[("cookie", session)],
        None,
    )
    .await;
    (status, text)
}

/// Connects `session`'s payments account through the whole flow.
async fn connect(broker: &TestBroker, provider: &Provider, session: &str) {
    let location = start(broker, session).await;
    let (code, state) = provider.consent(&location);
    let (status, text) = callback(broker, session, &code, &state).await;
    assert_eq!(status, 303, "{text}");
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario: a connection's whole life, and every way its flow could be abused"
)]
#[tokio::test]
async fn an_account_connects_by_oauth_and_its_calls_carry_the_token() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let provider = Provider::start(3600, Duration::ZERO).await;
    let broker = TestBroker::start(setup(&idp, &upstream, &provider)).await;
    let dana = token(&idp, "dana");
    let mut seen = String::new();

    // Not connected: the call sends nothing and answers the connect link.
    let (status, body) = broker
        .call_as(&dana, "payments.get_customers", json!({}), &[])
        .await;
    seen.push_str(&body.to_string());
    assert_eq!(
        (status, classification(&body)),
        (401, "missing_required_credentials")
    );
    let link = body["error"]["details"]["connectUrl"].as_str().unwrap();
    assert!(link.contains("/hub/connect/payments?state="), "{link}");

    // A script asks for the link with its bearer token; the link is the hub's page.
    let (status, text) = api(
        &broker,
        reqwest::Method::POST,
        "/hub/connect/payments",
        Some(&dana),
        None,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["connects"], "oauth");
    let link = answer["authorizationUrl"].as_str().unwrap().to_string();
    let path = link.strip_prefix(&broker.url).unwrap().to_string();

    // Signed in as dana, the link shows the scopes before anything is asked of the provider.
    let session = sign_in(&broker, &idp, "dana", &[]).await;
    let (status, _, page) = request(
        &broker,
        reqwest::Method::GET,
        &path,
        &[("cookie", &session)],
        None,
    )
    .await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<code>customers:read</code>, <code>customers:write</code>"),
        "{page}"
    );
    assert!(page.contains("name=\"state\""));
    let (_, _, hub_page) = request(
        &broker,
        reqwest::Method::GET,
        "/hub",
        &[("cookie", &session)],
        None,
    )
    .await;
    assert!(
        hub_page.contains("not connected") && hub_page.contains(">Connect<"),
        "{hub_page}"
    );

    // The flow: PKCE S256, the redirect URI exact, the table's extra parameter.
    let location = start(&broker, &session).await;
    let (code, state) = provider.consent(&location);
    let query: std::collections::BTreeMap<String, String> = url::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(
        query["redirect_uri"],
        format!("{}/hub/oauth/payments/callback", broker.url)
    );
    assert!(state.len() >= 43, "256 random bits: {state}");

    // A forged state, and a state brought back in another person's browser, store nothing.
    let (status, _) = callback(&broker, &session, &code, "forged-state").await;
    assert_eq!(status, 400);
    let eve = sign_in(&broker, &idp, "eve", &[]).await;
    let (status, text) = callback(&broker, &eve, &code, &state).await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("another account"), "{text}");
    // The state was taken: brought back again, even by dana, it is spent.
    let (status, _) = callback(&broker, &session, &code, &state).await;
    assert_eq!(status, 400);
    // Another session of dana herself cannot finish a flow this session started.
    let location = start(&broker, &session).await;
    let (code, state) = provider.consent(&location);
    let other_session = sign_in(&broker, &idp, "dana", &[]).await;
    let (status, text) = callback(&broker, &other_session, &code, &state).await;
    assert_eq!(status, 403, "{text}");
    // The provider's refusal (the person declined) stores nothing.
    let location = start(&broker, &session).await;
    let (_, state) = provider.consent(&location);
    let path = format!("/hub/oauth/payments/callback?error=access_denied&state={state}");
    let (status, _, text) = request(
        &broker,
        reqwest::Method::GET,
        &path,
        &[("cookie", &session)],
        None,
    )
    .await;
    assert_eq!(status, 400);
    assert!(text.contains("access_denied"), "{text}");
    assert!(
        broker
            .broker
            .parts
            .store
            .connections_of(&idp.issuer, "dana")
            .await
            .unwrap()
            .is_empty()
    );

    // Connected: the call carries the provider's access token, the list shows the
    // account, never a token.
    let location = start(&broker, &session).await;
    let (code, state) = provider.consent(&location);
    let (status, text) = callback(&broker, &session, &code, &state).await;
    assert_eq!(status, 303, "{text}");
    let (status, _) = callback(&broker, &session, &code, &state).await;
    assert_eq!(status, 400, "a state replayed after success is spent");
    let (status, body) = broker
        .call_as(&dana, "payments.get_customers", json!({}), &[])
        .await;
    seen.push_str(&body.to_string());
    assert_eq!(status, 200, "{body}");
    let sent = upstream_keys(&upstream).await;
    assert!(
        sent.last().unwrap().starts_with("Bearer prov-at-"),
        "{sent:?}"
    );
    let (status, text) = api(
        &broker,
        reqwest::Method::GET,
        "/hub/keys",
        Some(&dana),
        None,
    )
    .await;
    assert_eq!(status, 200);
    seen.push_str(&text);
    let list: Value = serde_json::from_str(&text).unwrap();
    let entry = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["service"] == "payments")
        .unwrap();
    assert_eq!(entry["connects"], true);
    assert_eq!(
        entry["connection"]["scopes"],
        "customers:read customers:write"
    );
    assert_eq!(entry["connection"]["needsReconnect"], false);
    let (_, _, hub_page) = request(
        &broker,
        reqwest::Method::GET,
        "/hub",
        &[("cookie", &session)],
        None,
    )
    .await;
    seen.push_str(&hub_page);
    assert!(
        hub_page.contains("connected since") && hub_page.contains(">Reconnect<"),
        "{hub_page}"
    );
    // Eve's calls never carry dana's account.
    let eve_token = token(&idp, "eve");
    let (status, body) = broker
        .call_as(&eve_token, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(status, 401, "{body}");
    // An upstream answer that echoes the token is scrubbed.
    let echoed = sent
        .last()
        .unwrap()
        .trim_start_matches("Bearer ")
        .to_string();
    wiremock::Mock::given(wiremock::matchers::path("/v1/balance"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(json!({
            "object": "balance", "note": format!("called with {echoed}")
        })))
        .mount(&upstream)
        .await;
    let (status, body) = broker
        .call_as(&dana, "payments.get_balance", json!({}), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.to_string().contains(&echoed), "{body}");

    // Disconnected: revoked at the provider (the refresh token), then gone; audited.
    let (status, _) = api(
        &broker,
        reqwest::Method::DELETE,
        "/hub/keys/payments",
        Some(&dana),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let revoked = provider.state.lock().unwrap().revoked.clone();
    assert_eq!(revoked.len(), 1, "{revoked:?}");
    assert!(revoked[0].0.starts_with("prov-rt-") && revoked[0].1 == "refresh_token");
    assert!(
        broker
            .broker
            .parts
            .store
            .connections_of(&idp.issuer, "dana")
            .await
            .unwrap()
            .is_empty()
    );
    let outcomes: Vec<&str> = crate::support::audit(&broker)
        .await
        .iter()
        .filter(|r| r.tool == "hub/keys/payments")
        .map(|r| r.outcome.as_str())
        .collect::<Vec<_>>()
        .into_iter()
        .collect();
    assert!(
        outcomes.contains(&"connected") && outcomes.contains(&"disconnected"),
        "{outcomes:?}"
    );
    let (status, _) = broker
        .call_as(&dana, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(status, 401);

    // No token, code or secret in any answer or log line.
    let logs = crate::support::logs();
    for secret in ["prov-at-", "prov-rt-", "prov-code-", CLIENT_SECRET] {
        assert!(!seen.contains(secret), "an answer holds {secret}");
        assert!(!logs.contains(secret), "the log holds {secret}");
    }
}

/// The seconds each race's clock is moved on (one per test: tests run at once).
static SQLITE_CLOCK_S: AtomicI64 = AtomicI64::new(0);
static POSTGRES_CLOCK_S: AtomicI64 = AtomicI64::new(0);

fn sqlite_clock() -> jiff::Timestamp {
    jiff::Timestamp::now() + jiff::SignedDuration::from_secs(SQLITE_CLOCK_S.load(Ordering::SeqCst))
}

fn postgres_clock() -> jiff::Timestamp {
    jiff::Timestamp::now()
        + jiff::SignedDuration::from_secs(POSTGRES_CLOCK_S.load(Ordering::SeqCst))
}

/// A broker clock and the seconds it is moved on.
type Clock = (fn() -> jiff::Timestamp, &'static AtomicI64);

/// Two replicas on one store race to refresh one connection; then a transient
/// failure, then a revoked refresh token.
async fn refreshed_once_across_replicas(stores: [tool_broker::store::Store; 2], clock: Clock) {
    let (clock, offset) = clock;
    let idp = Idp::start().await;
    let upstream = upstream().await;
    // Tokens live 100 s and are refreshed 60 s before: 50 s on, a call refreshes.
    let provider = Provider::start(100, Duration::from_millis(400)).await;
    let [first, second] = stores;
    let mut one = setup(&idp, &upstream, &provider);
    one.store = Some(first);
    one.clock = Some(clock);
    let mut two = setup(&idp, &upstream, &provider);
    two.store = Some(second);
    two.clock = Some(clock);
    let replicas = [TestBroker::start(one).await, TestBroker::start(two).await];
    let dana = token(&idp, "dana");
    let session = sign_in(&replicas[0], &idp, "dana", &[]).await;
    connect(&replicas[0], &provider, &session).await;

    // Within the skew, a call refreshes; a token still valid serves meanwhile.
    offset.fetch_add(50, Ordering::SeqCst);
    let (status, body) = replicas[0]
        .call_as(&dana, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(provider.state.lock().unwrap().refreshes, 1);
    assert_eq!(
        upstream_keys(&upstream).await.last().unwrap(),
        "Bearer prov-at-2"
    );

    // Both replicas call at once past the expiry: one refresh reaches the provider
    // (the others wait for it), the rotated refresh token is stored, every call
    // carries the new token.
    offset.fetch_add(110, Ordering::SeqCst);
    let calls = (0..8).map(|i| {
        let broker = &replicas[i % 2];
        let dana = &dana;
        async move {
            broker
                .call_as(dana, "payments.get_customers", json!({}), &[])
                .await
        }
    });
    for (status, body) in futures_util::future::join_all(calls).await {
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(provider.state.lock().unwrap().refreshes, 2);
    let sent = upstream_keys(&upstream).await;
    assert!(
        sent.iter().rev().take(8).all(|k| k == "Bearer prov-at-3"),
        "{sent:?}"
    );
    let row = replicas[1]
        .broker
        .parts
        .store
        .connection(tool_broker::store::hub_connections::Who {
            issuer: &idp.issuer,
            subject: "dana",
            service: "payments",
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!((row.version, row.state.as_str()), (2, "connected"));

    // The provider fails three times in a row: the call says so, nothing is deleted;
    // once it answers, the next call refreshes.
    offset.fetch_add(200, Ordering::SeqCst);
    provider.state.lock().unwrap().fail_next = 3;
    let (status, body) = replicas[1]
        .call_as(&dana, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(
        (status, classification(&body)),
        (502, "upstream_unavailable"),
        "{body}"
    );
    assert_eq!(provider.state.lock().unwrap().refreshes, 5);
    provider.state.lock().unwrap().fail_next = 1;
    let (status, body) = replicas[0]
        .call_as(&dana, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        upstream_keys(&upstream).await.last().unwrap(),
        "Bearer prov-at-4"
    );

    // The user revoked the broker at the provider: the refresh is refused, the call
    // answers the reconnect link, the connection stays (marked), audited.
    provider.revoke_all();
    offset.fetch_add(200, Ordering::SeqCst);
    let (status, body) = replicas[0]
        .call_as(&dana, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(
        (status, classification(&body)),
        (401, "missing_required_credentials"),
        "{body}"
    );
    assert_eq!(body["error"]["details"]["reconnect"], true);
    assert!(
        body["error"]["details"]["connectUrl"]
            .as_str()
            .unwrap()
            .contains("/hub/connect/payments?state=")
    );
    let (status, text) = api(
        &replicas[1],
        reqwest::Method::GET,
        "/hub/keys",
        Some(&dana),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(text.contains("\"needsReconnect\":true"), "{text}");
    let (_, _, metrics) = replicas[1]
        .send_with(
            &reqwest::Client::new(),
            reqwest::Method::GET,
            "/metrics",
            None,
            &[],
        )
        .await;
    assert!(
        metrics.contains("tool_broker_hub_connections{service=\"payments\",state=\"reconnect\"} 1"),
        "{metrics}"
    );
    // Connecting again clears it.
    connect(&replicas[1], &provider, &session).await;
    let (status, body) = replicas[1]
        .call_as(&dana, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(status, 200, "{body}");

    let (_, _, metrics) = replicas[0]
        .send_with(
            &reqwest::Client::new(),
            reqwest::Method::GET,
            "/metrics",
            None,
            &[],
        )
        .await;
    assert!(
        metrics.contains("tool_broker_hub_connections{service=\"payments\",state=\"connected\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("tool_broker_hub_refreshes_total{outcome=\"reconnect_needed\"} 1"),
        "{metrics}"
    );
    let logs = crate::support::logs();
    for secret in ["prov-at-", "prov-rt-", CLIENT_SECRET] {
        assert!(!logs.contains(secret), "the log holds {secret}");
    }
}

#[tokio::test]
async fn a_connection_is_refreshed_once_across_replicas_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let stores = [
        crate::support::sqlite_store(dir.path()).await,
        crate::support::sqlite_store(dir.path()).await,
    ];
    refreshed_once_across_replicas(stores, (sqlite_clock, &SQLITE_CLOCK_S)).await;
}

#[tokio::test]
async fn connect_tables_that_cannot_work_are_refused_at_start() {
    let provider = Provider::start(3600, Duration::ZERO).await;
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let cases = [
        (
            provider
                .config("")
                .replace("[connect.payments]", "[connect.nosuch]"),
            "names no service",
        ),
        (
            provider.config("issuer = \"https://login.example\""),
            "not both",
        ),
        (
            provider.config("token_placement = \"cookie\""),
            "token_placement",
        ),
        (
            provider.config("").replace(SECRET_ENV, "UNSET_SECRET"),
            "UNSET_SECRET",
        ),
    ];
    for (table, expected) in cases {
        let config = crate::support::hub::hub_config(&idp, &table)
            .replace("{broker_url}", "http://127.0.0.1:9");
        let error = match toml::from_str::<tool_broker::config::ConfigFile>(&config) {
            Err(e) => e.to_string(),
            Ok(file) => {
                let env = [
                    (
                        crate::support::hub::VAULT,
                        crate::support::hub::VAULT_SECRET,
                    ),
                    ("HUB_CLIENT_SECRET", "hub-secret"),
                    (SECRET_ENV, CLIENT_SECRET),
                ];
                let lookup = |name: &str| {
                    env.iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, v)| (*v).to_string())
                };
                let store =
                    tool_broker::store::Store::open(&tool_broker::store::StoreConfig::Memory)
                        .await
                        .unwrap();
                tool_broker::call::Broker::new(
                    crate::support::embedded_catalog(),
                    &file,
                    &lookup,
                    store,
                )
                .err()
                .unwrap_or_else(|| panic!("accepted: {table}"))
            }
        };
        assert!(error.contains(expected), "{expected}: {error}");
        assert!(!error.contains(CLIENT_SECRET));
    }
    // Without the hub's sign-in, nobody could consent.
    let config = format!(
        "vault_key_env = \"V\"\npublic_url = \"http://127.0.0.1:9\"\n{}{}",
        provider.config(""),
        idp.config("")
    );
    let file: tool_broker::config::ConfigFile = toml::from_str(&config).unwrap();
    let lookup = |name: &str| match name {
        "V" => Some(crate::support::hub::VAULT_SECRET.to_string()),
        n if n == SECRET_ENV => Some(CLIENT_SECRET.to_string()),
        _ => None,
    };
    let store = tool_broker::store::Store::open(&tool_broker::store::StoreConfig::Memory)
        .await
        .unwrap();
    let error =
        tool_broker::call::Broker::new(crate::support::embedded_catalog(), &file, &lookup, store)
            .err()
            .unwrap();
    assert!(error.contains("needs [oauth.sign_in]"), "{error}");
    drop(upstream);
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set TOOL_BROKER_TEST_DATABASE_URL and run with --ignored (.ci/run does)"]
async fn a_connection_is_refreshed_once_across_replicas_on_postgres() {
    let config = crate::support::store::postgres("connect");
    let first = tool_broker::store::Store::open(&config).await.unwrap();
    let second = tool_broker::store::Store::open(&config).await.unwrap();
    refreshed_once_across_replicas([first, second], (postgres_clock, &POSTGRES_CLOCK_S)).await;
}

#[tokio::test]
async fn the_console_shows_connections_never_a_token_and_an_admin_disconnects_one() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let provider = Provider::start(3600, Duration::ZERO).await;
    let mut setup =
        crate::support::console::console_setup(&idp, &upstream, "", &provider.config(""));
    setup.env.insert(SECRET_ENV.into(), CLIENT_SECRET.into());
    let broker = TestBroker::start(setup).await;
    let session = sign_in(&broker, &idp, "dana", &[]).await;
    connect(&broker, &provider, &session).await;
    let dana_id = format!("{}#dana", idp.issuer);
    let admin = crate::support::console::token(&idp, "olive", &["admin"]);
    let (status, body) =
        crate::support::console::get(&broker, "/admin/api/users", Some(&admin)).await;
    assert_eq!(status, 200, "{body}");
    let her = body["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["user"] == dana_id.as_str())
        .unwrap();
    let linked = &her["connections"][0];
    assert_eq!(
        (&linked["service"], &linked["scopes"], &linked["state"]),
        (
            &json!("payments"),
            &json!("customers:read customers:write"),
            &json!("connected")
        )
    );
    assert!(linked["expiresAt"].is_string());
    let olive = sign_in(&broker, &idp, "olive", &["admin"]).await;
    let (status, _, page) = request(
        &broker,
        reqwest::Method::GET,
        "/admin/users",
        &[("cookie", &olive)],
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        page.contains("connected since") && page.contains(">Disconnect<"),
        "{page}"
    );
    for text in [body.to_string(), page] {
        assert!(
            !text.contains("prov-at-") && !text.contains("prov-rt-"),
            "{text}"
        );
    }
    let encoded = url::form_urlencoded::byte_serialize(dana_id.as_bytes()).collect::<String>();
    let (status, text) = crate::support::console::delete(
        &broker,
        &format!("/admin/api/users/{encoded}/keys/payments"),
        Some(&admin),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(provider.state.lock().unwrap().revoked.len(), 1);
    assert!(
        broker
            .broker
            .parts
            .store
            .connections_of(&idp.issuer, "dana")
            .await
            .unwrap()
            .is_empty()
    );
    let audit = crate::support::audit(&broker).await;
    let by = audit
        .iter()
        .find(|r| r.outcome.as_str() == "disconnected")
        .and_then(|r| r.confirmation.clone())
        .unwrap();
    assert!(by.contains("olive"), "{by}");
}

#[tokio::test]
async fn an_on_behalf_of_service_gets_each_callers_token_exchanged_and_nothing_stored() {
    use wiremock::matchers::{body_string_contains, method, path};
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let table = format!(
        "[connect.payments]\nissuer = \"{}\"\ntoken_exchange = true\naudience = \"https://payments.example\"\nscopes = [\"customers:read\"]\nclient_id = \"{}\"\nclient_secret_env = \"{SECRET_ENV}\"\n",
        idp.issuer,
        crate::support::provider::CLIENT_ID
    );
    let mut setup = hub_setup(&idp, &upstream, &table);
    setup.env.insert(SECRET_ENV.into(), CLIENT_SECRET.into());
    let broker = TestBroker::start(setup).await;
    let dana = token(&idp, "dana");
    let eve = token(&idp, "eve");
    let exchange = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange";
    wiremock::Mock::given(method("POST"))
        .and(path("/token"))
        .and(body_string_contains(exchange))
        .and(body_string_contains(eve.as_str()))
        .respond_with(
            wiremock::ResponseTemplate::new(400)
                .set_body_json(json!({ "error": "invalid_target" })),
        )
        .with_priority(1)
        .mount(&idp.server)
        .await;
    wiremock::Mock::given(method("POST"))
        .and(path("/token"))
        .and(body_string_contains(exchange))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(json!({
            "access_token": "obo-at-1", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "token_type": "Bearer", "expires_in": 600,
        })))
        .with_priority(2)
        .mount(&idp.server)
        .await;

    for _ in 0..2 {
        let (status, body) = broker
            .call_as(&dana, "payments.get_customers", json!({}), &[])
            .await;
        assert_eq!(status, 200, "{body}");
        assert!(!body.to_string().contains("obo-at-1"));
    }
    assert_eq!(
        upstream_keys(&upstream).await,
        ["Bearer obo-at-1", "Bearer obo-at-1"]
    );
    let exchanges: Vec<_> = idp
        .server
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.url.path() == "/token")
        .collect();
    assert_eq!(
        exchanges.len(),
        1,
        "the second call used the token exchanged for the first"
    );
    let form = crate::support::hub::form_of(&exchanges[0]);
    assert_eq!(form["subject_token"], dana);
    assert_eq!(
        form["subject_token_type"],
        "urn:ietf:params:oauth:token-type:access_token"
    );
    assert_eq!(form["audience"], "https://payments.example");
    assert_eq!(form["scope"], "customers:read");

    // The provider refuses eve's: 403, nothing sent.
    let (status, body) = broker
        .call_as(&eve, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(
        (status, classification(&body)),
        (403, "forbidden"),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("invalid_target")
    );
    assert_eq!(upstream_keys(&upstream).await.len(), 2);

    // Nothing stored, nothing to connect.
    assert!(
        broker
            .broker
            .parts
            .store
            .connections_of(&idp.issuer, "dana")
            .await
            .unwrap()
            .is_empty()
    );
    let (status, text) = api(
        &broker,
        reqwest::Method::GET,
        "/hub/keys",
        Some(&dana),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let list: Value = serde_json::from_str(&text).unwrap();
    let entry = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["service"] == "payments")
        .unwrap();
    assert_eq!(
        (&entry["onBehalfOf"], &entry["connects"]),
        (&json!(true), &json!(false))
    );
    let (status, _) = api(
        &broker,
        reqwest::Method::POST,
        "/hub/connect/payments",
        Some(&dana),
        None,
    )
    .await;
    assert_eq!(status, 400);
    let logs = crate::support::logs();
    assert!(!logs.contains("obo-at-1") && !logs.contains(CLIENT_SECRET));
}

#[tokio::test]
async fn vault_rekey_reseals_connections_and_they_still_serve_calls() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let provider = Provider::start(3600, Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let mut first = setup(&idp, &upstream, &provider);
    first.store = Some(crate::support::sqlite_store(dir.path()).await);
    let broker = TestBroker::start(first).await;
    let session = sign_in(&broker, &idp, "dana", &[]).await;
    connect(&broker, &provider, &session).await;

    let new_secret = "a-new-vault-secret-of-at-least-32-characters";
    let file = tool_broker::config::ConfigFile {
        vault_key_env: Some("NEW_VAULT".into()),
        vault_previous_key_envs: vec!["OLD_VAULT".into()],
        ..Default::default()
    };
    let lookup = |name: &str| match name {
        "NEW_VAULT" => Some(new_secret.to_string()),
        "OLD_VAULT" => Some(crate::support::hub::VAULT_SECRET.to_string()),
        _ => None,
    };
    let cipher = tool_broker::hub::Hub::cipher(&file, &lookup)
        .unwrap()
        .unwrap();
    let store = crate::support::sqlite_store(dir.path()).await;
    let done = tool_broker::hub::Hub::rekey(&cipher, &store).await.unwrap();
    assert_eq!((done.resealed, done.unopened), (1, 0));
    let again = tool_broker::hub::Hub::rekey(&cipher, &store).await.unwrap();
    assert_eq!(again.resealed, 0);

    // A replica under the new vault key opens it; the call carries the same token.
    let mut second = setup(&idp, &upstream, &provider);
    second.store = Some(store);
    second
        .env
        .insert(crate::support::hub::VAULT.into(), new_secret.into());
    let broker = TestBroker::start(second).await;
    let dana = token(&idp, "dana");
    let (status, body) = broker
        .call_as(&dana, "payments.get_customers", json!({}), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        upstream_keys(&upstream).await.last().unwrap(),
        "Bearer prov-at-1"
    );
}
