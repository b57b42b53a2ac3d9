//! The guard rules on answers (docs/guards.md): a 64 KB answer read with the shipped
//! rules that are on, as a call reads it: in one pass (one keyword pass and one pass of
//! the keywordless rules' patterns over the bytes, then each string as it is written
//! with the rules left), and as a tree (the same passes, then every string of a parsed
//! value);
//! an answer holding nothing, and one holding a card number to redact. Beside them the
//! same pass without guards, for the cost the guards add.
//!
//! Run: `cargo bench -p tool-broker --bench guards`. Figures: `bench/README.md`.
#![allow(clippy::panic, reason = "a benchmark with a broken setup should stop")]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use tool_broker::answer::guard::{OnePass, guard};
use tool_broker::answer::scan::{scan, scan_guarded};
use tool_broker::catalog::compile::compile;
use tool_broker::catalog::guards::{LooksAt, Set};
use tool_broker::catalog::source::Sources;

/// An answer of about 64 KB: invoices with ids, dates, amounts, names, addresses and
/// notes, the kind of text a CRM or billing read returns. `card` puts one card number
/// in one note.
fn answer(card: bool) -> String {
    let items: Vec<Value> = (0..150)
        .map(|i| {
            json!({
                "id": format!("in_1Nq{i:05}XaBcDeFgHiJk"),
                "object": "invoice",
                "created": 1_732_000_000 + i,
                "due_date": format!("2026-12-{:02}T10:00:00Z", i % 28 + 1),
                "amount_due": 1999 + i * 7,
                "currency": "eur",
                "customer": { "id": format!("cus_{i:08}"), "name": "Dana Example", "email": "dana@example.com", "phone": "+1 415 555 0100" },
                "lines": [{ "description": "Consulting, 3 hours at the agreed rate", "quantity": 3, "unit_amount": 12000 }],
                "notes": if card && i == 75 { "paid by card 4539 1488 0343 6467".to_string() } else { format!("Order {i} shipped to Hauptstraße 5, 10115 Berlin; reference 2026-{i:04}") },
                "status": "open",
            })
        })
        .collect();
    let text = json!({ "data": items, "has_more": false }).to_string();
    assert!(text.len() > 60_000 && text.len() < 70_000, "{}", text.len());
    text
}

fn guards_bench(c: &mut Criterion) {
    let catalog = compile(&Sources::embedded()).unwrap_or_else(|d| panic!("{d}"));
    let guards = catalog.rules.guards.clone();
    let rules = &catalog.rules.redaction;
    let on = guards.on_for(LooksAt::Answers);
    let mut group = c.benchmark_group("guards");
    for (name, card) in [("nothing", false), ("card", true)] {
        let body = answer(card);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(format!("one pass, no guards ({name})"), |b| {
            b.iter(|| scan(black_box(body.as_bytes()), rules, &[], None).is_ok());
        });
        group.bench_function(format!("one pass ({name})"), |b| {
            b.iter(|| {
                let reader = OnePass::new(&guards, on, black_box(body.as_bytes()));
                let reads = |text: &str, decoded: bool| reader.acts_on(text, decoded);
                scan_guarded(body.as_bytes(), rules, &[], None, Some(&reads))
            });
        });
        let parsed: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}"));
        group.bench_function(format!("tree ({name})"), |b| {
            b.iter_batched(
                || parsed.clone(),
                |mut value| {
                    // As a call reads it: the rules that cannot match in the bytes left
                    // out (the answer has no escape).
                    let bytes = body.as_bytes();
                    let set = guards.narrowed(bytes, on);
                    let mut acted = Set::EMPTY;
                    guard(&mut value, &guards, set, &mut acted).is_ok()
                },
                criterion::BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, guards_bench);
criterion_main!(benches);
