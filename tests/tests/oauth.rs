//! Users, not only keys (decision 011): the broker as an OAuth 2.1 resource
//! server. A loopback provider (`support::idp`) publishes its keys; tokens are minted
//! here. Each refusal is its own test; the metadata, the challenges, scopes, roles, the
//! user as the caller and the token's absence from everything the broker writes.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::idp::{Idp, RESOURCE, Signer, signed, unsigned};
use crate::support::{API_KEY, Setup, TestBroker, all_logs, classification, mount_customers};

const PAYMENTS_KEY: (&str, &str) = ("x-payments-api-key", "pk_oauth_canary_71");

/// A broker taking the provider's tokens (and the test key), payments upstream mocked.
async fn broker_for(idp: &Idp, upstream: &MockServer, extra: &str) -> TestBroker {
    let mut setup = Setup::all_upstreams(&upstream.uri());
    setup.config = Some(idp.config(extra));
    TestBroker::start(setup).await
}

async fn upstream() -> MockServer {
    // A server of its own, not one from wiremock's pool: these tests assert that nothing
    // reached the upstream, and a pooled server may still hear a late request of an
    // earlier test's broker.
    let server = MockServer::builder().start().await;
    mount_customers(&server).await;
    server
}

/// `payments.get_customers` with a bearer: `(status, headers, body)`.
async fn read_as(broker: &TestBroker, bearer: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "payments.get_customers", "arguments": {} } });
    let auth = format!("Bearer {bearer}");
    let (status, headers, text) = broker
        .send(
            reqwest::Method::POST,
            "/",
            Some(body.to_string().into_bytes()),
            &[
                ("authorization", &auth),
                ("content-type", "application/json"),
                (PAYMENTS_KEY.0, PAYMENTS_KEY.1),
            ],
        )
        .await;
    let body: Value = serde_json::from_str(&text).unwrap();
    crate::support::check_envelope(&body);
    (status, headers, body)
}

fn challenge(headers: &reqwest::header::HeaderMap) -> String {
    headers
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

const METADATA_URL: &str = "http://127.0.0.1/.well-known/oauth-protected-resource/mcp";

#[tokio::test]
async fn the_metadata_is_served_at_both_paths_and_only_with_oauth() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = broker_for(&idp, &upstream, "").await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let (status, headers, text) = broker.send(reqwest::Method::GET, path, None, &[]).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(headers["access-control-allow-origin"], "*");
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            doc,
            json!({
                "resource": RESOURCE,
                "authorization_servers": [idp.issuer],
                "scopes_supported": ["tools:read", "tools:write"],
                "bearer_methods_supported": ["header"],
                "resource_name": "tool broker",
            })
        );
    }
    let plain = TestBroker::start(Setup::default()).await;
    let (status, _, _) = plain
        .send(
            reqwest::Method::GET,
            "/.well-known/oauth-protected-resource",
            None,
            &[],
        )
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn every_endpoint_challenges_a_request_without_a_credential() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = broker_for(&idp, &upstream, "").await;
    let expected =
        format!("Bearer resource_metadata=\"{METADATA_URL}\", scope=\"tools:read tools:write\"");
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "payments.get_customers", "arguments": {} } });
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
    for (path, body, accept) in [
        ("/", call.to_string(), "application/json"),
        (
            "/mcp",
            list.to_string(),
            "application/json, text/event-stream",
        ),
        (
            "/mcp/payments/get_customers",
            "{}".to_string(),
            "application/json",
        ),
    ] {
        let (status, headers, text) = broker
            .send(
                reqwest::Method::POST,
                path,
                Some(body.into_bytes()),
                &[("content-type", "application/json"), ("accept", accept)],
            )
            .await;
        assert_eq!(status, 401, "{path}: {text}");
        assert_eq!(challenge(&headers), expected, "{path}");
        let body: Value = serde_json::from_str(&text).unwrap();
        if path == "/mcp" {
            assert_eq!(body["error"]["code"], -32001, "{body}");
        } else {
            assert_eq!(classification(&body), "unauthorized");
        }
    }
    // Keys-only deployments challenge too, plainly.
    let plain = TestBroker::start(Setup::default()).await;
    let (status, headers, _) = plain
        .send(
            reqwest::Method::POST,
            "/",
            Some(call.to_string().into_bytes()),
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!((status, challenge(&headers).as_str()), (401, "Bearer"));
}

