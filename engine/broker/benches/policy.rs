//! Policy decisions (docs/policy.md, "Cost"): one decision of a write with arguments,
//! one of a read, one visibility question and a new caller's first decision, under a
//! set of 2,000 policies (one per tool plus role-wide ones) and under 50; compiling the
//! 2,000-policy set.
//!
//! Run: `cargo bench -p tool-broker --bench policy`. Figures: `bench/README.md`.
#![allow(clippy::panic, reason = "a benchmark with a broken setup should stop")]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use tool_broker::caller::Caller;
use tool_broker::catalog::Catalog;
use tool_broker::catalog::compile::compile;
use tool_broker::catalog::source::Sources;
use tool_broker::config::PolicyConfig;
use tool_broker::policy::{Facts, Policies, load, schema};

/// One permit per tool for one of 20 roles (capping `amount` where the tool has it),
/// then role-wide rules until `total`: a few for every tool, the rest one team per
/// service (`permit(caller in Role::"team-7", action in Action::"payments", ...)`).
fn policy_text(catalog: &Catalog, total: usize) -> String {
    let mut out = String::new();
    let wide = [
        "permit(principal in Role::\"reader\", action in Action::\"read\", resource);",
        "forbid(principal, action in Action::\"destructive\", resource) unless { principal in Role::\"admin\" };",
        "permit(principal in Role::\"admin\", action, resource);",
        "forbid(principal in Role::\"contractor\", action in Action::\"write\", resource) when { !context.dryRun };",
    ];
    let services: Vec<&String> = catalog.services.keys().collect();
    let per_tool = total.saturating_sub(wide.len()).min(catalog.tools.len());
    for (i, tool) in catalog.tools.iter().take(per_tool).enumerate() {
        let amount = tool.argument_names.iter().any(|a| a == "amount");
        let condition = if amount {
            " when { context.arguments has amount && context.arguments.amount <= 5000 }"
        } else {
            ""
        };
        out.push_str(&format!(
            "@id(\"tool-{i}\")\npermit(principal in Role::\"r{}\", action == Action::\"{}\", resource){condition};\n",
            i % 20,
            tool.full_name
        ));
    }
    for (i, rule) in wide.iter().enumerate().take(total.saturating_sub(per_tool)) {
        out.push_str(&format!("@id(\"wide-{i}\")\n{rule}\n"));
    }
    let mut i = 0;
    while per_tool + wide.len() + i < total {
        let service = services[i % services.len()];
        out.push_str(&format!(
            "@id(\"team-{i}\")\npermit(principal in Role::\"team-{i}\", action in Action::\"{service}\", resource) when {{ resource.tier == \"agent_ready\" }};\n"
        ));
        i += 1;
    }
    out
}

fn compiled(catalog: &Catalog, total: usize) -> Policies {
    let config = PolicyConfig {
        dir: "unused".into(),
        claims: Vec::new(),
        set_claims: Vec::new(),
        units: Vec::new(),
    };
    let schema = schema::schema(catalog, &config).unwrap_or_else(|e| panic!("{e:?}"));
    let files = vec![("bench.cedar".to_string(), policy_text(catalog, total))];
    let loaded = load::load(&files, schema).unwrap_or_else(|e| panic!("{e:?}"));
    Policies::compile(loaded, catalog).unwrap_or_else(|e| panic!("{e}"))
}

fn policy(c: &mut Criterion) {
    let catalog = compile(&Sources::embedded()).unwrap_or_else(|d| panic!("{d}"));
    let refund = catalog
        .resolve("payments.post_refunds")
        .unwrap_or_else(|| panic!("no refund tool"));
    let read = catalog
        .resolve("payments.get_customers")
        .unwrap_or_else(|| panic!("no read tool"));
    let caller = Caller {
        roles: vec!["r3".into(), "payments-team".into()],
        ..Caller::unrestricted("support")
    };
    let Value::Object(args) = json!({ "charge": "ch_1", "amount": 4200, "reason": "duplicate" })
    else {
        panic!("not an object")
    };
    let empty = Map::new();
    let now = jiff::Timestamp::UNIX_EPOCH;
    for total in [2_000, 50] {
        let policies = compiled(&catalog, total);
        c.bench_function(
            &format!("decide: a refund with arguments ({total} policies)"),
            |b| {
                b.iter(|| {
                    policies.decide(refund, &caller, black_box(&args), Facts::default(), || now)
                })
            },
        );
        c.bench_function(
            &format!("decide: a read without arguments ({total} policies)"),
            |b| {
                b.iter(|| {
                    policies.decide(read, &caller, black_box(&empty), Facts::default(), || now)
                })
            },
        );
        c.bench_function(&format!("may_see: one tool ({total} policies)"), |b| {
            b.iter(|| policies.may_see(black_box(refund), &caller))
        });
        // What is kept per caller is made at its first question: a caller never seen.
        let mut n = 0u64;
        c.bench_function(
            &format!("decide: a new caller's first refund ({total} policies)"),
            |b| {
                b.iter_batched(
                    || {
                        n += 1;
                        Caller {
                            roles: caller.roles.clone(),
                            ..Caller::unrestricted(&format!("support-{n}"))
                        }
                    },
                    |new| policies.decide(refund, &new, black_box(&args), Facts::default(), || now),
                    criterion::BatchSize::SmallInput,
                )
            },
        );
    }
    let mut slow = c.benchmark_group("policy compile");
    slow.sample_size(10);
    slow.bench_function("load, validate and slice 2,000 policies", |b| {
        b.iter(|| compiled(&catalog, 2_000))
    });
    slow.finish();
}

criterion_group!(benches, policy);
criterion_main!(benches);
