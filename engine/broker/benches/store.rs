//! What the durable store adds to a write: the audit record, and the idempotency claim
//! and completion of a write called with an `Idempotency-Key`, on each backend; a
//! rate-limit count; a priced call's budget reservation and settlement. Reads do none
//! of this.
//!
//! Run: `cargo bench -p tool-broker --bench store` (SQLite in a temporary folder);
//! with `TOOL_BROKER_BENCH_DATABASE_URL=postgres://...` also PostgreSQL (in a schema
//! of its own). Figures: `bench/README.md`.
#![allow(clippy::panic, reason = "a benchmark with a broken setup should stop")]

use std::sync::atomic::{AtomicI64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use tool_broker::store::audit::{AuditRecord, Outcome};
use tool_broker::store::{Store, StoreConfig};

fn record() -> AuditRecord {
    AuditRecord {
        seq: 0,
        at: "2026-11-23T02:00:00Z".into(),
        key_name: "bench".into(),
        tool: "payments.post_customers".into(),
        descriptor_hash: "ab".repeat(32),
        catalog_version: "payments-2026.11.23.1".into(),
        args_sha256: "cd".repeat(32),
        outcome: Outcome::Executed,
        upstream_status: Some(200),
        classification: "ok".into(),
        trace_id: "0123456789abcdef-bench".into(),
        duration_ms: 3,
        confirmation: Some("flag".into()),
        guards: None,
        policies: None,
        cost: None,
    }
}

fn backend(c: &mut Criterion, name: &str, config: &StoreConfig) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let store = runtime
        .block_on(Store::open(config))
        .unwrap_or_else(|e| panic!("{e}"));
    let envelope =
        r#"{"ok":true,"data":{"id":"cus_1","object":"customer"},"error":null,"meta":{}}"#;
    let counter = AtomicI64::new(0);
    c.bench_function(&format!("{name}: audit record of a write"), |b| {
        b.iter(|| {
            runtime
                .block_on(store.append_audit(&record()))
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    c.bench_function(
        &format!("{name}: idempotent write, claim + complete"),
        |b| {
            b.iter(|| {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let key = format!("k-{n}");
                runtime.block_on(async {
                    store
                        .claim_idempotency(
                            "bench:aa",
                            "payments.post_customers",
                            &key,
                            "sha",
                            1_800_000_000_000 + n,
                            86_400_000,
                        )
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                    store
                        .complete_idempotency(
                            "bench:aa",
                            "payments.post_customers",
                            &key,
                            200,
                            envelope,
                        )
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                })
            })
        },
    );
    c.bench_function(
        &format!("{name}: idempotent repeat answered from the store"),
        |b| {
            b.iter(|| {
                runtime
                    .block_on(store.claim_idempotency(
                        "bench:aa",
                        "payments.post_customers",
                        "k-0",
                        "sha",
                        1_800_000_000_000,
                        86_400_000,
                    ))
                    .unwrap_or_else(|e| panic!("{e}"))
            })
        },
    );
    // A priced call under two budgets: the reservation before the request, the
    // settlement after (the answer's figure differs from the estimate).
    let budgets = [
        tool_broker::store::budgets::Charge {
            budget: "per-key",
            scope: "key:bench",
            window_ms: 1_800_000_000_000,
            limit: u64::MAX / 2,
            unit: "credits",
        },
        tool_broker::store::budgets::Charge {
            budget: "team",
            scope: "role:bench",
            window_ms: 1_800_000_000_000,
            limit: u64::MAX / 2,
            unit: "credits",
        },
    ];
    c.bench_function(
        &format!("{name}: budget reserve + settle, two budgets"),
        |b| {
            b.iter(|| {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let hold = format!("hold-{n}");
                runtime.block_on(async {
                    store
                        .reserve_budgets(&hold, &budgets, 3, "agent.create_task", n)
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                    store
                        .settle_budgets(&hold, 3, 2)
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                })
            })
        },
    );
    c.bench_function(&format!("{name}: rate-limit count"), |b| {
        b.iter(|| {
            let n = counter.fetch_add(1, Ordering::Relaxed);
            runtime
                .block_on(store.count_request(
                    "bench\u{1f}caller",
                    1_000_000,
                    60_000,
                    1_800_000_000_000 + n,
                ))
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
}

fn stores(c: &mut Criterion) {
    let dir = tempfile_dir();
    backend(c, "sqlite", &StoreConfig::Sqlite(dir.clone()));
    if let Ok(url) = std::env::var("TOOL_BROKER_BENCH_DATABASE_URL") {
        let schema = format!("tb_bench_{}", std::process::id());
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

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tool-broker-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

criterion_group!(benches, stores);
criterion_main!(benches);