#[tokio::test]
async fn a_valid_token_of_each_algorithm_reads_and_static_keys_still_work() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = broker_for(&idp, &upstream, "").await;
    for signer in [Signer::Rsa, Signer::Ec, Signer::Ed] {
        let token = idp.token_by(signer, &idp.claims("alice", "openid tools:read"));
        let (status, _, body) = read_as(&broker, &token).await;
        assert_eq!(status, 200, "{signer:?}: {body}");
        assert_eq!(body["ok"], true);
    }
    let (status, _, body) = read_as(&broker, API_KEY).await;
    assert_eq!(status, 200, "{body}");
    // Verified once, then kept: three tokens, one key set fetch (at start or first use).
    assert_eq!(idp.key_fetches().await, 1);
}

#[tokio::test]
async fn an_expired_token_is_refused() {
    let idp = Idp::start().await;
    let mut claims = idp.claims("alice", "tools:read");
    claims["exp"] = json!(jiff::Timestamp::now().as_second() - 120);
    assert_refused_with(&idp, &idp.token_by(Signer::Rsa, &claims), "expired").await;
}

#[tokio::test]
async fn a_token_not_yet_valid_is_refused() {
    let idp = Idp::start().await;
    let mut claims = idp.claims("alice", "tools:read");
    claims["nbf"] = json!(jiff::Timestamp::now().as_second() + 600);
    assert_refused_with(&idp, &idp.token_by(Signer::Ec, &claims), "not valid yet").await;
}

#[tokio::test]
async fn a_token_for_another_audience_is_refused() {
    let idp = Idp::start().await;
    let mut claims = idp.claims("alice", "tools:read");
    claims["aud"] = json!("https://other.example.com/mcp");
    assert_refused_with(&idp, &idp.token_by(Signer::Rsa, &claims), "audience").await;
}

#[tokio::test]
async fn a_token_of_another_issuer_is_refused() {
    let idp = Idp::start().await;
    let mut claims = idp.claims("alice", "tools:read");
    claims["iss"] = json!(format!("{}/", idp.issuer));
    assert_refused_with(&idp, &idp.token_by(Signer::Rsa, &claims), "another issuer").await;
}

#[tokio::test]
async fn an_unsigned_token_is_refused() {
    let idp = Idp::start().await;
    let claims = idp.claims("alice", "tools:write");
    let token = unsigned(&json!({ "alg": "none", "typ": "JWT" }), &claims, b"");
    assert_refused_with(&idp, &token, "algorithm").await;
}

#[tokio::test]
async fn an_hmac_token_keyed_with_the_public_key_is_refused() {
    let idp = Idp::start().await;
    let claims = idp.claims("alice", "tools:write");
    let header = json!({ "alg": "HS256", "typ": "JWT", "kid": "rsa-1" });
    // The classic confusion: the published key's text as the HMAC secret.
    let secret = serde_json::to_vec(&Signer::Rsa.jwk()).unwrap();
    let probe = unsigned(&header, &claims, b"");
    let input = probe.trim_end_matches('.');
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &secret);
    let tag = aws_lc_rs::hmac::sign(&key, input.as_bytes());
    let token = unsigned(&header, &claims, tag.as_ref());
    assert_refused_with(&idp, &token, "algorithm").await;
}

#[tokio::test]
async fn a_token_signed_by_an_unpublished_key_is_refused() {
    let idp = Idp::start().await;
    let claims = idp.claims("alice", "tools:read");
    // `rsa-2` is not published; and the published `rsa-1` id on a foreign signature.
    assert_refused_with(
        &idp,
        &idp.token_by(Signer::Rsa2, &claims),
        "does not publish",
    )
    .await;
    let forged = signed(
        Signer::Rsa2,
        json!({ "alg": "RS256", "typ": "at+jwt", "kid": "rsa-1" }),
        &claims,
    );
    assert_refused_with(&idp, &forged, "signature").await;
}

