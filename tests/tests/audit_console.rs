//! The write audit as the console reads it (engine/store/src/store/audit_query.rs): filters,
//! newest-first pages by cursor, the oldest record kept, and retention pruning that
//! removes only what is past its bound and over a day old, while the audit otherwise
//! stays append-only; and the console's other lists (callers, stored keys,
//! approvals, tasks, jobs). One suite, on SQLite and (ignored without a server) PostgreSQL.

use tool_broker::store::approvals::{Approval, ApprovalState, Shown};
use tool_broker::store::audit::{AuditRecord, Outcome};
use tool_broker::store::audit_query::AuditFilter;
use tool_broker::store::hub_keys::SealedKey;
use tool_broker::store::tasks::StoredTask;
use tool_broker::store::{Store, StoreConfig};

const DAY_MS: i64 = 86_400_000;

fn at(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).unwrap().to_string()
}

fn record(i: usize, at_ms: i64) -> AuditRecord {
    let tools = [
        "crm.contacts_create_contact",
        "payments.create_refund",
        "crm_extra.anything",
        "hub/keys/crm",
    ];
    let outcomes = [Outcome::Executed, Outcome::Refused, Outcome::Declined];
    AuditRecord {
        seq: 0,
        at: at(at_ms),
        key_name: ["agent-a", "agent-b", "https://idp#dana"][i % 3].into(),
        tool: tools[i % 4].into(),
        descriptor_hash: "ab".repeat(32),
        catalog_version: "2026-11-22.1".into(),
        args_sha256: format!("{i:064x}"),
        outcome: outcomes[i % 3],
        upstream_status: None,
        classification: "ok".into(),
        trace_id: format!("trace-{i}"),
        duration_ms: 3,
        confirmation: None,
        guards: None,
        policies: match i % 5 {
            0 => Some(vec!["allow_reads".into()]),
            1 => Some(vec!["allowXreads".into(), "forbid-100%".into()]),
            _ => None,
        },
        cost: None,
    }
}

fn filter() -> AuditFilter {
    AuditFilter {
        limit: 1_000,
        ..AuditFilter::default()
    }
}

async fn count(store: &Store, f: AuditFilter) -> usize {
    store.audit_page(&f).await.unwrap().0.len()
}

async fn suite(config: &StoreConfig) {
    let store = Store::open(config).await.unwrap();
    let now = jiff::Timestamp::now().as_millisecond();
    // 60 records 200 days old, then 240 in the last hour (records 60..300).
    for i in 0..300 {
        let at_ms = if i < 60 {
            now - 200 * DAY_MS + i as i64
        } else {
            now - 3_600_000 + i as i64 * 1_000
        };
        store.append_audit(&record(i, at_ms)).await.unwrap();
    }
    let reader = Store::open_reader(config, &store).await.unwrap();
    assert!(reader.ping().await);

    // Each filter selects exactly its records, and the reader sees what was written.
    assert_eq!(count(&reader, filter()).await, 300);
    let who = AuditFilter {
        caller: Some("https://idp#dana".into()),
        ..filter()
    };
    assert_eq!(count(&reader, who).await, 100);
    let crm = AuditFilter {
        service: Some("crm".into()),
        ..filter()
    };
    let (rows, _) = reader.audit_page(&crm).await.unwrap();
    assert_eq!(rows.len(), 75);
    assert!(rows.iter().all(|r| r.tool == "crm.contacts_create_contact"));
    let one_tool = AuditFilter {
        tool: Some("hub/keys/crm".into()),
        outcome: Some("refused".into()),
        ..filter()
    };
    let (rows, _) = reader.audit_page(&one_tool).await.unwrap();
    assert_eq!(rows.len(), 25);
    assert!(
        rows.iter()
            .all(|r| r.tool == "hub/keys/crm" && r.outcome == Outcome::Refused)
    );
    // A policy id is matched whole: `_` and `%` are not wildcards.
    let policy = AuditFilter {
        policy: Some("allow_reads".into()),
        ..filter()
    };
    assert_eq!(count(&reader, policy).await, 60);
    let percent = AuditFilter {
        policy: Some("forbid-100%".into()),
        ..filter()
    };
    assert_eq!(count(&reader, percent).await, 60);
    let partial = AuditFilter {
        policy: Some("allow".into()),
        ..filter()
    };
    assert_eq!(count(&reader, partial).await, 0);
    // Time bounds: since is inclusive, until exclusive.
    let recent = AuditFilter {
        since_ms: Some(now - 3_600_000 + 60_000),
        until_ms: Some(now - 3_600_000 + 70_000),
        ..filter()
    };
    assert_eq!(count(&reader, recent).await, 10);

    // Pages by cursor: newest first, every record once, the last page says no more.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = AuditFilter {
            before_seq: cursor,
            limit: 7,
            ..AuditFilter::default()
        };
        let (rows, more) = reader.audit_page(&page).await.unwrap();
        assert!(rows.windows(2).all(|w| w[0].seq > w[1].seq));
        seen.extend(rows.iter().map(|r| r.seq));
        if !more {
            break;
        }
        cursor = rows.last().map(|r| r.seq);
    }
    assert_eq!(seen.len(), 300);
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 300);

    // How far back it reaches.
    assert_eq!(
        reader.oldest_audit().await.unwrap(),
        Some(at(now - 200 * DAY_MS))
    );

    lists(&store, &reader, now).await;

    // Pruning removes what is older than its bound, and nothing under a day old even
    // when asked to.
    let refused = store.prune_audit(now + DAY_MS, now).await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("append-only")),
        "{refused:?}"
    );
    assert_eq!(count(&reader, filter()).await, 300);
    let pruned = store.prune_audit(now - 90 * DAY_MS, now).await.unwrap();
    assert_eq!((pruned.audit, pruned.approvals), (60, 1));
    assert_eq!(count(&reader, filter()).await, 240);
    assert_eq!(
        reader.oldest_audit().await.unwrap(),
        Some(at(now - 3_600_000 + 60_000))
    );
    // Again: nothing left to prune, and no history row for it.
    assert_eq!(
        store
            .prune_audit(now - 90 * DAY_MS, now)
            .await
            .unwrap()
            .audit,
        0
    );
}

