//! Budgets (docs/budgets.md): a priced call reserved before it is sent, settled or
//! released after; `budget_exceeded` (402) on every door; previews that show what
//! remains; whom each `applies_to` binds; `confirm_over`; idempotent retries; a
//! window's reset under an injected clock; budgets that do not compile; and two
//! brokers sharing PostgreSQL spending exactly what the budget holds.

use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{API_KEY, Setup, TestBroker, config_error, mcp_tools_call, posts};

const AGENT_KEY: (&str, &str) = ("x-agent-api-key", "ak_budget_canary_5");

/// An upstream answering every POST with `status` and a task.
async fn upstream(status: u16) -> MockServer {
    let server = MockServer::builder().start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(status).set_body_json(json!({ "task_id": "t1" })))
        .mount(&server)
        .await;
    server
}

/// `[[keys]]` entries, each key's token `token-<name>`.
fn keys(entries: &[(&str, &[&str])]) -> String {
    entries
        .iter()
        .map(|(name, roles)| {
            let roles: Vec<String> = roles.iter().map(|r| format!("\"{r}\"")).collect();
            format!(
                "\n[[keys]]\nname = \"{name}\"\nsha256 = \"{}\"\nroles = [{}]\n",
                tool_broker::catalog::identity::sha256_hex(format!("token-{name}").as_bytes()),
                roles.join(", ")
            )
        })
        .collect()
}

async fn broker(server: &MockServer, config: &str) -> TestBroker {
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(config.into());
    TestBroker::start(setup).await
}

const ENRICH: &str = "leads.leads_post_people_bulk_match";

/// The arguments of an enrichment of `n` people (1 credit each), confirmed.
fn enrich(n: usize) -> Value {
    let people: Vec<Value> = (0..n)
        .map(|i| json!({ "email": format!("p{i}@example.com") }))
        .collect();
    json!({ "body": { "details": people }, "confirm": true })
}

fn task() -> Value {
    json!({ "message": { "content": "hi" }, "confirm": true })
}

/// `agent.create_task` (1 credit) as `token-<who>` (or the test key).
async fn create(broker: &TestBroker, who: Option<&str>) -> (u16, Value) {
    let bearer = who.map_or(API_KEY.to_string(), |w| format!("token-{w}"));
    broker
        .call_as(&bearer, "agent.create_task", task(), &[AGENT_KEY])
        .await
}

