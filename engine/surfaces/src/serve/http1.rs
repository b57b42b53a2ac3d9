//! The broker's own HTTP/1.1 server for the call endpoints: `POST /`, `POST /mcp` and
//! `POST /mcp/<service>/<tool>` on a keep-alive connection, read and answered without
//! hyper's server (engine/DESIGN.md, "The call endpoints' own HTTP/1.1 server").
//!
//! A connection starts here. Each request head is parsed in place (`httparse`, hyper's
//! own parser) and taken only when it is the plain case every agent sends: HTTP/1.1,
//! `POST` to one of the call paths (a target of RFC 3986 path characters only), a body
//! told by one `Content-Length` (or none), no `Transfer-Encoding`, `Expect` or
//! `Upgrade`, a `Connection` of `close` or `keep-alive` at most, and at most
//! [`HEADERS`] header lines. Anything else (another path or method, HTTP/1.0, a
//! chunked body, `Expect: 100-continue`, HTTP/2's preface, a head hyper would refuse
//! with 400 or 431) hands the connection, with every byte read and not yet answered,
//! to hyper's server, which serves it from then on: what hyper does for those cases it
//! still does, and the two never share a connection at once.
//!
//! What this server keeps itself, as hyper did: the `[server]` bounds (the head and idle
//! times are the connection's watchdog's, [`crate::serve::bounds`]; the body read timeout, a
//! declared body over the limit read and dropped up to `over_limit_drain_bytes` before
//! the 413, one past that answered at once and the connection closed), pipelined
//! requests answered in order, `Connection: close`, and a stop: an idle connection
//! closes, one with a call in flight answers it with `connection: close` first.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::call::{Broker, Endpoint};
use crate::error::CallError;
use crate::serve::bounds::{ConnState, Watched};
use crate::serve::calls::{CallRequest, answer_call};
use crate::serve::request::{body_timed_out, too_large};
use crate::served::Served;

/// Header lines this server parses on the stack; a request with more goes to hyper, which
/// applies the `[server]` `max_headers`.
pub const HEADERS: usize = 32;

/// What a connection reads at a time.
const READ_CHUNK: usize = 8 * 1024;

/// A request head this server takes, read off the connection's buffer.
#[derive(Debug, PartialEq, Eq)]
pub struct Head {
    /// The call endpoint the request line names.
    pub endpoint: Endpoint,
    /// The request's path, as the endpoint reads it.
    pub path: Cow<'static, str>,
    /// Bytes of the head, up to and including its blank line.
    pub len: usize,
    /// The body's `Content-Length` (0 when none is given).
    pub body: usize,
    /// The client said `Connection: close`.
    pub close: bool,
}

/// What a buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole head this server takes; its headers are in the list given to [`parse`].
    Ours(Head),
    /// Not a whole head yet.
    Partial,
    /// A head (or the start of something) this server leaves to hyper; why, for the log.
    Hyper(&'static str),
}

/// The `[server]` limits on a head: a head over either goes to hyper, which answers 431.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `max_headers`.
    pub lines: usize,
    /// `max_header_bytes`.
    pub bytes: usize,
}

