//! Navigation tools (find, reference, capabilities, coverage): ranking expectations as
//! data (tests/navigation/ranking.toml), descriptors, pagination, coverage figures
//! against the catalog, and never an upstream request.

use serde::Deserialize;
use serde_json::json;
use wiremock::MockServer;

use crate::support::{Setup, TestBroker, classification, root};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ranking {
    expect: Vec<Expect>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// A service's find tool, or `find_tools`: the MCP discovery tool (every service).
    find: String,
    query: String,
    /// The tool ranked first.
    #[serde(default)]
    first: Option<String>,
    /// `[does, reads]`: `does` is among the results and `reads` is after it or absent.
    #[serde(default)]
    above: Option<[String; 2]>,
    #[serde(default)]
    risk: Option<String>,
    #[serde(default)]
    category: Option<String>,
    /// Only this service (discovery find only).
    #[serde(default)]
    service: Option<String>,
}

/// Runs a find: a service's find tool through `POST /`, the discovery `find_tools`
/// through `POST /mcp`. Returns the envelope.
async fn find(broker: &TestBroker, tool: &str, args: serde_json::Value) -> serde_json::Value {
    if tool != "find_tools" {
        let (status, body) = broker.call(tool, args, &[]).await;
        assert_eq!(status, 200, "{tool}: {body}");
        return body;
    }
    let (status, reply) =
        crate::support::mcp_tools_call(broker, json!({ "name": tool, "arguments": args }), &[])
            .await;
    assert_eq!(status, 200, "{reply}");
    reply["result"]["structuredContent"].clone()
}

/// A broker whose every upstream is a mock that must receive nothing.
async fn broker() -> (MockServer, TestBroker) {
    let server = MockServer::start().await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    (server, broker)
}

async fn assert_untouched(server: &MockServer) {
    let received = server.received_requests().await.unwrap_or_default();
    assert!(
        received.is_empty(),
        "a local tool contacted the upstream: {received:?}"
    );
}

