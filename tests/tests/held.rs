//! A serving worker holds its plain-HTTP upstream connections itself (engine/upstream/src/upstream/held.rs):
//! one connection carries call after call, the request line is origin-form with a
//! `Host` header, and a connection the upstream closed between calls costs no call.
//! The upstream here is a bare HTTP/1.1 server that counts its connections.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Setup, TestBroker};

/// What the upstream saw: connections accepted and every request head.
#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    heads: Mutex<Vec<String>>,
}

/// An answer as written on the wire, around a JSON body.
type Frame = fn(&str) -> String;

/// `content-length`, keep-alive.
fn with_length(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// An upstream answering every request with a job that is done, closing each connection
/// (without saying so) after `answers_per_connection` answers. Its base URL.
async fn upstream(answers_per_connection: usize, seen: Arc<Seen>) -> String {
    framed_upstream(answers_per_connection, seen, with_length).await
}

/// [`upstream`], each answer written by `frame`.
async fn framed_upstream(answers_per_connection: usize, seen: Arc<Seen>, frame: Frame) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            seen.connections.fetch_add(1, Ordering::SeqCst);
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                for _ in 0..answers_per_connection {
                    // A GET has no body: a request is its head.
                    let head = loop {
                        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head: Vec<u8> = buf.drain(..end + 4).collect();
                            break String::from_utf8(head).unwrap();
                        }
                        let mut chunk = [0u8; 4096];
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    seen.heads.lock().unwrap().push(head);
                    let body = json!({ "job_id": "j-held", "state": "done" }).to_string();
                    let answer = frame(&body);
                    if stream.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
                // Closed without a `Connection: close`: the broker finds out by itself.
            });
        }
    });
    url
}

/// A broker with one worker thread (every call on the same thread) over `url`.
async fn broker(url: &str) -> TestBroker {
    let mut setup = Setup::all_upstreams(url);
    setup.workers = Some(1);
    TestBroker::start(setup).await
}

async fn read_job(b: &TestBroker) -> (u16, Value) {
    b.call(
        "media.get_job",
        json!({ "job_id": "j-held" }),
        &[("x-media-api-key", "mk_held_test")],
    )
    .await
}

#[tokio::test]
async fn a_worker_sends_call_after_call_on_one_upstream_connection() {
    let seen = Arc::new(Seen::default());
    let url = upstream(usize::MAX, seen.clone()).await;
    let mut b = broker(&url).await;
    for _ in 0..5 {
        let (status, body) = read_job(&b).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["data"]["state"], "done", "{body}");
    }
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
    let heads = seen.heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 5);
    let host = url.trim_start_matches("http://");
    for head in &heads {
        let lower = head.to_ascii_lowercase();
        assert!(
            head.starts_with("GET /v1/jobs/j-held HTTP/1.1\r\n"),
            "origin-form request line: {head}"
        );
        assert!(lower.contains(&format!("\r\nhost: {host}\r\n")), "{head}");
        assert!(
            lower.contains("\r\nauthorization: bearer mk_held_test\r\n"),
            "{head}"
        );
    }
    b.stop();
    b.stopped().await;
}

#[tokio::test]
async fn a_held_connection_the_upstream_closed_costs_no_call() {
    let seen = Arc::new(Seen::default());
    // Every connection answers twice, then closes.
    let url = upstream(2, seen.clone()).await;
    let mut b = broker(&url).await;
    for call in 0..5 {
        let (status, body) = read_job(&b).await;
        assert_eq!(status, 200, "call {call}: {body}");
        assert_eq!(body["data"]["state"], "done", "call {call}: {body}");
        // Lets the upstream's close reach the broker before the next call (the race of
        // a close crossing a request is the upstream's to lose, as with any client).
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    assert_eq!(seen.connections.load(Ordering::SeqCst), 3);
    assert_eq!(seen.heads.lock().unwrap().len(), 5);
    b.stop();
    b.stopped().await;
}

#[tokio::test]
async fn chunked_answers_that_close_their_connection_are_read_whole() {
    let seen = Arc::new(Seen::default());
    // In two chunks, with a trailer, and `connection: close`.
    let chunked: Frame = |body| {
        let (a, b) = body.split_at(body.len() / 2);
        format!(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\nx-trailer: t\r\n\r\n",
            a.len(),
            b.len()
        )
    };
    let url = framed_upstream(usize::MAX, seen.clone(), chunked).await;
    let mut b = broker(&url).await;
    for call in 0..3 {
        let (status, body) = read_job(&b).await;
        assert_eq!(status, 200, "call {call}: {body}");
        assert_eq!(body["data"]["state"], "done", "call {call}: {body}");
    }
    // The upstream said it closes: every call opened its own connection.
    assert_eq!(seen.connections.load(Ordering::SeqCst), 3);
    b.stop();
    b.stopped().await;
}

#[tokio::test]
async fn an_answer_cut_off_is_upstream_unavailable_and_its_connection_not_reused() {
    let seen = Arc::new(Seen::default());
    // Promises more than it sends, then closes.
    let short: Frame = |body| {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
            body.len() + 10
        )
    };
    let url = framed_upstream(1, seen.clone(), short).await;
    let mut b = broker(&url).await;
    for call in 0..2 {
        let (status, body) = read_job(&b).await;
        assert_eq!(status, 502, "call {call}: {body}");
        assert_eq!(
            body["error"]["classification"], "upstream_unavailable",
            "call {call}: {body}"
        );
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("the answer was cut off"),
            "call {call}: {body}"
        );
    }
    assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
    b.stop();
    b.stopped().await;
}