fn approval(id: &str, state_created_expires: (i64, i64)) -> Approval {
    Approval {
        id: id.into(),
        caller: "agent-a:00".into(),
        key_name: "agent-a".into(),
        tool: "payments.post_customers".into(),
        descriptor_hash: "ab".repeat(32),
        args_sha256: "cd".repeat(32),
        plan_sha256: None,
        preview: "sealed".into(),
        state: ApprovalState::Pending,
        approver: None,
        created_ms: state_created_expires.0,
        expires_ms: state_created_expires.1,
    }
}

/// The console's other lists: who the audit names, stored keys, approvals, tasks and
/// jobs, each newest first with its cursor.
async fn lists(store: &Store, reader: &Store, now: i64) {
    let names = reader.audit_callers(10).await.unwrap();
    let counts: Vec<(&str, u64)> = names.iter().map(|p| (p.name.as_str(), p.records)).collect();
    assert_eq!(counts.len(), 3);
    assert!(counts.iter().all(|(_, n)| *n == 100), "{counts:?}");
    assert!(names.windows(2).all(|w| w[0].last_ms >= w[1].last_ms));
    assert_eq!(reader.audit_callers(1).await.unwrap().len(), 1);

    for (subject, service) in [("dana", "crm"), ("dana", "payments"), ("eve", "crm")] {
        store
            .put_hub_key(&SealedKey {
                issuer: "https://idp".into(),
                subject: subject.into(),
                service: service.into(),
                sealed: "sealed-canary".into(),
                key_id: "k1".into(),
                set_ms: now,
            })
            .await
            .unwrap();
    }
    let holders = reader.hub_key_holders(10).await.unwrap();
    assert_eq!(holders.len(), 3);
    assert_eq!(
        holders[0],
        ("https://idp".into(), "dana".into(), "crm".into(), now)
    );
    approvals(store, reader, now).await;
    tasks_and_jobs(store, reader, now).await;
}

/// Approvals: pending, expired, decided; newest first, by cursor.
async fn approvals(store: &Store, reader: &Store, now: i64) {
    store
        .create_approval(&approval("a-old", (now - 200 * DAY_MS, now - 199 * DAY_MS)))
        .await
        .unwrap();
    store
        .create_approval(&approval("a-expired", (now - 60_000, now - 1)))
        .await
        .unwrap();
    store
        .create_approval(&approval("a-pending", (now - 30_000, now + 60_000)))
        .await
        .unwrap();
    store
        .create_approval(&approval("a-decided", (now - 20_000, now + 60_000)))
        .await
        .unwrap();
    store
        .create_approval(&approval("a-tie", (now - 20_000, now + 60_000)))
        .await
        .unwrap();
    assert!(
        store
            .decide_approval("a-decided", "olive", true, now)
            .await
            .unwrap()
    );
    let ids = |rows: Vec<Approval>| rows.into_iter().map(|a| a.id).collect::<Vec<_>>();
    for (shown, expected) in [
        (
            Shown::All,
            vec!["a-tie", "a-decided", "a-pending", "a-expired", "a-old"],
        ),
        (Shown::Pending, vec!["a-tie", "a-pending"]),
        (Shown::Expired, vec!["a-expired", "a-old"]),
        (Shown::Decided, vec!["a-decided"]),
    ] {
        assert_eq!(
            ids(reader.list_approvals(shown, now, None, 10).await.unwrap()),
            expected,
            "{shown:?}"
        );
    }
    let first = reader
        .list_approvals(Shown::All, now, None, 2)
        .await
        .unwrap();
    let last = first.last().unwrap();
    assert_eq!(
        ids(reader
            .list_approvals(Shown::All, now, Some((last.created_ms, &last.id)), 10)
            .await
            .unwrap()),
        vec!["a-pending", "a-expired", "a-old"]
    );
}

