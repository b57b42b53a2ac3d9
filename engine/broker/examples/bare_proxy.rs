//! The ceiling of a Rust proxy on this machine: a bare hyper server and pooled client
//! (no catalog, no envelope: read the body, GET the upstream, parse its JSON, answer
//! `{"ok":true,"data":...}`) in three layouts (engine/DESIGN.md, "Serving threads").
//!
//!   bare_proxy mt PORT UPSTREAM N   # one multi-thread runtime of N workers, one pool
//!   bare_proxy pc PORT UPSTREAM N   # N current-thread runtimes, SO_REUSEPORT listeners
//!   bare_proxy sh PORT UPSTREAM N   # N current-thread runtimes on one accept queue
//!   bare_proxy pd PORT UPSTREAM N   # as `pc`, upstream connections held per thread by
//!                                   # hand (hyper's `client::conn::http1`, no pool)
//!   bare_proxy pr PORT UPSTREAM N   # as `pd`, the upstream exchange written and read
//!                                   # inline by the call (httparse, no connection task)
//!   bare_proxy hr PORT UPSTREAM N   # as `pr`, and the client's connection served by
//!                                   # hand too (httparse, one write per answer, no hyper)
//!
//! e.g. `bare_proxy pc 19003 127.0.0.1:19001 2`, then `wrk -t1 -c32 -d5s http://127.0.0.1:19003/`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

type C = Client<HttpConnector, Full<Bytes>>;

