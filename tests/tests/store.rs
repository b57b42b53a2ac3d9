//! The durable store (engine/store/src/store/): one suite, run on SQLite everywhere and on
//! PostgreSQL when `TOOL_BROKER_TEST_DATABASE_URL` is set. The PostgreSQL tests are
//! `#[ignore]`d, so without a database they show as ignored, never as passed; `.ci/run`
//! runs them against a real server with `--ignored`. Each PostgreSQL test works in a
//! schema of its own.

use serde_json::json;
use tool_broker::store::audit::{AuditQuery, AuditRecord, Outcome};
use tool_broker::store::ratelimit::Count;
use tool_broker::store::{Store, StoreConfig};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::store::postgres;
use crate::support::{Setup, TestBroker};

fn ts(text: &str) -> jiff::Timestamp {
    text.parse().unwrap()
}

fn record(tool: &str, outcome: Outcome, at: &str) -> AuditRecord {
    AuditRecord {
        seq: 0,
        at: at.into(),
        key_name: "agent-key".into(),
        tool: tool.into(),
        descriptor_hash: "ab".repeat(32),
        catalog_version: "2026-11-22.1".into(),
        args_sha256: "cd".repeat(32),
        outcome,
        upstream_status: (outcome == Outcome::Executed).then_some(201),
        classification: if outcome == Outcome::Executed {
            "ok"
        } else {
            "confirmation_required"
        }
        .into(),
        trace_id: "0123456789abcdef-r1".into(),
        duration_ms: 12,
        confirmation: Some("flag".into()),
        guards: (outcome == Outcome::Refused).then(|| vec!["card".into(), "iban".into()]),
        policies: None,
        cost: None,
    }
}

