//! Per-service rules that decide what a call may do: hosting's availability rate limit,
//! payments' profile routing, leads' allowlisted endpoint.

use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker, classification};

#[tokio::test]
async fn domain_availability_is_limited_per_caller() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/domains/v1/availability"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!([{ "domain": "a.com", "is_available": true }])),
        )
        .mount(&server)
        .await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let tool = "hosting.domains_check_domain_availability_v1";
    let args = json!({ "domain": "example", "tlds": ["com"] });
    let alice = [("x-hosting-api-key", "hk_alice")];
    // A preview sends nothing and is not counted.
    let (status, body) = broker
        .call(
            tool,
            json!({ "domain": "example", "tlds": ["com"], "dry_run": true }),
            &alice,
        )
        .await;
    assert_eq!(
        (status, body["data"]["dryRun"].clone()),
        (200, json!(true)),
        "{body}"
    );
    for i in 0..10 {
        let (status, body) = broker.call(tool, args.clone(), &alice).await;
        assert_eq!(status, 200, "call {i}: {body}");
    }
    let (status, body) = broker.call(tool, args.clone(), &alice).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(classification(&body), "rate_limited");
    assert_eq!(body["error"]["retryable"], true);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("10 requests per 60 seconds")
    );
    // Another caller has its own budget.
    let (status, _) = broker
        .call(tool, args.clone(), &[("x-hosting-api-key", "hk_bob")])
        .await;
    assert_eq!(status, 200);
    assert_eq!(server.received_requests().await.unwrap().len(), 11);
    // The answer says when to retry.
    let (status, headers, _) = broker
        .send(
            reqwest::Method::POST,
            "/mcp/hosting/domains-check-domain-availability-v1",
            Some(args.to_string().into_bytes()),
            &[
                ("authorization", "Bearer tb_test_bearer_0123456789"),
                ("x-hosting-api-key", "hk_alice"),
            ],
        )
        .await;
    assert_eq!(status, 429);
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
}

