//! What a connection may cost (engine/surfaces/src/serve/bounds.rs, the `[server]` table): slow and
//! idle clients are closed, the connection cap answers 429, header limits answer 431,
//! an over-limit body is answered so the client reads its 413 envelope, and a shutdown
//! lets calls in flight finish. Raw TCP clients on loopback; every wait is bounded by a
//! guard that fails the test if the broker holds a connection it should close. No
//! timing is asserted.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::bounds::{
    call_head, connect, one_response, slow_job_upstream, until_closed, until_upstream_has_it,
};
use crate::support::{API_KEY, Setup, TestBroker};

/// A broker with `[server]` settings (and a 1 KiB body limit).
async fn broker(server: &str) -> TestBroker {
    TestBroker::start(Setup {
        config: Some(format!("max_body_bytes = 1024\n[server]\n{server}")),
        ..Setup::default()
    })
    .await
}

#[tokio::test]
async fn a_request_head_that_stops_halfway_is_closed_and_logged() {
    let b = broker("header_read_timeout_ms = 200\nidle_timeout_ms = 60000\n").await;
    let mut stream = connect(&b).await;
    stream
        .write_all(b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-")
        .await
        .unwrap();
    let answered = until_closed(&mut stream).await;
    assert_eq!(answered, "", "closed without an answer");
    assert!(
        crate::support::logs()
            .contains("slow client closed: its request head did not arrive in time"),
        "the log says why"
    );
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_and_a_busy_one_is_not() {
    let b = broker("idle_timeout_ms = 300\nheader_read_timeout_ms = 60000\n").await;
    let mut stream = connect(&b).await;
    for _ in 0..2 {
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        let (status, _, body) = one_response(&mut stream).await;
        assert_eq!((status, &body["status"]), (200, &json!("ok")));
    }
    assert_eq!(until_closed(&mut stream).await, "");
}

#[tokio::test]
async fn a_body_that_never_arrives_is_answered_and_the_connection_closed() {
    let b = broker("body_read_timeout_ms = 300\n").await;
    let mut stream = connect(&b).await;
    stream
        .write_all(call_head(100, "").as_bytes())
        .await
        .unwrap();
    stream.write_all(b"{\"jsonrpc\":").await.unwrap();
    let (status, head, envelope) = one_response(&mut stream).await;
    assert_eq!(status, 400, "{head}");
    assert_eq!(envelope["error"]["classification"], "invalid_request");
    let message = envelope["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("did not arrive within 300 ms"),
        "{message}"
    );
    assert_eq!(until_closed(&mut stream).await, "");
    assert!(
        crate::support::logs()
            .contains("slow client closed: its request body did not arrive in time")
    );
}

#[tokio::test]
async fn connections_over_the_cap_are_answered_429_and_the_cap_frees_up() {
    let b = broker("max_connections = 2\n").await;
    // Two connections hold the two places (a request each, answered, kept alive).
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = connect(&b).await;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(one_response(&mut stream).await.0, 200);
        held.push(stream);
    }
    let mut third = connect(&b).await;
    let _ = third
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await;
    let (status, head, envelope) = one_response(&mut third).await;
    assert_eq!(status, 429, "{head}");
    assert!(
        head.contains("retry-after: 1") && head.contains("connection: close"),
        "{head}"
    );
    assert_eq!(envelope["error"]["classification"], "rate_limited");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit of 2 open connections")
    );
    assert_eq!(until_closed(&mut third).await, "");
    // One place freed: a new connection is served (its permit returns when the
    // connection task ends; bounded retries, no timing asserted).
    drop(held.pop());
    let mut served = false;
    for _ in 0..100 {
        let mut stream = connect(&b).await;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        if one_response(&mut stream).await.0 == 200 {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        served,
        "the freed place was never given to a new connection"
    );
}

#[tokio::test]
async fn too_many_or_too_large_headers_are_refused_with_431() {
    let b = broker("max_headers = 10\nmax_header_bytes = 8192\n").await;
    // On hyper's routes and on the call endpoints the own HTTP/1.1 server reads (it hands such a head
    // to hyper, which refuses it).
    for start in [
        "GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n",
        "POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\n",
    ] {
        let mut many = String::from(start);
        for i in 0..20 {
            many.push_str(&format!("x-extra-{i}: {i}\r\n"));
        }
        many.push_str("\r\n");
        let large = format!("{start}x-large: {}\r\n\r\n", "a".repeat(20_000));
        for request in [many, large] {
            let mut stream = connect(&b).await;
            let _ = stream.write_all(request.as_bytes()).await;
            let answer = until_closed(&mut stream).await;
            assert!(answer.starts_with("HTTP/1.1 431"), "{start}: {answer}");
        }
    }
    // The default limit (100, hyper's own, so left to hyper): 100 lines pass, 101 do not.
    let b = broker("").await;
    for (lines, status) in [(100, "200"), (101, "431")] {
        let mut request =
            String::from("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n");
        for i in 2..lines {
            request.push_str(&format!("x-extra-{i}: {i}\r\n"));
        }
        request.push_str("\r\n");
        let mut stream = connect(&b).await;
        let _ = stream.write_all(request.as_bytes()).await;
        let answer = until_closed(&mut stream).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{lines} lines: {answer}"
        );
    }
}