#[tokio::test]
async fn a_tampered_token_is_refused() {
    let idp = Idp::start().await;
    let token = idp.token("alice", "tools:read");
    let mut parts: Vec<String> = token.split('.').map(String::from).collect();
    let mut claims = idp.claims("mallory", "tools:write");
    claims["exp"] = json!(jiff::Timestamp::now().as_second() + 86_400);
    parts[1] = unsigned(&json!({}), &claims, b"")
        .split('.')
        .nth(1)
        .unwrap()
        .to_string();
    assert_refused_with(&idp, &parts.join("."), "signature").await;
}

/// A refused token: 401, `unauthorized`, an `invalid_token` challenge naming the
/// metadata, the reason in the message, on `POST /` and `/mcp`; nothing sent upstream,
/// nothing of the token logged.
async fn assert_refused_with(idp: &Idp, token: &str, reason: &str) {
    let upstream = upstream().await;
    let broker = broker_for(idp, &upstream, "").await;
    let (status, headers, body) = read_as(&broker, token).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(classification(&body), "unauthorized");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(reason), "{message}");
    let challenge = challenge(&headers);
    assert!(
        challenge.starts_with(&format!("Bearer resource_metadata=\"{METADATA_URL}\""))
            && challenge.contains("error=\"invalid_token\""),
        "{challenge}"
    );
    assert!(upstream.received_requests().await.unwrap().is_empty());
    assert!(!all_logs().contains(token), "the token reached the log");
    // The MCP endpoint refuses it the same way.
    let (status, body) = mcp_as(&broker, token, "tools/list", json!({})).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (401, &json!(-32001)),
        "{body}"
    );
}

#[tokio::test]
async fn a_key_rotated_in_is_accepted_after_one_fetch() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = broker_for(&idp, &upstream, "").await;
    let (status, _, _) = read_as(&broker, &idp.token("alice", "tools:read")).await;
    assert_eq!(status, 200);
    // The provider rotates: `rsa-2` joins the set, and new tokens carry it.
    idp.publish(&[Signer::Rsa, Signer::Rsa2]).await;
    let token = idp.token_by(Signer::Rsa2, &idp.claims("alice", "tools:read"));
    let (status, _, body) = read_as(&broker, &token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        idp.key_fetches().await,
        1,
        "exactly one fetch for the new key"
    );
    // Kept: the same token again fetches nothing.
    let (status, _, _) = read_as(&broker, &token).await;
    assert_eq!(status, 200);
    assert_eq!(idp.key_fetches().await, 1);
    // A made-up key id costs at most one more fetch, and is refused.
    let rogue = signed(
        Signer::Rsa2,
        json!({ "alg": "RS256", "typ": "at+jwt", "kid": "made-up" }),
        &idp.claims("alice", "tools:read"),
    );
    let (status, _, _) = read_as(&broker, &rogue).await;
    assert_eq!(status, 401);
    assert_eq!(idp.key_fetches().await, 2);
}

/// One MCP request (2025-11-25) with a bearer: `(status, JSON-RPC reply)`; the
/// challenge header is checked by the callers that need it through `mcp_raw`.
async fn mcp_as(broker: &TestBroker, bearer: &str, method: &str, params: Value) -> (u16, Value) {
    let (status, _, body) = mcp_raw(broker, bearer, method, params).await;
    (status, body)
}

async fn mcp_raw(
    broker: &TestBroker,
    bearer: &str,
    method: &str,
    params: Value,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let body = json!({ "jsonrpc": "2.0", "id": 3, "method": method, "params": params });
    let auth = format!("Bearer {bearer}");
    let (status, headers, text) = broker
        .send(
            reqwest::Method::POST,
            "/mcp",
            Some(body.to_string().into_bytes()),
            &[
                ("authorization", &auth),
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2025-11-25"),
                (PAYMENTS_KEY.0, PAYMENTS_KEY.1),
            ],
        )
        .await;
    (status, headers, serde_json::from_str(&text).unwrap())
}