/// Everything one backend must do, against two handles on one database (two replicas).
#[expect(
    clippy::too_many_lines,
    reason = "the store's whole contract, run once per backend so both answer to the same list"
)]
async fn suite(config: &StoreConfig) {
    // Two replicas starting together both migrate cleanly.
    let (a, b) = tokio::join!(Store::open(config), Store::open(config));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.ping().await && b.ping().await);
    // Opening again is a no-op.
    let again = Store::open(config).await.unwrap();
    assert_eq!(again.kind(), a.kind());

    // Jobs: recorded on one replica, listed on the other; owners apart; a redelivered
    // record is not a second job; status noted.
    a.record_job(
        "imagegen",
        "k:aaaa",
        "g1",
        "create_generation",
        ts("2026-11-23T00:00:00Z"),
    )
    .await
    .unwrap();
    a.record_job(
        "imagegen",
        "k:aaaa",
        "g2",
        "create_generation",
        ts("2026-11-23T00:01:00Z"),
    )
    .await
    .unwrap();
    a.record_job(
        "imagegen",
        "k:aaaa",
        "g1",
        "create_generation",
        ts("2026-11-23T00:02:00Z"),
    )
    .await
    .unwrap();
    a.record_job(
        "imagegen",
        "k:bbbb",
        "g3",
        "create_generation",
        ts("2026-11-23T00:03:00Z"),
    )
    .await
    .unwrap();
    b.update_job(
        "imagegen",
        "k:aaaa",
        "g1",
        "COMPLETE",
        ts("2026-11-23T00:04:00Z"),
    )
    .await
    .unwrap();
    b.update_job(
        "imagegen",
        "k:aaaa",
        "g3",
        "HIJACKED",
        ts("2026-11-23T00:04:00Z"),
    )
    .await
    .unwrap();
    let mine = b.list_jobs("imagegen", "k:aaaa").await.unwrap();
    let ids: Vec<&str> = mine.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["g2", "g1"], "newest first, once each");
    assert_eq!(mine[1].status.as_deref(), Some("COMPLETE"));
    assert_eq!(mine[1].submitted_at, "2026-11-23T00:00:00Z");
    let theirs = a.list_jobs("imagegen", "k:bbbb").await.unwrap();
    assert_eq!(theirs[0].status, None, "another owner's job is untouched");
    assert!(a.list_jobs("agent", "k:aaaa").await.unwrap().is_empty());

    // Rate limits: 25 concurrent requests over both replicas, limit 10: exactly 10 pass.
    let now = 1_800_000_000_000_i64;
    let mut handles = Vec::new();
    for i in 0..25 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        handles.push(tokio::spawn(async move {
            store
                .count_request("hosting.check\u{1f}k:aaaa", 10, 60_000, now + i)
                .await
                .unwrap()
        }));
    }
    let mut allowed = 0;
    for h in handles {
        if h.await.unwrap() == Count::Allowed {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 10);
    match b
        .count_request("hosting.check\u{1f}k:aaaa", 10, 60_000, now + 30_000)
        .await
        .unwrap()
    {
        // The oldest counted request is one of now..now+24, whichever got there first.
        Count::Refused { retry_after_ms } => assert!(
            (30_000..=30_025).contains(&retry_after_ms),
            "{retry_after_ms}"
        ),
        Count::Allowed => panic!("the 26th request passed"),
    }
    // Another caller has its own window; the window slides.
    assert_eq!(
        a.count_request("hosting.check\u{1f}k:bbbb", 10, 60_000, now)
            .await
            .unwrap(),
        Count::Allowed
    );
    assert_eq!(
        a.count_request("hosting.check\u{1f}k:aaaa", 10, 60_000, now + 61_000)
            .await
            .unwrap(),
        Count::Allowed
    );

    // The audit: appended on both, read back oldest first, filtered by time and tool.
    a.append_audit(&record(
        "crm.contacts_create_contact",
        Outcome::Executed,
        "2026-11-23T01:00:00Z",
    ))
    .await
    .unwrap();
    b.append_audit(&record(
        "crm.contacts_delete_contact",
        Outcome::Refused,
        "2026-11-23T02:00:00Z",
    ))
    .await
    .unwrap();
    a.append_audit(&record(
        "crm.contacts_create_contact",
        Outcome::Executed,
        "2026-11-23T03:00:00Z",
    ))
    .await
    .unwrap();
    let all = b
        .list_audit(&AuditQuery {
            limit: 100,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 3);
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(all[1].outcome, Outcome::Refused);
    assert_eq!(all[1].upstream_status, None);
    assert_eq!(all[1].guards, Some(vec!["card".into(), "iban".into()]));
    assert_eq!(all[0].guards, None);
    assert_eq!(all[0].upstream_status, Some(201));
    let later = a
        .list_audit(&AuditQuery {
            since: Some(ts("2026-11-23T01:30:00Z")),
            limit: 100,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(later.len(), 2);
    let creates = a
        .list_audit(&AuditQuery {
            tool: Some("crm.contacts_create_contact".into()),
            limit: 1,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(creates.len(), 1, "the newest one");
    assert_eq!(creates[0].at, "2026-11-23T03:00:00Z");

    // Approvals: asked on one replica, decided once (on either), used once, never after
    // their expiry; a declined one is never used.
    use tool_broker::store::approvals::{Approval, ApprovalState};
    let approval = |id: &str, expires_ms: i64| Approval {
        id: id.into(),
        caller: "k:aaaa".into(),
        key_name: "support-agent".into(),
        tool: "payments.post_customers".into(),
        descriptor_hash: "h".repeat(64),
        args_sha256: "a".repeat(64),
        // A tool that runs others binds its plan too (decision 017).
        plan_sha256: (id == "ap2").then(|| "p".repeat(64)),
        preview: r#"{"method":"POST","path":"/v1/customers"}"#.into(),
        state: ApprovalState::Pending,
        approver: None,
        created_ms: 1_000,
        expires_ms,
    };
    a.create_approval(&approval("ap1", 10_000)).await.unwrap();
    a.create_approval(&approval("ap2", 10_000)).await.unwrap();
    a.create_approval(&approval("ap3", 5_000)).await.unwrap();
    assert_eq!(
        b.approval("ap2").await.unwrap().unwrap().plan_sha256,
        Some("p".repeat(64))
    );
    assert_eq!(b.approval("ap1").await.unwrap().unwrap().plan_sha256, None);
    assert!(
        a.create_approval(&approval("ap1", 10_000)).await.is_err(),
        "ids are unique"
    );
    assert_eq!(
        b.approval("ap1").await.unwrap(),
        Some(approval("ap1", 10_000))
    );
    assert_eq!(b.approval("nope").await.unwrap(), None);
    assert!(
        !a.use_approval("ap1", 2_000).await.unwrap(),
        "pending: not usable"
    );
    let (x, y) = tokio::join!(
        a.decide_approval("ap1", "alice", true, 2_000),
        b.decide_approval("ap1", "bob", false, 2_000)
    );
    assert!(x.unwrap() ^ y.unwrap(), "decided once");
    let decided = a.approval("ap1").await.unwrap().unwrap();
    if decided.state == ApprovalState::Approved {
        assert_eq!(decided.approver.as_deref(), Some("alice"));
        assert!(!a.use_approval("ap1", 10_000).await.unwrap(), "expired");
        let (x, y) = tokio::join!(a.use_approval("ap1", 3_000), b.use_approval("ap1", 3_000));
        assert!(x.unwrap() ^ y.unwrap(), "used once");
        assert_eq!(
            a.approval("ap1").await.unwrap().unwrap().state,
            ApprovalState::Used
        );
    } else {
        assert_eq!(decided.state, ApprovalState::Declined);
        assert!(
            !a.use_approval("ap1", 3_000).await.unwrap(),
            "declined: never used"
        );
    }
    assert!(
        b.decide_approval("ap2", "alice", false, 2_000)
            .await
            .unwrap()
    );
    assert!(!a.use_approval("ap2", 3_000).await.unwrap());
    assert!(
        !a.decide_approval("ap3", "alice", true, 5_000)
            .await
            .unwrap(),
        "expired"
    );
    assert_eq!(
        a.approval("ap3").await.unwrap().unwrap().state,
        ApprovalState::Pending
    );

    // Tasks: durable at creation, settled once from working (a cancel and a finish
    // racing on two replicas), the heartbeat stops once settled, expired ones are gone.
    use tool_broker::store::tasks::StoredTask;
    let task = |id: &str| StoredTask {
        id: id.into(),
        owner: "k:aaaa".into(),
        tool: "imagegen.generate_image_and_wait".into(),
        status: "working".into(),
        result: None,
        created_ms: 1_000,
        updated_ms: 1_000,
        heartbeat_ms: 1_000,
        expires_ms: 100_000,
    };
    a.create_task(&task("t1")).await.unwrap();
    a.create_task(&task("t2")).await.unwrap();
    assert!(a.create_task(&task("t1")).await.is_err(), "ids are unique");
    assert_eq!(b.task("t1", 2_000).await.unwrap(), Some(task("t1")));
    assert!(b.task_heartbeat("t1", 3_000).await.unwrap());
    assert_eq!(
        a.task("t1", 3_000).await.unwrap().unwrap().heartbeat_ms,
        3_000
    );
    let (x, y) = tokio::join!(
        a.settle_task("t1", "completed", Some(r#"{"isError":false}"#), 4_000),
        b.settle_task("t1", "cancelled", None, 4_000)
    );
    assert!(x.unwrap() ^ y.unwrap(), "settled once");
    let settled = b.task("t1", 5_000).await.unwrap().unwrap();
    assert!(matches!(settled.status.as_str(), "completed" | "cancelled"));
    assert_eq!(settled.updated_ms, 4_000);
    assert!(
        !a.task_heartbeat("t1", 6_000).await.unwrap(),
        "settled: no heartbeat"
    );
    assert_eq!(a.task("t2", 100_000).await.unwrap(), None, "expired");
    assert_eq!(b.prune_tasks(100_001).await.unwrap(), 2);

    // Spent token ids: once; pruned after their expiry.
    assert!(a.spend_token("tok-1", 1_000).await.unwrap());
    assert!(
        !b.spend_token("tok-1", 1_000).await.unwrap(),
        "spent on the other replica"
    );
    assert!(a.spend_token("tok-2", 9_000).await.unwrap());
    assert_eq!(b.prune_spent_tokens(5_000).await.unwrap(), 1);
    assert!(
        !a.spend_token("tok-2", 9_000).await.unwrap(),
        "not yet expired: kept"
    );

    // Sessions: started on one replica, found on the other; touched at most once a
    // minute; ended by idle time, lifetime, sign-out or a caller's revoke.
    use tool_broker::store::sessions::SessionRow;
    let session = |id: &str, caller: &str, at: i64| SessionRow {
        id_sha256: id.into(),
        kind: "hub".into(),
        caller: caller.into(),
        claims: "{}".into(),
        created_ms: at,
        seen_ms: at,
        expires_ms: at + 8 * 3_600_000,
    };
    let idle = 30 * 60_000;
    a.start_session(&session("s1", "iss#u1", 0)).await.unwrap();
    a.start_session(&session("s2", "iss#u1", 0)).await.unwrap();
    a.start_session(&session("s3", "iss#u2", 0)).await.unwrap();
    assert_eq!(
        b.session("s1", "hub", 10_000, idle)
            .await
            .unwrap()
            .unwrap()
            .seen_ms,
        0
    );
    assert_eq!(
        b.session("s1", "approver", 10_000, idle).await.unwrap(),
        None,
        "of another kind"
    );
    let touched = b
        .session("s1", "hub", 20 * 60_000, idle)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(touched.caller, "iss#u1");
    assert_eq!(
        a.session("s1", "hub", 40 * 60_000, idle)
            .await
            .unwrap()
            .unwrap()
            .seen_ms,
        20 * 60_000,
        "the use at 20 minutes was written"
    );
    assert_eq!(
        a.session("s2", "hub", 40 * 60_000, idle).await.unwrap(),
        None,
        "idle"
    );
    assert_eq!(a.list_sessions(40 * 60_000, 10).await.unwrap().len(), 2);
    assert_eq!(b.end_sessions_of("iss#u1").await.unwrap(), 1);
    assert_eq!(
        a.session("s1", "hub", 41 * 60_000, idle).await.unwrap(),
        None,
        "revoked"
    );
    assert!(a.end_session("s3").await.unwrap());
    assert!(!b.end_session("s3").await.unwrap(), "already ended");
    a.start_session(&session("s4", "iss#u3", 0)).await.unwrap();
    assert_eq!(
        b.session("s4", "hub", 8 * 3_600_000, i64::MAX / 2)
            .await
            .unwrap(),
        None,
        "past its lifetime"
    );

    // Budgets: a reservation under two budgets, all or none; settled to the actual,
    // released, a hold reserved twice charged once; read on the other replica.
    use tool_broker::store::budgets::{Charge, Reserved};
    let charge = |budget: &'static str, limit| Charge {
        budget,
        scope: "key:k",
        window_ms: 1_000,
        limit,
        unit: "credits",
    };
    let both = [charge("small", 5), charge("large", 100)];
    let (tool, at) = ("agent.create_task", 1_500);
    assert_eq!(
        a.reserve_budgets("h1", &both, 3, tool, at).await.unwrap(),
        Reserved::Held
    );
    assert_eq!(
        b.reserve_budgets("h1", &both, 3, tool, at).await.unwrap(),
        Reserved::Held,
        "the same hold again"
    );
    assert_eq!(b.budget_used("small", "key:k", 1_000).await.unwrap(), 3);
    assert_eq!(
        b.reserve_budgets("h2", &both, 3, tool, at).await.unwrap(),
        Reserved::Over { index: 0, used: 3 }
    );
    assert_eq!(
        a.budget_used("large", "key:k", 1_000).await.unwrap(),
        3,
        "nothing charged to the large one either"
    );
    a.settle_budgets("h1", 3, 1).await.unwrap();
    a.settle_budgets("h1", 3, 1).await.unwrap();
    assert_eq!(b.budget_used("small", "key:k", 1_000).await.unwrap(), 1);
    assert_eq!(
        b.reserve_budgets("h3", &both, 4, tool, at).await.unwrap(),
        Reserved::Held
    );
    assert_eq!(b.budget_used("large", "key:k", 1_000).await.unwrap(), 5);
    a.release_budgets("h3", 4).await.unwrap();
    a.release_budgets("h1", 3).await.unwrap();
    assert_eq!(
        (
            b.budget_used("small", "key:k", 1_000).await.unwrap(),
            b.budget_used("large", "key:k", 1_000).await.unwrap()
        ),
        (1, 1),
        "a released hold gives back; a settled one is kept"
    );
    assert_eq!(b.budget_used("small", "key:k", 2_000).await.unwrap(), 0);
    let spending = a.budget_spending(0).await.unwrap();
    assert_eq!(spending.len(), 2, "{spending:?}");
    assert!(spending.iter().all(|s| s.units == 1 && s.calls == 1));
    // Pruning the history: the charges before the cutoff, and the totals of windows
    // that ended before it (no window is longer than 30 days); a later window stays.
    let day = 86_400_000_i64;
    let late = Charge {
        window_ms: 100 * day,
        ..charge("small", 5)
    };
    assert_eq!(
        a.reserve_budgets("h4", &[late], 2, "agent.create_task", 100 * day + 5)
            .await
            .unwrap(),
        Reserved::Held
    );
    assert_eq!(
        a.prune_budgets(10 * day).await.unwrap(),
        2,
        "the two charges of h1; its windows may still be open at day 10"
    );
    assert_eq!(b.budget_used("small", "key:k", 1_000).await.unwrap(), 1);
    assert_eq!(
        b.prune_budgets(90 * day).await.unwrap(),
        2,
        "the two windows, ended long before day 90"
    );
    assert_eq!(b.budget_used("small", "key:k", 1_000).await.unwrap(), 0);
    assert_eq!(a.budget_used("small", "key:k", 100 * day).await.unwrap(), 2);
    let spending = a.budget_spending(0).await.unwrap();
    assert_eq!(
        spending
            .iter()
            .map(|s| (s.window_ms, s.units))
            .collect::<Vec<_>>(),
        [(100 * day, 2)]
    );
}

#[tokio::test]
async fn the_store_suite_passes_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig::Sqlite(dir.path().join("data"));
    suite(&config).await;
    // The audit refuses to change, even to someone holding the file.
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        dir.path()
            .join("data")
            .join(tool_broker::store::SQLITE_FILE)
            .display()
    ))
    .await
    .unwrap();
    for sql in ["UPDATE audit SET outcome = 'executed'", "DELETE FROM audit"] {
        let err = sqlx::query(sql).execute(&pool).await.unwrap_err();
        assert!(err.to_string().contains("append-only"), "{sql}: {err}");
    }
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM audit")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(count, 3);
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set TOOL_BROKER_TEST_DATABASE_URL and run with --ignored (.ci/run does)"]
async fn the_store_suite_passes_on_postgres() {
    let config = postgres("suite");
    suite(&config).await;
    let StoreConfig::Postgres {
        url,
        schema: Some(schema),
    } = &config
    else {
        unreachable!()
    };
    let pool = sqlx::PgPool::connect(url).await.unwrap();
    for sql in [
        "UPDATE {s}.audit SET outcome = 'executed'",
        "DELETE FROM {s}.audit",
    ] {
        let sql = sql.replace("{s}", schema);
        let err = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .execute(&pool)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("append-only"), "{sql}: {err}");
    }
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(&pool)
        .await
        .unwrap();
}

/// A broker whose imagegen upstream answers a generation, and whose hosting upstream
/// answers availability, on a given store.
async fn broker_on(server: &MockServer, store: Store) -> TestBroker {
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.store = Some(store);
    setup.config = Some("[webhook_secrets.imagegen]\nenv = \"IMAGEGEN_WEBHOOK_SECRET\"\n".into());
    setup
        .env
        .insert("IMAGEGEN_WEBHOOK_SECRET".into(), WEBHOOK_SECRET.into());
    TestBroker::start(setup).await
}

const WEBHOOK_SECRET: &str = "whsec_replica_canary_8";

async fn mount(server: &MockServer) {
    Mock::given(method("POST"))
        .and(path("/generations"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "sdGenerationJob": { "generationId": "g-restart-1", "apiCreditCost": 2 } }),
        ))
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/customers"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "id": "cus_1", "object": "customer" }))
                .set_delay(std::time::Duration::from_millis(200)),
        )
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/domains/v1/availability"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!([{ "domain": "a.com", "is_available": true }])),
        )
        .mount(server)
        .await;
}