/// Parses the head at the start of `buf`. The headers of a head this server takes are
/// pushed onto `headers` as name and the value's place in `buf`.
pub fn parse(buf: &[u8], limits: Limits, headers: &mut Vec<(HeaderName, usize, usize)>) -> Parsed {
    headers.clear();
    let mut lines = [httparse::EMPTY_HEADER; HEADERS];
    let mut req = httparse::Request::new(&mut lines);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Hyper("a head this server does not parse"),
    };
    if req.headers.len() > limits.lines || len > limits.bytes {
        return Parsed::Hyper("a head over a [server] limit");
    }
    if req.version != Some(1) {
        return Parsed::Hyper("not HTTP/1.1");
    }
    if req.method != Some("POST") {
        return Parsed::Hyper("not POST");
    }
    let Some(path) = req.path else {
        return Parsed::Hyper("no path");
    };
    let Some(endpoint) = Endpoint::of(path).filter(|_| !path.contains('?')) else {
        return Parsed::Hyper("not a call endpoint");
    };
    // Only RFC 3986 path characters: a `#` (found by the differential fuzzer: hyper
    // drops what follows it), a space or a byte outside ASCII is hyper's to read.
    if !path.bytes().all(path_char) {
        return Parsed::Hyper("a target this server does not read");
    }
    let mut body = None;
    let mut close = false;
    for line in req.headers.iter() {
        let name = line.name.as_bytes();
        let value = line.value;
        if name.eq_ignore_ascii_case(b"content-length") {
            let digits = value.trim_ascii();
            if body.is_some()
                || digits.is_empty()
                || digits.len() > 15
                || !digits.iter().all(u8::is_ascii_digit)
            {
                return Parsed::Hyper("a Content-Length this server does not take");
            }
            // At most 15 digits: no overflow of a u64.
            let n = digits
                .iter()
                .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
            let Ok(n) = usize::try_from(n) else {
                return Parsed::Hyper("a Content-Length this server does not take");
            };
            body = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding")
            || name.eq_ignore_ascii_case(b"expect")
            || name.eq_ignore_ascii_case(b"upgrade")
        {
            return Parsed::Hyper("Transfer-Encoding, Expect or Upgrade");
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in value.split(|b| *b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if !token.eq_ignore_ascii_case(b"keep-alive") {
                    return Parsed::Hyper("a Connection option this server does not keep");
                }
            }
        }
        let Ok(name) = HeaderName::from_bytes(name) else {
            return Parsed::Hyper("a header name hyper refuses");
        };
        // httparse's values lie in `buf`.
        let Some(start) = value.as_ptr().addr().checked_sub(buf.as_ptr().addr()) else {
            return Parsed::Hyper("a header value outside the head");
        };
        headers.push((name, start, start + value.len()));
    }
    let path = match endpoint {
        Endpoint::Rpc => Cow::Borrowed("/"),
        Endpoint::Mcp => Cow::Borrowed("/mcp"),
        Endpoint::Rest => Cow::Owned(path.to_string()),
    };
    Parsed::Ours(Head {
        endpoint,
        path,
        len,
        body: body.unwrap_or(0),
        close,
    })
}

/// A byte of an RFC 3986 absolute path: unreserved, `%` of a percent-encoding,
/// sub-delims, `:`, `@`, `/`.
fn path_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=:@/".contains(&b)
}

/// How this server left a connection.
pub enum Ended<S> {
    /// Closed (by either side, or at a stop).
    Closed,
    /// To be served by hyper from here, with the bytes read and not yet answered.
    Hyper(Watched<S>),
}

