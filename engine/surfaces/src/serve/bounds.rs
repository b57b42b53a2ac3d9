//! What a connection may cost the broker: the per-connection watch that enforces the
//! time limits of the deployment config's `[server]` table ([`ServerBounds`]).
//!
//! hyper bounds a request head's size and header count (the own HTTP/1.1 server, [`crate::serve::http1`],
//! hands a head it does not take to hyper); the rest is here:
//! - every accepted connection holds one of `max_connections` permits; one over the cap
//!   is answered `429 rate_limited` with `Retry-After` and closed, never held;
//! - a connection's bytes pass through [`Watched`], which tells its [`ConnState`] when
//!   the client sends, and the request handler marks each request in flight
//!   ([`ConnState::request`]); [`watchdog`] closes a connection that sends no byte of a
//!   next request for `idle_timeout_ms`, or that started a request head and has not
//!   finished it within `header_read_timeout_ms` (slowloris), and says so in the log;
//! - a body must arrive within `body_read_timeout_ms` (server.rs `read_limited`, and
//!   the own HTTP/1.1 server's `http1::body`);
//! - on shutdown the listener closes, readiness goes false, and connections finish their
//!   calls for up to `shutdown_grace_ms` (server.rs `serve`).
//!
//! Design notes and defaults: docs/deployment.md ("Connection limits").

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use crate::config::server::ServerBounds;

/// What one connection is doing, shared by its I/O, its handler and its watchdog.
/// Times are milliseconds since the connection opened.
#[derive(Debug)]
pub struct ConnState {
    opened: Instant,
    /// Requests being handled.
    in_flight: AtomicUsize,
    /// When the connection last became idle (opened, or its last request finished).
    idle_since: AtomicU64,
    /// When the first byte after becoming idle arrived (a request head starts), or
    /// `NONE`.
    head_started: AtomicU64,
}

const NONE: u64 = u64::MAX;

impl ConnState {
    /// A state for a connection opened now.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            opened: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            head_started: AtomicU64::new(NONE),
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(NONE - 1)
    }

    /// Marks a request in flight until the guard drops.
    pub fn request(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self.clone())
    }

    /// Bytes of a request arrived: when the connection was idle, a request head has
    /// begun and the head read timeout runs from now.
    pub(crate) fn received(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0
            && self.head_started.load(Ordering::Acquire) == NONE
        {
            let _ = self.head_started.compare_exchange(
                NONE,
                self.now(),
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }
}

/// A request in flight on its connection; dropping it ends it.
#[derive(Debug)]
pub struct InFlight(Arc<ConnState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let state = &self.0;
        if state.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            state.idle_since.store(state.now(), Ordering::Release);
            state.head_started.store(NONE, Ordering::Release);
        }
    }
}

/// Which time limit closed a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expired {
    /// No request for `idle_timeout_ms`.
    Idle,
    /// A request head unfinished after `header_read_timeout_ms`.
    HeaderRead,
}

/// Resolves when the connection has broken one of its time limits; never while a
/// request is in flight (its body has its own timeout, the call its upstream's).
pub async fn watchdog(state: Arc<ConnState>, bounds: &ServerBounds) -> Expired {
    let idle = bounds.idle_timeout_ms;
    let head = bounds.header_read_timeout_ms;
    loop {
        let now = state.now();
        let wait_ms = if state.in_flight.load(Ordering::Acquire) > 0 {
            idle.min(head)
        } else {
            let started = state.head_started.load(Ordering::Acquire);
            if started != NONE {
                let deadline = started.saturating_add(head);
                if now >= deadline {
                    return Expired::HeaderRead;
                }
                deadline - now
            } else {
                let deadline = state
                    .idle_since
                    .load(Ordering::Acquire)
                    .saturating_add(idle);
                if now >= deadline {
                    return Expired::Idle;
                }
                deadline - now
            }
        };
        // Wake a little after the deadline, so the check above sees it passed; and at
        // least every `head` ms, so a head that starts while this sleeps is seen by its
        // own deadline (recomputed above on waking). Nothing wakes it sooner: a request's
        // start and end re-arm no timer (a timer set earlier than the runtime's next
        // wake-up costs a wake of its driver, twice per call when this slept on a
        // `Notify`; engine/DESIGN.md, "Connection time limits").
        tokio::time::sleep(Duration::from_millis(wait_ms.min(head).saturating_add(1))).await;
    }
}