#[tokio::test]
async fn a_write_without_the_write_scope_is_a_step_up_on_every_endpoint() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = broker_for(&idp, &upstream, "").await;
    let reader = idp.token("alice", "tools:read");
    let write = json!({ "name": "Jo", "confirm": true });
    let step_up = format!(
        "Bearer error=\"insufficient_scope\", scope=\"tools:write\", resource_metadata=\"{METADATA_URL}\""
    );

    // POST /: 403 forbidden, the challenge, the scope in the details.
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "payments.post_customers", "arguments": write } });
    let auth = format!("Bearer {reader}");
    let (status, headers, text) = broker
        .send(
            reqwest::Method::POST,
            "/",
            Some(body.to_string().into_bytes()),
            &[
                ("authorization", &auth),
                ("content-type", "application/json"),
                PAYMENTS_KEY,
            ],
        )
        .await;
    let envelope: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status, 403, "{envelope}");
    assert_eq!(classification(&envelope), "forbidden");
    assert_eq!(envelope["error"]["details"]["requiredScope"], "tools:write");
    assert_eq!(challenge(&headers), step_up);

    // /mcp: HTTP 403 and the challenge, which MCP clients step up on; through the
    // discovery call_tool too.
    for (name, arguments) in [
        ("payments_post_customers", write.clone()),
        (
            "call_tool",
            json!({ "name": "payments.post_customers", "arguments": write }),
        ),
    ] {
        let (status, headers, reply) = mcp_raw(
            &broker,
            &reader,
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )
        .await;
        assert_eq!(status, 403, "{name}: {reply}");
        assert_eq!(reply["error"]["code"], -32003);
        assert_eq!(reply["error"]["data"]["classification"], "forbidden");
        assert_eq!(challenge(&headers), step_up, "{name}");
    }
    // The REST endpoint.
    let (status, headers, _) = broker
        .send(
            reqwest::Method::POST,
            "/mcp/payments/post_customers",
            Some(write.to_string().into_bytes()),
            &[
                ("authorization", &auth),
                ("content-type", "application/json"),
                PAYMENTS_KEY,
            ],
        )
        .await;
    assert_eq!((status, challenge(&headers)), (403, step_up.clone()));
    assert!(upstream.received_requests().await.unwrap().is_empty());

    // A read-only token still lists the write tool (so a client can step up) and reads.
    let (_, list) = mcp_as(&broker, &reader, "tools/list", json!({})).await;
    assert!(list["result"]["tools"].is_array(), "{list}");
    let (status, _, _) = read_as(&broker, &reader).await;
    assert_eq!(status, 200);

    // With the write scope, the write runs, and the audit records the user.
    let writer = idp.token("alice", "tools:read tools:write");
    let (status, _, text) = broker
        .send(
            reqwest::Method::POST,
            "/",
            Some(body.to_string().into_bytes()),
            &[
                ("authorization", &format!("Bearer {writer}")),
                ("content-type", "application/json"),
                PAYMENTS_KEY,
            ],
        )
        .await;
    assert_eq!(status, 200, "{text}");
    let audit = crate::support::audit(&broker).await;
    assert_eq!(audit[0].key_name, format!("{}#alice", idp.issuer));
}