#[tokio::test]
async fn an_over_limit_body_is_read_so_the_client_reads_its_413_envelope() {
    let b = broker("").await;
    // A client that writes its whole body before it reads (Python's urllib), a body
    // larger than the socket buffers: the broker reads and drops it (up to 4 MiB past
    // the limit), so the writes complete and the 413 envelope arrives whole. Answered
    // without reading, the writes would fail with a reset.
    let body = format!("{{\"pad\": \"{}\"}}", "x".repeat(2_000_000));
    let mut stream = connect(&b).await;
    stream
        .write_all(call_head(body.len(), "").as_bytes())
        .await
        .unwrap();
    let written = tokio::time::timeout(Duration::from_secs(20), stream.write_all(body.as_bytes()))
        .await
        .expect("the broker neither read nor closed");
    assert!(written.is_ok(), "the body could not be sent: {written:?}");
    let (status, head, envelope) = one_response(&mut stream).await;
    assert_eq!(status, 413, "{head}");
    assert_eq!(envelope["error"]["classification"], "payload_too_large");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1024 bytes")
    );
    // The body was read whole, so the connection still serves.
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(one_response(&mut stream).await.0, 200);

    // A chunked body that grows over the limit: the same.
    let mut stream = connect(&b).await;
    let head = "POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    for _ in 0..4 {
        let chunk = "y".repeat(1000);
        stream
            .write_all(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes())
            .await
            .unwrap();
    }
    stream.write_all(b"0\r\n\r\n").await.unwrap();
    assert_eq!(one_response(&mut stream).await.0, 413);

    // A client that waits on `Expect: 100-continue` is answered before it sends.
    let mut stream = connect(&b).await;
    stream
        .write_all(call_head(50_000, "expect: 100-continue\r\n").as_bytes())
        .await
        .unwrap();
    let (status, _, envelope) = one_response(&mut stream).await;
    assert_eq!(
        (status, &envelope["error"]["classification"]),
        (413, &json!("payload_too_large"))
    );

    // Past the drain bound: answered at once (before the body is sent) and closed.
    let mut stream = connect(&b).await;
    stream
        .write_all(call_head(10_000_000, "").as_bytes())
        .await
        .unwrap();
    let (status, head, _) = one_response(&mut stream).await;
    assert_eq!(status, 413, "{head}");
    assert_eq!(until_closed(&mut stream).await, "");
}