/// Tasks (unexpired only, by status, by cursor), and jobs across owners and services.
async fn tasks_and_jobs(store: &Store, reader: &Store, now: i64) {
    let task = |id: &str, created_ms: i64, expires_ms: i64| StoredTask {
        id: id.into(),
        owner: "agent-a".into(),
        tool: "media.slow_job".into(),
        status: "working".into(),
        result: None,
        created_ms,
        updated_ms: created_ms,
        heartbeat_ms: created_ms,
        expires_ms,
    };
    store
        .create_task(&task("t1", now - 3_000, now + DAY_MS))
        .await
        .unwrap();
    store
        .create_task(&task("t2", now - 2_000, now + DAY_MS))
        .await
        .unwrap();
    store
        .create_task(&task("t3", now - 1_000, now + DAY_MS))
        .await
        .unwrap();
    store
        .create_task(&task("t-gone", now - 500, now - 1))
        .await
        .unwrap();
    assert!(
        store
            .settle_task("t2", "failed", Some("{}"), now)
            .await
            .unwrap()
    );
    let task_ids = |rows: Vec<StoredTask>| rows.into_iter().map(|t| t.id).collect::<Vec<_>>();
    assert_eq!(
        task_ids(reader.list_tasks(None, now, None, 10).await.unwrap()),
        vec!["t3", "t2", "t1"]
    );
    assert_eq!(
        task_ids(
            reader
                .list_tasks(Some("failed"), now, None, 10)
                .await
                .unwrap()
        ),
        vec!["t2"]
    );
    assert_eq!(
        task_ids(
            reader
                .list_tasks(None, now, Some((now - 2_000, "t2")), 10)
                .await
                .unwrap()
        ),
        vec!["t1"]
    );

    // Jobs across owners and services, by cursor (ties broken by service, owner, id).
    let at_now = jiff::Timestamp::from_millisecond(now).unwrap();
    for (service, owner, id) in [
        ("imagegen", "agent-a", "j1"),
        ("imagegen", "agent-b", "j1"),
        ("media", "agent-a", "j2"),
    ] {
        store
            .record_job(service, owner, id, "imagegen.generate", at_now)
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = reader.list_recent_jobs(after.as_ref(), 2).await.unwrap();
        if page.is_empty() {
            break;
        }
        let last = page.last().unwrap();
        after = Some((
            last.submitted_ms,
            last.job.service.clone(),
            last.owner.clone(),
            last.job.id.clone(),
        ));
        seen.extend(
            page.into_iter()
                .map(|j| format!("{}/{}/{}", j.job.service, j.owner, j.job.id)),
        );
    }
    assert_eq!(
        seen,
        vec![
            "media/agent-a/j2",
            "imagegen/agent-b/j1",
            "imagegen/agent-a/j1"
        ]
    );
}

#[tokio::test]
async fn the_console_reads_and_prunes_the_audit_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = StoreConfig::Sqlite(data.clone());
    suite(&config).await;
    // Outside a pruning, the audit still refuses every change, even old records'.
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        data.join(tool_broker::store::SQLITE_FILE).display()
    ))
    .await
    .unwrap();
    for sql in ["UPDATE audit SET outcome = 'executed'", "DELETE FROM audit"] {
        let err = sqlx::query(sql).execute(&pool).await.unwrap_err();
        assert!(err.to_string().contains("append-only"), "{sql}: {err}");
    }
    let (prunes, removed): (i64, i64) =
        sqlx::query_as("SELECT COUNT(*), SUM(removed) FROM audit_prunes")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((prunes, removed), (1, 60));
    // The console's reader cannot write.
    let reader = Store::open_reader(&config, &Store::open(&config).await.unwrap())
        .await
        .unwrap();
    let err = reader.append_audit(&record(1, 0)).await.unwrap_err();
    assert!(err.to_string().contains("readonly"), "{err}");
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set TOOL_BROKER_TEST_DATABASE_URL and run with --ignored (.ci/run does)"]
async fn the_console_reads_and_prunes_the_audit_on_postgres() {
    let config = crate::support::store::postgres("console");
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