#[tokio::test]
async fn payments_routes_by_profile_to_a_server_side_key() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/customers"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list", "data": [{ "id": "cus_1", "object": "customer", "note": "sk_live_eu_secret_0001" }], "has_more": false
        })))
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(format!(
        "[[keys]]\nname = \"eu-agent\"\nsha256 = \"{}\"\nprofiles = [\"eu-store\"]\n\
         [[keys]]\nname = \"other\"\nsha256 = \"{}\"\n\
         [[profiles]]\nservice = \"payments\"\nid = \"prof_eu\"\nslug = \"eu-store\"\nenv = \"PAYMENTS_EU_KEY\"\n",
        tool_broker::catalog::identity::sha256_hex(b"tb_eu_agent_token_00001"),
        tool_broker::catalog::identity::sha256_hex(b"tb_other_token_0000001"),
    ));
    setup
        .env
        .insert("PAYMENTS_EU_KEY".into(), "sk_live_eu_secret_0001".into());
    let broker = TestBroker::start(setup).await;
    // By slug or id: the profile's key goes upstream, the routing arguments do not.
    for args in [
        json!({ "profileSlug": "eu-store" }),
        json!({ "profileId": "prof_eu", "limit": 1 }),
    ] {
        let (status, body) = broker
            .call_as(
                "tb_eu_agent_token_00001",
                "payments.get_customers",
                args.clone(),
                &[],
            )
            .await;
        assert_eq!(status, 200, "{args}: {body}");
        assert!(
            !body.to_string().contains("sk_live_eu_secret_0001"),
            "the key came back: {body}"
        );
    }
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.headers["authorization"], "Bearer sk_live_eu_secret_0001");
        assert!(!r.url.as_str().contains("profile"), "{}", r.url);
    }
    // A key that does not list the profile, and a profile that does not exist.
    let (status, body) = broker
        .call_as(
            "tb_other_token_0000001",
            "payments.get_customers",
            json!({ "profileSlug": "eu-store" }),
            &[],
        )
        .await;
    assert_eq!(
        (status, classification(&body)),
        (403, "forbidden"),
        "{body}"
    );
    let (status, body) = broker
        .call_as(
            "tb_eu_agent_token_00001",
            "payments.get_customers",
            json!({ "profileSlug": "us-store" }),
            &[],
        )
        .await;
    assert_eq!(
        (status, classification(&body)),
        (422, "validation_error"),
        "{body}"
    );
    assert_eq!(body["error"]["details"][0]["pointer"], "/profileSlug");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    // portal.call_read_tool passes its profile to the inner payments tool.
    let (status, body) = broker
        .call_as(
            "tb_eu_agent_token_00001",
            "portal.call_read_tool",
            json!({ "serviceId": "payments", "toolName": "get_customers", "arguments": {}, "profileSlug": "eu-store" }),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn the_allowlisted_endpoint_stays_inside_its_allowlists() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/contacts/search"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "contacts": [{ "id": "c1", "api_key": "leaky" }] })),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/custom/report"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({ "big": "x".repeat(2_000_000) })),
        )
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some("[settings.leads]\nallowed_path_prefixes = [\"/custom/\"]\n".into());
    let broker = TestBroker::start(setup).await;
    let tool = "leads.call_allowlisted_endpoint";
    let key = [("x-leads-api-key", "lk_allow_1")];
    // A described endpoint with confirm: sent with the caller's key, answer redacted.
    let (status, body) = broker
        .call(tool, json!({ "method": "POST", "path": "/contacts/search", "params": { "page": 2, "ids[]": ["a", "b"] }, "body": { "q_keywords": "cto" }, "confirm": true }), &key)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["contacts"][0]["id"], "c1");
    assert_eq!(body["data"]["contacts"][0]["api_key"], "[REDACTED]");
    let sent = server.received_requests().await.unwrap().remove(0);
    assert_eq!(sent.headers["x-api-key"], "lk_allow_1");
    assert_eq!(sent.url.query(), Some("ids%5B%5D=a&ids%5B%5D=b&page=2"));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&sent.body).unwrap(),
        json!({ "q_keywords": "cto" })
    );
    // Refusals, none of which sends anything.
    for (args, status, class) in [
        (
            json!({ "method": "POST", "path": "/contacts/search" }),
            428,
            "confirmation_required",
        ),
        (
            json!({ "path": "/mixed_people/api_search" }),
            403,
            "forbidden",
        ),
        (json!({ "path": "/admin/users" }), 403, "forbidden"),
        (
            json!({ "path": "https://evil.invalid/contacts" }),
            422,
            "validation_error",
        ),
        (
            json!({ "path": "/custom/../contacts" }),
            422,
            "validation_error",
        ),
        (
            json!({ "method": "POST", "path": "/contacts/search", "confirm": true, "body": { "x": "y".repeat(70_000) } }),
            413,
            "payload_too_large",
        ),
    ] {
        let (got, body) = broker.call(tool, args.clone(), &key).await;
        assert_eq!(
            (got, classification(&body)),
            (status, class),
            "{args}: {body}"
        );
    }
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
    // A prefix the deployment allows; its answer is over the 1 MiB limit.
    let (status, body) = broker
        .call(tool, json!({ "path": "/custom/report" }), &key)
        .await;
    assert!(status >= 500, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("larger than"),
        "{body}"
    );
}

#[tokio::test]
async fn leads_reports_credits_and_observed_runtime_health() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/mixed_companies/search"))
        .respond_with(ResponseTemplate::new(503).set_body_json(json!({ "error": "busy" })))
        .mount(&server)
        .await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let key = [("x-leads-api-key", "lk_health_1")];
    let (_, health) = broker
        .call("leads.check_runtime_health", json!({}), &key)
        .await;
    assert_eq!(health["data"]["status"], "ok", "{health}");
    assert_eq!(health["data"]["observed"]["calls"], 0);
    for _ in 0..5 {
        let (_, body) = broker
            .call(
                "leads.leads_post_mixed_companies_search",
                json!({ "body": { "q_organization_name": "acme" } }),
                &key,
            )
            .await;
        assert_eq!(body["meta"]["consumesCredits"], true, "{body}");
    }
    let before = server.received_requests().await.unwrap().len();
    let (status, health) = broker
        .call("leads.check_runtime_health", json!({}), &key)
        .await;
    assert_eq!(status, 200);
    assert_eq!(health["data"]["status"], "degraded", "{health}");
    assert_eq!(health["data"]["observed"]["upstreamFailures"], 5);
    assert_eq!(health["data"]["readiness"]["credentialPresent"], true);
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        before,
        "health never probes"
    );
    assert!(!health.to_string().contains("lk_health_1"));
    // A read tool that consumes nothing says nothing.
    let (_, body) = broker
        .call("leads.check_runtime_health", json!({}), &key)
        .await;
    assert!(body["meta"].get("consumesCredits").is_none());
}
