//! Plain-HTTP upstream exchanges of a serving worker thread: written and read by the
//! call itself, on connections the thread holds without a pool.
//!
//! A serving worker (`serve::server::serve_workers`, broker-surfaces) runs one current-thread runtime
//! for its whole life, and every call it serves runs on it; so its upstream connections
//! need no pool shared between threads, and no task of their own: the call that takes an
//! idle connection writes its request head and body in one write, reads the answer's
//! head and body on the same task ([`crate::upstream::http1`]), and puts the
//! connection back. No channel between a request and a connection task, no wake-up of
//! another task per call (measured in engine/DESIGN.md, "The upstream client").
//!
//! Idle connections: one the upstream closed while idle is noticed before the request
//! goes out (the runtime has seen it readable; a read finds its end) and never used; one
//! idle longer than [`IDLE_FOR`] is closed, found when a call takes a connection or puts
//! one back (whichever upstream it serves: a worker that stops calling an upstream does
//! not keep its connections past the next call it makes to any). A reused connection
//! that ends before any byte of the answer came (the upstream closed it as the request
//! crossed) is retried on another connection when the method is idempotent. A new connection has
//! [`CONNECT_TIMEOUT`] and `TCP_NODELAY`.
//!
//! Only `http://` upstreams are held here: over TLS the pooled client stays (HTTP/2 by
//! ALPN, the certificate verifier).

use std::cell::RefCell;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use hyper::Method;
use hyper::http::uri::Authority;

use crate::upstream::Outgoing;
use crate::upstream::http1::{Failed, READ_CHUNK, RawAnswer, host_port, read_answer, wire};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// An idle connection older than this is dropped (the pool's `pool_idle_timeout`).
pub const IDLE_FOR: Duration = Duration::from_secs(60);

/// Idle connections kept per upstream origin; more are closed when put back.
const MAX_IDLE: usize = 256;

/// How long opening a connection may take (the pool's connector's timeout).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most read buffer an idle connection keeps; a larger one (a long chunk made it
/// grow) is dropped when the connection goes back.
const KEPT_BUFFER: usize = 2 * READ_CHUNK;

/// A held connection and its read buffer (empty between answers).
struct Conn {
    stream: TcpStream,
    buf: BytesMut,
}

/// Idle connections by origin (the URI's authority), each with when it was put back. A
/// list, not a map: a thread talks to a few upstreams, and comparing a few short
/// strings is cheaper than hashing one.
type Idle = Vec<(Authority, Vec<(Conn, Instant)>)>;

thread_local! {
    /// This thread's idle connections; `None` on threads that do not hold connections.
    static HELD: RefCell<Option<Idle>> = const { RefCell::new(None) };
}

/// Makes the calling thread hold its own plain-HTTP upstream connections. For threads
/// that run one current-thread runtime for their whole life (a connection is registered
/// with the runtime that opened it).
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

/// Drops a read buffer a long chunk made grow past [`KEPT_BUFFER`], before its
/// connection goes idle (the next answer allocates a buffer of the usual size).
fn trim_for_idle(buf: &mut BytesMut) {
    // `buf` is empty: it can take more than the limit without allocating only when its
    // own allocation is larger (its `capacity` counts from where the last answer ended).
    if buf.try_reclaim(KEPT_BUFFER + 1) {
        *buf = BytesMut::new();
    }
}

/// Puts a connection back for the next call to this origin.
fn give_back(origin: &Authority, conn: Conn) {
    give_back_at(origin, conn, Instant::now());
}

/// Puts a connection back as idle since `now`, and closes every connection (to any
/// origin) idle for [`IDLE_FOR`] by then.
fn give_back_at(origin: &Authority, conn: Conn, now: Instant) {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        let Some(held) = held.as_mut() else { return };
        for (_, idle) in held.iter_mut() {
            expire(idle, now);
        }
        let at = match held.iter().position(|(o, _)| o == origin) {
            Some(at) => at,
            None => {
                held.push((origin.clone(), Vec::new()));
                held.len() - 1
            }
        };
        if let Some((_, idle)) = held.get_mut(at)
            && idle.len() < MAX_IDLE
        {
            idle.push((conn, now));
        }
    });
}

/// Closes the connections of one origin idle for [`IDLE_FOR`] at `now`: the oldest, at
/// the front (connections are put back at the end and taken from it).
fn expire(idle: &mut Vec<(Conn, Instant)>, now: Instant) {
    let stale = idle
        .iter()
        .take_while(|(_, since)| now.saturating_duration_since(*since) >= IDLE_FOR)
        .count();
    if stale > 0 {
        idle.drain(..stale);
    }
}

/// The last idle connection to `origin` that is still open and young enough.
fn take_idle(origin: &Authority) -> Option<Conn> {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        let (_, idle) = held.as_mut()?.iter_mut().find(|(o, _)| o == origin)?;
        let now = Instant::now();
        while let Some((conn, since)) = idle.pop() {
            if now.duration_since(since) < IDLE_FOR && still_open(&conn.stream) {
                return Some(conn);
            }
        }
        None
    })
}

