//! The gate's guarantees across every kind of tool that runs others (decision 017), as
//! data: `tests/gate/hooks.toml` names each kind with the inner tool it sends. Under
//! each confirmation mode (`flag`, `bound`, `human`), for the inner tool:
//!
//! - a `forbid` on it: its request never reaches the upstream;
//! - a budget on its cost: when the call runs to the end (token or approval given where
//!   the mode wants one), it is charged;
//! - every flag a model could set and no token or approval (`bound`, `human`): no
//!   request that changes state leaves.
//!
//! A local tool (navigation, a lookup) sends nothing in any mode.

use serde::Deserialize;
use serde_json::{Value, json};
use wiremock::matchers::{any, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker, classification, root};

#[derive(Debug, Deserialize)]
struct Cases {
    case: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    kind: String,
    tool: String,
    arguments: Value,
    inner: Option<String>,
    request: Option<String>,
    #[serde(default)]
    mocks: Vec<Answer>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    method: String,
    path: String,
    body: Value,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(root().join("tests/gate/hooks.toml")).unwrap();
    toml::from_str::<Cases>(&text).unwrap().case
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Flag,
    Bound,
    Human,
}

const MODES: [Mode; 3] = [Mode::Flag, Mode::Bound, Mode::Human];

/// Every service's key header, and the crm location.
const HEADERS: [(&str, &str); 6] = [
    ("x-crm-api-key", "ck_property_1"),
    ("x-crm-location-id", "loc1"),
    ("x-imagegen-api-key", "ik_property_2"),
    ("x-agent-api-key", "ak_property_3"),
    ("x-leads-api-key", "lk_property_4"),
    ("x-payments-api-key", "pk_property_5"),
];

const APPROVAL_KEY: &str = "approval-sealing-key-of-at-least-32-chars";

async fn upstream(case: &Case) -> MockServer {
    let server = MockServer::start().await;
    for answer in &case.mocks {
        Mock::given(method(answer.method.as_str()))
            .and(path(answer.path.as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_json(&answer.body))
            .mount(&server)
            .await;
    }
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({})))
        .mount(&server)
        .await;
    server
}

/// The mode's top-level config lines and its tables.
fn mode_config(mode: Mode) -> (&'static str, &'static str) {
    match mode {
        Mode::Flag => ("", ""),
        Mode::Bound => ("confirmation = \"bound\"\n", ""),
        Mode::Human => (
            "confirmation = \"human\"\napproval_key_env = \"APPROVAL_KEY\"\napproval_wait_seconds = 0\n",
            "[[approvers]]\nname = \"alice\"\nsha256 = \"0000000000000000000000000000000000000000000000000000000000000000\"\n",
        ),
    }
}

async fn start(server: &MockServer, mode: Mode, extra: &str) -> TestBroker {
    let mut setup = Setup::all_upstreams(&server.uri());
    let (top, tables) = mode_config(mode);
    setup.config = Some(format!("{top}\n{extra}\n{tables}"));
    setup.env.insert("APPROVAL_KEY".into(), APPROVAL_KEY.into());
    TestBroker::start(setup).await
}

/// How many times the upstream received `METHOD path`.
async fn received(server: &MockServer, request: &str) -> usize {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| format!("{} {}", r.method, r.url.path()) == request)
        .count()
}

/// The requests the upstream received that a write tool of `services` describes (or,
/// described by none, are not a `GET`).
async fn state_changes(server: &MockServer, broker: &TestBroker, services: &[&str]) -> Vec<String> {
    let catalog = &broker.broker.parts.catalog;
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| {
            let verb: hyper::Method = r.method.as_str().parse().unwrap();
            let described: Vec<_> = services
                .iter()
                .filter_map(|s| catalog.described_endpoint(s, &verb, r.url.path()))
                .collect();
            match described.first() {
                Some((tool, _)) => tool.risk.as_str() == "write",
                None => verb != hyper::Method::GET,
            }
        })
        .map(|r| format!("{} {}", r.method, r.url.path()))
        .collect()
}

