//! Load test against a local upstream stub, side by side with the same load sent to the
//! stub directly: a proxied read (`agent.list_agents`) on `POST /` and `POST /mcp`, a
//! write (`agent.create_task`, audited) and the write with a fresh `Idempotency-Key`
//! per call, with the store on SQLite (a temporary folder) or PostgreSQL.
//!
//! Run with `bench/load.sh` (builds in release mode first). Everything stays on
//! 127.0.0.1; every run is bounded by `--seconds` and `--max-requests`. The broker logs
//! at `BENCH_BROKER_LOG` (default `warn`) in `BENCH_BROKER_LOG_FORMAT` (default `text`)
//! into `broker.log` in its data folder.
//!
//! ```text
//! cargo run --release -p tool-broker --example load -- \
//!     --broker target/release/tool-broker --seconds 5 --concurrency 16 \
//!     [--database-url postgres://...]
//! ```
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a load tool stops on a broken setup"
)]

#[path = "support/latencies.rs"]
mod latencies;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use latencies::Latencies;

const KEY: &str = "tb_load_test_key";

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_string())
}

fn stub_body() -> Bytes {
    let agents: Vec<serde_json::Value> = (0..20)
        .map(|i| serde_json::json!({"id": format!("agent_{i}"), "name": format!("Agent {i}"), "created_at": 1_700_000_000 + i, "api_key": "secret"}))
        .collect();
    Bytes::from(serde_json::json!({"ok": true, "request_id": "r", "data": agents}).to_string())
}

async fn start_stub() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let body = stub_body();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let body = body.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |_req| {
                    let body = body.clone();
                    async move {
                        let mut r = hyper::Response::new(Full::new(body));
                        r.headers_mut()
                            .insert("content-type", "application/json".parse().unwrap());
                        Ok::<_, Infallible>(r)
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

struct Figures {
    requests: usize,
    errors: u64,
    rps: f64,
    p50_us: u64,
    p99_us: u64,
}

async fn drive(make: Request, seconds: u64, concurrency: usize, max_requests: usize) -> Figures {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    let per_task = max_requests / concurrency;
    for _ in 0..concurrency {
        let make = make.clone();
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .unwrap();
            let mut latencies = Vec::new();
            let mut errors = 0u64;
            while Instant::now() < deadline && latencies.len() + (errors as usize) < per_task {
                let t = Instant::now();
                match make(&client).send().await {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                        latencies.push(t.elapsed().as_micros() as u64);
                    }
                    _ => errors += 1,
                }
            }
            (latencies, errors)
        }));
    }
    let all = Latencies::gather(tasks).await;
    let elapsed = started.elapsed().as_secs_f64();
    Figures {
        requests: all.count(),
        errors: all.errors,
        rps: all.count() as f64 / elapsed,
        p50_us: all.percentile(0.50),
        p99_us: all.percentile(0.99),
    }
}

fn start_broker(
    binary: &str,
    port: u16,
    upstream: SocketAddr,
    data_dir: &std::path::Path,
    database_url: Option<&str>,
) -> Child {
    let mut command = Command::new(binary);
    command.args(["serve", "--listen", &format!("127.0.0.1:{port}")]);
    command.arg("--data-dir").arg(data_dir);
    if let Some(url) = database_url {
        command.args(["--database-url", url]);
    }
    // The broker's logging as a deployment would run it: `BENCH_BROKER_LOG` (default
    // `warn`, no line per call) and `BENCH_BROKER_LOG_FORMAT` (`text`/`json`); lines go
    // to `broker.log` in the data folder, as they would to a file or a collector.
    let level = std::env::var("BENCH_BROKER_LOG").unwrap_or_else(|_| "warn".into());
    let format = std::env::var("BENCH_BROKER_LOG_FORMAT").unwrap_or_else(|_| "text".into());
    std::fs::create_dir_all(data_dir).expect("create the data folder");
    let log =
        std::fs::File::create(data_dir.join("broker.log")).expect("create the broker's log file");
    command
        .env("TOOL_BROKER_API_KEY", KEY)
        .env("TOOL_BROKER_UPSTREAM_AGENT", format!("http://{upstream}"))
        .env("TOOL_BROKER_LOG", level)
        .env("TOOL_BROKER_LOG_FORMAT", format)
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start the broker binary")
}