/// A connection's byte stream, reporting what the client sends to its [`ConnState`];
/// bytes already read from it can be put back in front ([`Watched::put_back`]).
#[derive(Debug)]
pub struct Watched<IO> {
    io: IO,
    state: Arc<ConnState>,
    /// Read before `io`: what the own HTTP/1.1 server read and did not answer, for hyper.
    put_back: bytes::Bytes,
}

impl<IO> Watched<IO> {
    /// Wraps `io`.
    pub fn new(io: IO, state: Arc<ConnState>) -> Self {
        Self {
            io,
            state,
            put_back: bytes::Bytes::new(),
        }
    }

    /// The stream with `bytes` (read from it, counted already) to be read again first.
    pub fn put_back(mut self, bytes: bytes::Bytes) -> Self {
        self.put_back = bytes;
        self
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Watched<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.put_back.is_empty() {
            let n = self.put_back.len().min(buf.remaining());
            buf.put_slice(&self.put_back.split_to(n));
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.state.received();
        }
        polled
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Watched<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// Answers a connection over the cap with `body` (a 429 envelope) and closes it: the
/// answer is written first, then what the client sent is read and dropped for a moment
/// (so closing does not reset the connection before the client reads the answer).
pub async fn refuse_connection(mut stream: tokio::net::TcpStream, body: String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let head = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncache-control: no-store\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let work = async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut left = 64 * 1024usize;
        while left > 0 {
            let n = stream.read(&mut sink).await?;
            if n == 0 {
                break;
            }
            left = left.saturating_sub(n);
        }
        io::Result::Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), work).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_mistakes_name_the_setting() {
        assert_eq!(ServerBounds::default().validate(), Ok(()));
        let zero: ServerBounds = toml::from_str("idle_timeout_ms = 0").unwrap();
        let err = zero.validate().unwrap_err();
        assert!(
            err.contains("idle_timeout_ms") && err.contains("60000"),
            "{err}"
        );
        let small: ServerBounds = toml::from_str("max_header_bytes = 100").unwrap();
        assert!(small.validate().unwrap_err().contains("8192"));
        let unknown = toml::from_str::<ServerBounds>("idle_timeout = 5").unwrap_err();
        assert!(unknown.to_string().contains("idle_timeout_ms"), "{unknown}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_watchdog_tells_idle_from_a_slow_head_and_waits_for_calls() {
        let bounds = ServerBounds {
            idle_timeout_ms: 1_000,
            header_read_timeout_ms: 300,
            ..ServerBounds::default()
        };
        // Idle from the start: closed after the idle timeout.
        let state = ConnState::new();
        assert_eq!(watchdog(state, &bounds).await, Expired::Idle);
        // A head that started: the header timeout, from its first byte.
        let state = ConnState::new();
        state.received();
        assert_eq!(watchdog(state.clone(), &bounds).await, Expired::HeaderRead);
        // A head that starts while the watchdog waits out the idle time wakes it: the
        // header timeout applies from the head's first byte (virtual, paused time).
        let state = ConnState::new();
        let lenient = ServerBounds {
            idle_timeout_ms: 60_000,
            ..bounds.clone()
        };
        let watch = tokio::spawn({
            let state = state.clone();
            async move { watchdog(state, &lenient).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let head_at = Instant::now();
        state.received();
        assert_eq!(watch.await.unwrap(), Expired::HeaderRead);
        assert!(head_at.elapsed() < Duration::from_secs(1));
        // A request in flight is never cut; after it, the idle clock starts again.
        let state = ConnState::new();
        let call = state.request();
        let watch = tokio::spawn({
            let state = state.clone();
            let bounds = bounds.clone();
            async move { watchdog(state, &bounds).await }
        });
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(!watch.is_finished());
        drop(call);
        assert_eq!(watch.await.unwrap(), Expired::Idle);
        assert_eq!(state.head_started.load(Ordering::Acquire), NONE);
    }
}