/// The call, then, where the mode wants one and the answer asks for it, the token or
/// an approval (decided in the store as a person would) and the call again.
async fn run_to_the_end(broker: &TestBroker, case: &Case, mode: Mode) -> (u16, Value) {
    let (status, body) = broker
        .call(&case.tool, case.arguments.clone(), &HEADERS)
        .await;
    match mode {
        Mode::Bound => {
            let token = body["data"]["confirmationToken"]
                .as_str()
                .or(body["error"]["details"]["confirmationToken"].as_str());
            if let Some(token) = token {
                let mut args = case.arguments.clone();
                args["confirmationToken"] = json!(token);
                return broker.call(&case.tool, args, &HEADERS).await;
            }
        }
        Mode::Human => {
            if body["error"]["details"]["reason"] == "approval_pending" {
                let id = body["error"]["details"]["approvalId"].as_str().unwrap();
                let now = jiff::Timestamp::now().as_millisecond();
                let store = &broker.broker.parts.store;
                assert!(store.decide_approval(id, "alice", true, now).await.unwrap());
                let mut args = case.arguments.clone();
                args["approvalId"] = json!(id);
                return broker.call(&case.tool, args, &HEADERS).await;
            }
        }
        Mode::Flag => {}
    }
    (status, body)
}

fn services(case: &Case) -> Vec<&str> {
    [Some(case.tool.as_str()), case.inner.as_deref()]
        .into_iter()
        .flatten()
        .filter_map(|t| t.split_once('.').map(|(s, _)| s))
        .collect()
}

