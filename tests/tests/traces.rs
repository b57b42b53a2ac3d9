//! Traces (decision 013): a call continues the caller's W3C trace
//! (the `traceparent` header, or MCP `params._meta`), sends it upstream, answers its id
//! as `meta.traceId`, and, with an OTLP endpoint set, exports a SERVER span for the call
//! and a CLIENT span for its upstream request, over `http/json` or `http/protobuf`, to a
//! receiver inside the test. No key, token or argument value is in an export.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Setup, TestBroker};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const KEY: (&str, &str) = ("x-payments-api-key", "pk_trace_canary_7");
/// An argument value no span may hold.
const EMAIL: &str = "argument-canary@example.com";

fn traceparent(sampled: bool) -> String {
    format!(
        "00-{TRACE}-{CALLER_SPAN}-{}",
        if sampled { "01" } else { "00" }
    )
}

async fn upstream() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/customers"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "data": [] })))
        .mount(&server)
        .await;
    server
}

async fn receiver() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/traces"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({})))
        .mount(&server)
        .await;
    server
}

async fn broker(upstream: &MockServer, otel: &[(&str, &str)]) -> TestBroker {
    let mut setup = Setup::default();
    setup.upstreams.insert("payments".into(), upstream.uri());
    let mut env = BTreeMap::new();
    env.insert("OTEL_BSP_SCHEDULE_DELAY".to_string(), "20".to_string());
    for (k, v) in otel {
        env.insert((*k).to_string(), (*v).to_string());
    }
    setup.env = env;
    TestBroker::start(setup).await
}

/// The `traceparent` each upstream request carried.
async fn sent_upstream(server: &MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter_map(|r| r.headers.get("traceparent"))
        .map(|v| v.to_str().unwrap().to_string())
        .collect()
}

