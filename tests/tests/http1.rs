//! The broker's own HTTP/1.1 server (engine/surfaces/src/serve/http1.rs): call requests on a keep-alive
//! connection are read and answered by it, pipelined ones in order; anything else hands
//! the connection to hyper's server with the bytes read so far, and is answered as
//! before. `tool_broker_http1_handovers_total` tells the two apart from outside. Raw TCP
//! clients on loopback; no timing is asserted.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::bounds::{call_head, connect, one_response, until_closed};
use crate::support::{API_KEY, Setup, TestBroker};

/// A `tools/call` of a tool the catalog does not have (answered without an upstream).
fn call_body(id: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": { "name": "crm.no_such_tool", "arguments": {} }
    })
    .to_string()
}

fn call(id: &str) -> String {
    let body = call_body(id);
    format!("{}{body}", call_head(body.len(), ""))
}

/// Handovers so far, read on a connection of its own (which counts one: a `GET`).
async fn handovers(b: &TestBroker) -> u64 {
    let mut stream = connect(b).await;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let text = until_closed(&mut stream).await;
    text.lines()
        .find_map(|l| l.strip_prefix("tool_broker_http1_handovers_total "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no handover counter in {text}"))
}

/// Reads answers off one connection in order, keeping what arrived of the next ones
/// (pipelined answers may come in one read).
struct Answers {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Answers {
    /// The next answer's status, head (lowercase) and JSON body; fails after 20 s.
    async fn next(&mut self) -> (u16, String, Value) {
        tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&self.buf[..end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    if self.buf.len() >= end + 4 + length {
                        let body: Vec<u8> =
                            self.buf.drain(..end + 4 + length).skip(end + 4).collect();
                        let status = head[9..12].parse().unwrap();
                        return (
                            status,
                            head,
                            serde_json::from_slice(&body).unwrap_or(Value::Null),
                        );
                    }
                }
                let mut chunk = [0u8; 8192];
                let n = self.stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "closed before a whole answer");
                self.buf.extend_from_slice(&chunk[..n]);
            }
        })
        .await
        .expect("no whole answer in 20 s")
    }
}