/// `portal.get_budget`'s budgets for a bearer.
async fn budgets_of(broker: &TestBroker, bearer: &str) -> Value {
    let (status, body) = broker
        .call_as(bearer, "portal.get_budget", json!({}), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    body["data"]["budgets"].clone()
}

/// Waits until the caller's first budget reads `want` used: a settlement to another
/// figure than the estimate lands just after the answer (5 s at most).
async fn used_comes_to(broker: &TestBroker, bearer: &str, want: u64) {
    let mut seen = Value::Null;
    for _ in 0..250 {
        seen = budgets_of(broker, bearer).await[0]["used"].clone();
        if seen == want {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the budget reads {seen} used, never {want}");
}

const ONE_KEY_TWO_CREDITS: &str = "[[budgets]]\nname = \"daily\"\nunit = \"credits\"\nlimit = 2\nwindow = \"1d\"\napplies_to = \"each-key\"\n";

#[tokio::test]
async fn a_budget_admits_up_to_its_limit_then_refuses_with_402_on_every_door() {
    let server = upstream(200).await;
    let broker = broker(&server, ONE_KEY_TWO_CREDITS).await;
    for _ in 0..2 {
        let (status, body) = create(&broker, None).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["meta"]["cost"]["actual"], json!({ "credits": 1 }));
    }
    assert_eq!(posts(&server).await, 2);
    let (status, body) = create(&broker, None).await;
    assert_eq!(status, 402, "{body}");
    assert_eq!(
        body["meta"]["cost"],
        json!({ "estimate": { "credits": 1 }, "actual": { "credits": 0 } }),
        "a refused call says what it would cost and that it was charged nothing"
    );
    let error = &body["error"];
    assert_eq!(error["classification"], "budget_exceeded");
    let details = &error["details"];
    assert_eq!(
        (
            &details["budget"],
            &details["unit"],
            &details["limit"],
            &details["used"],
            &details["cost"]
        ),
        (
            &json!("daily"),
            &json!("credits"),
            &json!(2),
            &json!(2),
            &json!(1)
        ),
        "{body}"
    );
    let resets: jiff::Timestamp = details["resetsAt"].as_str().unwrap().parse().unwrap();
    assert!(resets > jiff::Timestamp::now(), "{body}");
    assert_eq!(
        resets.as_millisecond() % 86_400_000,
        0,
        "midnight UTC: {body}"
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("nothing was sent")
    );
    // /mcp: a tool error result with the same object.
    let (status, reply) = mcp_tools_call(
        &broker,
        json!({ "name": "agent.create_task", "arguments": task() }),
        &[AGENT_KEY],
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let envelope = &reply["result"]["structuredContent"];
    assert_eq!(envelope["error"]["classification"], "budget_exceeded");
    assert_eq!(envelope["error"]["details"]["budget"], "daily");
    // The REST door: 402.
    let bearer = format!("Bearer {API_KEY}");
    let (status, _, text) = broker
        .send(
            reqwest::Method::POST,
            "/mcp/agent/create_task",
            Some(task().to_string().into_bytes()),
            &[
                ("authorization", bearer.as_str()),
                ("content-type", "application/json"),
                AGENT_KEY,
            ],
        )
        .await;
    assert_eq!(status, 402, "{text}");
    assert!(text.contains("\"budget_exceeded\""), "{text}");
    // Nothing more went upstream; the operator's counters say so.
    assert_eq!(posts(&server).await, 2);
    let (_, _, metrics) = broker
        .send(reqwest::Method::GET, "/metrics", None, &[])
        .await;
    assert!(
        metrics.contains("tool_broker_units_spent_total{unit=\"credits\",service=\"agent\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("tool_broker_budget_refusals_total{budget=\"daily\"} 3"),
        "{metrics}"
    );
    // The write audit's cost column, and `budget list`'s reading of the store.
    let audit = crate::support::audit(&broker).await;
    let charged: Vec<_> = audit.iter().filter_map(|r| r.cost.clone()).collect();
    assert_eq!(charged.len(), 2, "{audit:?}");
    assert_eq!(charged[0].get("credits"), Some(&1));
    let spending = broker.broker.parts.store.budget_spending(0).await.unwrap();
    assert_eq!(spending.len(), 1);
    assert_eq!(
        (spending[0].units, spending[0].calls),
        (2, 2),
        "{spending:?}"
    );
    assert!(spending[0].scope.starts_with("key:"), "{spending:?}");
}

#[tokio::test]
async fn a_preview_shows_what_remains_and_spends_nothing_and_the_caller_can_read_its_budgets() {
    let server = upstream(200).await;
    let broker = broker(&server, ONE_KEY_TWO_CREDITS).await;
    let (status, body) = create(&broker, None).await;
    assert_eq!(status, 200, "{body}");
    let (status, preview) = broker
        .call(
            "agent.create_task",
            json!({ "message": { "content": "hi" } }),
            &[AGENT_KEY],
        )
        .await;
    assert_eq!(status, 200, "{preview}");
    assert_eq!(preview["meta"]["dryRun"], true);
    let room = &preview["meta"]["cost"]["budgets"][0];
    assert_eq!(
        (
            &room["name"],
            &room["used"],
            &room["remaining"],
            &room["wouldRemain"],
            &room["fits"]
        ),
        (
            &json!("daily"),
            &json!(1),
            &json!(1),
            &json!(0),
            &json!(true)
        ),
        "{preview}"
    );
    // The model's view, and the user's.
    let budgets = budgets_of(&broker, API_KEY).await;
    assert_eq!(budgets[0]["used"], 1, "{budgets}");
    assert_eq!(budgets[0]["remaining"], 1, "{budgets}");
    assert_eq!(budgets[0]["resetsAt"], room["resetsAt"]);
    let bearer = format!("Bearer {API_KEY}");
    let (status, _, text) = broker
        .send(
            reqwest::Method::GET,
            "/hub/budget",
            None,
            &[("authorization", bearer.as_str())],
        )
        .await;
    assert_eq!(status, 200, "{text}");
    let hub: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(hub["budgets"], budgets);
    let (status, _, _) = broker
        .send(reqwest::Method::GET, "/hub/budget", None, &[])
        .await;
    assert_eq!(status, 401);
    assert_eq!(posts(&server).await, 1);
}

#[tokio::test]
async fn an_upstream_refusal_releases_what_was_reserved() {
    for status in [400, 422, 500, 503] {
        let server = upstream(status).await;
        let broker = broker(&server, ONE_KEY_TWO_CREDITS).await;
        let (answered, body) = create(&broker, None).await;
        assert_ne!(answered, 200, "{body}");
        assert_eq!(
            body["meta"]["cost"]["actual"],
            json!({ "credits": 0 }),
            "{body}"
        );
        assert_eq!(posts(&server).await, 1);
        let budgets = budgets_of(&broker, API_KEY).await;
        assert_eq!(budgets[0]["used"], 0, "{status}: {budgets}");
    }
    // Nothing sent (no upstream key): nothing charged either.
    let server = upstream(200).await;
    let broker = broker(&server, ONE_KEY_TWO_CREDITS).await;
    let (status, body) = broker.call("agent.create_task", task(), &[]).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(budgets_of(&broker, API_KEY).await[0]["used"], 0);
}

#[tokio::test]
async fn a_timeout_keeps_the_estimate_since_the_upstream_may_have_done_the_work() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({}))
                .set_delay(std::time::Duration::from_secs(3)),
        )
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.sources = Some(crate::support::sources_with(&[(
        "catalog/media/slow.toml",
        crate::support::failures::SLOW_TOOL,
    )]));
    setup.config = Some(format!(
        "[[costs.cost]]\ntool = \"media.slow_job\"\nconstant = 3\n\n{}",
        ONE_KEY_TWO_CREDITS.replace("limit = 2", "limit = 5")
    ));
    let broker = TestBroker::start(setup).await;
    let media = [("x-media-api-key", "mk_budget_slow_1")];
    let (status, body) = broker.call("media.slow_job", json!({}), &media).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(
        body["meta"]["cost"],
        json!({ "estimate": { "credits": 3 }, "actual": { "credits": 3 } }),
        "{body}"
    );
    assert_eq!(budgets_of(&broker, API_KEY).await[0]["used"], 3);
    // 2 left: the next one does not fit, and nothing goes upstream.
    let (status, body) = broker.call("media.slow_job", json!({}), &media).await;
    assert_eq!(status, 402, "{body}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn budget_list_prints_what_each_caller_spent_from_the_store() {
    let server = upstream(200).await;
    let dir = tempfile::tempdir().unwrap();
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(format!("{ONE_KEY_TWO_CREDITS}{}", keys(&[("ops", &[])])));
    setup.store = Some(crate::support::sqlite_store(dir.path()).await);
    let broker = TestBroker::start(setup).await;
    for who in [None, Some("ops"), Some("ops")] {
        assert_eq!(create(&broker, who).await.0, 200);
    }
    let list = |format: tool_broker::cli::Format, since: &str| {
        let args = tool_broker::cli::StoreArgs {
            data_dir: dir.path().to_path_buf(),
            database_url: None,
        };
        let command = tool_broker::cli::BudgetCommand::List {
            since: Some(since.into()),
            format,
        };
        tokio::task::spawn_blocking(move || tool_broker::cli::budget(command, &args))
    };
    let json = list(tool_broker::cli::Format::Json, "24h")
        .await
        .unwrap()
        .unwrap();
    let rows: Vec<Value> = serde_json::from_str(&json).unwrap();
    let mut seen: Vec<(String, u64, u64)> = rows
        .iter()
        .map(|r| {
            assert_eq!(
                (&r["budget"], &r["unit"]),
                (&json!("daily"), &json!("credits"))
            );
            (
                r["scope"].as_str().unwrap().to_string(),
                r["units"].as_u64().unwrap(),
                r["calls"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(seen.len(), 2, "{json}");
    assert_eq!(
        (seen[1].0.as_str(), seen[1].1, seen[1].2),
        ("key:ops", 2, 2)
    );
    assert_eq!((seen[0].1, seen[0].2), (1, 1));
    let text = list(tool_broker::cli::Format::Text, "24h")
        .await
        .unwrap()
        .unwrap();
    assert!(
        text.contains("key:ops") && text.ends_with("2 budget window(s)\n"),
        "{text}"
    );
    // Nothing after a time still to come; a malformed age is an error saying so.
    let future = (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1)).to_string();
    let text = list(tool_broker::cli::Format::Text, &future)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text, "0 budget window(s)\n");
    let err = list(tool_broker::cli::Format::Text, "yesterday")
        .await
        .unwrap()
        .unwrap_err();
    assert!(err.contains("yesterday"), "{err}");
}

#[tokio::test]
async fn a_retry_with_the_same_idempotency_key_is_not_charged_twice() {
    let server = upstream(200).await;
    let broker = broker(&server, ONE_KEY_TWO_CREDITS).await;
    let headers = [AGENT_KEY, ("idempotency-key", "budget-retry-1")];
    for _ in 0..3 {
        let (status, body) = broker.call("agent.create_task", task(), &headers).await;
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(posts(&server).await, 1);
    assert_eq!(budgets_of(&broker, API_KEY).await[0]["used"], 1);
}

#[tokio::test]
async fn each_applies_to_binds_whom_it_names_and_all_binding_budgets_must_hold() {
    let server = upstream(200).await;
    let config = format!(
        "[[budgets]]\nname = \"support-shared\"\nunit = \"credits\"\nlimit = 2\nwindow = \"1h\"\napplies_to = \"role:support\"\nshared = true\n\
         [[budgets]]\nname = \"sales-each\"\nunit = \"credits\"\nlimit = 1\nwindow = \"1h\"\napplies_to = \"role:sales\"\n\
         [[budgets]]\nname = \"carol-only\"\nunit = \"credits\"\nlimit = 1\nwindow = \"7d\"\napplies_to = \"key:carol\"\n\
         [[budgets]]\nname = \"every-key\"\nunit = \"credits\"\nlimit = 3\nwindow = \"30d\"\napplies_to = \"each-key\"\n{}",
        keys(&[
            ("ann", &["support"]),
            ("bob", &["support", "sales"]),
            ("carol", &[]),
            ("dave", &["sales"]),
            ("erin", &[]),
        ])
    );
    let broker = broker(&server, &config).await;
    let code = |r: (u16, Value)| (r.0, r.1["error"]["details"]["budget"].clone());
    // Support shares 2: ann spends one, bob one (and one of his own sales 1).
    assert_eq!(create(&broker, Some("ann")).await.0, 200);
    assert_eq!(create(&broker, Some("bob")).await.0, 200);
    assert_eq!(
        code(create(&broker, Some("ann")).await),
        (402, json!("support-shared"))
    );
    // dave's sales budget is his own: bob's spending leaves it whole.
    assert_eq!(create(&broker, Some("dave")).await.0, 200);
    assert_eq!(
        code(create(&broker, Some("dave")).await),
        (402, json!("sales-each"))
    );
    // carol's own budget, though every key may spend 3.
    assert_eq!(create(&broker, Some("carol")).await.0, 200);
    assert_eq!(
        code(create(&broker, Some("carol")).await),
        (402, json!("carol-only"))
    );
    // erin: only the each-key budget.
    for _ in 0..3 {
        assert_eq!(create(&broker, Some("erin")).await.0, 200);
    }
    assert_eq!(
        code(create(&broker, Some("erin")).await),
        (402, json!("every-key"))
    );
    // A refusal charged nothing anywhere: ann's each-key budget counts her one call.
    let ann = budgets_of(&broker, "token-ann").await;
    let names: Vec<_> = ann
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].clone())
        .collect();
    assert_eq!(names, [json!("support-shared"), json!("every-key")]);
    assert_eq!(ann[1]["used"], 1, "{ann}");
}

#[tokio::test]
async fn user_budgets_bind_users_and_not_keys() {
    let idp = crate::support::idp::Idp::start().await;
    let server = upstream(200).await;
    let subject_budget = format!(
        "[[budgets]]\nname = \"each-user\"\nunit = \"credits\"\nlimit = 2\nwindow = \"1d\"\napplies_to = \"each-user\"\n\
         [[budgets]]\nname = \"just-sam\"\nunit = \"credits\"\nlimit = 1\nwindow = \"1d\"\napplies_to = \"user:{}#sam\"\n",
        idp.issuer
    );
    let broker = broker(&server, &idp.config(&subject_budget)).await;
    let sam = idp.token("sam", "tools:read tools:write");
    let kim = idp.token("kim", "tools:read tools:write");
    let call = |bearer: String| {
        let broker = &broker;
        async move {
            broker
                .call_as(&bearer, "agent.create_task", task(), &[AGENT_KEY])
                .await
        }
    };
    assert_eq!(call(sam.clone()).await.0, 200);
    let (status, body) = call(sam.clone()).await;
    assert_eq!(
        (status, &body["error"]["details"]["budget"]),
        (402, &json!("just-sam"))
    );
    for _ in 0..2 {
        assert_eq!(call(kim.clone()).await.0, 200);
    }
    let (status, body) = call(kim.clone()).await;
    assert_eq!(
        (status, &body["error"]["details"]["budget"]),
        (402, &json!("each-user"))
    );
    // A key is bound by neither.
    for _ in 0..3 {
        assert_eq!(create(&broker, None).await.0, 200);
    }
    let budgets = budgets_of(&broker, &sam).await;
    assert_eq!(budgets.as_array().unwrap().len(), 2, "{budgets}");
}

static NOW_MS: AtomicI64 = AtomicI64::new(0);

fn pinned_now() -> jiff::Timestamp {
    jiff::Timestamp::from_millisecond(NOW_MS.load(Ordering::SeqCst)).unwrap()
}

#[tokio::test]
async fn a_window_resets_at_its_boundary() {
    let at = |t: &str| t.parse::<jiff::Timestamp>().unwrap().as_millisecond();
    NOW_MS.store(at("2026-11-26T23:59:58Z"), Ordering::SeqCst);
    let server = upstream(200).await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(ONE_KEY_TWO_CREDITS.into());
    setup.clock = Some(pinned_now);
    let broker = TestBroker::start(setup).await;
    for _ in 0..2 {
        assert_eq!(create(&broker, None).await.0, 200);
    }
    let (status, body) = create(&broker, None).await;
    assert_eq!(status, 402, "{body}");
    assert_eq!(body["error"]["details"]["resetsAt"], "2026-11-27T00:00:00Z");
    NOW_MS.store(at("2026-11-27T00:00:00Z"), Ordering::SeqCst);
    let (status, body) = create(&broker, None).await;
    assert_eq!(status, 200, "{body}");
    let budgets = budgets_of(&broker, API_KEY).await;
    assert_eq!(
        (&budgets[0]["used"], &budgets[0]["resetsAt"]),
        (&json!(1), &json!("2026-11-28T00:00:00Z"))
    );
}

#[tokio::test]
async fn a_call_over_confirm_over_needs_a_bound_confirmation() {
    let server = MockServer::builder().start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "credits_consumed": 3, "matches": [] })),
        )
        .mount(&server)
        .await;
    let broker = broker(
        &server,
        "[[budgets]]\nname = \"enrich\"\nunit = \"credits\"\nlimit = 100\nwindow = \"1d\"\napplies_to = \"each-key\"\nconfirm_over = 2\n",
    )
    .await;
    let key = [("x-leads-api-key", "lk_budget_1")];
    // Two people: under the line, it runs as it is.
    let (status, body) = broker.call(ENRICH, enrich(2), &key).await;
    assert_eq!(
        (status, &body["meta"]["dryRun"]),
        (200, &json!(false)),
        "{body}"
    );
    assert_eq!(posts(&server).await, 1);
    // Three: the preview and a token bound to this very call, nothing sent.
    let args = enrich(3);
    let (status, body) = broker.call(ENRICH, args.clone(), &key).await;
    assert_eq!(
        (status, &body["meta"]["dryRun"]),
        (200, &json!(true)),
        "{body}"
    );
    let token = body["data"]["confirmationToken"]
        .as_str()
        .unwrap_or_else(|| panic!("no token: {body}"))
        .to_string();
    assert_eq!(posts(&server).await, 1);
    let mut confirmed = args;
    confirmed["confirmationToken"] = json!(token);
    let (status, body) = broker.call(ENRICH, confirmed, &key).await;
    assert_eq!(
        (status, &body["meta"]["dryRun"]),
        (200, &json!(false)),
        "{body}"
    );
    assert_eq!(posts(&server).await, 2);
    // Each settled to the answer's figure (3), whatever its estimate: after the
    // answer, off the call's path.
    used_comes_to(&broker, API_KEY, 6).await;
}

