//! The retrieval floors of `find_tools`: the public set in
//! `tests/retrieval/requests.toml`, each request in both forms, sent to the MCP
//! discovery `find_tools` as a model sends it. The held-out part must reach the floors;
//! the figures of both parts, per service, are printed (`cargo test retrieval --
//! --nocapture`) and recorded in bench/README.md.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::json;
use wiremock::MockServer;

use crate::support::{Setup, TestBroker, root};

/// Search words: top-1 and top-5 floors; sentences: top-5 floor.
const WORDS_TOP1: f64 = 0.85;
const WORDS_TOP5: f64 = 0.97;
const SENTENCE_TOP5: f64 = 0.60;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Set {
    request: Vec<Request>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    words: String,
    sentence: String,
    expect: Vec<String>,
    #[serde(default)]
    held_out: bool,
}

/// Hits of one part, one form, one service: top-1, top-5, the sum of reciprocal ranks
/// within the first ten (MRR@10), asked.
#[derive(Default, Clone, Copy)]
struct Tally {
    top1: usize,
    top5: usize,
    reciprocal: f64,
    asked: usize,
}

impl Tally {
    fn add(&mut self, rank: Option<usize>) {
        self.asked += 1;
        self.top1 += usize::from(rank == Some(0));
        self.top5 += usize::from(rank.is_some_and(|r| r < 5));
        self.reciprocal += rank.map_or(0.0, |r| 1.0 / (r + 1) as f64);
    }

    fn share(hits: usize, asked: usize) -> f64 {
        hits as f64 / asked.max(1) as f64
    }

    fn cells(self) -> String {
        format!(
            "{:.0}% | {:.0}% | {:.2}",
            100.0 * Self::share(self.top1, self.asked),
            100.0 * Self::share(self.top5, self.asked),
            self.reciprocal / self.asked.max(1) as f64
        )
    }
}

/// The full names `find_tools` ranks first for a query, best first (at most ten).
async fn top10(broker: &TestBroker, query: &str) -> Vec<String> {
    let (status, reply) = crate::support::mcp_tools_call(
        broker,
        json!({ "name": "find_tools", "arguments": { "query": query, "limit": 10 } }),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    let results = &reply["result"]["structuredContent"]["data"]["results"];
    assert!(results.is_array(), "`{query}`: {reply}");
    results
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["fullName"].as_str().map(String::from))
        .collect()
}