#[tokio::test]
async fn calls_stay_with_the_own_server_and_anything_else_goes_to_hyper() {
    let b = TestBroker::start(Setup::default()).await;
    let before = handovers(&b).await;
    // Calls one after another, then two written at once (pipelined): answered in order.
    let mut answers = Answers {
        stream: connect(&b).await,
        buf: Vec::new(),
    };
    for id in ["one", "two"] {
        answers.stream.write_all(call(id).as_bytes()).await.unwrap();
        let (status, head, envelope) = answers.next().await;
        assert_eq!(status, 404, "{head}");
        assert_eq!(envelope["meta"]["requestId"], id);
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(head.contains("\r\ndate: "), "{head}");
    }
    answers
        .stream
        .write_all(format!("{}{}", call("three"), call("four")).as_bytes())
        .await
        .unwrap();
    for id in ["three", "four"] {
        let (_, _, envelope) = answers.next().await;
        assert_eq!(envelope["meta"]["requestId"], id);
    }
    // Nothing was handed over but the counter's own reading.
    assert_eq!(handovers(&b).await, before + 1);

    // A `GET` on the same connection, pipelined behind a call: the call is the endpoint's,
    // the `GET` and what follows are hyper's, all answered in order.
    answers
        .stream
        .write_all(
            format!(
                "{}GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n{}",
                call("five"),
                call("six")
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let (_, _, five) = answers.next().await;
    assert_eq!(five["meta"]["requestId"], "five");
    let (status, _, health) = answers.next().await;
    assert_eq!((status, &health["status"]), (200, &json!("ok")));
    let (_, _, six) = answers.next().await;
    assert_eq!(six["meta"]["requestId"], "six");
    assert_eq!(handovers(&b).await, before + 3);
}

#[tokio::test]
async fn close_http_1_0_and_chunked_calls_are_answered() {
    let b = TestBroker::start(Setup::default()).await;
    // `Connection: close`: answered with it, then closed.
    let mut stream = connect(&b).await;
    let body = call_body("bye");
    stream
        .write_all(format!("{}{body}", call_head(body.len(), "connection: close\r\n")).as_bytes())
        .await
        .unwrap();
    let answer = until_closed(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
    assert!(answer.contains("\"requestId\":\"bye\""), "{answer}");

    // HTTP/1.0 and a chunked body: hyper's, with the same envelope.
    let old = format!(
        "POST / HTTP/1.0\r\nhost: 127.0.0.1\r\nauthorization: Bearer {API_KEY}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = connect(&b).await;
    stream.write_all(old.as_bytes()).await.unwrap();
    let answer = until_closed(&mut stream).await;
    assert!(
        answer.starts_with("HTTP/1.0 404") || answer.starts_with("HTTP/1.1 404"),
        "{answer}"
    );
    assert!(answer.contains("\"requestId\":\"bye\""), "{answer}");

    let (first, rest) = body.split_at(10);
    let chunked = format!(
        "POST / HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {API_KEY}\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n{:x}\r\n{rest}\r\n0\r\n\r\n",
        first.len(),
        rest.len()
    );
    let mut stream = connect(&b).await;
    stream.write_all(chunked.as_bytes()).await.unwrap();
    let (status, _, envelope) = one_response(&mut stream).await;
    assert_eq!(
        (status, &envelope["meta"]["requestId"]),
        (404, &json!("bye"))
    );
}

/// What each HTTP/1.1 server answers to the same requests on the three call endpoints, with
/// the parts that differ per call (trace ids, durations) and the date left out.
async fn answers(http1_server: &str) -> Vec<(u16, Vec<String>, Value)> {
    let b = TestBroker::start(Setup {
        config: Some(format!(
            "max_body_bytes = 1024\n[server]\nhttp1_server = \"{http1_server}\"\n"
        )),
        ..Setup::default()
    })
    .await;
    let mcp_call = json!({
        "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": { "name": "crm.no_such_tool", "arguments": {} }
    })
    .to_string();
    let requests = [
        call("alike"),
        format!("{}{{\"jsonrpc\":1", call_head(12, "")),
        format!("{}{}", call_head(5_000, ""), "x".repeat(5_000)),
        format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {API_KEY}\r\ncontent-type: application/json\r\naccept: application/json\r\ncontent-length: {}\r\n\r\n{mcp_call}",
            mcp_call.len()
        ),
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/html\r\ncontent-length: 2\r\n\r\n{}"
            .to_string(),
        format!(
            "POST /mcp/crm/no-such-tool HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {API_KEY}\r\nx-request-id: rest-1\r\ncontent-length: 2\r\n\r\n{{}}"
        ),
        "POST / HTTP/1.1\r\nhost: evil.example\r\ncontent-length: 2\r\n\r\n{}".to_string(),
    ];
    let mut out = Vec::new();
    for request in requests {
        let mut stream = connect(&b).await;
        stream.write_all(request.as_bytes()).await.unwrap();
        let (status, head, mut body) = one_response(&mut stream).await;
        let mut names: Vec<String> = head
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(name, value)| {
                if name == "date" || name == "content-length" {
                    name.to_string()
                } else {
                    format!("{name}:{value}")
                }
            })
            .collect();
        names.sort();
        without_per_call_parts(&mut body);
        out.push((status, names, body));
    }
    out
}

/// Takes out trace ids and durations, also from an envelope inside MCP's text content.
fn without_per_call_parts(value: &mut Value) {
    match value {
        Value::Object(members) => {
            members.remove("traceId");
            members.remove("durationMs");
            for member in members.values_mut() {
                without_per_call_parts(member);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(without_per_call_parts),
        Value::String(text) if text.starts_with('{') => {
            if let Ok(mut inner) = serde_json::from_str::<Value>(text) {
                without_per_call_parts(&mut inner);
                *value = inner;
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn both_http1_servers_answer_the_call_endpoints_alike() {
    let own = answers("own").await;
    let hyper = answers("hyper").await;
    assert_eq!(own.len(), 7);
    for ((own, hyper), expected) in own
        .iter()
        .zip(&hyper)
        .zip([404, 400, 413, 200, 406, 404, 403])
    {
        assert_eq!(own, hyper);
        assert_eq!(own.0, expected, "{own:?}");
    }
}

#[tokio::test]
async fn a_stop_closes_idle_connections_and_answers_a_call_in_flight_with_close() {
    let upstream = crate::support::bounds::slow_job_upstream("j-http1").await;
    let mut setup = Setup::all_upstreams(&upstream.uri());
    setup.config = Some("[server]\nshutdown_grace_ms = 20000\nidle_timeout_ms = 60000\n".into());
    let mut b = TestBroker::start(setup).await;
    // An idle keep-alive connection, after one call.
    let mut idle = Answers {
        stream: connect(&b).await,
        buf: Vec::new(),
    };
    idle.stream
        .write_all(call("idle").as_bytes())
        .await
        .unwrap();
    assert_eq!(idle.next().await.0, 404);
    // A call in flight on another.
    let body = json!({
        "jsonrpc": "2.0", "id": "busy", "method": "tools/call",
        "params": { "name": "media.get_job", "arguments": { "job_id": "j-http1" } }
    })
    .to_string();
    let mut busy = connect(&b).await;
    busy.write_all(
        format!(
            "{}{body}",
            call_head(body.len(), "x-media-api-key: mk_http1\r\n")
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    crate::support::bounds::until_upstream_has_it(&upstream).await;
    b.stop();
    // The idle one closes at once (well before its idle timeout); the busy one gets its
    // answer, marked `connection: close`, then closes.
    assert_eq!(until_closed(&mut idle.stream).await, "");
    let answer = until_closed(&mut busy).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
    assert!(answer.contains("\"requestId\":\"busy\""), "{answer}");
    b.stopped().await;
}
