//! Tests as data: every file in `tests/cases/` is one call. It names a tool, its
//! arguments and headers, what a local upstream answers, the exact request the upstream
//! must receive (or that it receives nothing), and the response the caller must get.
//! Add a case by adding a file; the harness reports every failing case by name.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker, root};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// What the case shows.
    about: String,
    tool: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Extra broker config (TOML text).
    #[serde(default)]
    config: Option<String>,
    #[serde(default)]
    upstream: Upstream,
    /// The request the upstream must receive; absent: it must receive nothing.
    #[serde(default)]
    request: Option<ExpectRequest>,
    response: ExpectResponse,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Upstream {
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    json: Option<Value>,
    #[serde(default)]
    raw: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectRequest {
    method: String,
    path: String,
    /// Exact query pairs in order (decoded).
    #[serde(default)]
    query: Vec<(String, String)>,
    /// Headers that must be present with exactly these values.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Headers that must not be sent.
    #[serde(default)]
    absent_headers: Vec<String>,
    /// Exact JSON body.
    #[serde(default)]
    json: Option<Value>,
    /// Exact form body (decoded pairs, in order).
    #[serde(default)]
    form: Option<Vec<(String, String)>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectResponse {
    status: u16,
    /// Every key given must match exactly; objects are compared as subsets.
    #[serde(default)]
    envelope: Option<Value>,
}

/// `expected` is contained in `actual`: objects by subset, arrays element by element
/// (same length), everything else exactly.
pub fn assert_subset(expected: &Value, actual: &Value, at: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, v) in e {
                let Some(av) = a.get(k) else {
                    return Err(format!("{at}/{k}: missing"));
                };
                assert_subset(v, av, &format!("{at}/{k}"))?;
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                assert_subset(ev, av, &format!("{at}/{i}"))?;
            }
            Ok(())
        }
        (e, a) if e == a => Ok(()),
        (e, a) => Err(format!("{at}: expected {e}, got {a}")),
    }
}

async fn run_case(name: &str, case: Case) -> Result<(), String> {
    let server = MockServer::start().await;
    let status = case.upstream.status.unwrap_or(200);
    let template = match (&case.upstream.json, &case.upstream.raw) {
        (_, Some(raw)) => ResponseTemplate::new(status).set_body_string(raw.clone()),
        (Some(json), None) => ResponseTemplate::new(status).set_body_json(json),
        (None, None) => ResponseTemplate::new(status).set_body_json(serde_json::json!({})),
    };
    Mock::given(any())
        .respond_with(template)
        .mount(&server)
        .await;
    let mut setup = Setup::all_upstreams(&server.uri());
    setup.config = case.config.clone();
    let broker = TestBroker::start(setup).await;
    let headers: Vec<(&str, &str)> = case
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let arguments = case.arguments.clone().unwrap_or(Value::Null);
    let (got_status, body) = broker.call(&case.tool, arguments, &headers).await;

    let received = server.received_requests().await.unwrap_or_default();
    match &case.request {
        None if !received.is_empty() => {
            return Err(format!(
                "{name}: the upstream must receive nothing, got {} {}",
                received[0].method, received[0].url
            ));
        }
        None => {}
        Some(expect) => {
            if received.len() != 1 {
                return Err(format!(
                    "{name}: expected 1 upstream request, got {}",
                    received.len()
                ));
            }
            let req = &received[0];
            let mut problems = Vec::new();
            if req.method.as_str() != expect.method {
                problems.push(format!("method {} != {}", req.method, expect.method));
            }
            if req.url.path() != expect.path {
                problems.push(format!("path {} != {}", req.url.path(), expect.path));
            }
            let query: Vec<(String, String)> = req
                .url
                .query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            if query != expect.query {
                problems.push(format!("query {query:?} != {:?}", expect.query));
            }
            for (k, v) in &expect.headers {
                let got = req.headers.get(k.as_str()).and_then(|h| h.to_str().ok());
                if got != Some(v.as_str()) {
                    problems.push(format!("header {k}: {got:?} != {v:?}"));
                }
            }
            for k in &expect.absent_headers {
                if req.headers.contains_key(k.as_str()) {
                    problems.push(format!("header {k} must not be sent"));
                }
            }
            if let Some(json) = &expect.json {
                let got: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
                if &got != json {
                    problems.push(format!("json body {got} != {json}"));
                }
            }
            if let Some(form) = &expect.form {
                let got: Vec<(String, String)> = url::form_urlencoded::parse(&req.body)
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect();
                if &got != form {
                    problems.push(format!("form body {got:?} != {form:?}"));
                }
                let ct = req
                    .headers
                    .get("content-type")
                    .and_then(|h| h.to_str().ok());
                if ct != Some("application/x-www-form-urlencoded") {
                    problems.push(format!("form content-type {ct:?}"));
                }
            }
            if expect.json.is_none() && expect.form.is_none() && !req.body.is_empty() {
                problems.push(format!(
                    "unexpected body {}",
                    String::from_utf8_lossy(&req.body)
                ));
            }
            if !problems.is_empty() {
                return Err(format!("{name}: upstream request: {}", problems.join("; ")));
            }
        }
    }
    if got_status != case.response.status {
        return Err(format!(
            "{name}: status {got_status} != {}\n{body:#}",
            case.response.status
        ));
    }
    if let Some(expected) = &case.response.envelope {
        assert_subset(expected, &body, "")
            .map_err(|e| format!("{name}: envelope {e}\n{body:#}"))?;
    }
    Ok(())
}

#[tokio::test]
async fn every_case_in_tests_cases() {
    let dir = root().join("tests").join("cases");
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    entries.sort();
    assert!(
        entries.len() >= 20,
        "expected the case folder to hold the cases"
    );
    let mut failures = Vec::new();
    for path in &entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let case: Case = match toml::from_str(&text) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{name}: does not parse: {e}"));
                continue;
            }
        };
        assert!(!case.about.is_empty());
        if let Err(e) = run_case(&name, case).await {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
