//! A fixed-rate (open-loop) HTTP load driver: sends requests at a set rate over a fixed
//! number of keep-alive connections and reports the latency percentiles, for the
//! published comparison in `bench/compare.sh` (wrk gives saturation figures; Debian's
//! wrk has no fixed-rate mode).
//!
//! Request `i` is due at `start + i / rate`. A connection takes the next due request;
//! when it is already late (every connection was busy), its latency counts from the
//! moment it was due, so a stalled server is not hidden by the driver slowing down
//! (coordinated omission). When it is early, the connection sleeps and the latency
//! counts from the moment it wakes (the timer's own lateness, up to a millisecond, is not
//! the server's). Each connection sends one request before the clock starts. Bounded:
//! no request starts later than 1.5 x `--seconds` + 1 s (a target slower than the rate
//! shows as `ok` below `planned`); loopback only by the caller's choice of URL.
//!
//! ```text
//! rate --url http://127.0.0.1:8080/ --rate 5000 --seconds 10 --connections 32 \
//!      [--method POST] [--body '{...}'] [--header 'name: value']...
//! ```
//! Prints one line: `rate=5000 planned=50000 ok=50000 errors=0 achieved=4999.8 p50_us=612 p99_us=1830 max_us=4100`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a load tool stops on a broken setup"
)]

#[path = "support/latencies.rs"]
mod latencies;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use latencies::Latencies;

struct Options {
    url: String,
    method: reqwest::Method,
    body: String,
    headers: Vec<(String, String)>,
    rate: f64,
    seconds: f64,
    connections: usize,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = Options {
        url: String::new(),
        method: reqwest::Method::GET,
        body: String::new(),
        headers: Vec::new(),
        rate: 1000.0,
        seconds: 10.0,
        connections: 32,
    };
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--url" => o.url = value,
            "--method" => o.method = value.parse().expect("--method: an HTTP method"),
            "--body" => o.body = value,
            "--header" => {
                let (name, v) = value.split_once(':').expect("--header 'name: value'");
                o.headers.push((name.trim().into(), v.trim().into()));
            }
            "--rate" => o.rate = value.parse().expect("--rate: requests per second"),
            "--seconds" => o.seconds = value.parse().expect("--seconds: a number"),
            "--connections" => o.connections = value.parse().expect("--connections: a count"),
            other => panic!("unknown argument `{other}`"),
        }
        i += 2;
    }
    assert!(!o.url.is_empty(), "--url is required");
    assert!(o.rate > 0.0 && o.seconds > 0.0 && o.connections > 0);
    o
}

fn request(client: &reqwest::Client, o: &Options) -> reqwest::RequestBuilder {
    let mut request = client.request(o.method.clone(), &o.url);
    for (name, value) in &o.headers {
        request = request.header(name, value);
    }
    if !o.body.is_empty() {
        request = request.body(o.body.clone());
    }
    request
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let o = Arc::new(options());
    let total = (o.rate * o.seconds) as u64;
    let next = Arc::new(AtomicU64::new(0));
    // One connection per worker, opened and used once before the clock starts, so the
    // first due requests do not wait for connection set-up.
    let mut clients = Vec::new();
    for _ in 0..o.connections {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .build()
            .unwrap();
        let _ = request(&client, &o).send().await.map(|r| r.bytes());
        clients.push(client);
    }
    let start = Instant::now() + Duration::from_millis(20);
    // A target slower than the rate is not waited for: no request starts after this.
    let deadline = start + Duration::from_secs_f64(o.seconds * 1.5 + 1.0);
    let mut workers = Vec::new();
    for client in clients {
        let (o, next) = (o.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let (mut latencies, mut errors) = (Vec::new(), 0u64);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total || Instant::now() >= deadline {
                    break;
                }
                let due = start + Duration::from_secs_f64(i as f64 / o.rate);
                let from = if Instant::now() < due {
                    tokio::time::sleep_until(due.into()).await;
                    Instant::now()
                } else {
                    due
                };
                match request(&client, &o).send().await {
                    Ok(r) if r.status().is_success() => {
                        if r.bytes().await.is_ok() {
                            latencies.push(from.elapsed().as_micros() as u64);
                        } else {
                            errors += 1;
                        }
                    }
                    _ => errors += 1,
                }
            }
            (latencies, errors)
        }));
    }
    let all = Latencies::gather(workers).await;
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "rate={} planned={} ok={} errors={} achieved={:.1} p50_us={} p99_us={} max_us={}",
        o.rate,
        total,
        all.count(),
        all.errors,
        all.count() as f64 / elapsed,
        all.percentile(0.50),
        all.percentile(0.99),
        all.max()
    );
}