/// Serves a connection's call requests until it closes or brings something this server
/// leaves to hyper. `stopped` turning true closes it between requests.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    served: &Served,
    loopback: bool,
    mut io: Watched<S>,
    state: &Arc<ConnState>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> Ended<S> {
    let broker = &served.broker;
    let bounds = &served.endpoints.bounds;
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut out = Vec::with_capacity(2 * 1024);
    let mut lines = Vec::with_capacity(16);
    let limits = Limits {
        lines: bounds.max_headers,
        bytes: bounds.max_header_bytes,
    };
    // The stop, waited for between requests by one future made once per connection
    // (a future made per request registers and drops a waiter each time).
    let stopping = stopped.clone();
    let stop = stopped.wait_for(|stopped| *stopped);
    tokio::pin!(stop);
    loop {
        // A whole head: what the buffer holds (pipelined), else read.
        let head = loop {
            if !buf.is_empty() {
                match parse(&buf, limits, &mut lines) {
                    Parsed::Ours(head) => break head,
                    Parsed::Partial if buf.len() < limits.bytes => {}
                    Parsed::Partial => {
                        return handover(broker, io, buf, "a head over the size limit");
                    }
                    Parsed::Hyper(why) => return handover(broker, io, buf, why),
                }
            }
            if buf.capacity() - buf.len() < 1024 {
                buf.reserve(READ_CHUNK);
            }
            let read = if buf.is_empty() {
                // Between requests a stop closes the connection.
                tokio::select! {
                    // The read first: no random pick of a branch per request.
                    biased;
                    read = io.read_buf(&mut buf) => read,
                    _ = &mut stop => return Ended::Closed,
                }
            } else {
                io.read_buf(&mut buf).await
            };
            if !matches!(read, Ok(n) if n > 0) {
                return Ended::Closed;
            }
        };
        let in_flight = state.request();
        let (headers, body, close) = match body(served, &mut io, &mut buf, &head).await {
            Read::Whole(head_bytes, body) => {
                (header_map(&head_bytes, &lines), Ok(body), head.close)
            }
            Read::Refused(head_bytes, err, close) => (
                header_map(&head_bytes, &lines),
                Err(err),
                head.close || close,
            ),
            Read::Ended => return Ended::Closed,
        };
        let response = answer_call(
            served,
            loopback,
            CallRequest {
                endpoint: head.endpoint,
                path: &head.path,
                headers: &headers,
                body,
            },
        )
        .await;
        let close = close || *stopping.borrow();
        out.clear();
        crate::serve::response::write(&response, &mut out, close);
        if let crate::reply::Body::Stream(_, chunks) = &response.body {
            // A stream is in flight until its last chunk is written.
            if !stream(&mut io, &mut out, chunks).await {
                return Ended::Closed;
            }
            drop(in_flight);
        } else {
            // As with hyper, the call ends before its answer is written: a client that
            // does not read it is closed by the idle timeout, not held while the write
            // waits.
            drop(in_flight);
            // The flush sends what TLS holds back (a no-op on a plain socket).
            if io.write_all(&out).await.is_err() || io.flush().await.is_err() {
                return Ended::Closed;
            }
        }
        if close {
            let _ = io.shutdown().await;
            return Ended::Closed;
        }
        if !buf.is_empty() {
            // A next request has begun: the head read timeout applies from now.
            state.received();
        }
        // A large answer or body does not stay with an idle connection.
        if out.capacity() > 64 * 1024 {
            out = Vec::with_capacity(2 * 1024);
        }
        if buf.capacity() > 64 * 1024 {
            let mut fresh = BytesMut::with_capacity(READ_CHUNK.max(buf.len()));
            fresh.extend_from_slice(&buf);
            buf = fresh;
        }
    }
}

/// Writes a streamed reply: its head (in `out`), then each chunk as it comes, each
/// flushed, then the last chunk. False: the client went away.
async fn stream<S: AsyncWrite + Unpin>(
    io: &mut Watched<S>,
    out: &mut Vec<u8>,
    chunks: &crate::reply::Chunks,
) -> bool {
    let mut rx = chunks.take();
    loop {
        let next = match rx.as_mut() {
            Some(rx) => rx.recv().await,
            None => None,
        };
        let last = next.is_none();
        crate::serve::response::chunk(out, next.as_deref().unwrap_or_default());
        if io.write_all(out).await.is_err() || io.flush().await.is_err() {
            return false;
        }
        out.clear();
        if last {
            return true;
        }
    }
}

fn handover<S>(broker: &Broker, io: Watched<S>, buf: BytesMut, why: &'static str) -> Ended<S> {
    tracing::trace!(why, "connection handed to hyper's server");
    broker.parts.metrics.record_handover();
    Ended::Hyper(io.put_back(buf.freeze()))
}

/// How reading a body ended.
enum Read {
    /// The head's bytes and the body.
    Whole(Bytes, Bytes),
    /// The head's bytes and why the body is refused; true: the connection closes after
    /// the answer (its bytes are no longer in step with requests).
    Refused(Bytes, CallError, bool),
    /// The client went away.
    Ended,
}