const IMAGEGEN_KEY: (&str, &str) = ("x-imagegen-api-key", "ik_store_canary_key_77");

#[tokio::test]
async fn a_restart_on_the_same_data_folder_loses_no_job_and_the_audit_is_kept() {
    let server = MockServer::start().await;
    mount(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig::Sqlite(dir.path().join("data"));
    {
        let broker = broker_on(&server, Store::open(&config).await.unwrap()).await;
        let (status, body) = broker
            .call(
                "imagegen.create_generation",
                json!({ "prompt": "argument-canary-lighthouse", "confirm": true }),
                &[IMAGEGEN_KEY],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        // A preview (no confirmation: spend tools answer a dry run) is not a write; a
        // refused write (the upstream key missing) is audited; a read is not.
        let (status, body) = broker
            .call(
                "imagegen.create_generation",
                json!({ "prompt": "argument-canary-lighthouse" }),
                &[IMAGEGEN_KEY],
            )
            .await;
        assert_eq!(
            (status, &body["data"]["dryRun"]),
            (200, &json!(true)),
            "{body}"
        );
        let (status, _) = broker
            .call(
                "imagegen.create_generation",
                json!({ "prompt": "argument-canary-lighthouse", "confirm": true }),
                &[],
            )
            .await;
        assert_eq!(status, 401);
        broker
            .call("imagegen.list_generation_jobs", json!({}), &[IMAGEGEN_KEY])
            .await;
    }
    // The process is gone; a new one opens the same folder.
    let broker = broker_on(&server, Store::open(&config).await.unwrap()).await;
    let (status, body) = broker
        .call("imagegen.list_generation_jobs", json!({}), &[IMAGEGEN_KEY])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["jobs"][0]["id"], "g-restart-1", "{body}");
    assert_eq!(body["data"]["jobs"][0]["tool"], "create_generation");

    // `tool-broker audit list` reads what the broker wrote: one executed, one refused.
    let args = tool_broker::cli::StoreArgs {
        data_dir: dir.path().join("data"),
        database_url: None,
    };
    let out = tool_broker::cli::audit_list(
        tool_broker::cli::AuditCommand::List {
            since: Some("1h".into()),
            tool: Some("imagegen.create_generation".into()),
            limit: 10,
            format: tool_broker::cli::Format::Json,
        },
        &args,
    )
    .await
    .unwrap();
    let records: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    let outcomes: Vec<&str> = records
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["executed", "refused"], "{out}");
    assert_eq!(records[0]["upstreamStatus"], 200);
    assert_eq!(records[1]["classification"], "missing_required_credentials");
    assert_eq!(records[0]["keyName"], "env:TOOL_BROKER_API_KEY");
    assert_eq!(records[0]["argsSha256"].as_str().unwrap().len(), 64);
    // The hash is the sha256 of the canonical arguments (sorted keys, no spaces): an
    // auditor holding the arguments can prove which call a record is.
    let canonical = r#"{"confirm":true,"prompt":"argument-canary-lighthouse"}"#;
    let expected: String = {
        use sha2::Digest;
        sha2::Sha256::digest(canonical.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    assert_eq!(records[0]["argsSha256"], expected.as_str());
    assert_eq!(
        records[1]["argsSha256"],
        expected.as_str(),
        "same arguments, same hash"
    );
    // The text form: one line a record, with how the write was confirmed.
    let text = tool_broker::cli::audit_list(
        tool_broker::cli::AuditCommand::List {
            since: Some("1h".into()),
            tool: Some("imagegen.create_generation".into()),
            limit: 10,
            format: tool_broker::cli::Format::Text,
        },
        &args,
    )
    .await
    .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let first: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(&first[2..5], ["executed", "flag", "ok"], "{text}");
    assert!(lines[0].contains("imagegen.create_generation") && lines[0].contains(&expected[..16]));
    assert!(lines[1].contains("refused") && lines[1].contains("missing_required_credentials"));
    assert_eq!(lines[2], "2 records");

    // No key, bearer or argument value reached the store's files (WAL included).
    drop(broker);
    let text = crate::support::folder_text(&dir.path().join("data"));
    assert!(text.contains("g-restart-1"), "the job is in the file");
    for secret in [
        IMAGEGEN_KEY.1,
        crate::support::API_KEY,
        "argument-canary-lighthouse",
    ] {
        assert!(!text.contains(secret), "`{secret}` is in the store's files");
    }
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set TOOL_BROKER_TEST_DATABASE_URL and run with --ignored (.ci/run does)"]
async fn two_replicas_on_one_postgres_share_jobs_and_limits() {
    let server = MockServer::start().await;
    mount(&server).await;
    let config = postgres("replicas");
    let (one, two) = tokio::join!(Store::open(&config), Store::open(&config));
    let one = broker_on(&server, one.unwrap()).await;
    let two = broker_on(&server, two.unwrap()).await;
    // A job submitted on one is listed on the other.
    let (status, body) = one
        .call(
            "imagegen.create_generation",
            json!({ "prompt": "a lighthouse", "confirm": true }),
            &[IMAGEGEN_KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, listed) = two
        .call("imagegen.list_generation_jobs", json!({}), &[IMAGEGEN_KEY])
        .await;
    assert_eq!(listed["data"]["jobs"][0]["id"], "g-restart-1", "{listed}");
    // A callback received by two is seen through one.
    let callback = json!({ "type": "image_generation.complete",
        "data": { "object": { "id": "g-restart-1", "status": "COMPLETE" } } });
    let bearer = format!("Bearer {WEBHOOK_SECRET}");
    let (status, _, text) = two
        .send(
            reqwest::Method::POST,
            "/webhooks/imagegen",
            Some(callback.to_string().into_bytes()),
            &[("authorization", bearer.as_str())],
        )
        .await;
    assert_eq!(status, 200, "{text}");
    let (_, listed) = one
        .call("imagegen.list_generation_jobs", json!({}), &[IMAGEGEN_KEY])
        .await;
    assert_eq!(listed["data"]["jobs"][0]["state"], "succeeded", "{listed}");
    // The availability limit holds across both: 10 in all, the 11th refused by either.
    let tool = "hosting.domains_check_domain_availability_v1";
    let args = json!({ "domain": "example", "tlds": ["com"] });
    let key = [("x-hosting-api-key", "hk_replicas")];
    let mut passed = 0;
    for i in 0..12 {
        let broker = if i % 2 == 0 { &one } else { &two };
        let (status, body) = broker.call(tool, args.clone(), &key).await;
        match status {
            200 => passed += 1,
            429 => assert_eq!(body["error"]["classification"], "rate_limited"),
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!(passed, 10);
    // An idempotent write racing on both replicas: one upstream call, one answer.
    let headers = [
        ("x-payments-api-key", "pk_replicas"),
        ("idempotency-key", "race-pg"),
    ];
    let create = json!({ "name": "Jo", "confirm": true });
    let (a, b) = tokio::join!(
        one.call("payments.post_customers", create.clone(), &headers),
        two.call("payments.post_customers", create.clone(), &headers),
    );
    assert_eq!((a.0, b.0), (200, 200), "{} {}", a.1, b.1);
    let customers = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path() == "/v1/customers")
        .count();
    assert_eq!(customers, 1);
    // No secret in any table of the schema.
    let StoreConfig::Postgres {
        url,
        schema: Some(schema),
    } = &config
    else {
        unreachable!()
    };
    let pool = sqlx::PgPool::connect(url).await.unwrap();
    for table in [
        "jobs",
        "rate_hits",
        "audit",
        "idempotency",
        "webhook_events",
        "seal_keys",
        "spent_tokens",
        "approvals",
        "tasks",
        "schema_migrations",
    ] {
        let rows: Vec<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT CAST(t AS TEXT) FROM {schema}.{table} AS t"
        )))
        .fetch_all(&pool)
        .await
        .unwrap();
        for (row,) in rows {
            for secret in [
                IMAGEGEN_KEY.1,
                "hk_replicas",
                "pk_replicas",
                crate::support::API_KEY,
                WEBHOOK_SECRET,
                "\"Jo\"",
            ] {
                assert!(!row.contains(secret), "{table}: {row}");
            }
        }
    }
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(&pool)
        .await
        .unwrap();
}

#[tokio::test]
async fn readiness_follows_the_store_and_names_only_its_kind() {
    let server = MockServer::start().await;
    mount(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&StoreConfig::Sqlite(dir.path().join("data")))
        .await
        .unwrap();
    let broker = broker_on(&server, store.clone()).await;
    let (status, _, body) = broker
        .send(reqwest::Method::GET, "/readyz", None, &[])
        .await;
    assert_eq!(status, 200, "{body}");
    let ready: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["store"], json!({ "kind": "sqlite", "ready": true }));
    store.close().await;
    let (status, _, body) = broker
        .send(reqwest::Method::GET, "/readyz", None, &[])
        .await;
    assert_eq!(status, 503, "{body}");
    assert!(!body.contains(&dir.path().display().to_string()), "{body}");
    // A write still answers (its audit record is lost and logged, never the answer),
    // and the job listing says the store cannot be read.
    let (status, body) = broker
        .call("imagegen.list_generation_jobs", json!({}), &[IMAGEGEN_KEY])
        .await;
    assert_eq!(status, 503, "{body}");
    assert!(!body.to_string().contains(&dir.path().display().to_string()));
}

#[tokio::test]
async fn status_reads_keep_the_callers_job_records_current() {
    const GEN: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/generations"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "sdGenerationJob": { "generationId": GEN } })),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/generations/{GEN}")))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "generations_by_pk": { "id": GEN, "status": "COMPLETE" } })),
        )
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/jobs/audio-duck"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "job_id": "mj-1", "cache_hit": false })),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v1/jobs/mj-1"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "job_id": "mj-1", "state": "running" })),
        )
        .mount(&server)
        .await;
    let store = Store::open(&StoreConfig::Memory).await.unwrap();
    let broker = broker_on(&server, store).await;

    // Check Generation Status writes what it read to the caller's record.
    let (status, body) = broker
        .call(
            "imagegen.create_generation",
            json!({ "prompt": "a lighthouse", "confirm": true }),
            &[IMAGEGEN_KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = broker
        .call(
            "imagegen.get_generation_by_id",
            json!({ "path_params": { "id": GEN } }),
            &[IMAGEGEN_KEY],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, listed) = broker
        .call("imagegen.list_generation_jobs", json!({}), &[IMAGEGEN_KEY])
        .await;
    assert_eq!(listed["data"]["jobs"][0]["status"], "COMPLETE", "{listed}");
    assert_eq!(listed["data"]["jobs"][0]["state"], "succeeded");
    // Another caller's read of the same id changes nothing of this caller's record.
    let other = ("x-imagegen-api-key", "ik_someone_else");
    let (_, listed) = broker
        .call("imagegen.list_generation_jobs", json!({}), &[other])
        .await;
    assert_eq!(listed["data"]["total"], 0);

    // Media queue tools record their job; Get Media Job keeps its state.
    let media_key = ("x-media-api-key", "mk_store_canary_5");
    let (status, body) = broker
        .call(
            "media.audio_duck",
            json!({ "voice_asset_id": "v1", "music_asset_id": "m1" }),
            &[media_key],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let owner = tool_broker::store::jobs::owner("env:TOOL_BROKER_API_KEY", Some(media_key.1));
    let jobs = broker
        .broker
        .parts
        .store
        .list_jobs("media", &owner)
        .await
        .unwrap();
    assert_eq!((jobs.len(), jobs[0].id.as_str()), (1, "mj-1"));
    assert_eq!(jobs[0].status, None);
    let (status, body) = broker
        .call("media.get_job", json!({ "job_id": "mj-1" }), &[media_key])
        .await;
    assert_eq!(status, 200, "{body}");
    let jobs = broker
        .broker
        .parts
        .store
        .list_jobs("media", &owner)
        .await
        .unwrap();
    assert_eq!(jobs[0].status.as_deref(), Some("running"));
}