async fn handle(
    client: C,
    up: &'static str,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let _body = req.into_body().collect().await.unwrap().to_bytes();
    let uri: hyper::Uri = format!("http://{up}/api/billing/v1/catalog")
        .parse()
        .unwrap();
    let r = client
        .request(
            Request::get(uri)
                .header("accept", "application/json")
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await
        .unwrap();
    let b = r.into_body().collect().await.unwrap().to_bytes();
    Ok(reply(&b))
}

thread_local! {
    /// `pd`: this thread's idle upstream connections.
    static IDLE: std::cell::RefCell<Vec<hyper::client::conn::http1::SendRequest<Full<Bytes>>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// `pd`: the upstream exchange on a connection of this thread's own.
async fn handle_direct(
    up: &'static str,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let _body = req.into_body().collect().await.unwrap().to_bytes();
    let idle = IDLE.with(|idle| {
        let mut idle = idle.borrow_mut();
        while let Some(s) = idle.pop() {
            if s.is_ready() {
                return Some(s);
            }
        }
        None
    });
    let mut sender = match idle {
        Some(s) => s,
        None => {
            let stream = tokio::net::TcpStream::connect(up).await.unwrap();
            let _ = stream.set_nodelay(true);
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .unwrap();
            tokio::task::spawn_local(conn);
            sender
        }
    };
    let r = sender
        .send_request(
            Request::get("/api/billing/v1/catalog")
                .header("host", up)
                .header("accept", "application/json")
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await
        .unwrap();
    let b = r.into_body().collect().await.unwrap().to_bytes();
    IDLE.with(|idle| idle.borrow_mut().push(sender));
    Ok(reply(&b))
}

thread_local! {
    /// `pr`: this thread's idle upstream streams.
    static RAW: std::cell::RefCell<Vec<tokio::net::TcpStream>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// `pr`: the upstream exchange written and read by the call itself.
async fn handle_raw(
    up: &'static str,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let _body = req.into_body().collect().await.unwrap().to_bytes();
    let answer = raw_exchange(up).await;
    Ok(reply(&answer))
}

/// `pr`, `hr`: one GET of the upstream on a stream of this thread's own; its body.
async fn raw_exchange(up: &'static str) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = match RAW.with(|raw| raw.borrow_mut().pop()) {
        Some(s) => s,
        None => {
            let s = tokio::net::TcpStream::connect(up).await.unwrap();
            let _ = s.set_nodelay(true);
            s
        }
    };
    let head = format!(
        "GET /api/billing/v1/catalog HTTP/1.1\r\nhost: {up}\r\naccept: application/json\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut buf = Vec::with_capacity(4096);
    let (body_at, length) = loop {
        let n = stream.read_buf(&mut buf).await.unwrap();
        assert!(n > 0, "upstream closed");
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut answer = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(at) = answer.parse(&buf).unwrap() {
            break (at, content_length(answer.headers));
        }
    };
    while buf.len() < body_at + length {
        let n = stream.read_buf(&mut buf).await.unwrap();
        assert!(n > 0, "upstream closed");
    }
    RAW.with(|raw| raw.borrow_mut().push(stream));
    buf.drain(..body_at);
    buf.truncate(length);
    buf
}

fn content_length(headers: &[httparse::Header<'_>]) -> usize {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .map_or(0, |h| {
            std::str::from_utf8(h.value)
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
}

/// `hr`: a connection served by hand (httparse, one buffer each way, no hyper): each
/// request read whole (head, then `Content-Length` bytes), answered by one write.
async fn serve_by_hand(stream: tokio::net::TcpStream, up: &'static str) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = stream;
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut out: Vec<u8> = Vec::with_capacity(8192);
    loop {
        let (head, length) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            if let httparse::Status::Complete(at) = req.parse(&buf).unwrap() {
                break (at, content_length(req.headers));
            }
            if stream.read_buf(&mut buf).await.unwrap() == 0 {
                return;
            }
        };
        while buf.len() < head + length {
            if stream.read_buf(&mut buf).await.unwrap() == 0 {
                return;
            }
        }
        buf.drain(..head + length);
        let answer = raw_exchange(up).await;
        let v: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        let body = serde_json::to_vec(&serde_json::json!({"ok": true, "data": v})).unwrap();
        out.clear();
        out.extend_from_slice(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ",
        );
        out.extend_from_slice(body.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n\r\n");
        out.extend_from_slice(&body);
        stream.write_all(&out).await.unwrap();
    }
}

/// The upstream's JSON answer parsed and written again inside `{"ok":true,"data":...}`.
fn reply(upstream: &[u8]) -> Response<Full<Bytes>> {
    let v: serde_json::Value = serde_json::from_slice(upstream).unwrap();
    let out = serde_json::to_vec(&serde_json::json!({"ok": true, "data": v})).unwrap();
    Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(out)))
        .unwrap()
}

async fn serve_direct(
    listener: tokio::net::TcpListener,
    up: &'static str,
    raw: bool,
    by_hand: bool,
) {
    loop {
        let (stream, _) = listener.accept().await.unwrap();
        let _ = stream.set_nodelay(true);
        if by_hand {
            tokio::task::spawn_local(serve_by_hand(stream, up));
            continue;
        }
        tokio::task::spawn_local(async move {
            let builder = hyper::server::conn::http1::Builder::new();
            let io = TokioIo::new(stream);
            let _ = if raw {
                let svc = hyper::service::service_fn(move |req| handle_raw(up, req));
                builder.serve_connection(io, svc).await
            } else {
                let svc = hyper::service::service_fn(move |req| handle_direct(up, req));
                builder.serve_connection(io, svc).await
            };
        });
    }
}

async fn serve(listener: tokio::net::TcpListener, up: &'static str, current: bool) {
    let client: C = Client::builder(TokioExecutor::new()).build_http();
    loop {
        let (stream, _) = listener.accept().await.unwrap();
        let _ = stream.set_nodelay(true);
        let client = client.clone();
        let fut = async move {
            let svc = hyper::service::service_fn(move |req| handle(client.clone(), up, req));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        };
        if current {
            tokio::task::spawn_local(fut);
        } else {
            tokio::spawn(fut);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args[2].parse().unwrap();
    let up: &'static str = Box::leak(args[3].clone().into_boxed_str());
    let workers: usize = args[4].parse().unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    if args[1] == "mt" {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let l = tokio::net::TcpListener::bind(addr).await.unwrap();
            serve(l, up, false).await
        });
    } else {
        // One accept queue shared by every thread (`sh`), or a listener per thread on
        // the same port (`pc`, SO_REUSEPORT).
        let direct = matches!(args[1].as_str(), "pd" | "pr" | "hr");
        let by_hand = args[1] == "hr";
        let raw = args[1] == "pr";
        let shared = (args[1] == "sh").then(|| {
            let l = std::net::TcpListener::bind(addr).unwrap();
            l.set_nonblocking(true).unwrap();
            l
        });
        let threads: Vec<_> = (0..workers)
            .map(|_| {
                let own = shared.as_ref().map(|l| l.try_clone().unwrap());
                std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    let local = tokio::task::LocalSet::new();
                    local.block_on(&rt, async {
                        let l = match own {
                            Some(l) => tokio::net::TcpListener::from_std(l).unwrap(),
                            None => {
                                let s = tokio::net::TcpSocket::new_v4().unwrap();
                                s.set_reuseport(true).unwrap();
                                s.set_reuseaddr(true).unwrap();
                                s.bind(addr).unwrap();
                                s.listen(1024).unwrap()
                            }
                        };
                        if direct {
                            serve_direct(l, up, raw, by_hand).await
                        } else {
                            serve(l, up, true).await
                        }
                    });
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