#[tokio::test]
async fn per_service_scopes_narrow_and_a_token_without_any_is_refused() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = broker_for(
        &idp,
        &upstream,
        "scopes_supported = [\"tools:read\", \"tools:write\", \"payments:write\"]\nscope_aliases = { \"Payments.Write\" = \"payments:write\" }",
    )
    .await;
    // `payments:write` (by its alias) reads and writes payments, and nothing else.
    let token = idp.token("bo", "Payments.Write");
    let (status, _, _) = read_as(&broker, &token).await;
    assert_eq!(status, 200);
    let (status, reply) = mcp_as(
        &broker,
        &token,
        "tools/call",
        json!({ "name": "crm_businesses_get_business", "arguments": { "businessId": "b1" } }),
    )
    .await;
    assert_eq!(status, 403, "{reply}");
    assert_eq!(
        reply["error"]["data"]["details"]["requiredScope"],
        "tools:read"
    );
    // A write is challenged with the per-service scope the deployment lists.
    let reader = idp.token("bo", "payments:read");
    let (status, headers, _) = mcp_raw(
        &broker,
        &reader,
        "tools/call",
        json!({ "name": "payments_post_customers", "arguments": { "name": "x", "confirm": true } }),
    )
    .await;
    assert_eq!(status, 403);
    assert!(challenge(&headers).contains("scope=\"payments:write\""));
    // No broker scope at all: refused at once, asked for the listed scopes.
    let (status, headers, body) = read_as(&broker, &idp.token("bo", "openid profile")).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        challenge(&headers).contains(
            "error=\"insufficient_scope\", scope=\"tools:read tools:write payments:write\""
        ),
        "{}",
        challenge(&headers)
    );
}

#[tokio::test]
async fn roles_map_to_permission_sets_and_check_connection_names_the_user() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let roles = "roles_claim = \"realm_access.roles\"\ndefault_role = \"nobody\"\n\
        [[oauth.roles]]\nname = \"support\"\nservices = [\"crm\", \"portal\"]\n\
        [[oauth.roles]]\nname = \"billing\"\nservices = [\"payments\"]\nrisks = [\"read\"]\n\
        [[oauth.roles]]\nname = \"nobody\"\nservices = []\n";
    let broker = broker_for(&idp, &upstream, roles).await;
    let with_roles = |roles: Value| {
        let mut claims = idp.claims("carol", "tools:read tools:write");
        claims["realm_access"] = json!({ "roles": roles });
        idp.token_by(Signer::Ec, &claims)
    };
    // `support` alone: crm only.
    let (status, _, body) = read_as(&broker, &with_roles(json!(["support"]))).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("this user may not use the `payments` service")
    );
    assert!(
        body["error"].get("details").is_none(),
        "a role refusal is no step-up"
    );
    // `support` + `billing`: payments reads, not writes.
    let both = with_roles(json!(["support", "billing", "offline_access"]));
    let (status, _, _) = read_as(&broker, &both).await;
    assert_eq!(status, 200);
    let (status, body) = broker
        .call_as(
            &both,
            "payments.post_customers",
            json!({ "name": "x", "confirm": true }),
            &[PAYMENTS_KEY],
        )
        .await;
    assert_eq!((status, classification(&body)), (403, "forbidden"));
    // No role this broker knows: the default role, which allows nothing.
    let (status, _, _) = read_as(&broker, &with_roles(json!(["offline_access"]))).await;
    assert_eq!(status, 403);

    // check_connection says who the broker saw, never the token.
    let (status, body) = broker
        .call_as(&both, "portal.check_connection", json!({}), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["identity"],
        json!({ "kind": "user", "issuer": idp.issuer, "subject": "carol", "scopes": ["tools:read", "tools:write"] })
    );
    assert!(!body.to_string().contains(&both));
    let (_, body) = broker.call("portal.check_connection", json!({}), &[]).await;
    assert_eq!(
        body["data"]["identity"],
        json!({ "kind": "key", "name": "env:TOOL_BROKER_API_KEY" })
    );
}