#[tokio::test]
async fn a_call_its_price_cannot_price_in_the_budgets_unit_is_refused() {
    let server = upstream(200).await;
    let broker = broker(
        &server,
        "[costs]\nunits = [\"usd_cents\"]\n[[costs.cost]]\ntool = \"payments.post_refunds\"\nunit = \"usd_cents\"\namount = \"/amount\"\ncurrency = { argument = \"/currency\", equals = \"usd\" }\n\
         [[budgets]]\nname = \"refunds\"\nunit = \"usd_cents\"\nlimit = 5000\nwindow = \"1d\"\napplies_to = \"each-key\"\n",
    )
    .await;
    let key = [("x-payments-api-key", "pk_budget_1")];
    let refund = |amount: u64, currency: &str| json!({ "charge": "ch_1", "amount": amount, "currency": currency, "confirm": true });
    let (status, body) = broker
        .call("payments.post_refunds", refund(4000, "usd"), &key)
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = broker
        .call("payments.post_refunds", refund(2000, "usd"), &key)
        .await;
    assert_eq!(status, 402, "{body}");
    assert_eq!(body["error"]["details"]["used"], 4000);
    let (status, body) = broker
        .call("payments.post_refunds", refund(10, "eur"), &key)
        .await;
    assert_eq!(status, 402, "{body}");
    assert_eq!(body["error"]["details"]["cost"], Value::Null, "{body}");
    assert_eq!(posts(&server).await, 1);
}