/// Calls `media.get_job` for `job` on `POST /` in the background.
fn call_in_background(
    b: &TestBroker,
    job: &str,
) -> tokio::task::JoinHandle<reqwest::Result<reqwest::Response>> {
    let url = b.url.clone();
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "media.get_job", "arguments": { "job_id": job } }
    });
    tokio::spawn(async move {
        reqwest::Client::new()
            .post(format!("{url}/"))
            .bearer_auth(API_KEY)
            .header("x-media-api-key", "mk_shutdown_test")
            .json(&body)
            .send()
            .await
    })
}

/// A shutdown with a call in flight, on the test's runtime (`None`) or with worker
/// threads.
async fn shutdown_lets_the_call_in_flight_finish(workers: Option<usize>) {
    let upstream = slow_job_upstream("j-slow").await;
    let mut setup = Setup::all_upstreams(&upstream.uri());
    setup.config = Some("[server]\nshutdown_grace_ms = 20000\n".into());
    setup.workers = workers;
    setup.on_test_runtime = workers.is_none();
    let mut b = TestBroker::start(setup).await;
    let call = call_in_background(&b, "j-slow");
    // The call is in flight once the upstream has it.
    until_upstream_has_it(&upstream).await;
    assert_eq!(upstream.received_requests().await.unwrap().len(), 1);
    b.stop();
    b.stopped().await;
    assert!(
        b.served
            .endpoints
            .draining
            .load(std::sync::atomic::Ordering::Acquire),
        "readiness went false"
    );
    // The call in flight finished with its answer before serve returned.
    assert_eq!(call.await.unwrap().unwrap().status().as_u16(), 200);
    // New connections are refused.
    assert!(
        TcpStream::connect(b.url.trim_start_matches("http://"))
            .await
            .is_err()
    );
    assert!(crate::support::logs().contains("every connection closed; stopped"));
}

#[tokio::test]
async fn a_shutdown_refuses_new_connections_and_lets_calls_in_flight_finish() {
    shutdown_lets_the_call_in_flight_finish(None).await;
}

#[tokio::test]
async fn with_worker_threads_a_shutdown_lets_calls_in_flight_finish() {
    shutdown_lets_the_call_in_flight_finish(Some(2)).await;
}

#[tokio::test]
async fn a_shutdown_grace_that_runs_out_stops_serving_anyway() {
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(30)))
        .mount(&upstream)
        .await;
    let mut setup = Setup::all_upstreams(&upstream.uri());
    setup.config = Some("[server]\nshutdown_grace_ms = 100\n".into());
    // Worker threads: the ones still serving are cut when the grace runs out.
    setup.workers = Some(2);
    let mut b = TestBroker::start(setup).await;
    let call = call_in_background(&b, "j-stuck");
    until_upstream_has_it(&upstream).await;
    b.stop();
    // Bounded: serve returns after the grace although the call still waits upstream.
    tokio::time::timeout(Duration::from_secs(20), b.stopped())
        .await
        .expect("serve returned after its grace");
    // The worker that held the call was cut: the client sees the connection end.
    let cut = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the cut call ended");
    assert!(cut.unwrap().is_err(), "the call was cut, not answered");
    assert!(crate::support::logs().contains("the shutdown grace ran out"));
}

#[tokio::test]
async fn worker_threads_serve_many_connections_at_once() {
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/jobs/j-many"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "job_id": "j-many", "state": "done" })),
        )
        .mount(&upstream)
        .await;
    let mut setup = Setup::all_upstreams(&upstream.uri());
    setup.workers = Some(3);
    let mut b = TestBroker::start(setup).await;
    // Eight clients, each its own connection, five calls each, all at once.
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let url = b.url.clone();
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut statuses = Vec::new();
                for _ in 0..5 {
                    let answer = client
                        .post(format!("{url}/"))
                        .bearer_auth(API_KEY)
                        .header("x-media-api-key", "mk_workers_test")
                        .json(&json!({
                            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": { "name": "media.get_job", "arguments": { "job_id": "j-many" } }
                        }))
                        .send()
                        .await
                        .unwrap();
                    let status = answer.status().as_u16();
                    let body: Value = answer.json().await.unwrap();
                    statuses.push((status, body["data"]["state"].clone()));
                }
                statuses
            })
        })
        .collect();
    for client in clients {
        assert_eq!(client.await.unwrap(), vec![(200, json!("done")); 5]);
    }
    assert_eq!(upstream.received_requests().await.unwrap().len(), 40);
    b.stop();
    b.stopped().await;
}