#[tokio::test]
async fn rate_limits_count_per_user_and_the_token_goes_nowhere() {
    let idp = Idp::start().await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/domains/v1/availability"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!([{ "domain": "a.com", "is_available": true }])),
        )
        .mount(&server)
        .await;
    let broker = broker_for(&idp, &server, "").await;
    let tool = "hosting.domains_check_domain_availability_v1";
    let args = json!({ "domain": "example", "tlds": ["com"] });
    // Both users send the same hosting key: the budget is the user's.
    let shared = [("x-hosting-api-key", "hk_shared_by_two")];
    let dana = idp.token("dana", "tools:read");
    for i in 0..10 {
        let (status, body) = broker.call_as(&dana, tool, args.clone(), &shared).await;
        assert_eq!(status, 200, "call {i}: {body}");
    }
    let (status, body) = broker.call_as(&dana, tool, args.clone(), &shared).await;
    assert_eq!((status, classification(&body)), (429, "rate_limited"));
    let erin = idp.token("erin", "tools:read");
    let (status, _) = broker.call_as(&erin, tool, args.clone(), &shared).await;
    assert_eq!(status, 200, "another user has their own budget");

    // The token reached no upstream request, no log line and no answer.
    for request in server.received_requests().await.unwrap() {
        let seen = format!(
            "{:?} {}",
            request.headers,
            String::from_utf8_lossy(&request.body)
        );
        assert!(!seen.contains(&dana) && !seen.contains(&erin));
        // The hosting key goes where hosting keys go; nothing else authorizes.
        if let Some(value) = request.headers.get("authorization") {
            assert!(value.to_str().unwrap().ends_with("hk_shared_by_two"));
        }
    }
    let log = all_logs();
    assert!(!log.contains(&dana) && !log.contains(&erin));
    assert!(!body.to_string().contains(&dana));
}

#[tokio::test]
async fn a_users_confirmation_is_theirs_and_the_store_keeps_no_token() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let mut setup = Setup::all_upstreams(&upstream.uri());
    setup.config = Some(format!("confirmation = \"bound\"\n{}", idp.config("")));
    setup.store = Some(crate::support::sqlite_store(dir.path()).await);
    let broker = TestBroker::start(setup).await;
    let alice = idp.token("alice", "tools:write");
    let bob = idp.token("bob", "tools:write");
    let create = json!({ "name": "Jo", "confirm": true });

    // Alice's preview answers a token bound to her; Bob, with the same payments key,
    // cannot spend it.
    let (status, body) = broker
        .call_as(
            &alice,
            "payments.post_customers",
            create.clone(),
            &[PAYMENTS_KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let token = body["data"]["confirmationToken"]
        .as_str()
        .unwrap()
        .to_string();
    let mut confirmed = create.clone();
    confirmed["confirmationToken"] = json!(token);
    let (status, body) = broker
        .call_as(
            &bob,
            "payments.post_customers",
            confirmed.clone(),
            &[PAYMENTS_KEY],
        )
        .await;
    assert_eq!(status, 428, "{body}");
    assert_eq!(body["error"]["details"]["reason"], "other_caller");
    assert_eq!(crate::support::posts(&upstream).await, 0);
    let (status, body) = broker
        .call_as(
            &alice,
            "payments.post_customers",
            confirmed,
            &[PAYMENTS_KEY, ("idempotency-key", "alice-once")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(crate::support::posts(&upstream).await, 1);

    // The store knows the user, never a token (SQLite files, WAL included).
    let audit = crate::support::audit(&broker).await;
    assert!(
        audit
            .iter()
            .any(|r| r.key_name == format!("{}#alice", idp.issuer))
    );
    drop(broker);
    let text = crate::support::folder_text(dir.path());
    assert!(text.contains("#alice"), "the user is in the store");
    for secret in [&alice, &bob] {
        assert!(
            !text.contains(secret.as_str()),
            "a token is in the store's files"
        );
        // Nor any one part of it (the signature is the token's own secret part).
        assert!(!text.contains(secret.rsplit('.').next().unwrap()));
    }
}

/// A key set server the test switches between serving the keys, gone (its port refuses
/// connections) and hanging (it accepts and answers nothing while the test holds it).
struct KeyServer {
    addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
    /// Connections accepted while hanging, kept open.
    held: std::sync::Arc<std::sync::Mutex<Vec<tokio::net::TcpStream>>>,
    /// Key set requests answered while serving.
    served: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl KeyServer {
    async fn serving(signers: &[Signer]) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let keys: Vec<Value> = signers.iter().map(|s| s.jwk()).collect();
        let body = json!({ "keys": keys }).to_string();
        let count = served.clone();
        let task = tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(n) if n > 0 => head.extend_from_slice(&buf[..n]),
                        _ => break,
                    }
                }
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            }
        });
        let held = std::sync::Arc::default();
        Self {
            addr,
            task,
            held,
            served,
        }
    }

    /// The key set's URL.
    fn url(&self) -> String {
        format!("http://{}/jwks", self.addr)
    }

    /// The provider goes away: nothing listens on its port.
    fn refuse(&self) {
        self.task.abort();
    }

    /// The provider comes back on the same port and hangs every request.
    async fn hang(&mut self) {
        self.task.abort();
        let listener = loop {
            match tokio::net::TcpListener::bind(self.addr).await {
                Ok(listener) => break listener,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        };
        let held = self.held.clone();
        self.task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                held.lock().unwrap().push(stream);
            }
        });
    }

    fn hanging(&self) -> usize {
        self.held.lock().unwrap().len()
    }
}

