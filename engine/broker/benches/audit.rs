//! The console's audit page over 100,000 records: one filtered page (50 records,
//! newest first) per filter the console offers, read through the console's own store
//! handle, on each backend; and the users page's read of who the audit names. The worst cases are a filter matching few records spread
//! over the whole audit (a rare caller, a rare policy) and a page deep in the audit.
//!
//! Run: `cargo bench -p tool-broker --bench audit` (SQLite in a temporary folder);
//! with `TOOL_BROKER_BENCH_DATABASE_URL=postgres://...` also PostgreSQL (in a schema
//! of its own). Filling takes about a minute per backend. Figures: `bench/README.md`.
#![allow(clippy::panic, reason = "a benchmark with a broken setup should stop")]

use criterion::{Criterion, criterion_group, criterion_main};
use tool_broker::store::audit::{AuditRecord, Outcome};
use tool_broker::store::audit_query::AuditFilter;
use tool_broker::store::{Store, StoreConfig};

const RECORDS: i64 = 100_000;
const SERVICES: [&str; 9] = [
    "portal", "crm", "agent", "imagegen", "leads", "scraper", "hosting", "payments", "media",
];
const OUTCOMES: [Outcome; 4] = [
    Outcome::Executed,
    Outcome::Refused,
    Outcome::Declined,
    Outcome::TokenIssued,
];

/// Record `i`: 50 callers (one rare: every 10,000th), 45 tools over 9 services,
/// outcomes mostly executed, a policy on 20% (one rare policy), a record a minute
/// back from `now_ms`.
fn record(i: i64, now_ms: i64) -> AuditRecord {
    let n = usize::try_from(i).unwrap_or(0);
    let caller = if i % 10_000 == 7 {
        "rare-principal".to_string()
    } else {
        format!("agent-{}", n % 49)
    };
    let service = SERVICES[n % SERVICES.len()];
    AuditRecord {
        seq: 0,
        at: jiff::Timestamp::from_millisecond(now_ms - (RECORDS - i) * 60_000)
            .map(|t| t.to_string())
            .unwrap_or_default(),
        key_name: caller,
        tool: format!("{service}.tool_{}", n % 5),
        descriptor_hash: "ab".repeat(32),
        catalog_version: "2026-11-28.1".into(),
        args_sha256: format!("{i:064x}"),
        outcome: if n % 10 == 0 {
            OUTCOMES[(n / 10) % OUTCOMES.len()]
        } else {
            Outcome::Executed
        },
        upstream_status: Some(200),
        classification: "ok".into(),
        trace_id: format!("{i:032x}"),
        duration_ms: 12,
        confirmation: Some("flag".into()),
        guards: None,
        policies: match n % 5 {
            0 => Some(vec!["reads-for-everyone".into()]),
            _ if i % 10_000 == 3 => Some(vec!["rare-policy".into()]),
            _ => None,
        },
        cost: None,
    }
}

fn backend(c: &mut Criterion, name: &str, config: &StoreConfig) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let now_ms = jiff::Timestamp::now().as_millisecond();
    let store = runtime
        .block_on(Store::open(config))
        .unwrap_or_else(|e| panic!("{e}"));
    let started = std::time::Instant::now();
    runtime.block_on(async {
        let chunks: Vec<_> = (0..8)
            .map(|part| {
                let store = store.clone();
                tokio::spawn(async move {
                    let mut i = part;
                    while i < RECORDS {
                        store
                            .append_audit(&record(i, now_ms))
                            .await
                            .unwrap_or_else(|e| panic!("{e}"));
                        i += 8;
                    }
                })
            })
            .collect();
        for chunk in chunks {
            chunk.await.unwrap_or_else(|e| panic!("{e}"));
        }
    });
    eprintln!(
        "{name}: {RECORDS} records written in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let reader = runtime
        .block_on(Store::open_reader(config, &store))
        .unwrap_or_else(|e| panic!("{e}"));
    let (newest, _) = runtime
        .block_on(reader.audit_page(&AuditFilter {
            limit: 1,
            ..AuditFilter::default()
        }))
        .unwrap_or_else(|e| panic!("{e}"));
    let top = newest.first().map_or(RECORDS, |r| r.seq);
    let page = |f: AuditFilter| AuditFilter { limit: 50, ..f };
    let filters: Vec<(&str, AuditFilter)> = vec![
        ("newest page", page(AuditFilter::default())),
        (
            "principal",
            page(AuditFilter {
                caller: Some("agent-17".into()),
                ..AuditFilter::default()
            }),
        ),
        (
            "rare principal (10 records)",
            page(AuditFilter {
                caller: Some("rare-principal".into()),
                ..AuditFilter::default()
            }),
        ),
        (
            "service",
            page(AuditFilter {
                service: Some("payments".into()),
                ..AuditFilter::default()
            }),
        ),
        (
            "tool + outcome",
            page(AuditFilter {
                tool: Some("crm.tool_1".into()),
                outcome: Some("refused".into()),
                ..AuditFilter::default()
            }),
        ),
        (
            "rare policy (10 records)",
            page(AuditFilter {
                policy: Some("rare-policy".into()),
                ..AuditFilter::default()
            }),
        ),
        (
            "a day, 30 days back",
            page(AuditFilter {
                since_ms: Some(now_ms - 31 * 86_400_000),
                until_ms: Some(now_ms - 30 * 86_400_000),
                ..AuditFilter::default()
            }),
        ),
        (
            "page 1,000 records deep + service",
            page(AuditFilter {
                before_seq: Some(top - 1_000 * 9),
                service: Some("media".into()),
                ..AuditFilter::default()
            }),
        ),
    ];
    for (label, filter) in filters {
        c.bench_function(&format!("{name}: audit page over 100k, {label}"), |b| {
            b.iter(|| {
                runtime
                    .block_on(reader.audit_page(&filter))
                    .unwrap_or_else(|e| panic!("{e}"))
            })
        });
    }
    // The users page: everyone the audit names, with their last record and count.
    c.bench_function(&format!("{name}: who the audit names, over 100k"), |b| {
        b.iter(|| {
            runtime
                .block_on(reader.audit_callers(2_000))
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
}

fn audit(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("tool-broker-bench-audit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    backend(c, "sqlite", &StoreConfig::Sqlite(dir.clone()));
    if let Ok(url) = std::env::var("TOOL_BROKER_BENCH_DATABASE_URL") {
        let schema = format!("tb_bench_audit_{}", std::process::id());
        backend(
            c,
            "postgres",
            &StoreConfig::Postgres {
                url,
                schema: Some(schema),
            },
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = audit
}
criterion_main!(benches);