#[tokio::test]
async fn readiness_says_shutting_down_while_draining() {
    let b = broker("").await;
    b.served
        .endpoints
        .draining
        .store(true, std::sync::atomic::Ordering::Release);
    let (status, _, body) = b.send(reqwest::Method::GET, "/readyz", None, &[]).await;
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((status, &body["status"]), (503, &json!("shutting down")));
}

#[test]
fn a_bad_server_setting_stops_the_broker_with_its_name() {
    let config: tool_broker::config::ConfigFile =
        toml::from_str("[server]\nmax_connections = 0\n").unwrap();
    let err = config.server.validate().unwrap_err();
    assert!(
        err.contains("max_connections") && err.contains("4096"),
        "{err}"
    );
    let unknown =
        toml::from_str::<tool_broker::config::ConfigFile>("[server]\nheader_timeout = 1\n")
            .unwrap_err()
            .to_string();
    assert!(unknown.contains("header_read_timeout_ms"), "{unknown}");
    // Serving threads: 0 is one per CPU, a number is taken as given, past 1024 refused.
    let config: tool_broker::config::ConfigFile =
        toml::from_str("[server]\nworkers = 3\n").unwrap();
    assert_eq!(config.server.worker_threads(), 3);
    let config: tool_broker::config::ConfigFile = toml::from_str("").unwrap();
    assert_eq!(config.server.workers, 0);
    assert!(config.server.worker_threads() >= 1);
    // The HTTP/1.1 server: `own` by default, `hyper` taken, anything else named with both.
    assert_eq!(
        config.server.http1_server,
        tool_broker::config::server::Http1Server::Own
    );
    let config: tool_broker::config::ConfigFile =
        toml::from_str("[server]\nhttp1_server = \"hyper\"\n").unwrap();
    assert_eq!(
        config.server.http1_server,
        tool_broker::config::server::Http1Server::Hyper
    );
    let wrong =
        toml::from_str::<tool_broker::config::ConfigFile>("[server]\nhttp1_server = \"nginx\"\n")
            .unwrap_err()
            .to_string();
    assert!(
        wrong.contains("http1_server") && wrong.contains("`own`") && wrong.contains("`hyper`"),
        "{wrong}"
    );
    let config: tool_broker::config::ConfigFile =
        toml::from_str("[server]\nworkers = 5000\n").unwrap();
    let err = config.server.validate().unwrap_err();
    assert!(
        err.contains("workers") && err.contains("at most 1024"),
        "{err}"
    );
}

#[tokio::test]
async fn a_body_sent_in_pieces_is_read_whole_and_in_order() {
    let b = broker("").await;
    let body = r#"{"jsonrpc":"2.0","id":"split-7","method":"tools/call","params":{"name":"crm.no_such_tool","arguments":{}}}"#;
    let mut stream = connect(&b).await;
    stream
        .write_all(call_head(body.len(), "").as_bytes())
        .await
        .unwrap();
    // Three writes with pauses between them: the broker sees the body in several frames.
    for piece in [&body[..20], &body[20..60], &body[60..]] {
        stream.write_all(piece.as_bytes()).await.unwrap();
        stream.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, head, answer) = one_response(&mut stream).await;
    // The id is read from the first piece and the tool name from the last: only a body
    // put together whole and in order gets this answer.
    assert_eq!(answer["meta"]["requestId"], "split-7", "{head}\n{answer}");
    assert_eq!(answer["meta"]["tool"], Value::Null, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no_such_tool")),
        "{answer}"
    );
}
