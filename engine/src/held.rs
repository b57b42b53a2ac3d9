//! Plain-HTTP upstream connections held by a serving worker thread, without a pool.
//!
//! A serving worker ([`crate::server::serve_workers`]) runs one current-thread runtime
//! for its whole life, and every call it serves runs on it; so its upstream connections
//! need no pool shared between threads: no map behind a lock, no checkout future, no
//! idle timer task. This thread keeps a list of idle connections per upstream origin; a
//! call takes the last one put back (or opens one), sends on it with hyper's
//! `client::conn::http1`, reads the answer and puts the connection back.
//!
//! What hyper-util's pool did that is kept here: an idle connection the upstream closed
//! is not used (its driving task has ended: `is_closed`); one that turns out closed as
//! the request goes out hands the request back unsent (`try_send_request`) and it goes
//! on another connection; idle connections are dropped after [`IDLE_FOR`]; a new
//! connection has [`CONNECT_TIMEOUT`] and `TCP_NODELAY`; the `Host` header is the URI's
//! host with its port unless it is 80, and the request line carries the path and query
//! only. A connection whose answer was not read to its end is dropped, not put back.
//!
//! Only `http://` upstreams are held here: over TLS the pooled client stays (HTTP/2 by
//! ALPN, the certificate verifier). Measured in engine/DESIGN.md ("The upstream client").

use std::cell::RefCell;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::HeaderValue;
use hyper::http::uri::Authority;
use hyper_util::rt::TokioIo;

/// An idle connection older than this is dropped (the pool's `pool_idle_timeout`).
pub const IDLE_FOR: Duration = Duration::from_secs(60);

/// Idle connections kept per upstream origin; more are closed when put back.
const MAX_IDLE: usize = 256;

/// How long opening a connection may take (the pool's connector's timeout).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

type Sender = SendRequest<Full<Bytes>>;

/// Idle connections by origin (the URI's authority), each with when it was put back. A
/// list, not a map: a thread talks to a few upstreams, and comparing a few short
/// strings is cheaper than hashing one.
type Idle = Vec<(Authority, Vec<(Sender, Instant)>)>;

thread_local! {
    /// This thread's idle connections; `None` on threads that do not hold connections.
    static HELD: RefCell<Option<Idle>> = const { RefCell::new(None) };
}

/// Makes the calling thread hold its own plain-HTTP upstream connections. For threads
/// that run one current-thread runtime for their whole life (a connection is driven by
/// a task of the runtime that opened it).
pub fn hold_here() {
    HELD.with(|held| *held.borrow_mut() = Some(Vec::new()));
}

/// Where a request goes when the calling thread holds connections and the URI is
/// plain HTTP: the URI's authority.
pub fn origin(uri: &hyper::Uri) -> Option<Authority> {
    if uri.scheme() != Some(&hyper::http::uri::Scheme::HTTP) {
        return None;
    }
    let holds = HELD.with(|held| held.borrow().is_some());
    holds.then(|| uri.authority().cloned()).flatten()
}

/// Why an exchange failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failed {
    /// No connection could be opened.
    Connect,
    /// The request or its answer broke.
    Request,
}

/// A connection lent to one exchange: put back once its answer has been read whole.
#[derive(Debug)]
pub struct Lease {
    origin: Authority,
    sender: Sender,
}

impl Lease {
    /// Puts the connection back for the next call to this origin.
    pub fn give_back(self) {
        let Lease { origin, sender } = self;
        if sender.is_closed() {
            return;
        }
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            let Some(held) = held.as_mut() else { return };
            let at = match held.iter().position(|(o, _)| *o == origin) {
                Some(at) => at,
                None => {
                    held.push((origin, Vec::new()));
                    held.len() - 1
                }
            };
            if let Some((_, idle)) = held.get_mut(at)
                && idle.len() < MAX_IDLE
            {
                idle.push((sender, Instant::now()));
            }
        });
    }
}