/// `context.cost`, typed in the schema with every unit, in a rule.
#[tokio::test]
async fn a_policy_reads_the_calls_estimated_cost() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cost.cedar"),
        "@id(\"all\")\npermit(principal, action, resource);\n\
         @id(\"small-enrichments\")\nforbid(principal, action == Action::\"leads.leads_post_people_bulk_match\", resource)\n\
         when { context.cost has credits && context.cost.credits > 2 };\n",
    )
    .unwrap();
    let server = upstream(200).await;
    let broker = broker(
        &server,
        &format!("[policy]\ndir = \"{}\"\n", dir.path().display()),
    )
    .await;
    let key = [("x-leads-api-key", "lk_budget_2")];
    let (status, body) = broker.call(ENRICH, enrich(2), &key).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = broker.call(ENRICH, enrich(3), &key).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["error"]["details"]["policies"],
        json!(["small-enrichments"]),
        "{body}"
    );
    // A unit the catalog does not price in is no attribute: strict validation refuses it.
    std::fs::write(
        dir.path().join("cost.cedar"),
        "permit(principal, action, resource) when { context.cost.euros > 1 };\n",
    )
    .unwrap();
    let err = config_error(&format!("[policy]\ndir = \"{}\"\n", dir.path().display())).await;
    assert!(err.contains("cost.cedar:1"), "{err}");
}

