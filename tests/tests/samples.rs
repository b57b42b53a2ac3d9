//! Every HTTP tool of the shipped catalog accepts a minimal sample of its own argument
//! schema, and that call renders an upstream request. This is what a conformance run
//! sends to a mock of each upstream; here it proves, offline, that no imported or
//! hand-written schema is unsatisfiable and no request mapping fails on valid input.

use serde_json::{Map, Value, json};
use tool_broker::call::args;
use tool_broker::catalog::Action;
use tool_broker::catalog::sample::sample;
use tool_broker::catalog::template::Scope;
use tool_broker::upstream::render::render;

use tool_broker::catalog::source::Sources;

use crate::support::embedded_catalog;

#[test]
fn every_tool_accepts_a_sample_of_its_schema_and_renders_a_request() {
    let catalog = embedded_catalog();
    let mut failures = Vec::new();
    let mut checked = 0;
    for tool in &catalog.tools {
        let Action::Http(plan) = &tool.action else {
            continue;
        };
        let arguments = sample(&tool.arguments.value());
        let prepared: Map<String, Value> = match args::prepare(tool, Some(arguments.clone())) {
            Ok(a) => a,
            Err(e) => {
                failures.push(format!(
                    "{}: sample {arguments} fails its schema: {:?}",
                    tool.full_name, e.details
                ));
                continue;
            }
        };
        let context = Scope::new(json!({
            "args": prepared,
            "ctx": { "location_id": "loc_sample" },
            "settings": { "drive_folder_id": "folder_sample" },
            "tool": { "service": tool.service, "name": tool.name },
        }));
        if let Err(e) = render(plan, &catalog.templates, &context) {
            failures.push(format!(
                "{}: sample {arguments} does not render: {}",
                tool.full_name, e.message
            ));
            continue;
        }
        checked += 1;
    }
    assert!(checked > 1500, "only {checked} tools checked");
    assert!(
        failures.is_empty(),
        "{} of {} tools failed:\n{}",
        failures.len(),
        checked + failures.len(),
        failures.join("\n")
    );
}

/// Plain expressions (literals, lookups, picks) are evaluated without minijinja; every
/// HTTP tool renders exactly the same request both ways, for a sample of its schema,
/// for no arguments at all, and for every declared argument set to null, with and
/// without the settings and context the templates read.
#[test]
fn plain_expressions_render_what_minijinja_renders() {
    let plain = embedded_catalog();
    let options = tool_broker::catalog::compile::Options {
        plain_expressions: false,
        ..Default::default()
    };
    let (templated, _) = tool_broker::catalog::compile::compile_with(&Sources::embedded(), options)
        .unwrap_or_else(|d| panic!("{d}"));
    let mut failures = Vec::new();
    let mut compared = 0;
    for (tool, twin) in plain.tools.iter().zip(&templated.tools) {
        assert_eq!(tool.full_name, twin.full_name);
        let (Action::Http(plan), Action::Http(twin_plan)) = (&tool.action, &twin.action) else {
            continue;
        };
        let nulls: Map<String, Value> = tool
            .argument_names
            .iter()
            .map(|k| (k.clone(), Value::Null))
            .collect();
        let samples = [
            sample(&tool.arguments.value()),
            json!({}),
            Value::Object(nulls),
        ];
        for args in samples {
            for full in [true, false] {
                let context = if full {
                    json!({
                        "args": args,
                        "ctx": { "location_id": "loc_sample" },
                        "settings": { "drive_folder_id": "folder_sample" },
                        "tool": { "service": tool.service, "name": tool.name },
                    })
                } else {
                    json!({ "args": args })
                };
                let ours = render(plan, &plain.templates, &Scope::borrowed(&context))
                    .map_err(|e| e.message);
                let theirs = render(twin_plan, &templated.templates, &Scope::borrowed(&context))
                    .map_err(|e| e.message);
                if ours != theirs {
                    failures.push(format!(
                        "{}: {context}: plain {ours:?}, minijinja {theirs:?}",
                        tool.full_name
                    ));
                }
                compared += 1;
            }
        }
    }
    assert!(compared > 9000, "only {compared} renders compared");
    assert!(
        failures.is_empty(),
        "{} renders differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every local tool, called with a sample of its own schema (confirmation flags set)
/// against an upstream that answers `{}` to anything, answers without `internal_error`:
/// no hook expression fails on valid input.
#[tokio::test]
async fn every_local_tool_answers_a_sample_without_an_internal_error() {
    use wiremock::matchers::any;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use crate::support::{Setup, TestBroker};

    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({})))
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = Some(
        "[settings.imagegen]\npoll_interval_ms = 1\n[settings.agent]\npoll_interval_ms = 1\n"
            .into(),
    );
    let broker = TestBroker::start(setup).await;
    let catalog = embedded_catalog();
    let mut failures = Vec::new();
    let mut checked = 0;
    for tool in &catalog.tools {
        if !matches!(tool.action, Action::Hook(_)) || !tool.exposed {
            continue;
        }
        let mut arguments = sample(&tool.arguments.value());
        if let Some(obj) = arguments.as_object_mut() {
            for (flag, value) in [("confirm", json!(true)), ("wait_seconds", json!(0))] {
                if tool.declares(flag) {
                    obj.insert(flag.into(), value);
                }
            }
        }
        let headers = [
            ("x-agent-api-key", "k"),
            ("x-imagegen-api-key", "k"),
            ("x-hosting-api-key", "k"),
            ("x-payments-api-key", "k"),
            ("x-leads-api-key", "k"),
            ("x-scraper-api-key", "k"),
            ("x-crm-location-id", "loc_sample"),
        ];
        let (status, body) = broker
            .call(&tool.full_name, arguments.clone(), &headers)
            .await;
        if status >= 500 {
            failures.push(format!(
                "{} with {arguments}: {status} {body}",
                tool.full_name
            ));
        }
        checked += 1;
    }
    assert!(checked > 40, "only {checked} local tools checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A hostile argument value: deep, long, odd text, every type.
fn hostile() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "(?s).{0,40}".prop_map(Value::String),
        Just(Value::String(
            "{{ 7*7 }}{% for x in range(999999) %}{% endfor %}".into()
        )),
        Just(Value::String("..".into())),
        (0usize..20_000).prop_map(|n| Value::String("x".repeat(n))),
    ];
    leaf.prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

    /// Any tool's request mapping, given hostile values under its own argument names
    /// (unvalidated, which the real path never does), renders or refuses: no panic, and
    /// a template that would loop runs out of fuel.
    #[test]
    fn any_tool_renders_or_refuses_hostile_arguments(
        pick in proptest::prelude::any::<proptest::sample::Index>(),
        values in proptest::collection::vec(hostile(), 0..8),
        extra in hostile(),
    ) {
        let catalog = embedded_catalog();
        let http: Vec<_> = catalog
            .tools
            .iter()
            .filter_map(|t| match &t.action {
                Action::Http(plan) => Some((t, plan)),
                _ => None,
            })
            .collect();
        let (tool, plan) = http[pick.index(http.len())];
        let schema = tool.arguments.value();
        let names: Vec<String> = schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let mut arguments: Map<String, Value> =
            names.into_iter().zip(values).collect();
        arguments.insert("unexpected".into(), extra);
        let context = Scope::new(json!({
            "args": arguments,
            "ctx": { "location_id": "loc_sample" },
            "settings": {},
            "tool": { "service": tool.service, "name": tool.name },
        }));
        let _ = render(plan, &catalog.templates, &context);
    }
}