#[tokio::test]
async fn plain_queries_rank_the_obvious_tool_first() {
    let text = std::fs::read_to_string(root().join("tests/navigation/ranking.toml")).unwrap();
    let ranking: Ranking = toml::from_str(&text).unwrap();
    let (server, broker) = broker().await;
    let catalog = crate::support::embedded_catalog();
    let mut failures = Vec::new();
    for e in &ranking.expect {
        assert!(
            e.first.is_some() || e.above.is_some(),
            "`{}`: say `first` or `above`",
            e.query
        );
        // Every name an expectation gives must be a tool: a typo must not pass.
        let prefix = if e.find == "find_tools" {
            String::new()
        } else {
            format!("{}.", e.find.split('.').next().unwrap())
        };
        for name in e.first.iter().chain(e.above.iter().flatten()) {
            assert!(
                catalog.resolve(&format!("{prefix}{name}")).is_some(),
                "ranking.toml names `{prefix}{name}`, which is not a tool"
            );
        }
        let mut args = json!({ "query": e.query, "limit": 50 });
        if let Some(r) = &e.risk {
            args["risk"] = json!(r);
        }
        if let Some(c) = &e.category {
            args["category"] = json!(c);
        }
        if let Some(s) = &e.service {
            args["service"] = json!(s);
        }
        let body = find(&broker, &e.find, args).await;
        let key = if e.find == "find_tools" {
            "fullName"
        } else {
            "name"
        };
        let results = body["data"]["results"].as_array().unwrap();
        for r in results {
            if let Some(risk) = &e.risk {
                assert_eq!(r["risk"], json!(risk), "{}: {r}", e.query);
            }
            if let Some(category) = &e.category {
                assert_eq!(r["category"], json!(category), "{}: {r}", e.query);
            }
        }
        let names: Vec<&str> = results.iter().map(|r| r[key].as_str().unwrap()).collect();
        let top: Vec<&str> = names.iter().take(5).copied().collect();
        if let Some(first) = &e.first
            && names.first() != Some(&first.as_str())
        {
            failures.push(format!(
                "{} `{}`: expected `{first}` first, got {top:?}",
                e.find, e.query
            ));
        }
        if let Some([does, reads]) = &e.above {
            let rank = |name: &str| names.iter().position(|n| *n == name);
            match (rank(does), rank(reads)) {
                (None, _) => failures.push(format!(
                    "{} `{}`: `{does}` is not among the results {top:?}",
                    e.find, e.query
                )),
                (Some(d), Some(r)) if r < d => failures.push(format!(
                    "{} `{}`: `{reads}` (#{}) ranks above `{does}` (#{})",
                    e.find,
                    e.query,
                    r + 1,
                    d + 1
                )),
                _ => {}
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_untouched(&server).await;
}

#[tokio::test]
async fn tool_reference_resolves_every_spelling() {
    let (server, broker) = broker().await;
    let reference = |name: &'static str| {
        broker.call("payments.get_tool_reference", json!({ "name": name }), &[])
    };
    for name in [
        "get_issuing_cards",
        "get-issuing-cards",
        "payments.get_issuing_cards",
        "GetIssuingCards",
        "Get Issuing Cards",
    ] {
        let (status, body) = reference(name).await;
        assert_eq!(status, 200, "{name}: {body}");
        let d = &body["data"];
        assert_eq!(d["fullName"], "payments.get_issuing_cards", "{name}");
        assert_eq!(
            d["upstream"],
            json!({"method": "GET", "path": "/v1/issuing/cards"})
        );
        assert_eq!(d["arguments"]["type"], "object");
        assert_eq!(d["confirmation"]["mode"], "none");
        assert_eq!(d["source"]["spec"], "payments/spec3.yaml");
        let hash = d["descriptorHash"].as_str().unwrap();
        let tool = broker
            .broker
            .parts
            .catalog
            .resolve("payments.get_issuing_cards")
            .unwrap();
        assert_eq!(hash, tool.descriptor_hash);
    }
    // A write tool says how it is confirmed.
    let (_, body) = reference("post_refunds").await;
    assert_ne!(body["data"]["confirmation"]["mode"], "none", "{body}");
    // It shows the tool's intents (catalog/payments/intents.toml), so a model reads
    // the requests the tool is for; a tool without any shows an empty list.
    let intents = body["data"]["intents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        intents.contains(&json!("give a customer their money back")),
        "{body}"
    );
    let (_, body) = reference("get_apple_pay_domains_domain").await;
    assert_eq!(body["data"]["intents"], json!([]), "{body}");
    // Unknown: 404 with suggestions; another service's tool is not this one's.
    let (status, body) = reference("get_issuing_card").await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(classification(&body), "unknown_tool");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("get_issuing_cards"),
        "{body}"
    );
    let (status, _) = reference("agent.list_tasks").await;
    assert_eq!(status, 404);
    assert_untouched(&server).await;
}

#[tokio::test]
async fn capabilities_pages_through_every_descriptor_once() {
    let (server, broker) = broker().await;
    let catalog = broker.broker.parts.catalog.clone();
    let expected: Vec<&str> = catalog
        .tools
        .iter()
        .filter(|t| t.service == "agent")
        .map(|t| t.name.as_str())
        .collect();
    let (status, compact) = broker.call("agent.list_capabilities", json!({}), &[]).await;
    assert_eq!(status, 200, "{compact}");
    assert!(compact["data"].get("descriptors").is_none());
    assert_eq!(compact["data"]["counts"]["raw"], json!(expected.len()));
    assert_eq!(
        compact["data"]["service"]["catalogVersion"],
        json!(catalog.services["agent"].catalog_version)
    );
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let mut args = json!({ "include_descriptors": true, "limit": 7 });
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let (status, page) = broker.call("agent.list_capabilities", args, &[]).await;
        assert_eq!(status, 200, "{page}");
        for d in page["data"]["descriptors"].as_array().unwrap() {
            assert!(d["arguments"].is_object() && d["descriptorHash"].is_string());
            seen.push(d["name"].as_str().unwrap().to_string());
        }
        match page["data"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, expected);
    let (status, body) = broker
        .call(
            "agent.list_capabilities",
            json!({ "include_descriptors": true, "cursor": "x1" }),
            &[],
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["details"][0]["pointer"], "/cursor");
    assert_untouched(&server).await;
}

#[tokio::test]
async fn coverage_figures_match_the_catalog() {
    let (server, broker) = broker().await;
    let catalog = broker.broker.parts.catalog.clone();
    for (service, find) in [
        ("scraper", "scraper.get_endpoint_coverage"),
        ("crm", "crm.crm_get_endpoint_coverage"),
        ("payments", "payments.get_endpoint_coverage"),
    ] {
        let tools: Vec<_> = catalog
            .tools
            .iter()
            .filter(|t| t.service == service)
            .collect();
        let (status, body) = broker.call(find, json!({ "limit": 500 }), &[]).await;
        assert_eq!(status, 200, "{body}");
        let figures = &body["data"]["figures"];
        assert_eq!(figures["raw"], json!(tools.len()), "{service}");
        assert_eq!(
            figures["exposed"],
            json!(tools.iter().filter(|t| t.exposed).count()),
            "{service}"
        );
        let local = tools
            .iter()
            .filter(|t| matches!(t.action, tool_broker::catalog::Action::Hook(_)))
            .count();
        assert_eq!(figures["local"], json!(local));
        assert_eq!(
            body["data"]["total"],
            json!(tools.len() - local),
            "{service}"
        );
    }
    // Status filter: scraper's raw-only operations are recorded, not exposed.
    let (_, raw) = broker
        .call(
            "scraper.get_endpoint_coverage",
            json!({ "status": "raw_only", "limit": 500 }),
            &[],
        )
        .await;
    let rows = raw["data"]["endpoints"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["status"] == "raw_only"));
    let unexposed = catalog
        .tools
        .iter()
        .filter(|t| t.service == "scraper" && !t.exposed)
        .count();
    assert_eq!(rows.len(), unexposed);
    // Category filter (the crm category listing tool requires one).
    let (status, body) = broker
        .call(
            "crm.crm_list_category_tools",
            json!({ "category": "media-storage" }),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let rows = body["data"]["endpoints"].as_array().unwrap();
    assert!(!rows.is_empty() && rows.iter().all(|r| r["category"] == "media-storage"));
    let (status, body) = broker
        .call(
            "crm.crm_list_category_tools",
            json!({ "category": "media_storage" }),
            &[],
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did you mean `media-storage`")
    );
    let (status, _) = broker
        .call("crm.crm_list_category_tools", json!({}), &[])
        .await;
    assert_eq!(status, 422);
    assert_untouched(&server).await;
}

#[tokio::test]
async fn find_tools_hides_legacy_and_unexposed_tools_unless_asked() {
    let (server, broker) = broker().await;
    // Raw-only scraper tools never appear; they cannot be called.
    let (_, body) = broker
        .call(
            "scraper.find_tools",
            json!({ "query": "youtube search", "limit": 50 }),
            &[],
        )
        .await;
    let names: Vec<&str> = body["data"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"youtube_search"), "{names:?}");
    // A query of stop words only finds nothing, cleanly.
    let (status, body) = broker
        .call("payments.find_tools", json!({ "query": "the a of" }), &[])
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["total"], 0);
    // An empty query is refused by the schema.
    let (status, _) = broker
        .call("payments.find_tools", json!({ "query": "" }), &[])
        .await;
    assert_eq!(status, 422);
    assert_untouched(&server).await;
}