/// Whether an idle connection can carry a request: nothing to read on it. Without a
/// system call unless the runtime has seen it readable (its end, or bytes nobody asked
/// for: either way it is not used).
fn still_open(stream: &TcpStream) -> bool {
    let mut probe = [0u8; 1];
    matches!(stream.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// Opens a connection to `origin`.
async fn open(origin: &Authority) -> Result<TcpStream, Failed> {
    let address = host_port(origin, true).into_owned();
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address))
        .await
        .map_err(|_| Failed::Connect)?
        .map_err(|_| Failed::Connect)?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// Sends `request` (an absolute `http://` URI) to `origin` on a held connection and reads
/// its answer, the body up to `max_body` bytes.
pub async fn exchange(
    origin: &Authority,
    request: &Outgoing,
    max_body: usize,
) -> Result<RawAnswer, Failed> {
    let wire = wire(origin, request);
    let head_only = request.method == Method::HEAD;
    let retry_stale = matches!(
        request.method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    );
    loop {
        let (mut conn, reused) = match take_idle(origin) {
            Some(conn) => (conn, true),
            None => {
                let stream = open(origin).await?;
                let buf = BytesMut::new();
                (Conn { stream, buf }, false)
            }
        };
        let read = match conn.stream.write_all(&wire).await {
            Ok(()) => read_answer(&mut conn.stream, &mut conn.buf, head_only, max_body).await,
            Err(_) => Err(Failed::Request),
        };
        match read {
            Ok((answer, reusable)) => {
                if reusable {
                    trim_for_idle(&mut conn.buf);
                    give_back(origin, conn);
                }
                return Ok(answer);
            }
            // Closed by the upstream as the request crossed: nothing was answered.
            Err(Failed::Request) if reused && retry_stale => continue,
            Err(failed) => return Err(failed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_keeps_its_buffer_across_answers_that_fit_it() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let small = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
        let big_body = "x".repeat(READ_CHUNK + 1);
        let big = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{big_body}",
            big_body.len()
        );
        let mut buf = BytesMut::new();
        for _ in 0..3 {
            let mut stream = small.as_bytes();
            let (answer, reusable) = runtime
                .block_on(read_answer(&mut stream, &mut buf, false, 100))
                .unwrap();
            assert_eq!((answer.body.as_ref(), reusable), (b"ok".as_slice(), true));
            // Empty, and still the connection's own: the next answer reads into it
            // from its start without allocating.
            assert!(buf.is_empty());
            assert!(buf.try_reclaim(READ_CHUNK), "the buffer was given away");
        }
        let mut stream = big.as_bytes();
        let (answer, reusable) = runtime
            .block_on(read_answer(&mut stream, &mut buf, false, 2 * READ_CHUNK))
            .unwrap();
        assert_eq!((answer.body.len(), reusable), (big_body.len(), true));
        // A body longer than the buffer took the allocation with it, and is not copied.
        assert!(!buf.try_reclaim(READ_CHUNK));
        drop(answer);
        let mut stream = small.as_bytes();
        let (answer, _) = runtime
            .block_on(read_answer(&mut stream, &mut buf, false, 100))
            .unwrap();
        assert_eq!(answer.body.as_ref(), b"ok");
        trim_for_idle(&mut buf);
        assert!(
            buf.try_reclaim(READ_CHUNK),
            "a buffer of the usual size was dropped"
        );
        // A chunk longer than the buffer grows it; the grown buffer is not kept idle.
        let chunk = "y".repeat(3 * READ_CHUNK);
        let chunked = format!(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
            chunk.len()
        );
        let mut stream = chunked.as_bytes();
        let (answer, reusable) = runtime
            .block_on(read_answer(&mut stream, &mut buf, false, 4 * READ_CHUNK))
            .unwrap();
        assert_eq!((answer.body.len(), reusable), (chunk.len(), true));
        trim_for_idle(&mut buf);
        assert_eq!(buf.capacity(), 0);
    }

    #[test]
    fn a_connection_idle_for_a_minute_is_closed_not_used() {
        use std::io::Read as _;
        std::thread::spawn(|| {
            hold_here();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let origin: Authority = listener.local_addr().unwrap().to_string().parse().unwrap();
            let now = Instant::now();
            let long_ago = now.checked_sub(IDLE_FOR + Duration::from_secs(1)).unwrap();
            let just_now = now.checked_sub(IDLE_FOR / 2).unwrap();
            // Each connection: the client side held, the upstream's side to watch.
            let connect = || async {
                let stream = TcpStream::connect(listener.local_addr().unwrap())
                    .await
                    .unwrap();
                let (upstream, _) = listener.accept().unwrap();
                upstream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                (
                    Conn {
                        stream,
                        buf: BytesMut::new(),
                    },
                    upstream,
                )
            };
            // Closed when seen: the upstream reads the end of the stream.
            let closed = |mut upstream: std::net::TcpStream| {
                let mut byte = [0u8; 1];
                matches!(upstream.read(&mut byte), Ok(0))
            };
            runtime.block_on(async {
                // Too old to take: closed, and no connection is handed out.
                let (old, old_side) = connect().await;
                give_back_at(&origin, old, long_ago);
                assert!(take_idle(&origin).is_none());
                assert!(closed(old_side));
                // Young enough: handed out again.
                let (young, _young_side) = connect().await;
                give_back_at(&origin, young, just_now);
                assert!(take_idle(&origin).is_some());
                // Putting any connection back closes the ones idle too long, to every
                // origin, and keeps the rest.
                let other: Authority = "127.0.0.1:9".parse().unwrap();
                let (stale, stale_side) = connect().await;
                give_back_at(&other, stale, long_ago);
                let (kept, _kept_side) = connect().await;
                give_back_at(&origin, kept, just_now);
                let (fresh, _fresh_side) = connect().await;
                give_back_at(&origin, fresh, now);
                assert!(closed(stale_side));
                let idle = |o: &Authority| {
                    HELD.with(|held| {
                        held.borrow()
                            .as_ref()
                            .unwrap()
                            .iter()
                            .find(|(a, _)| a == o)
                            .map_or(0, |(_, list)| list.len())
                    })
                };
                assert_eq!((idle(&origin), idle(&other)), (2, 0));
            });
        })
        .join()
        .unwrap();
    }

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
