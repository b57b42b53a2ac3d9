//! Raw connections to a broker: heads written by hand, answers read off the socket; a slow job upstream.

use crate::support::{API_KEY, TestBroker};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub async fn connect(b: &TestBroker) -> TcpStream {
    TcpStream::connect(b.url.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// Reads until the broker closes the connection; fails if it is still open after 20 s
/// (the limits under test are well under a second).
pub async fn until_closed(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        let mut buf = [0u8; 8192];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "the broker held the connection open; read so far: {}",
        String::from_utf8_lossy(&out)
    );
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads one response (head and a `content-length` body) without waiting for a close.
pub async fn one_response(stream: &mut TcpStream) -> (u16, String, Value) {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    let parsed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(
                n > 0,
                "closed before a whole answer: {}",
                String::from_utf8_lossy(&out)
            );
            out.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&out).into_owned();
            if let Some(end) = text.find("\r\n\r\n") {
                let head = text[..end].to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                if out.len() >= end + 4 + length {
                    return (head, text[end + 4..end + 4 + length].to_string());
                }
            }
        }
    })
    .await
    .expect("no whole answer in 20 s");
    let (head, body) = parsed;
    let status = head[9..12].parse().unwrap();
    (
        status,
        head,
        serde_json::from_str(&body).unwrap_or(Value::Null),
    )
}

pub fn call_head(length: usize, extra: &str) -> String {
    format!(
        "POST / HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {API_KEY}\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n{extra}\r\n"
    )
}

/// Waits (bounded by count) until the upstream has received a request.
pub async fn until_upstream_has_it(upstream: &MockServer) {
    for _ in 0..400 {
        if !upstream.received_requests().await.unwrap().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the call never reached the upstream");
}

/// An upstream that answers `media.get_job` for `job` after 600 ms.
pub async fn slow_job_upstream(job: &str) -> MockServer {
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/jobs/{job}")))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "job_id": job, "state": "running" }))
                .set_delay(Duration::from_millis(600)),
        )
        .mount(&upstream)
        .await;
    upstream
}