/// Reads the body `head` declares, within the body read timeout; one over the limit is
/// read and dropped up to the drain bound, or refused at once past it.
async fn body<S: AsyncRead + Unpin>(
    served: &Served,
    io: &mut Watched<S>,
    buf: &mut BytesMut,
    head: &Head,
) -> Read {
    let bounds = &served.endpoints.bounds;
    let limit = served.endpoints.max_body_bytes;
    let head_bytes = buf.split_to(head.len).freeze();
    if head.body > limit {
        if head.body - limit > bounds.over_limit_drain_bytes {
            return Read::Refused(head_bytes, too_large(limit), true);
        }
        // Read and drop it, so a client that writes its whole body first reads the 413.
        let mut left = head.body;
        let drop_all = async {
            loop {
                let here = left.min(buf.len());
                buf.advance(here);
                left -= here;
                if left == 0 {
                    return true;
                }
                buf.reserve(READ_CHUNK);
                if !matches!(io.read_buf(buf).await, Ok(n) if n > 0) {
                    return false;
                }
            }
        };
        return match tokio::time::timeout(bounds.body_read_timeout(), drop_all).await {
            Ok(true) => Read::Refused(head_bytes, too_large(limit), false),
            Ok(false) => Read::Ended,
            Err(_) => Read::Refused(head_bytes, body_timed_out(bounds, &head.path), true),
        };
    }
    if buf.len() < head.body {
        buf.reserve(head.body - buf.len());
        let fill = async {
            while buf.len() < head.body {
                if !matches!(io.read_buf(buf).await, Ok(n) if n > 0) {
                    return false;
                }
            }
            true
        };
        match tokio::time::timeout(bounds.body_read_timeout(), fill).await {
            Ok(true) => {}
            Ok(false) => return Read::Ended,
            Err(_) => {
                return Read::Refused(head_bytes, body_timed_out(bounds, &head.path), true);
            }
        }
    }
    Read::Whole(head_bytes, buf.split_to(head.body).freeze())
}