#[tokio::test]
async fn find_tools_reaches_the_floors_on_the_held_out_requests() {
    let text = std::fs::read_to_string(root().join("tests/retrieval/requests.toml")).unwrap();
    let set: Set = toml::from_str(&text).unwrap();
    let catalog = crate::support::embedded_catalog();
    // The set is what a fair measure needs: 200 requests or more, every service, every
    // expected name a tool (a typo must not pass as a miss).
    assert!(set.request.len() >= 200, "{} requests", set.request.len());
    let mut services = BTreeSet::new();
    for r in &set.request {
        assert!(!r.expect.is_empty(), "`{}` expects nothing", r.words);
        for name in &r.expect {
            let tool = catalog
                .resolve(name)
                .unwrap_or_else(|| panic!("`{}` expects `{name}`, which is not a tool", r.words));
            assert_eq!(&tool.full_name, name, "expect canonical names");
            services.insert(tool.service.clone());
        }
    }
    assert_eq!(services.len(), catalog.services.len(), "{services:?}");

    let server = MockServer::start().await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    // (held out, form, service) -> tally; service "all" sums them.
    let mut tallies: BTreeMap<(bool, &str, String), Tally> = BTreeMap::new();
    let mut misses = Vec::new();
    for r in &set.request {
        let service = r.expect[0]
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string();
        for (form, query) in [("words", &r.words), ("sentence", &r.sentence)] {
            let found = top10(&broker, query).await;
            let rank = found.iter().position(|n| r.expect.contains(n));
            for s in [service.clone(), "all".to_string()] {
                tallies.entry((r.held_out, form, s)).or_default().add(rank);
            }
            if rank != Some(0) && !r.held_out {
                misses.push(format!(
                    "  {form} `{query}`: got {:?}, want one of {:?}",
                    found.first(),
                    r.expect
                ));
            }
        }
    }
    let received = server.received_requests().await.unwrap_or_default();
    assert!(received.is_empty(), "find_tools contacted an upstream");

    println!(
        "| part | service | words top-1 | words top-5 | words MRR | sentences top-1 | sentences top-5 | sentences MRR |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for held_out in [true, false] {
        let part = if held_out { "held out" } else { "tuned on" };
        let names: BTreeSet<&String> = tallies.keys().map(|(_, _, s)| s).collect();
        for s in names {
            let get = |form| {
                tallies
                    .get(&(held_out, form, s.clone()))
                    .copied()
                    .unwrap_or_default()
            };
            let (w, t) = (get("words"), get("sentence"));
            if w.asked > 0 {
                println!(
                    "| {part} | {s} ({}) | {} | {} |",
                    w.asked,
                    w.cells(),
                    t.cells()
                );
            }
        }
    }
    println!(
        "first-rank misses of the tuned-on part:\n{}",
        misses.join("\n")
    );

    let held = |form| {
        tallies
            .get(&(true, form, "all".to_string()))
            .copied()
            .unwrap_or_default()
    };
    let (w, t) = (held("words"), held("sentence"));
    let floors = [
        (
            "search words top-1",
            Tally::share(w.top1, w.asked),
            WORDS_TOP1,
        ),
        (
            "search words top-5",
            Tally::share(w.top5, w.asked),
            WORDS_TOP5,
        ),
        (
            "sentences top-5",
            Tally::share(t.top5, t.asked),
            SENTENCE_TOP5,
        ),
    ];
    let under: Vec<String> = floors
        .iter()
        .filter(|(_, got, floor)| got < floor)
        .map(|(what, got, floor)| format!("{what}: {:.1}% < {:.0}%", got * 100.0, floor * 100.0))
        .collect();
    assert!(
        under.is_empty(),
        "held-out retrieval under the floor: {under:?}"
    );
}

/// Each hit says why it ranked: the query's words it matched, as the person wrote them
/// (or as the tool says them, for a word read from a phrase or an id), and a word
/// matched through a synonym as "bill as invoice".
#[tokio::test]
async fn each_hit_says_why_it_ranked() {
    let server = MockServer::start().await;
    let broker = TestBroker::start(Setup::all_upstreams(&server.uri())).await;
    let why = |reply: &serde_json::Value| -> Vec<(String, String)> {
        reply["result"]["structuredContent"]["data"]["results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                let name = r["fullName"].as_str().unwrap_or_default().to_string();
                (name, r["why"].as_str().unwrap_or("<none>").to_string())
            })
            .collect()
    };
    let ask = |query: &'static str| {
        crate::support::mcp_tools_call(
            &broker,
            json!({ "name": "find_tools", "arguments": { "query": query, "limit": 3 } }),
            &[],
        )
    };
    let (status, reply) = ask("Refunds for charge ch_3MmlLrLkdIwHu7ix0snN0B15").await;
    assert_eq!(status, 200, "{reply}");
    let hits = why(&reply);
    let (name, first) = hits.first().cloned().unwrap_or_default();
    assert!(name.starts_with("payments."), "{hits:?}");
    // "Refunds" as written; "charge" from the id, spelled as the tool says it.
    assert!(
        first.starts_with("matched ") && first.contains("charge") && first.contains("refunds"),
        "{hits:?}"
    );
    assert!(
        hits.iter()
            .all(|(_, w)| w.starts_with("matched ") || w.contains(" as ")),
        "{hits:?}"
    );
    let (_, reply) = ask("void a bill").await;
    let hits = why(&reply);
    assert!(
        hits.iter().any(|(_, w)| w.contains("bill as invoice")),
        "{hits:?}"
    );
}