#[tokio::test]
async fn every_tool_that_runs_others_keeps_the_gates_guarantees_in_every_mode() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in cases() {
        for mode in MODES {
            let label = format!("{} ({}, {mode:?})", case.kind, case.tool);
            let (Some(inner), Some(request)) = (&case.inner, &case.request) else {
                // A local tool: nothing leaves, whatever the mode.
                let server = upstream(&case).await;
                let broker = start(&server, mode, "").await;
                let (status, body) = run_to_the_end(&broker, &case, mode).await;
                let sent = server.received_requests().await.unwrap_or_default().len();
                if status != 200 || sent != 0 {
                    failures.push(format!("{label}: {status}, {sent} sent: {body}"));
                }
                checked += 1;
                continue;
            };
            let write = broker_tool_is_write(inner);

            // A forbid on the inner tool: its request never leaves.
            let server = upstream(&case).await;
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(
                dir.path().join("rules.cedar"),
                format!(
                    "@id(\"all\")\npermit(principal, action, resource);\n\
                     @id(\"not-inner\")\nforbid(principal, action == Action::\"{inner}\", resource);\n"
                ),
            )
            .unwrap();
            let broker = start(
                &server,
                mode,
                &format!("[policy]\ndir = \"{}\"\n", dir.path().display()),
            )
            .await;
            let (status, body) = run_to_the_end(&broker, &case, mode).await;
            let n = received(&server, request).await;
            if n != 0 {
                failures.push(format!("{label}: a forbid on {inner}, and {request} was sent {n} times ({status}: {body})"));
            }

            // A budget on the inner tool's cost: charged when it runs.
            let server = upstream(&case).await;
            let broker = start(
                &server,
                mode,
                &format!(
                    "[[costs.cost]]\ntool = \"{inner}\"\nconstant = 1\n\n\
                     [[budgets]]\nname = \"daily\"\nunit = \"credits\"\nlimit = 100\nwindow = \"1d\"\napplies_to = \"each-key\"\n"
                ),
            )
            .await;
            let (status, body) = run_to_the_end(&broker, &case, mode).await;
            let n = received(&server, request).await;
            let (_, budget) = broker.call("portal.get_budget", json!({}), &[]).await;
            let used = budget["data"]["budgets"][0]["used"].as_u64().unwrap_or(0);
            let sent_right = if write { n == 1 } else { n >= 1 };
            if !sent_right || used < 1 || (write && used != 1) {
                failures.push(format!(
                    "{label}: run to the end, {request} sent {n} times, {used} charged ({status}: {body})"
                ));
            }

            // Every flag, no token or approval: nothing that changes state leaves.
            if mode != Mode::Flag {
                let server = upstream(&case).await;
                let broker = start(&server, mode, "").await;
                let (status, body) = broker
                    .call(&case.tool, case.arguments.clone(), &HEADERS)
                    .await;
                let changed = state_changes(&server, &broker, &services(&case)).await;
                if !changed.is_empty() {
                    failures.push(format!(
                        "{label}: unconfirmed, and {changed:?} left ({status}: {}, {body})",
                        classification(&body)
                    ));
                }
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(checked, cases().len() * MODES.len());
}

/// Whether the catalog's `tool` is a write tool.
fn broker_tool_is_write(tool: &str) -> bool {
    crate::support::embedded_catalog()
        .resolve(tool)
        .unwrap_or_else(|| panic!("{tool} is not in the catalog"))
        .risk
        .as_str()
        == "write"
}

/// Every key header the catalog's services read, and the crm location.
const ALL_KEYS: [(&str, &str); 9] = [
    ("x-agent-api-key", "ak_sweep"),
    ("x-crm-api-key", "ck_sweep"),
    ("x-crm-location-id", "loc1"),
    ("x-hosting-api-key", "hk_sweep"),
    ("x-imagegen-api-key", "ik_sweep"),
    ("x-leads-api-key", "lk_sweep"),
    ("x-media-api-key", "mk_sweep"),
    ("x-payments-api-key", "pk_sweep"),
    ("x-scraper-api-key", "sk_sweep"),
];

/// Every write tool of the catalog, called with arguments made from its schema and every
/// flag a model could set (`confirm`, `confirmApply`, `dryRun = false`, where the tool
/// takes them) and no token or approval, under `bound` and under `human`: the local
/// upstream records no request that changes state. Prints how many calls got past
/// argument validation, and holds that figure above a floor so the sweep cannot quietly
/// stop reaching the tools.
#[tokio::test]
async fn no_write_tool_of_the_catalog_sends_a_write_on_flags_alone() {
    let catalog = crate::support::embedded_catalog();
    let writes: Vec<_> = catalog
        .tools
        .iter()
        .filter(|t| t.risk.as_str() == "write")
        .collect();
    let rules = &catalog.rules.confirmation;
    let mut leaks = Vec::new();
    let mut figures = Vec::new();
    for mode in [Mode::Bound, Mode::Human] {
        let server = MockServer::start().await;
        Mock::given(any())
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "id": "x1" })))
            .mount(&server)
            .await;
        let broker = start(&server, mode, "").await;
        let mut seen = 0;
        let mut reached = 0;
        for tool in &writes {
            let mut args = crate::support::generate::arguments(&tool.arguments.value());
            if let Some(map) = args.as_object_mut() {
                for (flag, value) in [
                    (rules.confirm_arg.as_str(), json!(true)),
                    (rules.apply_arg.as_str(), json!(rules.apply_phrase)),
                    ("dryRun", json!(false)),
                    ("dry_run", json!(false)),
                ] {
                    if tool.declares(flag) {
                        map.insert(flag.to_string(), value);
                    }
                }
            }
            let (status, body) = broker.call(&tool.full_name, args, &ALL_KEYS).await;
            if classification(&body) != "validation_error" {
                reached += 1;
            }
            let received = server.received_requests().await.unwrap_or_default();
            for request in &received[seen..] {
                let verb: hyper::Method = request.method.as_str().parse().unwrap();
                let changes =
                    match catalog.described_endpoint(&tool.service, &verb, request.url.path()) {
                        Some((described, _)) => described.risk.as_str() == "write",
                        None => verb != hyper::Method::GET,
                    };
                if changes {
                    leaks.push(format!(
                        "{mode:?}: {} sent {} {} ({status} {})",
                        tool.full_name,
                        request.method,
                        request.url.path(),
                        classification(&body)
                    ));
                }
            }
            seen = received.len();
        }
        println!(
            "gate sweep, {mode:?}: {} write tools, {reached} reached past argument validation ({:.1}%)",
            writes.len(),
            100.0 * f64::from(reached) / writes.len() as f64
        );
        figures.push(reached);
    }
    assert!(
        leaks.is_empty(),
        "writes left on flags alone:\n{}",
        leaks.join("\n")
    );
    assert!(
        writes.len() > 500,
        "the catalog's write tools: {}",
        writes.len()
    );
    for reached in figures {
        assert!(
            f64::from(reached) >= 0.9 * writes.len() as f64,
            "the generator reached {reached} of {} write tools past validation",
            writes.len()
        );
    }
}