#[tokio::test]
async fn budgets_that_do_not_compile_stop_the_broker_with_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broker.toml");
    std::fs::write(
        &file,
        "toolset = \"all\"\n\n[[budgets]]\nname = \"a\"\nunit = \"credit\"\nlimit = 1\nwindow = \"1w\"\napplies_to = \"everyone\"\n\n\
         [[budgets]]\nname = \"b c\"\nunit = \"credits\"\nlimit = 1\nwindow = \"1d\"\napplies_to = \"each-key\"\nshared = true\n",
    )
    .unwrap();
    let config = tool_broker::config::ConfigFile::load(&file).unwrap();
    let store = tool_broker::store::Store::open(&tool_broker::store::StoreConfig::Memory)
        .await
        .unwrap();
    let catalog = crate::support::embedded_catalog();
    let Err(err) = tool_broker::call::Broker::new(catalog, &config, &|_| None, store) else {
        panic!("the config was accepted");
    };
    let at = file.display().to_string();
    for wanted in [
        format!("{at}:3: budget `a`: unit `credit` is not one the costs name (credits)"),
        format!("{at}:3: budget `a`: window `1w` is not one of 1h, 1d, 7d, 30d"),
        format!("{at}:3: budget `a`: applies_to `everyone` is not one of"),
        format!("{at}:10: budget `b c`: `name` must be letters, digits"),
        format!("{at}:10: budget `b c`: `shared = true` is only for"),
    ] {
        assert!(err.contains(&wanted), "{wanted}\nin\n{err}");
    }
    // Through the test harness too (no file: the config named as such).
    let err = config_error("[[budgets]]\nname = \"x\"\nunit = \"credits\"\nlimit = 1\nwindow = \"2d\"\napplies_to = \"each-user\"\n").await;
    assert!(err.contains("window `2d`"), "{err}");
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set TOOL_BROKER_TEST_DATABASE_URL and run with --ignored (.ci/run does)"]
async fn fifty_concurrent_calls_on_two_replicas_spend_exactly_what_the_budget_holds() {
    use tool_broker::store::Store;
    let server = upstream(200).await;
    let config = crate::support::store::postgres("budgets");
    let (one, two) = tokio::join!(Store::open(&config), Store::open(&config));
    let replica = |store: Store| {
        let mut setup = Setup::all_upstreams(&server.uri());
        setup.config = Some(
            "[[budgets]]\nname = \"ten\"\nunit = \"credits\"\nlimit = 10\nwindow = \"1d\"\napplies_to = \"each-key\"\n"
                .into(),
        );
        setup.store = Some(store);
        setup.workers = Some(2);
        TestBroker::start(setup)
    };
    let one = replica(one.unwrap()).await;
    let two = replica(two.unwrap()).await;
    let calls = (0..50).map(|i| {
        let broker = if i % 2 == 0 { &one } else { &two };
        create(broker, None)
    });
    let answers = futures_util::future::join_all(calls).await;
    let mut statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    statuses.sort_unstable();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        10,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 402).count(),
        40,
        "{statuses:?}"
    );
    assert_eq!(posts(&server).await, 10);
    assert_eq!(budgets_of(&two, API_KEY).await[0]["used"], 10);
}