/// The head's headers as a map, their values shared with the head's bytes (no copy).
fn header_map(head: &Bytes, lines: &[(HeaderName, usize, usize)]) -> HeaderMap {
    let mut map = HeaderMap::with_capacity(lines.len());
    for (name, start, end) in lines {
        // `parse` took these values from the bytes `head` now holds, as httparse
        // checked them; one HTTP refuses (a control byte) is left out, as hyper does
        // not let it through either.
        if let Ok(value) = HeaderValue::from_maybe_shared(head.slice(*start..*end)) {
            map.append(name.clone(), value);
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults' limits.
    const LIMITS: Limits = Limits {
        lines: 100,
        bytes: 64 * 1024,
    };

    /// A head taken; its length is the case text's up to its blank line.
    fn ours(endpoint: Endpoint, path: &'static str, body: usize, close: bool) -> Parsed {
        Parsed::Ours(Head {
            endpoint,
            path: Cow::Borrowed(path),
            len: 0,
            body,
            close,
        })
    }

    /// Each head, and what this server makes of it: taken (with its endpoint, head length,
    /// body length and `close`), not whole yet, or left to hyper.
    #[test]
    #[expect(
        clippy::too_many_lines,
        reason = "a table of heads and what the server makes of each"
    )]
    fn plain_call_heads_are_taken_and_leaves_the_rest_to_hyper() {
        let many = format!(
            "POST / HTTP/1.1\r\n{}\r\n",
            (0..HEADERS + 1)
                .map(|i| format!("x-h{i}: {i}\r\n"))
                .collect::<String>()
        );
        let cases: Vec<(&str, Parsed)> = vec![
            (
                "POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 5\r\n\r\nhello",
                ours(Endpoint::Rpc, "/", 5, false),
            ),
            (
                "POST /mcp HTTP/1.1\r\nContent-Length: 0\r\nConnection: Keep-Alive, close\r\n\r\n",
                ours(Endpoint::Mcp, "/mcp", 0, true),
            ),
            (
                "POST /mcp/hosting/list-domains HTTP/1.1\r\nConnection: keep-alive\r\n\r\n",
                ours(Endpoint::Rest, "/mcp/hosting/list-domains", 0, false),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length:  12 \r\n\r\n",
                ours(Endpoint::Rpc, "/", 12, false),
            ),
            ("POST / HTTP/1.1\r\nhost: a\r\n", Parsed::Partial),
            ("POS", Parsed::Partial),
            ("GET /healthz HTTP/1.1\r\n\r\n", Parsed::Hyper("not POST")),
            ("GET / HTTP/1.1\r\n\r\n", Parsed::Hyper("not POST")),
            ("POST / HTTP/1.0\r\n\r\n", Parsed::Hyper("not HTTP/1.1")),
            (
                "POST /?x=1 HTTP/1.1\r\n\r\n",
                Parsed::Hyper("not a call endpoint"),
            ),
            (
                "POST /mcpx HTTP/1.1\r\n\r\n",
                Parsed::Hyper("not a call endpoint"),
            ),
            (
                "POST /webhooks/crm HTTP/1.1\r\n\r\n",
                Parsed::Hyper("not a call endpoint"),
            ),
            (
                "POST http://a/ HTTP/1.1\r\n\r\n",
                Parsed::Hyper("not a call endpoint"),
            ),
            (
                "POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n",
                Parsed::Hyper("Transfer-Encoding, Expect or Upgrade"),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length: 3\r\nExpect: 100-continue\r\n\r\n",
                Parsed::Hyper("Transfer-Encoding, Expect or Upgrade"),
            ),
            (
                "POST / HTTP/1.1\r\nupgrade: h2c\r\n\r\n",
                Parsed::Hyper("Transfer-Encoding, Expect or Upgrade"),
            ),
            (
                "POST / HTTP/1.1\r\nconnection: upgrade\r\n\r\n",
                Parsed::Hyper("a Connection option this server does not keep"),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length: 3\r\ncontent-length: 3\r\n\r\n",
                Parsed::Hyper("a Content-Length this server does not take"),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length: +3\r\n\r\n",
                Parsed::Hyper("a Content-Length this server does not take"),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length: 3, 3\r\n\r\n",
                Parsed::Hyper("a Content-Length this server does not take"),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length:\r\n\r\n",
                Parsed::Hyper("a Content-Length this server does not take"),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length: 1234567890123456\r\n\r\n",
                Parsed::Hyper("a Content-Length this server does not take"),
            ),
            (
                "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
                Parsed::Hyper("a head this server does not parse"),
            ),
            (
                "\u{1}\u{2}garbage\r\n\r\n",
                Parsed::Hyper("a head this server does not parse"),
            ),
            (&many, Parsed::Hyper("a head this server does not parse")),
        ];
        let mut headers = Vec::new();
        // The `[server]` limits: over either, hyper's (it answers 431).
        let four = "POST / HTTP/1.1\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\n\r\n";
        let strict = Limits {
            lines: 3,
            bytes: 64 * 1024,
        };
        assert_eq!(
            parse(four.as_bytes(), strict, &mut headers),
            Parsed::Hyper("a head over a [server] limit")
        );
        let short = Limits {
            lines: 100,
            bytes: four.len() - 1,
        };
        assert_eq!(
            parse(four.as_bytes(), short, &mut headers),
            Parsed::Hyper("a head over a [server] limit")
        );
        let exact = Limits {
            lines: 4,
            bytes: four.len(),
        };
        assert!(matches!(
            parse(four.as_bytes(), exact, &mut headers),
            Parsed::Ours(_)
        ));
        for (text, mut expected) in cases {
            if let Parsed::Ours(head) = &mut expected {
                head.len = text.find("\r\n\r\n").unwrap() + 4;
            }
            assert_eq!(
                parse(text.as_bytes(), LIMITS, &mut headers),
                expected,
                "{text:?}"
            );
        }
    }

    #[test]
    fn headers_are_kept_in_order_with_values_shared_with_the_head() {
        let text = "POST / HTTP/1.1\r\nHost: a\r\nX-Tag: one\r\nx-tag: two\r\nauthorization: Bearer k\r\n\r\n";
        let mut lines = Vec::new();
        let Parsed::Ours(head) = parse(text.as_bytes(), LIMITS, &mut lines) else {
            panic!("taken");
        };
        assert_eq!(head.len, text.len());
        let bytes = Bytes::from(text);
        let map = header_map(&bytes, &lines);
        assert_eq!(map.len(), 4);
        assert_eq!(map["host"], "a");
        let tags: Vec<_> = map.get_all("x-tag").iter().collect();
        assert_eq!(tags, ["one", "two"]);
        assert_eq!(map["authorization"], "Bearer k");
    }
}