/// An identity provider that goes dark does not slow calls whose key the broker holds:
/// the keys of the last good fetch stay in use past their age (fetched again in the
/// background), while a token naming an unknown key is refused from the keys held
/// without waiting for the provider, first refusing connections, then hanging.
#[tokio::test]
async fn a_provider_outage_is_not_the_callers_latency() {
    let idp = Idp::start().await;
    let mut keys = KeyServer::serving(&[Signer::Rsa]).await;
    let upstream = upstream().await;
    let extra = format!("jwks_uri = \"{}\"\nkeys_max_age_seconds = 1", keys.url());
    let broker = broker_for(&idp, &upstream, &extra).await;
    let token = |n: usize| {
        let mut claims = idp.claims("alice", "tools:read");
        claims["jti"] = json!(format!("t-{n}"));
        idp.token_by(Signer::Rsa, &claims)
    };
    let unknown = |n: usize| {
        let mut claims = idp.claims("alice", "tools:read");
        claims["jti"] = json!(format!("u-{n}"));
        signed(
            Signer::Rsa,
            json!({ "alg": "RS256", "typ": "at+jwt", "kid": "made-up" }),
            &claims,
        )
    };
    let refused_as_unknown = |(status, headers, body): (u16, reqwest::header::HeaderMap, Value)| {
        assert_eq!(status, 401, "{body}");
        assert!(challenge(&headers).contains("error=\"invalid_token\""));
    };
    let (status, _, body) = read_as(&broker, &token(0)).await;
    assert_eq!(status, 200, "{body}");
    assert!(keys.served.load(std::sync::atomic::Ordering::SeqCst) >= 1);

    // Dark: connections refused. The held keys are past their age: each call with a
    // known key is still verified (and starts a background fetch that fails).
    keys.refuse();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    for n in 1..=3 {
        let (status, _, body) = read_as(&broker, &token(n)).await;
        assert_eq!(
            status, 200,
            "a known key while the provider refuses: {body}"
        );
    }
    refused_as_unknown(read_as(&broker, &unknown(1)).await);

    // Hanging: the next background fetch (after the backoff) hangs; calls with a known
    // key answer while it does, and an unknown key is refused, also while it hangs.
    keys.hang().await;
    let mut n = 10;
    while keys.hanging() == 0 {
        n += 1;
        assert!(n < 400, "no fetch reached the hanging provider");
        let (status, _, body) = read_as(&broker, &token(n)).await;
        assert_eq!(status, 200, "a known key while the provider hangs: {body}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for m in 0..3 {
        let (status, _, body) = read_as(&broker, &token(1000 + m)).await;
        assert_eq!(status, 200, "a known key while a fetch hangs: {body}");
        refused_as_unknown(read_as(&broker, &unknown(100 + m)).await);
    }
    assert_eq!(
        keys.hanging(),
        1,
        "one fetch at a time, none started by the unknown keys while it hangs"
    );
}

/// A token whose header says what it is: an access token by RFC 9068 (`at+jwt`, with or
/// without `application/`, any case) is taken; a plain `JWT` only where the deployment
/// says its provider issues no other; a token with an ID token's claims never, even when
/// its audience is the broker's.
#[tokio::test]
async fn an_id_token_is_never_taken_as_an_access_token() {
    let idp = Idp::start().await;
    let with = |typ: Option<&str>, extra: &[(&str, Value)]| {
        let mut claims = idp.claims("alice", "tools:read");
        for (name, value) in extra {
            claims[*name] = value.clone();
        }
        let mut header = json!({ "alg": "RS256", "kid": Signer::Rsa.kid() });
        if let Some(typ) = typ {
            header["typ"] = json!(typ);
        }
        signed(Signer::Rsa, header, &claims)
    };
    let upstream = upstream().await;
    let strict = broker_for(&idp, &upstream, "").await;
    for typ in ["at+jwt", "application/at+jwt", "AT+JWT"] {
        let (status, _, body) = read_as(&strict, &with(Some(typ), &[])).await;
        assert_eq!(status, 200, "{typ}: {body}");
    }
    for typ in [Some("JWT"), None, Some("id_token+jwt")] {
        assert_refused_with(&idp, &with(typ, &[]), "its header `typ` must be `at+jwt`").await;
    }
    // An ID token for a client whose id is the broker's resource: the audience matches.
    let id_token = with(
        Some("JWT"),
        &[("nonce", json!("n-1")), ("at_hash", json!("x"))],
    );
    assert_refused_with(&idp, &id_token, "its header `typ` must be `at+jwt`").await;
    for claim in ["nonce", "at_hash", "c_hash"] {
        let token = with(Some("at+jwt"), &[(claim, json!("v"))]);
        assert_refused_with(&idp, &token, "is an ID token").await;
    }

    let plain = broker_for(&idp, &upstream, "accept_plain_jwt = true").await;
    for typ in [Some("JWT"), Some("jwt"), None, Some("at+jwt")] {
        let (status, _, body) = read_as(&plain, &with(typ, &[])).await;
        assert_eq!(status, 200, "{typ:?} with accept_plain_jwt: {body}");
    }
    let (status, headers, body) = read_as(&plain, &id_token).await;
    assert_eq!(status, 401, "an ID token with accept_plain_jwt: {body}");
    assert!(challenge(&headers).contains("error=\"invalid_token\""));
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is an ID token"),
        "{body}"
    );
    let (status, _, body) = read_as(&plain, &with(Some("id_token+jwt"), &[])).await;
    assert_eq!(status, 401, "{body}");
}

