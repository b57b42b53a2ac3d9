//! The broker's own HTTP/1.1 front door for calls: `POST /`, `POST /mcp` and
//! `POST /mcp/<service>/<tool>` on a keep-alive connection, read and answered without
//! hyper's server (engine/DESIGN.md, "The call doors' own HTTP/1.1 server").
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
//! What the door keeps itself, as hyper did: the `[server]` bounds (the head and idle
//! times are the connection's watchdog's, [`crate::serve::bounds`]; the body read timeout, a
//! declared body over the limit read and dropped up to `over_limit_drain_bytes` before
//! the 413, one past that answered at once and the connection closed), pipelined
//! requests answered in order, `Connection: close`, and a stop: an idle connection
//! closes, one with a call in flight answers it with `connection: close` first.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::call::Broker;
use crate::error::CallError;
use crate::serve::bounds::{ConnState, Watched};

/// Header lines the door parses on the stack; a request with more goes to hyper, which
/// applies the `[server]` `max_headers`.
pub const HEADERS: usize = 32;

/// What a connection reads at a time.
const READ_CHUNK: usize = 8 * 1024;

/// The three call doors a request head may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallDoor {
    /// `POST /`: JSON-RPC `tools/call`.
    Rpc,
    /// `POST /mcp`: the MCP Streamable HTTP door.
    Mcp,
    /// `POST /mcp/<service>/<tool>`: the projection's operations.
    Rest,
}

impl CallDoor {
    /// The door a `POST` to `path` (no query) goes to.
    pub fn of(path: &str) -> Option<Self> {
        match path {
            "/" => Some(Self::Rpc),
            "/mcp" => Some(Self::Mcp),
            _ if path.starts_with("/mcp/") => Some(Self::Rest),
            _ => None,
        }
    }
}

/// An answer from a call door, written by either front door: the broker's own writes it
/// as wire text ([`Answer::write`]), hyper's takes it as a `Response`.
#[derive(Debug)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The body is JSON (`content-type: application/json`, `cache-control: no-store`);
    /// false only for MCP's bodiless 202.
    pub json: bool,
    /// Headers beyond those (`retry-after`, `mcp-session-id`...): a value HTTP cannot
    /// carry is left out, as hyper's `HeaderValue` would refuse it.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Bytes,
}

