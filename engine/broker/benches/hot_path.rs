//! The request hot path of a typical proxied read tool, without the network:
//! argument validation -> template context -> render -> redaction of an upstream
//! answer -> data and pagination -> truncation -> envelope serialisation.
//!
//! Run: `cargo bench -p tool-broker --bench hot_path`. Figures: `bench/HISTORY.md`.
#![allow(clippy::panic, reason = "a benchmark with a broken setup should stop")]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;

use tool_broker::answer::envelope::{self, Meta};
use tool_broker::answer::redact::redact;
use tool_broker::answer::response::{extract_data, extract_pagination, truncate};
use tool_broker::call::args;
use tool_broker::catalog::compile::compile;
use tool_broker::catalog::source::Sources;
use tool_broker::catalog::template::Scope;
use tool_broker::catalog::{Action, Catalog, HttpPlan, JsonPath, Tool};
use tool_broker::upstream::render::render;

fn upstream_answer() -> Value {
    let tasks: Vec<Value> = (0..40)
        .map(|i| {
            json!({
                "id": format!("task_{i}"),
                "status": "running",
                "title": "Summarise the quarterly report",
                "credit_usage": 12,
                "metadata": { "access_token": "tok_abc", "owner": { "email": "a@b.c", "api_key": "k" } },
            })
        })
        .collect();
    json!({ "ok": true, "request_id": "r1", "data": tasks, "has_more": true, "next_cursor": "c2" })
}

/// The benchmarked tool and its HTTP plan.
fn list_tasks(catalog: &Catalog) -> (&Tool, &HttpPlan) {
    let tool = catalog
        .resolve("agent.list_tasks")
        .unwrap_or_else(|| panic!("agent.list_tasks missing"));
    let Action::Http(plan) = &tool.action else {
        panic!("agent.list_tasks is not an HTTP tool");
    };
    (tool, plan)
}

fn hot_path(c: &mut Criterion) {
    let catalog = compile(&Sources::embedded()).unwrap_or_else(|d| panic!("{d}"));
    let (tool, plan) = list_tasks(&catalog);
    let arguments = json!({ "limit": 20, "cursor": "c1", "order": "desc", "project_id": "p_1" });
    let answer = upstream_answer();
    c.bench_function("list_tasks: validate+render+redact+envelope", |b| {
        b.iter(|| {
            let args = args::prepare(tool, Some(black_box(arguments.clone()))).unwrap_or_default();
            let ctx = Scope::new(json!({ "args": args, "ctx": {}, "settings": {} }));
            let request = render(plan, &catalog.templates, &ctx);
            let mut body = black_box(answer.clone());
            let paths: Vec<&JsonPath> = tool.response.redact.iter().collect();
            redact(
                &mut body,
                &catalog.rules.redaction,
                &paths,
                &["secret-key-value"],
            );
            let pagination = extract_pagination(tool, &body);
            let mut data = extract_data(tool, body);
            let truncation = truncate(&mut data, tool.item_budget);
            let meta = Meta {
                request_id: "1".into(),
                trace_id: "t".into(),
                pagination,
                truncation,
                ..Meta::default()
            };
            let response = envelope::standard_ok(data, meta);
            black_box((request.is_ok(), response.to_json()))
        })
    });
}

criterion_group!(benches, hot_path, parts, serialize_only, answer);
criterion_main!(benches);

fn parts(c: &mut Criterion) {
    let catalog = compile(&Sources::embedded()).unwrap_or_else(|d| panic!("{d}"));
    let (tool, plan) = list_tasks(&catalog);
    let arguments = json!({ "limit": 20, "cursor": "c1", "order": "desc", "project_id": "p_1" });
    let answer = upstream_answer();
    c.bench_function("part: validate", |b| {
        b.iter(|| args::prepare(tool, Some(black_box(arguments.clone()))).is_ok())
    });
    let args = args::prepare(tool, Some(arguments.clone())).unwrap_or_default();
    c.bench_function("part: context+render", |b| {
        b.iter(|| {
            let ctx = Scope::new(json!({ "args": args, "ctx": {}, "settings": {} }));
            render(plan, &catalog.templates, &ctx).is_ok()
        })
    });
    c.bench_function("part: clone answer", |b| {
        b.iter(|| black_box(answer.clone()))
    });
    c.bench_function("part: clone+redact", |b| {
        b.iter(|| {
            let mut body = black_box(answer.clone());
            redact(
                &mut body,
                &catalog.rules.redaction,
                &[],
                &["secret-key-value"],
            )
        })
    });
    c.bench_function("part: clone+data+serialize", |b| {
        b.iter(|| {
            let body = black_box(answer.clone());
            let data = extract_data(tool, body);
            envelope::standard_ok(data, Meta::default()).to_json()
        })
    });
}

fn serialize_only(c: &mut Criterion) {
    let answer = upstream_answer();
    c.bench_function("part: clone+to_string", |b| {
        b.iter(|| black_box(answer.clone()).to_string())
    });
    c.bench_function("part: to_string", |b| {
        b.iter(|| black_box(&answer).to_string())
    });
    println!("answer bytes: {}", answer.to_string().len());
}

/// An upstream answer's bytes to `data`'s text, both ways: the tree (parse, redact,
/// truncate, write) and one pass (`tool_broker::answer::scan`). Same text out (asserted once).
fn answer(c: &mut Criterion) {
    let catalog = compile(&Sources::embedded()).unwrap_or_else(|d| panic!("{d}"));
    let rules = &catalog.rules.redaction;
    let secrets = ["secret-key-value"];
    let billing = br#"[{"id":"hostingercom-domain-com","name":".COM Domain","category":"DOMAIN","metadata":null,"prices":[{"id":"hostingercom-domain-com-usd-1y","name":".COM (1 year)","currency":"USD","price":1799,"first_period_price":999,"period":1,"period_unit":"year"}]},{"id":"vps-kvm-2","name":"KVM 2","category":"VPS","metadata":null,"prices":[]}]"#.to_vec();
    let tasks = upstream_answer().to_string().into_bytes();
    let tree = |bytes: &[u8]| {
        let mut body: Value = serde_json::from_slice(bytes).unwrap_or_default();
        let redacted = redact(&mut body, rules, &[], &secrets);
        let truncation = truncate(&mut body, 50);
        (
            serde_json::to_string(&body).unwrap_or_default(),
            redacted,
            truncation,
        )
    };
    for (name, bytes) in [("billing 331 B", &billing), ("tasks 40 items", &tasks)] {
        let one = tool_broker::answer::scan::scan(bytes, rules, &secrets, Some(50))
            .unwrap_or_else(|_| panic!("{name}: not JSON"));
        if (one.text.clone(), one.redacted, one.truncation.clone()) != tree(bytes) {
            panic!("{name}: the two paths differ");
        }
        c.bench_function(&format!("answer {name}: tree"), |b| {
            b.iter(|| tree(black_box(bytes)))
        });
        c.bench_function(&format!("answer {name}: one pass"), |b| {
            b.iter(|| tool_broker::answer::scan::scan(black_box(bytes), rules, &secrets, Some(50)))
        });
    }
}