/// The Kubernetes overlay's config file (deploy/kubernetes/overlays/oauth) builds a
/// broker with people signing in and the hub, given the two Secrets' variables.
#[tokio::test]
async fn the_kubernetes_oauth_overlay_config_builds_a_broker() {
    let path = crate::support::root().join("deploy/kubernetes/overlays/oauth/broker.toml");
    let config = tool_broker::config::ConfigFile::load(&path).unwrap();
    let env = |name: &str| match name {
        "TOOL_BROKER_VAULT_KEY" => Some("vault-key-of-the-overlay-test-0123456789abcdef".into()),
        "TOOL_BROKER_HUB_CLIENT_SECRET" => Some("hub-secret-of-the-overlay-test".into()),
        _ => None,
    };
    let store = tool_broker::store::Store::open(&tool_broker::store::StoreConfig::Memory)
        .await
        .unwrap();
    let broker =
        tool_broker::call::Broker::new(crate::support::embedded_catalog(), &config, &env, store)
            .unwrap();
    assert!(broker.callers.oauth.is_some());
    assert!(broker.hub.is_some());
    // Without the vault key the same file does not start, and says why.
    let store = tool_broker::store::Store::open(&tool_broker::store::StoreConfig::Memory)
        .await
        .unwrap();
    let refused = tool_broker::call::Broker::new(
        crate::support::embedded_catalog(),
        &config,
        &|_| None,
        store,
    )
    .unwrap_err();
    assert!(refused.contains("TOOL_BROKER_VAULT_KEY"), "{refused}");
}