/// The last idle connection to `origin` that is still open and young enough.
fn take_idle(origin: &Authority) -> Option<Sender> {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        let (_, idle) = held.as_mut()?.iter_mut().find(|(o, _)| o == origin)?;
        let now = Instant::now();
        while let Some((sender, since)) = idle.pop() {
            if !sender.is_closed() && now.duration_since(since) < IDLE_FOR {
                return Some(sender);
            }
        }
        None
    })
}

/// `host` or `host:port` of an authority, without user information: as written when it
/// has none (no copy), else rebuilt. `with_default_port`: `:80` is written.
fn host_port(origin: &Authority, with_default_port: bool) -> std::borrow::Cow<'_, str> {
    let text = origin.as_str();
    match origin.port_u16() {
        Some(80) | None if !with_default_port => origin.host().into(),
        Some(_) if !text.contains('@') => text.into(),
        port => format!("{}:{}", origin.host(), port.unwrap_or(80)).into(),
    }
}

/// Opens a connection to `origin` and starts the task that drives it.
async fn open(origin: &Authority) -> Result<Sender, Failed> {
    let address = host_port(origin, true).into_owned();
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(address))
        .await
        .map_err(|_| Failed::Connect)?
        .map_err(|_| Failed::Connect)?;
    let _ = stream.set_nodelay(true);
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|_| Failed::Connect)?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "upstream connection ended with an error");
        }
    });
    Ok(sender)
}

/// Sends `request` (an absolute `http://` URI) to `origin` on a held connection: the
/// answer's head, and the connection to give back once its body is read.
pub async fn exchange(
    origin: Authority,
    mut request: hyper::Request<Full<Bytes>>,
) -> Result<(hyper::Response<Incoming>, Lease), Failed> {
    if !request.headers().contains_key(hyper::header::HOST) {
        // The host and a port other than 80 (as hyper-util's client writes it).
        if let Ok(value) = HeaderValue::from_str(&host_port(&origin, false)) {
            request.headers_mut().insert(hyper::header::HOST, value);
        }
    }
    let path = request
        .uri()
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| hyper::http::uri::PathAndQuery::from_static("/"));
    *request.uri_mut() = hyper::Uri::from(path);
    // Idle connections first; one found closed as the request goes out gives the
    // request back unsent, and the next is tried. A new connection is the last try.
    loop {
        let (mut sender, reused) = match take_idle(&origin) {
            Some(sender) => (sender, true),
            None => (open(&origin).await?, false),
        };
        if sender.ready().await.is_err() {
            if reused {
                continue;
            }
            return Err(Failed::Request);
        }
        match sender.try_send_request(request).await {
            Ok(response) => return Ok((response, Lease { origin, sender })),
            Err(mut e) => match e.take_message() {
                Some(unsent) if reused => request = unsent,
                _ => return Err(Failed::Request),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_on_a_holding_thread_is_held() {
        let uri = |s: &str| s.parse::<hyper::Uri>().unwrap();
        // Not a holding thread: nothing is held.
        std::thread::spawn(move || {
            assert_eq!(origin(&uri("http://127.0.0.1:9/x")), None);
        })
        .join()
        .unwrap();
        std::thread::spawn(move || {
            hold_here();
            let held = |s: &str| origin(&uri(s)).map(|a| a.as_str().to_string());
            assert_eq!(held("http://127.0.0.1:9/x").as_deref(), Some("127.0.0.1:9"));
            assert_eq!(
                held("http://upstream.test/x").as_deref(),
                Some("upstream.test")
            );
            assert_eq!(origin(&uri("https://upstream.test/x")), None);
            // User information never reaches the `Host` header or the address.
            let with_user = uri("http://user:pw@upstream.test:8080/x");
            let with_user = with_user.authority().unwrap();
            assert_eq!(host_port(with_user, false), "upstream.test:8080");
            let plain = uri("http://upstream.test:80/x");
            let plain = plain.authority().unwrap();
            assert_eq!(host_port(plain, false), "upstream.test");
            assert_eq!(host_port(plain, true), "upstream.test:80");
            let bare = uri("http://upstream.test/x");
            assert_eq!(
                host_port(bare.authority().unwrap(), true),
                "upstream.test:80"
            );
        })
        .join()
        .unwrap();
    }
}