/// Resident memory of a process, MB (`VmRSS` of `/proc/PID/status`; 0 where there is no
/// `/proc`).
fn resident_mb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

/// A request to send, built anew for each call.
type Request = Arc<dyn Fn(&reqwest::Client) -> reqwest::RequestBuilder + Send + Sync>;

/// What the load drives: the same read through `POST /`, `/mcp` and straight to the
/// stub; a local tool; a write, and a write with a fresh `Idempotency-Key` each call.
struct Targets {
    via_broker: Request,
    via_mcp: Request,
    direct: Request,
    local: Request,
    write: Request,
    write_idempotent: Request,
}

#[tokio::main]
async fn main() {
    let binary = arg("--broker", "target/release/tool-broker");
    let seconds: u64 = arg("--seconds", "5").parse().unwrap();
    let concurrency: usize = arg("--concurrency", "16").parse().unwrap();
    let max_requests: usize = arg("--max-requests", "500000").parse().unwrap();
    // The store: SQLite in a fresh folder (the default backend), or PostgreSQL.
    let database_url = std::env::args()
        .position(|a| a == "--database-url")
        .map(|_| arg("--database-url", ""));
    let data_dir = std::env::temp_dir().join(format!("tool-broker-load-{}", std::process::id()));
    let stub = start_stub().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let mut broker = start_broker(&binary, port, stub, &data_dir, database_url.as_deref());
    let pid = broker.id();
    let probe = reqwest::Client::new();
    for _ in 0..2000 {
        if probe
            .get(format!("http://127.0.0.1:{port}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let startup = started.elapsed();
    // Resident memory at each step: after start, after one full `tools/list` and one
    // `GET /openapi.json` (both built on first use and kept), then after each load phase.
    let mut memory: Vec<(&str, u64)> = vec![("start", resident_mb(pid))];
    build_caches(&probe, port, pid, &mut memory).await;
    let t = targets(port, stub);
    // Warm up both paths, then measure.
    drive(t.via_broker.clone(), 1, concurrency, 10_000).await;
    drive(t.via_mcp.clone(), 1, concurrency, 10_000).await;
    drive(t.direct.clone(), 1, concurrency, 10_000).await;
    let d = drive(t.direct, seconds, concurrency, max_requests).await;
    let b = drive(t.via_broker, seconds, concurrency, max_requests).await;
    memory.push(("reads", resident_mb(pid)));
    let m = drive(t.via_mcp, seconds, concurrency, max_requests).await;
    memory.push(("mcp", resident_mb(pid)));
    drive(t.local.clone(), 1, concurrency, 10_000).await;
    let l = drive(t.local, seconds, concurrency, max_requests).await;
    memory.push(("local", resident_mb(pid)));
    drive(t.write.clone(), 1, concurrency, 10_000).await;
    let w = drive(t.write, seconds, concurrency, max_requests).await;
    let wi = drive(t.write_idempotent, seconds, concurrency, max_requests).await;
    memory.push(("writes", resident_mb(pid)));
    let _ = broker.kill();
    let _ = broker.wait();
    let _ = std::fs::remove_dir_all(&data_dir);

    println!(
        "load: {seconds}s per target, {concurrency} connections, reads agent.list_agents (20 items, redaction on), local portal.check_connection, writes agent.create_task; store {}",
        if database_url.is_some() {
            "postgres"
        } else {
            "sqlite"
        }
    );
    println!(
        "{:<8} {:>10} {:>8} {:>10} {:>10} {:>10}",
        "target", "requests", "errors", "req/s", "p50 us", "p99 us"
    );
    for (name, f) in [
        ("stub", &d),
        ("broker", &b),
        ("mcp", &m),
        ("local", &l),
        ("write", &w),
        ("write+ik", &wi),
    ] {
        println!(
            "{:<8} {:>10} {:>8} {:>10.0} {:>10} {:>10}",
            name, f.requests, f.errors, f.rps, f.p50_us, f.p99_us
        );
    }
    println!(
        "ratio broker/stub: throughput {:.2}, p50 latency {:.2}",
        b.rps / d.rps,
        b.p50_us as f64 / d.p50_us.max(1) as f64
    );
    println!(
        "ratio mcp/broker: throughput {:.2}, p50 latency {:.2}",
        m.rps / b.rps,
        m.p50_us as f64 / b.p50_us.max(1) as f64
    );
    println!(
        "start-up to ready: {} ms; resident MB: {}",
        startup.as_millis(),
        memory
            .iter()
            .map(|(step, mb)| format!("{step} {mb}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// One full `tools/list` and one `GET /openapi.json` (both built on first use and
/// kept), the resident memory after each.
async fn build_caches(
    probe: &reqwest::Client,
    port: u16,
    pid: u32,
    memory: &mut Vec<(&'static str, u64)>,
) {
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
        .to_string();
    probe
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .header("authorization", format!("Bearer {KEY}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(list)
        .send()
        .await
        .expect("tools/list");
    memory.push(("tools/list", resident_mb(pid)));
    probe
        .get(format!("http://127.0.0.1:{port}/openapi.json"))
        .send()
        .await
        .expect("openapi.json");
    memory.push(("openapi", resident_mb(pid)));
}

/// The requests of every target, for a broker on `port` and the stub at `stub`.
fn targets(port: u16, stub: SocketAddr) -> Targets {
    let read = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "agent.list_agents", "arguments": {}}}).to_string();
    // A local tool (no upstream): portal.check_connection, readiness of every service.
    let local = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "portal.check_connection", "arguments": {}}}).to_string();
    let stub_url = format!("http://{stub}/v2/agent.list");
    let direct: Request = Arc::new(move |c: &reqwest::Client| {
        c.get(&stub_url).header("x-manus-api-key", "ak_load_test")
    });
    Targets {
        via_broker: call(port, "/", read.clone(), UPSTREAM_KEY),
        // The same call through the MCP endpoint (a CallToolResult wrapping the envelope).
        via_mcp: call(port, "/mcp", read, MCP_HEADERS),
        direct,
        local: call(port, "/", local, &[]),
        write: write_request(port, false),
        write_idempotent: write_request(port, true),
    }
}

/// The upstream key header of a proxied call.
const UPSTREAM_KEY: &[(&str, &str)] = &[("x-agent-api-key", "ak_load_test")];

/// A proxied call through `/mcp`: the key, and the MCP headers.
const MCP_HEADERS: &[(&str, &str)] = &[
    ("x-agent-api-key", "ak_load_test"),
    ("accept", "application/json, text/event-stream"),
    ("mcp-protocol-version", "2025-11-25"),
];

/// A `tools/call` posted to `path` with the broker key and `extra` headers.
fn call(port: u16, path: &str, body: String, extra: &'static [(&str, &str)]) -> Request {
    let url = format!("http://127.0.0.1:{port}{path}");
    Arc::new(move |c: &reqwest::Client| {
        let mut request = c
            .post(&url)
            .header("authorization", format!("Bearer {KEY}"))
            .header("content-type", "application/json");
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        request.body(body.clone())
    })
}

/// A write through `POST /` (the stub answers it like any request): one audit record
/// per call; `idempotent`: with a fresh `Idempotency-Key` per call (claim, complete and
/// audit in the store).
fn write_request(port: u16, idempotent: bool) -> Request {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "agent.create_task", "arguments": {"message": {"content": "load"}, "confirm": true}}}).to_string();
    let url = format!("http://127.0.0.1:{port}/");
    let counter = std::sync::atomic::AtomicU64::new(0);
    Arc::new(move |c: &reqwest::Client| {
        let request = c
            .post(&url)
            .header("authorization", format!("Bearer {KEY}"))
            .header("x-agent-api-key", "ak_load_test")
            .header("content-type", "application/json")
            .body(body.clone());
        if idempotent {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            request.header("idempotency-key", format!("load-{n}"))
        } else {
            request
        }
    })
}
