//! Discovery paths: ranked find over one service's tools, a whole `find_tools` answer
//! (ranking, rows, written out), one MCP `tools/list` page, and building the OpenAPI
//! projection (done once per process, then served from memory).
//!
//! Run: `cargo bench -p tool-broker --bench discovery`. Figures: `bench/README.md`.
//! `TOOL_BROKER_BENCH_CATALOG=<catalog root>` reads the catalog from that folder instead
//! of the one built in, so a change of intents, rules or tools is timed without a rebuild.
#![allow(clippy::panic, reason = "a benchmark with a broken setup should stop")]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tool_broker::call::Broker;
use tool_broker::caller::Caller;
use tool_broker::catalog::compile::compile;
use tool_broker::catalog::source::Sources;
use tool_broker::config::{ConfigFile, Toolset, ToolsetName};
use tool_broker::mcp::tools::visible;
use tool_broker::run::RequestCtx;
use tool_broker::serve::projection::text;
use tool_broker::store::{Store, StoreConfig};

fn discovery(c: &mut Criterion) {
    let sources = match std::env::var_os("TOOL_BROKER_BENCH_CATALOG") {
        Some(root) => Sources::from_dir(std::path::Path::new(&root))
            .unwrap_or_else(|e| panic!("TOOL_BROKER_BENCH_CATALOG: {e}")),
        None => Sources::embedded(),
    };
    let catalog = Arc::new(compile(&sources).unwrap_or_else(|d| panic!("{d}")));
    let env = |name: &str| (name == "TOOL_BROKER_API_KEY").then(|| "tb_bench".to_string());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let store = runtime
        .block_on(Store::open(&StoreConfig::Memory))
        .unwrap_or_else(|e| panic!("{e}"));
    let broker = std::sync::Arc::new(
        Broker::new(catalog.clone(), &ConfigFile::default(), &env, store)
            .unwrap_or_else(|e| panic!("{e}")),
    );
    let served = tool_broker::served::Served::new(broker.clone(), &ConfigFile::default(), &env)
        .unwrap_or_else(|e| panic!("{e}"));
    // Every tool listed: what a `toolset = "all"` key pages through.
    let listing = Caller {
        toolset: Toolset::Named(ToolsetName::All),
        ..Caller::unrestricted("bench")
    };
    c.bench_function("find: payments 'list issuing cards' (468 tools)", |b| {
        b.iter(|| {
            catalog
                .search()
                .search("payments", black_box("list issuing cards"), |_| true)
        })
    });
    c.bench_function("find: crm 'create a contact' (584 tools)", |b| {
        b.iter(|| {
            catalog
                .search()
                .search("crm", black_box("create a contact"), |_| true)
        })
    });
    // What the MCP discovery `find_tools` ranks: every service as one corpus, for a
    // model's search words, a user's sentence, and a sentence no tool matches word for
    // word (the meaning signal ranks it too: a query vector, a similarity per tool, the
    // fusion).
    for (name, query) in [
        (
            "find_tools: all services 'list refunds' (1,818 tools)",
            "list refunds",
        ),
        (
            "find_tools: all services, a user's sentence (1,818 tools)",
            "Give the customer their money back for charge ch_3MmlLrLkdIwHu7ix",
        ),
        (
            "find_tools: all services, a sentence read by meaning too (1,818 tools)",
            "Jane wants to be repaid for the broken lamp she bought",
        ),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| {
                catalog
                    .search()
                    .search_all(None, black_box(query), |_| true)
                    .len()
            })
        });
    }
    // Why each of the first ten ranked, as `find_tools` says it.
    let sentence = "Give the customer their money back for charge ch_3MmlLrLkdIwHu7ix";
    let hits = catalog.search().search_all(None, sentence, |_| true);
    c.bench_function("find_tools: why of the first ten, a user's sentence", |b| {
        b.iter(|| {
            let why = catalog.search().why(black_box(sentence));
            hits.iter()
                .take(10)
                .map(|h| why.of(h))
                .map(|w| w.len())
                .sum::<usize>()
        })
    });
    percentiles(&catalog);
    let find = catalog
        .resolve("payments.find_tools")
        .unwrap_or_else(|| panic!("payments.find_tools missing"));
    let headers = hyper::HeaderMap::new();
    let caller = Caller::unrestricted("bench");
    let trace = tool_broker::telemetry::trace::Tracer::default().start(None);
    c.bench_function(
        "find answer: payments 'list issuing cards' (ranking + 10 rows, written)",
        |b| {
            b.iter(|| {
                let ctx = RequestCtx::own(&caller, &headers, &trace);
                let args = serde_json::json!({ "query": black_box("list issuing cards") });
                let mut exec = runtime
                    .block_on(broker.execute(find, Some(args), &ctx))
                    .unwrap_or_else(|e| panic!("{}", e.message));
                serde_json::to_vec(exec.data.value_mut()).map_or(0, |text| text.len())
            })
        },
    );
    let _ = visible(&served, &listing); // build the entry cache once
    c.bench_function("mcp tools/list: one page of 100 (entries cached)", |b| {
        b.iter(|| {
            let all = visible(&served, &listing);
            let page: Vec<_> = all.iter().skip(black_box(800)).take(100).collect();
            serde_json::to_string(&page).map(|s| s.len()).unwrap_or(0)
        })
    });
    let mut slow = c.benchmark_group("once per process");
    slow.sample_size(10)
        .measurement_time(Duration::from_secs(10));
    slow.bench_function("openapi projection: build + serialise", |b| {
        b.iter(|| text(&catalog, black_box(false)).map(|t| t.len()))
    });
    slow.finish();
}

/// The spread of `find_tools` over every request of the public retrieval set
/// (tests/retrieval/requests.toml, both forms), with `why` for the first ten as the
/// answer says it: each query timed 20 times, printed as p50 / p99 / max (criterion
/// gives means; the goal is a p99).
fn percentiles(catalog: &tool_broker::catalog::Catalog) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/retrieval/requests.toml"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let set: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let queries: Vec<String> = set
        .get("request")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|r| ["words", "sentence"].map(|k| r.get(k).and_then(toml::Value::as_str)))
        .flatten()
        .map(String::from)
        .collect();
    let mut times = Vec::with_capacity(queries.len() * 20);
    for _ in 0..20 {
        for query in &queries {
            let started = std::time::Instant::now();
            let search = catalog.search();
            let hits = search.search_all(None, black_box(query), |_| true);
            let why = search.why(query);
            let said: usize = hits.iter().take(10).map(|h| why.of(h).len()).sum();
            black_box(said);
            times.push(started.elapsed());
        }
    }
    times.sort_unstable();
    let at = |q: f64| {
        let i = (times.len().saturating_sub(1) as f64 * q) as usize;
        times.get(i).copied().unwrap_or_default()
    };
    println!(
        "find_tools + why over the public set ({} queries x 20): p50 {:?}, p99 {:?}, max {:?}",
        queries.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

criterion_group!(benches, discovery);
criterion_main!(benches);