/// The export bodies the receiver has, once `spans` spans arrived (10 s at most).
async fn exports(
    receiver: &MockServer,
    spans: usize,
    read: fn(&[u8]) -> Vec<Value>,
) -> Vec<(String, Vec<u8>, Vec<Value>)> {
    for _ in 0..500 {
        let requests = receiver.received_requests().await.unwrap_or_default();
        let got: Vec<_> = requests
            .iter()
            .map(|r| {
                let kind = r
                    .headers
                    .get("content-type")
                    .map(|v| v.to_str().unwrap().to_string())
                    .unwrap_or_default();
                (kind, r.body.clone(), read(&r.body))
            })
            .collect();
        if got.iter().map(|g| g.2.len()).sum::<usize>() >= spans {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("fewer than {spans} spans reached the receiver");
}

/// The spans of an OTLP JSON export, each with its attributes as a flat map.
fn json_spans(body: &[u8]) -> Vec<Value> {
    let export: Value = serde_json::from_slice(body).unwrap();
    let mut out = Vec::new();
    for rs in export["resourceSpans"].as_array().unwrap() {
        assert_eq!(
            rs["resource"]["attributes"][0]["key"], "service.name",
            "{rs}"
        );
        for ss in rs["scopeSpans"].as_array().unwrap() {
            for span in ss["spans"].as_array().unwrap() {
                let mut s = span.clone();
                let mut attrs = serde_json::Map::new();
                for a in span["attributes"].as_array().unwrap() {
                    let v = &a["value"];
                    let value = v
                        .get("stringValue")
                        .cloned()
                        .or_else(|| {
                            v.get("intValue")
                                .map(|i| json!(i.as_str().unwrap().parse::<i64>().unwrap()))
                        })
                        .or_else(|| v.get("boolValue").cloned())
                        .unwrap();
                    attrs.insert(a["key"].as_str().unwrap().to_string(), value);
                }
                s["attrs"] = Value::Object(attrs);
                out.push(s);
            }
        }
    }
    out
}

/// Protobuf read by the wire format alone (field numbers from
/// `opentelemetry/proto/trace/v1/trace.proto`), into the JSON shape `json_spans` gives.
mod proto {
    use serde_json::{Value, json};

    fn varint(b: &mut &[u8]) -> u64 {
        let mut n = 0u64;
        let mut shift = 0;
        loop {
            let byte = b[0];
            *b = &b[1..];
            n |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return n;
            }
            shift += 7;
        }
    }

    /// (field, wire type, varint or fixed value, bytes).
    fn fields(mut b: &[u8]) -> Vec<(u64, u64, u64, Vec<u8>)> {
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = varint(&mut b);
            let (field, wt) = (key >> 3, key & 7);
            match wt {
                0 => out.push((field, wt, varint(&mut b), Vec::new())),
                1 => {
                    let (v, rest) = b.split_at(8);
                    out.push((
                        field,
                        wt,
                        u64::from_le_bytes(v.try_into().unwrap()),
                        Vec::new(),
                    ));
                    b = rest;
                }
                5 => {
                    let (v, rest) = b.split_at(4);
                    out.push((
                        field,
                        wt,
                        u64::from(u32::from_le_bytes(v.try_into().unwrap())),
                        Vec::new(),
                    ));
                    b = rest;
                }
                2 => {
                    let len = varint(&mut b) as usize;
                    let (v, rest) = b.split_at(len);
                    out.push((field, wt, 0, v.to_vec()));
                    b = rest;
                }
                other => panic!("wire type {other}"),
            }
        }
        out
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn text(bytes: &[u8]) -> String {
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    pub fn spans(body: &[u8]) -> Vec<Value> {
        let mut out = Vec::new();
        for rs in fields(body).into_iter().filter(|f| f.0 == 1) {
            for ss in fields(&rs.3).into_iter().filter(|f| f.0 == 2) {
                for span in fields(&ss.3).into_iter().filter(|f| f.0 == 2) {
                    let mut s = json!({ "attrs": {} });
                    for (field, _, n, bytes) in fields(&span.3) {
                        match field {
                            1 => s["traceId"] = json!(hex(&bytes)),
                            2 => s["spanId"] = json!(hex(&bytes)),
                            3 => s["traceState"] = json!(text(&bytes)),
                            4 => s["parentSpanId"] = json!(hex(&bytes)),
                            5 => s["name"] = json!(text(&bytes)),
                            6 => s["kind"] = json!(n),
                            7 => s["startTimeUnixNano"] = json!(n.to_string()),
                            8 => s["endTimeUnixNano"] = json!(n.to_string()),
                            9 => {
                                let kv = fields(&bytes);
                                let key = text(&kv.iter().find(|f| f.0 == 1).unwrap().3);
                                let any = fields(&kv.iter().find(|f| f.0 == 2).unwrap().3);
                                let value = match &any[0] {
                                    (1, _, _, b) => json!(text(b)),
                                    (2, _, n, _) => json!(*n == 1),
                                    (3, _, n, _) => json!(*n as i64),
                                    other => panic!("value {other:?}"),
                                };
                                s["attrs"][key] = value;
                            }
                            15 => {
                                let code =
                                    fields(&bytes).iter().find(|f| f.0 == 3).map_or(0, |f| f.2);
                                s["status"] = json!({ "code": code });
                            }
                            16 => s["flags"] = json!(n),
                            _ => {}
                        }
                    }
                    out.push(s);
                }
            }
        }
        out
    }
}

fn find(spans: &[Value], kind: u64) -> &Value {
    spans
        .iter()
        .find(|s| s["kind"] == kind)
        .unwrap_or_else(|| panic!("no span of kind {kind}: {spans:#?}"))
}

/// What every exported call shows: the server span continues the caller's trace and
/// names the tool; the client span is its child and is the span the upstream saw.
fn check_call_spans(spans: &[Value], upstream_traceparent: &str, endpoint: &str) {
    let server = find(spans, 2);
    let client = find(spans, 3);
    assert_eq!(server["traceId"], TRACE);
    assert_eq!(server["parentSpanId"], CALLER_SPAN);
    assert_eq!(server["name"], "tools/call payments.get_customers");
    let a = &server["attrs"];
    assert_eq!(a["mcp.method.name"], "tools/call");
    assert_eq!(a["gen_ai.tool.name"], "payments.get_customers");
    assert_eq!(a["gen_ai.operation.name"], "execute_tool");
    assert_eq!(a["tool_broker.service"], "payments");
    assert_eq!(a["tool_broker.risk"], "read");
    assert_eq!(a["tool_broker.classification"], "ok");
    assert_eq!(a["tool_broker.upstream.status"], 200);
    assert_eq!(a["tool_broker.dry_run"], false);
    assert_eq!(a["tool_broker.endpoint"], endpoint);
    assert!(a["jsonrpc.request.id"].is_string(), "{a}");
    assert!(a.get("error.type").is_none(), "{a}");
    assert_eq!(server["flags"], 0x301);
    assert!(
        server["endTimeUnixNano"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= server["startTimeUnixNano"]
                .as_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
    );
    assert_eq!(client["traceId"], TRACE);
    assert_eq!(client["parentSpanId"], server["spanId"]);
    assert_eq!(client["name"], "GET /v1/customers");
    let c = &client["attrs"];
    assert_eq!(c["http.request.method"], "GET");
    assert_eq!(c["http.response.status_code"], 200);
    assert_eq!(c["server.address"], "127.0.0.1");
    assert_eq!(c["url.template"], "/v1/customers");
    // The upstream saw the client span as its parent, sampled.
    assert_eq!(
        upstream_traceparent,
        format!("00-{TRACE}-{}-01", client["spanId"].as_str().unwrap())
    );
}

/// `tool_broker_spans_total{outcome=...}` on `/metrics`, once it reaches `at_least`
/// (10 s at most); `None` when `/metrics` has no such family.
async fn spans_counted(broker: &TestBroker, outcome: &str, at_least: u64) -> Option<u64> {
    let line = format!("tool_broker_spans_total{{outcome=\"{outcome}\"}} ");
    let mut seen = None;
    for _ in 0..500 {
        let text = reqwest::get(format!("{}/metrics", broker.url))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        seen = text
            .lines()
            .find_map(|l| l.strip_prefix(line.as_str()))
            .map(|n| n.parse::<u64>().unwrap());
        if seen.is_none_or(|n| n >= at_least) {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    seen
}

fn no_secret_in(body: &[u8]) {
    let text = String::from_utf8_lossy(body);
    for secret in [KEY.1, EMAIL, crate::support::API_KEY] {
        assert!(!text.contains(secret), "an export holds `{secret}`");
    }
}

#[tokio::test]
async fn a_call_is_exported_over_http_json_continuing_the_callers_trace() {
    let upstream = upstream().await;
    let receiver = receiver().await;
    let endpoint = receiver.uri();
    let broker = broker(
        &upstream,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-collector-key=collector-secret-1",
            ),
            ("OTEL_SERVICE_NAME", "broker-under-test"),
        ],
    )
    .await;
    let parent = traceparent(true);
    let (status, body) = broker
        .call(
            "payments.get_customers",
            json!({ "email": EMAIL }),
            &[
                KEY,
                ("traceparent", parent.as_str()),
                ("tracestate", "vendor=abc"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["meta"]["traceId"], TRACE);
    let sent = sent_upstream(&upstream).await;
    assert_eq!(sent.len(), 1);
    let got = exports(&receiver, 2, json_spans).await;
    let spans: Vec<Value> = got.iter().flat_map(|g| g.2.clone()).collect();
    check_call_spans(&spans, &sent[0], "rpc");
    assert_eq!(find(&spans, 2)["traceState"], "vendor=abc");
    assert_eq!(
        find(&spans, 2)["attrs"]["tool_broker.user"],
        "env:TOOL_BROKER_API_KEY"
    );
    for (kind, body, _) in &got {
        assert_eq!(kind, "application/json");
        no_secret_in(body);
        assert!(String::from_utf8_lossy(body).contains("broker-under-test"));
    }
    // The collector's key went to the collector, as a header.
    let requests = receiver.received_requests().await.unwrap();
    assert_eq!(requests[0].headers["x-collector-key"], "collector-secret-1");
    assert!(!crate::support::all_logs().contains("collector-secret-1"));
    // `/metrics` counts what became of the spans.
    assert_eq!(spans_counted(&broker, "exported", 2).await, Some(2));
    assert_eq!(spans_counted(&broker, "failed", 0).await, Some(0));
    assert_eq!(spans_counted(&broker, "dropped", 0).await, Some(0));
}

#[tokio::test]
async fn spans_a_collector_refuses_are_counted_and_the_call_answers() {
    let upstream = upstream().await;
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_string("bad export"))
        .mount(&receiver)
        .await;
    let endpoint = receiver.uri();
    let broker = broker(
        &upstream,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
    )
    .await;
    let (status, body) = broker
        .call("payments.get_customers", json!({}), &[KEY])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(spans_counted(&broker, "failed", 2).await, Some(2));
    assert_eq!(spans_counted(&broker, "exported", 0).await, Some(0));
    // A 400 is not retried (OTLP/HTTP retries only 429, 502, 503, 504): one post per
    // batch (the two spans may go in one batch or two).
    assert!(receiver.received_requests().await.unwrap().len() <= 2);
}

#[tokio::test]
async fn an_mcp_call_brings_its_trace_in_meta_and_is_exported_over_http_protobuf() {
    let upstream = upstream().await;
    let receiver = receiver().await;
    let endpoint = format!("{}/v1/traces", receiver.uri());
    let broker = broker(
        &upstream,
        &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint.as_str())],
    )
    .await;
    let parent = traceparent(true);
    // `_meta` wins over the header (the header here names another trace).
    let other = "00-11111111111111111111111111111111-2222222222222222-01";
    let (status, reply) = crate::support::mcp_tools_call(
        &broker,
        json!({
            "name": "payments.get_customers",
            "arguments": { "email": EMAIL },
            "_meta": { "traceparent": parent },
        }),
        &[KEY, ("traceparent", other)],
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    let envelope = &reply["result"]["structuredContent"];
    assert_eq!(envelope["meta"]["traceId"], TRACE, "{reply}");
    let sent = sent_upstream(&upstream).await;
    let got = exports(&receiver, 2, proto::spans).await;
    let spans: Vec<Value> = got.iter().flat_map(|g| g.2.clone()).collect();
    check_call_spans(&spans, &sent[0], "mcp");
    for (kind, body, _) in &got {
        assert_eq!(kind, "application/x-protobuf");
        no_secret_in(body);
    }
}

#[tokio::test]
async fn a_failed_call_is_an_error_span_with_its_classification() {
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/customers"))
        .respond_with(ResponseTemplate::new(503).set_body_json(json!({ "error": "down" })))
        .mount(&upstream)
        .await;
    let receiver = receiver().await;
    let endpoint = receiver.uri();
    let broker = broker(
        &upstream,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ],
    )
    .await;
    // No traceparent: a new trace, sampled by the default parent-based sampler.
    let (status, body) = broker
        .call("payments.get_customers", json!({}), &[KEY])
        .await;
    assert_ne!(status, 200, "{body}");
    let trace = body["meta"]["traceId"].as_str().unwrap().to_string();
    assert_eq!(trace.len(), 32);
    assert!(
        trace
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    let got = exports(&receiver, 2, json_spans).await;
    let spans: Vec<Value> = got.iter().flat_map(|g| g.2.clone()).collect();
    let server = find(&spans, 2);
    assert_eq!(server["traceId"], trace.as_str());
    assert!(server.get("parentSpanId").is_none(), "{server}");
    assert_eq!(server["status"]["code"], 2);
    let class = body["error"]["classification"].as_str().unwrap();
    assert_eq!(server["attrs"]["error.type"], class);
    assert_eq!(server["attrs"]["tool_broker.upstream.status"], 503);
    let client = find(&spans, 3);
    assert_eq!(client["attrs"]["error.type"], "503");
    assert_eq!(client["status"]["code"], 2);

    // An unknown tool is a span too, named by the method alone.
    let (_, body) = broker.call("payments.no_such_tool", json!({}), &[]).await;
    let got = exports(&receiver, 3, json_spans).await;
    let spans: Vec<Value> = got.iter().flat_map(|g| g.2.clone()).collect();
    let unknown = spans
        .iter()
        .find(|s| s["traceId"] == body["meta"]["traceId"])
        .expect("the unknown tool's span");
    assert_eq!(unknown["name"], "tools/call");
    assert_eq!(unknown["attrs"]["error.type"], "unknown_tool");
}

#[tokio::test]
async fn a_priced_call_carries_its_cost_on_its_span_whether_it_ran_or_failed() {
    let upstream = MockServer::start().await;
    for (code, content) in [(200, "ran"), (422, "refused")] {
        Mock::given(method("POST"))
            .and(wiremock::matchers::body_partial_json(
                json!({ "message": { "content": content } }),
            ))
            .respond_with(ResponseTemplate::new(code).set_body_json(json!({ "task_id": "t1" })))
            .mount(&upstream)
            .await;
    }
    let receiver = receiver().await;
    let mut setup = Setup::all_upstreams(&upstream.uri());
    for (k, v) in [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.uri()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".into()),
        ("OTEL_BSP_SCHEDULE_DELAY", "20".into()),
    ] {
        setup.env.insert(k.into(), v);
    }
    let broker = TestBroker::start(setup).await;
    let mut costs = Vec::new();
    for (n, content) in ["ran", "refused"].into_iter().enumerate() {
        let (_, body) = broker
            .call(
                "agent.create_task",
                json!({ "message": { "content": content }, "confirm": true }),
                &[("x-agent-api-key", "ak_trace_cost_1")],
            )
            .await;
        let trace = body["meta"]["traceId"].as_str().unwrap().to_string();
        let got = exports(&receiver, 2 * (n + 1), json_spans).await;
        let spans: Vec<Value> = got.iter().flat_map(|g| g.2.clone()).collect();
        let server = spans
            .iter()
            .find(|s| s["kind"] == 2 && s["traceId"] == trace.as_str())
            .unwrap_or_else(|| panic!("no server span of {trace}: {spans:#?}"));
        let attrs = &server["attrs"];
        costs.push((
            body["meta"]["cost"].clone(),
            attrs["tool_broker.cost.unit"].clone(),
            attrs["tool_broker.cost.estimate"].clone(),
            attrs["tool_broker.cost.actual"].clone(),
        ));
    }
    assert_eq!(
        costs,
        [
            (
                json!({ "estimate": { "credits": 1 }, "actual": { "credits": 1 } }),
                json!("credits"),
                json!(1),
                json!(1)
            ),
            // Refused upstream: estimated, charged nothing.
            (
                json!({ "estimate": { "credits": 1 }, "actual": { "credits": 0 } }),
                json!("credits"),
                json!(1),
                json!(0)
            ),
        ]
    );
}

#[tokio::test]
async fn without_an_endpoint_nothing_is_exported_and_the_trace_passes_through() {
    let upstream = upstream().await;
    let broker = broker(&upstream, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).await;
    assert!(broker.broker.parts.traces.exporter().is_none());
    assert_eq!(spans_counted(&broker, "exported", 0).await, None);
    let parent = traceparent(false);
    let (status, body) = broker
        .call(
            "payments.get_customers",
            json!({}),
            &[KEY, ("traceparent", parent.as_str())],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["meta"]["traceId"], TRACE);
    // Recording nothing, the broker passes the caller's span and flags on unchanged.
    assert_eq!(sent_upstream(&upstream).await, vec![parent]);

    // A malformed traceparent starts a trace of the broker's own; the call runs.
    let (status, body) = broker
        .call(
            "payments.get_customers",
            json!({}),
            &[KEY, ("traceparent", "00-NOT-A-TRACE-01")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let own = body["meta"]["traceId"].as_str().unwrap();
    assert_ne!(own, TRACE);
    let sent = sent_upstream(&upstream).await;
    assert!(sent[1].starts_with(&format!("00-{own}-")), "{sent:?}");
    assert!(sent[1].ends_with("-00"), "{sent:?}");

    // A request refused before its call still answers the caller's trace id.
    let parent = traceparent(true);
    let (status, body) = broker
        .post_raw(b"{not json".to_vec(), &[("traceparent", parent.as_str())])
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["meta"]["traceId"], TRACE);
}

#[tokio::test]
async fn an_export_setting_the_broker_cannot_honour_stops_it_at_start() {
    let env: BTreeMap<&str, &str> = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ]
    .into_iter()
    .collect();
    let lookup = |name: &str| env.get(name).map(|v| (*v).to_string());
    let store = tool_broker::store::Store::open(&tool_broker::store::StoreConfig::Memory)
        .await
        .unwrap();
    let err = tool_broker::call::Broker::new(
        crate::support::embedded_catalog(),
        &tool_broker::config::ConfigFile::default(),
        &lookup,
        store,
    )
    .unwrap_err();
    assert!(err.contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc"), "{err}");
}

#[tokio::test]
async fn the_guard_rules_that_acted_are_on_the_call_span_and_never_a_value() {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "task_id": "t1" })))
        .mount(&upstream)
        .await;
    let receiver = receiver().await;
    let mut setup = Setup::all_upstreams(&upstream.uri());
    for (k, v) in [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.uri()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".into()),
        ("OTEL_BSP_SCHEDULE_DELAY", "20".into()),
    ] {
        setup.env.insert(k.into(), v);
    }
    let broker = TestBroker::start(setup).await;
    let (status, body) = broker
        .call(
            "agent.create_task",
            json!({ "message": { "content": "charge 4539 1488 0343 6467" }, "confirm": true }),
            &[("x-agent-api-key", "ak_trace_guard_1")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let trace = body["meta"]["traceId"].as_str().unwrap().to_string();
    let got = exports(&receiver, 2, json_spans).await;
    let spans: Vec<Value> = got.iter().flat_map(|g| g.2.clone()).collect();
    let server = spans
        .iter()
        .find(|s| s["kind"] == 2 && s["traceId"] == trace.as_str())
        .unwrap_or_else(|| panic!("no server span of {trace}: {spans:#?}"));
    assert_eq!(server["attrs"]["tool_broker.guards"], "card", "{server}");
    for (_, raw, _) in &got {
        assert!(
            !String::from_utf8_lossy(raw).contains("4539"),
            "a value reached a span"
        );
    }
}