impl Answer {
    /// A JSON answer.
    pub fn json(status: u16, body: impl Into<Bytes>, headers: Vec<(&'static str, String)>) -> Self {
        Self {
            status,
            json: true,
            headers,
            body: body.into(),
        }
    }

    /// The status as HTTP has it: one outside 100-999 is 500.
    pub fn status_code(&self) -> hyper::StatusCode {
        hyper::StatusCode::from_u16(self.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// Appends the answer as HTTP/1.1 wire text (head and body) to `out`; `close` adds
    /// `connection: close`.
    pub fn write(&self, out: &mut Vec<u8>, close: bool) {
        let status = self.status_code();
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(status.as_str().as_bytes());
        out.push(b' ');
        out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
        out.extend_from_slice(b"\r\n");
        if self.json {
            out.extend_from_slice(b"content-type: application/json\r\ncache-control: no-store\r\n");
        }
        for (name, value) in &self.headers {
            if HeaderValue::from_str(value).is_ok() {
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b": ");
                out.extend_from_slice(value.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
        }
        out.extend_from_slice(b"content-length: ");
        let _ = serde_json::to_writer(&mut *out, &self.body.len());
        out.extend_from_slice(b"\r\ndate: ");
        date(out);
        if close {
            out.extend_from_slice(b"\r\nconnection: close");
        }
        out.extend_from_slice(b"\r\n\r\n");
        out.extend_from_slice(&self.body);
    }
}

thread_local! {
    /// The `date` header's value for the current second, made once a second per thread.
    static DATE: RefCell<(i64, String)> = const { RefCell::new((i64::MIN, String::new())) };
}

/// Appends the current time as HTTP's IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn date(out: &mut Vec<u8>) {
    let now = jiff::Timestamp::now();
    DATE.with_borrow_mut(|(second, text)| {
        if *second != now.as_second() {
            *second = now.as_second();
            *text = http_date(now);
        }
        out.extend_from_slice(text.as_bytes());
    });
}

fn http_date(at: jiff::Timestamp) -> String {
    at.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

/// A request head the door takes, read off the connection's buffer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) door: CallDoor,
    pub(crate) path: Cow<'static, str>,
    /// Bytes of the head, up to and including its blank line.
    pub(crate) len: usize,
    /// The body's `Content-Length` (0 when none is given).
    pub(crate) body: usize,
    /// The client said `Connection: close`.
    pub(crate) close: bool,
}

/// What a buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// A whole head the door takes; its headers are in the list given to [`parse`].
    Ours(Head),
    /// Not a whole head yet.
    Partial,
    /// A head (or the start of something) the door leaves to hyper; why, for the log.
    Hyper(&'static str),
}

/// The `[server]` limits on a head: a head over either goes to hyper, which answers 431.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// `max_headers`.
    pub(crate) lines: usize,
    /// `max_header_bytes`.
    pub(crate) bytes: usize,
}

/// Parses the head at the start of `buf`. The headers of a head the door takes are
/// pushed onto `headers` as name and the value's place in `buf`.
pub(crate) fn parse(
    buf: &[u8],
    limits: Limits,
    headers: &mut Vec<(HeaderName, usize, usize)>,
) -> Parsed {
    headers.clear();
    let mut lines = [httparse::EMPTY_HEADER; HEADERS];
    let mut req = httparse::Request::new(&mut lines);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Hyper("a head the door does not parse"),
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
    let Some(door) = CallDoor::of(path).filter(|_| !path.contains('?')) else {
        return Parsed::Hyper("not a call door");
    };
    // Only RFC 3986 path characters: a `#` (found by the differential fuzzer: hyper
    // drops what follows it), a space or a byte outside ASCII is hyper's to read.
    if !path.bytes().all(path_char) {
        return Parsed::Hyper("a target the door does not read");
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
                return Parsed::Hyper("a Content-Length the door does not take");
            }
            // At most 15 digits: no overflow of a u64.
            let n = digits
                .iter()
                .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
            let Ok(n) = usize::try_from(n) else {
                return Parsed::Hyper("a Content-Length the door does not take");
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
                    return Parsed::Hyper("a Connection option the door does not keep");
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
    let path = match door {
        CallDoor::Rpc => Cow::Borrowed("/"),
        CallDoor::Mcp => Cow::Borrowed("/mcp"),
        CallDoor::Rest => Cow::Owned(path.to_string()),
    };
    Parsed::Ours(Head {
        door,
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

/// How the door left a connection.
pub enum Ended {
    /// Closed (by either side, or at a stop).
    Closed,
    /// To be served by hyper from here, with the bytes read and not yet answered.
    Hyper(Watched<TcpStream>),
}

/// A request read whole by the door, for the call door to answer.
pub struct Request<'a> {
    /// Its door.
    pub door: CallDoor,
    /// Its path.
    pub path: &'a str,
    /// Its headers.
    pub headers: &'a HeaderMap,
    /// Its body, or why it could not be had (over the limit, too slow).
    pub body: Result<Bytes, CallError>,
}

/// Serves a connection's call requests until it closes or brings something the door
/// leaves to hyper. `stopped` turning true closes it between requests.
pub async fn serve(
    broker: &Arc<Broker>,
    loopback: bool,
    mut io: Watched<TcpStream>,
    state: &Arc<ConnState>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> Ended {
    let bounds = &broker.doors.bounds;
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut out = Vec::with_capacity(2 * 1024);
    let mut lines = Vec::with_capacity(16);
    let limits = Limits {
        lines: bounds.max_headers,
        bytes: bounds.max_header_bytes,
    };
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
                    _ = stopped.wait_for(|stopped| *stopped) => return Ended::Closed,
                }
            } else {
                io.read_buf(&mut buf).await
            };
            if !matches!(read, Ok(n) if n > 0) {
                return Ended::Closed;
            }
        };
        let in_flight = state.request();
        let (headers, body, close) = match body(broker, &mut io, &mut buf, &head).await {
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
        let answer = crate::serve::server::answer_call(
            broker,
            loopback,
            Request {
                door: head.door,
                path: &head.path,
                headers: &headers,
                body,
            },
        )
        .await;
        let close = close || *stopped.borrow();
        out.clear();
        answer.write(&mut out, close);
        // As with hyper, the call ends before its answer is written: a client that does
        // not read it is closed by the idle timeout, not held while the write waits.
        drop(in_flight);
        if io.write_all(&out).await.is_err() {
            return Ended::Closed;
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

fn handover(broker: &Broker, io: Watched<TcpStream>, buf: BytesMut, why: &'static str) -> Ended {
    tracing::trace!(why, "connection handed to hyper's server");
    broker.metrics.record_handover();
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
async fn body(
    broker: &Broker,
    io: &mut Watched<TcpStream>,
    buf: &mut BytesMut,
    head: &Head,
) -> Read {
    let bounds = &broker.doors.bounds;
    let limit = broker.doors.max_body_bytes;
    let head_bytes = buf.split_to(head.len).freeze();
    if head.body > limit {
        if head.body - limit > bounds.over_limit_drain_bytes {
            return Read::Refused(head_bytes, crate::serve::server::too_large(limit), true);
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
            Ok(true) => Read::Refused(head_bytes, crate::serve::server::too_large(limit), false),
            Ok(false) => Read::Ended,
            Err(_) => Read::Refused(
                head_bytes,
                crate::serve::server::body_timed_out(bounds, &head.path),
                true,
            ),
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
                return Read::Refused(
                    head_bytes,
                    crate::serve::server::body_timed_out(bounds, &head.path),
                    true,
                );
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
    fn ours(door: CallDoor, path: &'static str, body: usize, close: bool) -> Parsed {
        Parsed::Ours(Head {
            door,
            path: Cow::Borrowed(path),
            len: 0,
            body,
            close,
        })
    }

    /// Each head, and what the door makes of it: taken (with its door, head length,
    /// body length and `close`), not whole yet, or left to hyper.
    #[test]
    fn the_door_takes_plain_call_heads_and_leaves_the_rest_to_hyper() {
        let many = format!(
            "POST / HTTP/1.1\r\n{}\r\n",
            (0..HEADERS + 1)
                .map(|i| format!("x-h{i}: {i}\r\n"))
                .collect::<String>()
        );
        let cases: Vec<(&str, Parsed)> = vec![
            (
                "POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 5\r\n\r\nhello",
                ours(CallDoor::Rpc, "/", 5, false),
            ),
            (
                "POST /mcp HTTP/1.1\r\nContent-Length: 0\r\nConnection: Keep-Alive, close\r\n\r\n",
                ours(CallDoor::Mcp, "/mcp", 0, true),
            ),
            (
                "POST /mcp/hosting/list-domains HTTP/1.1\r\nConnection: keep-alive\r\n\r\n",
                ours(CallDoor::Rest, "/mcp/hosting/list-domains", 0, false),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length:  12 \r\n\r\n",
                ours(CallDoor::Rpc, "/", 12, false),
            ),
            ("POST / HTTP/1.1\r\nhost: a\r\n", Parsed::Partial),
            ("POS", Parsed::Partial),
            ("GET /healthz HTTP/1.1\r\n\r\n", Parsed::Hyper("not POST")),
            ("GET / HTTP/1.1\r\n\r\n", Parsed::Hyper("not POST")),
            ("POST / HTTP/1.0\r\n\r\n", Parsed::Hyper("not HTTP/1.1")),
            (
                "POST /?x=1 HTTP/1.1\r\n\r\n",
                Parsed::Hyper("not a call door"),
            ),
            (
                "POST /mcpx HTTP/1.1\r\n\r\n",
                Parsed::Hyper("not a call door"),
            ),
            (
                "POST /webhooks/crm HTTP/1.1\r\n\r\n",
                Parsed::Hyper("not a call door"),
            ),
            (
                "POST http://a/ HTTP/1.1\r\n\r\n",
                Parsed::Hyper("not a call door"),
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
                Parsed::Hyper("a Connection option the door does not keep"),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length: 3\r\ncontent-length: 3\r\n\r\n",
                Parsed::Hyper("a Content-Length the door does not take"),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length: +3\r\n\r\n",
                Parsed::Hyper("a Content-Length the door does not take"),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length: 3, 3\r\n\r\n",
                Parsed::Hyper("a Content-Length the door does not take"),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length:\r\n\r\n",
                Parsed::Hyper("a Content-Length the door does not take"),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length: 1234567890123456\r\n\r\n",
                Parsed::Hyper("a Content-Length the door does not take"),
            ),
            (
                "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
                Parsed::Hyper("a head the door does not parse"),
            ),
            (
                "\u{1}\u{2}garbage\r\n\r\n",
                Parsed::Hyper("a head the door does not parse"),
            ),
            (&many, Parsed::Hyper("a head the door does not parse")),
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

    #[test]
    fn an_answer_is_written_as_hyper_writes_it() {
        let answer = Answer::json(
            429,
            &b"{\"ok\":false}"[..],
            vec![
                ("retry-after", "3".to_string()),
                ("x-bad", "a\r\nx-injected: 1".to_string()),
            ],
        );
        let mut out = Vec::new();
        answer.write(&mut out, true);
        let text = String::from_utf8(out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let mut lines: Vec<&str> = head.split("\r\n").collect();
        let date = lines.remove(5);
        assert_eq!(
            lines,
            [
                "HTTP/1.1 429 Too Many Requests",
                "content-type: application/json",
                "cache-control: no-store",
                "retry-after: 3",
                "content-length: 12",
                "connection: close",
            ],
            "a value HTTP cannot carry is left out"
        );
        assert!(
            date.starts_with("date: ") && date.ends_with(" GMT"),
            "{date}"
        );
        assert_eq!(body, "{\"ok\":false}");
        let empty = Answer {
            status: 202,
            json: false,
            headers: Vec::new(),
            body: Bytes::new(),
        };
        let mut out = Vec::new();
        empty.write(&mut out, false);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\ndate: ")
                && text.ends_with(" GMT\r\n\r\n"),
            "{text}"
        );
        let odd = Answer::json(1000, Bytes::new(), Vec::new());
        assert_eq!(odd.status_code(), hyper::StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[test]
    fn dates_and_lengths_are_written_as_http_has_them() {
        let at = jiff::Timestamp::from_second(784_111_777).unwrap();
        assert_eq!(http_date(at), "Sun, 06 Nov 1994 08:49:37 GMT");
        for n in [0usize, 7, 10, 1_234_567] {
            let mut out = Vec::new();
            Answer::json(200, vec![b' '; n], Vec::new()).write(&mut out, false);
            let text = String::from_utf8(out).unwrap();
            assert!(
                text.contains(&format!("\r\ncontent-length: {n}\r\n")),
                "{n}"
            );
        }
    }
}
