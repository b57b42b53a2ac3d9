//! Plain-HTTP upstream exchanges of a serving worker thread: written and read by the
//! call itself, on connections the thread holds without a pool.
//!
//! A serving worker ([`crate::serve::server::serve_workers`]) runs one current-thread runtime
//! for its whole life, and every call it serves runs on it; so its upstream connections
//! need no pool shared between threads, and no task of their own: the call that takes an
//! idle connection writes its request head and body in one write, reads the answer's
//! head (`httparse`, the parser hyper uses) and body on the same task, and puts the
//! connection back. No channel between a request and a connection task, no wake-up of
//! another task per call (measured in engine/DESIGN.md, "The upstream client").
//!
//! HTTP/1.1 as a client must speak it (RFC 9112):
//! - the request line is origin-form; `Host` is the URI's host with its port unless it
//!   is 80 (never user information); `content-length` when there is a body or the
//!   method carries one;
//! - interim (1xx) answers are skipped; `101` is refused;
//! - the body is framed by `transfer-encoding: chunked` (extensions and trailers read,
//!   checked and dropped), by `content-length` (several differing values refused), or
//!   by the connection's end;
//!   `HEAD`, `204` and `304` answers have none;
//! - a connection is put back only when its answer was read exactly to its end, the
//!   upstream spoke HTTP/1.1 and did not say `connection: close`, and nothing followed
//!   the answer;
//! - the answer's head is bounded ([`MAX_HEAD_BYTES`], [`MAX_HEADERS`]), a chunked body's
//!   extensions and trailers too, and its body by the caller's limit, known before
//!   reading when the upstream declares its length;
//! - whatever this reading takes, hyper's client takes the same (status and body):
//!   checked by a differential oracle and fuzz target (`crate::oracle::held`,
//!   fuzz/README.md), so a held `http://` upstream reads as a pooled `https://` one.
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

use bytes::{Buf, Bytes, BytesMut};
use hyper::Method;
use hyper::http::uri::Authority;

use crate::upstream::Outgoing;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An idle connection older than this is dropped (the pool's `pool_idle_timeout`).
pub const IDLE_FOR: Duration = Duration::from_secs(60);

/// Idle connections kept per upstream origin; more are closed when put back.
const MAX_IDLE: usize = 256;

/// How long opening a connection may take (the pool's connector's timeout).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest answer head (status line and headers).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The most headers an answer may have, and the most trailer lines of a chunked body:
/// what hyper's client (the pooled client, for `https://` upstreams) takes, so an answer
/// does not read differently by the upstream's scheme (a differential-fuzzing check).
pub const MAX_HEADERS: usize = 100;

/// The longest trailer section of a chunked body, its lines and the empty line ending it
/// (under hyper's client's 16 KiB).
const MAX_TRAILER_BYTES: usize = 8 * 1024;

/// The most chunk-extension bytes (after a chunk size's `;`) a body may carry, all chunks
/// together (under hyper's client's 16 KiB).
const MAX_EXTENSION_BYTES: usize = 8 * 1024;

/// The longest chunk-size line, extensions included.
const MAX_CHUNK_LINE: usize = 1024;

/// Read buffer: most answers fit in one. A connection keeps its buffer while the answers
/// it carries fit in it (a body up to this size is copied out), so a call allocates no
/// buffer of its own.
const READ_CHUNK: usize = 8 * 1024;

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

/// Why an exchange failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failed {
    /// No connection could be opened.
    Connect,
    /// The request could not be sent, or the connection ended before any answer.
    Request,
    /// The answer is not HTTP/1.x as a client reads it (or its head is over the limit).
    Malformed,
    /// The connection ended inside the answer.
    CutOff,
    /// The answer's body is over the caller's limit.
    TooLarge,
}

/// An upstream's answer, read whole.
#[derive(Debug)]
pub struct Answer {
    /// Status (never 1xx).
    pub status: u16,
    /// The body, de-chunked.
    pub body: Bytes,
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

/// The request as it goes on the wire: head and body in one buffer (one write).
fn wire(origin: &Authority, request: &Outgoing) -> Vec<u8> {
    let body = &request.body;
    let target = request.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut out = Vec::with_capacity(256 + target.len() + body.len());
    out.extend_from_slice(request.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !request.has(&hyper::header::HOST) {
        out.extend_from_slice(b"host: ");
        out.extend_from_slice(host_port(origin, false).as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in &request.headers {
        // Names and values are checked by `http` (no CR or LF can be in them).
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let carries_body = matches!(request.method, Method::POST | Method::PUT | Method::PATCH);
    if (carries_body || !body.is_empty()) && !request.has(&hyper::header::CONTENT_LENGTH) {
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(body.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

/// Sends `request` (an absolute `http://` URI) to `origin` on a held connection and reads
/// its answer, the body up to `max_body` bytes.
pub async fn exchange(
    origin: &Authority,
    request: &Outgoing,
    max_body: usize,
) -> Result<Answer, Failed> {
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

/// What the answer's head says about its body and its connection.
struct Framing {
    status: u16,
    chunked: bool,
    length: Option<usize>,
    keep_alive: bool,
}

/// Reads one answer into the connection's buffer `buf` (empty): its status and body, and
/// whether the connection may carry another (then `buf` is empty again).
pub(crate) async fn read_answer<R: AsyncRead + Unpin>(
    stream: &mut R,
    buf: &mut BytesMut,
    head_only: bool,
    max_body: usize,
) -> Result<(Answer, bool), Failed> {
    let mut got_any = false;
    let framing = loop {
        match parse_head(buf)? {
            Some((used, framing)) => {
                buf.advance(used);
                if (100..200).contains(&framing.status) {
                    continue; // interim answer; the final one follows
                }
                break framing;
            }
            None if buf.len() > MAX_HEAD_BYTES => return Err(Failed::Malformed),
            None => {
                if fill(stream, buf).await? == 0 {
                    return Err(if got_any {
                        Failed::CutOff
                    } else {
                        Failed::Request
                    });
                }
                got_any = true;
            }
        }
    };
    let status = framing.status;
    if head_only || status == 204 || status == 304 {
        let reusable = framing.keep_alive && buf.is_empty();
        return Ok((
            Answer {
                status,
                body: Bytes::new(),
            },
            reusable,
        ));
    }
    if framing.chunked {
        let body = read_chunked(stream, buf, max_body).await?;
        let reusable = framing.keep_alive && buf.is_empty();
        return Ok((Answer { status, body }, reusable));
    }
    match framing.length {
        Some(length) => {
            if length > max_body {
                return Err(Failed::TooLarge);
            }
            if buf.len() < length {
                buf.reserve(length - buf.len());
            }
            while buf.len() < length {
                if fill(stream, buf).await? == 0 {
                    return Err(Failed::CutOff);
                }
            }
            // A body that fits the buffer is copied out and the buffer stays the
            // connection's; a longer one takes the buffer with it.
            let body = if length <= READ_CHUNK {
                let body = Bytes::copy_from_slice(buf.get(..length).unwrap_or_default());
                buf.advance(length);
                body
            } else {
                buf.split_to(length).freeze()
            };
            let reusable = framing.keep_alive && buf.is_empty();
            Ok((Answer { status, body }, reusable))
        }
        // Framed by the connection's end: read to it; the connection is done.
        None => {
            while fill(stream, buf).await? > 0 {
                if buf.len() > max_body {
                    return Err(Failed::TooLarge);
                }
            }
            if buf.len() > max_body {
                return Err(Failed::TooLarge);
            }
            Ok((
                Answer {
                    status,
                    body: std::mem::take(buf).freeze(),
                },
                false,
            ))
        }
    }
}

/// Reads more of the answer into `buf`: how many bytes came (0 at the connection's end).
async fn fill<R: AsyncRead + Unpin>(stream: &mut R, buf: &mut BytesMut) -> Result<usize, Failed> {
    if buf.capacity() - buf.len() < READ_CHUNK / 2 {
        buf.reserve(READ_CHUNK);
    }
    stream.read_buf(buf).await.map_err(|_| Failed::CutOff)
}

/// The answer's head if `buf` holds all of it: its length and what it says.
fn parse_head(buf: &[u8]) -> Result<Option<(usize, Framing)>, Failed> {
    // Left uninitialised (httparse writes what it parses): no 4 KiB filled per parse.
    let mut headers = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
    let mut answer = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut answer,
        buf,
        &mut headers,
    );
    let used = match parsed {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(Failed::Malformed),
    };
    let status = answer.code.ok_or(Failed::Malformed)?;
    // Three digits, 100 to 999 (RFC 9110 section 15; `020` parses as 20 and hyper's
    // client refuses it: found by the differential fuzzer).
    if !(100..=999).contains(&status) {
        return Err(Failed::Malformed);
    }
    if status == 101 {
        return Err(Failed::Malformed); // no protocol switch was asked for
    }
    let mut framing = Framing {
        status,
        chunked: false,
        length: None,
        keep_alive: answer.version == Some(1),
    };
    let mut transfer_coded = false;
    for header in answer.headers.iter() {
        let name = header.name;
        if name.eq_ignore_ascii_case("content-length") {
            let length = content_length(header.value).ok_or(Failed::Malformed)?;
            if framing.length.is_some_and(|l| l != length) {
                return Err(Failed::Malformed);
            }
            framing.length = Some(length);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            // Codings are tokens: a value with a byte outside visible ASCII is refused
            // (hyper's client reads such a value as not chunked and the body to the
            // connection's end: found by the differential fuzzer).
            if !header
                .value
                .iter()
                .all(|b| *b == b'\t' || (0x20..0x7f).contains(b))
            {
                return Err(Failed::Malformed);
            }
            transfer_coded = true;
            // Chunked only when it is the last coding applied.
            framing.chunked = header
                .value
                .rsplit(|b| *b == b',')
                .next()
                .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case("connection")
            && header
                .value
                .split(|b| *b == b',')
                .any(|token| token.trim_ascii().eq_ignore_ascii_case(b"close"))
        {
            framing.keep_alive = false;
        }
    }
    if transfer_coded && answer.version != Some(1) {
        // RFC 9112 section 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty
        // framing (hyper's client refuses it too; found by the differential oracle).
        return Err(Failed::Malformed);
    }
    if transfer_coded {
        // Transfer-Encoding overrides Content-Length; not chunked last: read to the end.
        framing.length = None;
        if !framing.chunked {
            framing.keep_alive = false;
        }
    }
    Ok(Some((used, framing)))
}

/// A `Content-Length` value as RFC 9110 section 8.6 has it: digits only (no sign, no
/// space inside), or a list of one value repeated (`3, 3`), as hyper's client reads it
/// (a `+3` that `str::parse` takes was found by the differential oracle).
fn content_length(value: &[u8]) -> Option<usize> {
    let mut length = None;
    for item in value.split(|b| *b == b',') {
        let digits = item.trim_ascii();
        if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n = digits
            .iter()
            .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
        let n = usize::try_from(n).ok()?;
        if length.is_some_and(|l| l != n) {
            return None;
        }
        length = Some(n);
    }
    length
}

/// A trailer field line as RFC 9110 section 5 has it: a token, a colon, a value of
/// visible characters, spaces, tabs and obs-text (a line without a colon was dropped
/// unread, where hyper's client refuses it: found by the differential fuzzer).
fn trailer_line(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|b| *b == b':') else {
        return false;
    };
    let (name, value) = line.split_at(colon);
    let tchar = |b: &u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b);
    !name.is_empty()
        && name.iter().all(tchar)
        && value
            .iter()
            .skip(1)
            .all(|b| *b == b'\t' || (0x20..0x7f).contains(b) || *b >= 0x80)
}

/// A chunked body, de-chunked, up to `max_body` bytes; its extensions and trailers are
/// checked and dropped. `buf` keeps what followed the body.
async fn read_chunked<R: AsyncRead + Unpin>(
    stream: &mut R,
    buf: &mut BytesMut,
    max_body: usize,
) -> Result<Bytes, Failed> {
    let mut body = BytesMut::new();
    let mut extensions = 0usize;
    loop {
        let size = loop {
            match httparse::parse_chunk_size(buf) {
                Ok(httparse::Status::Complete((used, size))) => {
                    extensions += chunk_line_extensions(buf.get(..used).unwrap_or_default())?;
                    if extensions > MAX_EXTENSION_BYTES {
                        return Err(Failed::Malformed);
                    }
                    buf.advance(used);
                    break usize::try_from(size).map_err(|_| Failed::TooLarge)?;
                }
                Ok(httparse::Status::Partial) if buf.len() < MAX_CHUNK_LINE => {
                    if fill(stream, buf).await? == 0 {
                        return Err(Failed::CutOff);
                    }
                }
                _ => return Err(Failed::Malformed),
            }
        };
        if size == 0 {
            break;
        }
        if body.len().saturating_add(size) > max_body {
            return Err(Failed::TooLarge);
        }
        while buf.len() < size + 2 {
            if fill(stream, buf).await? == 0 {
                return Err(Failed::CutOff);
            }
        }
        body.extend_from_slice(&buf[..size]);
        if &buf[size..size + 2] != b"\r\n" {
            return Err(Failed::Malformed);
        }
        buf.advance(size + 2);
    }
    read_trailers(stream, buf).await?;
    Ok(body.freeze())
}

/// How many extension bytes a chunk-size line `httparse` completed (its CRLF included)
/// carries, or why it is refused. `httparse` reads an empty size line as `0` and takes a
/// bare LF inside an extension; hyper's client refuses both (found by the differential
/// fuzzer).
fn chunk_line_extensions(line: &[u8]) -> Result<usize, Failed> {
    let line = line.strip_suffix(b"\r\n").ok_or(Failed::Malformed)?;
    if !line.first().is_some_and(u8::is_ascii_hexdigit) || line.contains(&b'\n') {
        return Err(Failed::Malformed);
    }
    Ok(line
        .iter()
        .position(|b| *b == b';')
        .map_or(0, |semicolon| line.len() - semicolon - 1))
}

/// A chunked body's trailer section, up to and with its empty line: at most
/// [`MAX_HEADERS`] field lines, [`MAX_TRAILER_BYTES`] in all, each a field line.
async fn read_trailers<R: AsyncRead + Unpin>(
    stream: &mut R,
    buf: &mut BytesMut,
) -> Result<(), Failed> {
    let mut read = 0usize;
    let mut lines = 0usize;
    loop {
        match buf.windows(2).position(|w| w == b"\r\n") {
            Some(0) => {
                buf.advance(2);
                return Ok(());
            }
            Some(end) => {
                lines += 1;
                read += end + 2;
                if lines > MAX_HEADERS
                    || read + 2 > MAX_TRAILER_BYTES
                    || !trailer_line(buf.get(..end).unwrap_or_default())
                {
                    return Err(Failed::Malformed);
                }
                buf.advance(end + 2);
            }
            None if read + buf.len() > MAX_TRAILER_BYTES => return Err(Failed::Malformed),
            None => {
                if fill(stream, buf).await? == 0 {
                    return Err(Failed::CutOff);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What reading an answer gives: (status, body, connection reusable), or the failure.
    type Read = Result<(u16, String, bool), Failed>;

    /// An answer as the upstream wrote it, read.
    fn read(wire: &str, head_only: bool, max: usize) -> Read {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut stream = wire.as_bytes();
        let mut buf = BytesMut::new();
        runtime
            .block_on(read_answer(&mut stream, &mut buf, head_only, max))
            .map(|(answer, reusable)| {
                let body = String::from_utf8(answer.body.to_vec()).unwrap();
                (answer.status, body, reusable)
            })
    }

    #[test]
    fn answers_are_framed_as_rfc_9112_says() {
        let ok = |status: u16, body: &str, reusable: bool| Ok((status, body.to_string(), reusable));
        let many_headers = "x-h: v\r\n".repeat(MAX_HEADERS + 1);
        let long_head = format!("HTTP/1.1 200 OK\r\nx-long: {}", "v".repeat(MAX_HEAD_BYTES));
        let chunked =
            |chunks: &str| format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{chunks}");
        let trailers = |count: usize, each: usize| {
            chunked(&format!(
                "0\r\n{}\r\n",
                format!("x: {}\r\n", "t".repeat(each)).repeat(count)
            ))
        };
        let extensions = |count: usize| {
            chunked(&format!(
                "{}0\r\n\r\n",
                format!("1;{}\r\nx\r\n", "e".repeat(1000)).repeat(count)
            ))
        };
        let cases: Vec<(&str, String, bool, usize, Read)> = vec![
            ("length", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".into(), false, 10, ok(200, "ok", true)),
            ("chunked, extension and trailer", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n3;x=y\r\n!!!\r\n0\r\nx-trailer: t\r\n\r\n".into(), false, 10, ok(200, "ok!!!", true)),
            ("chunked overrides length", "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n".into(), false, 10, ok(200, "ok", true)),
            ("to the connection's end", "HTTP/1.1 200 OK\r\n\r\nuntil the end".into(), false, 100, ok(200, "until the end", false)),
            ("not chunked last: to the end", "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\ncontent-length: 1\r\n\r\nabc".into(), false, 10, ok(200, "abc", false)),
            ("connection: close", "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\ncontent-length: 0\r\n\r\n".into(), false, 10, ok(200, "", false)),
            ("HTTP/1.0", "HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok".into(), false, 10, ok(200, "ok", false)),
            ("interim answers skipped", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: x\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok".into(), false, 10, ok(201, "ok", true)),
            ("HEAD has no body", "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n".into(), true, 10, ok(200, "", true)),
            ("204 has no body", "HTTP/1.1 204 No Content\r\n\r\n".into(), false, 10, ok(204, "", true)),
            ("304 has no body", "HTTP/1.1 304 Not Modified\r\ncontent-length: 5\r\n\r\n".into(), false, 10, ok(304, "", true)),
            ("a refusal is an answer", "HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{}".into(), false, 10, ok(404, "{}", true)),
            ("bytes after the answer", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1".into(), false, 10, ok(200, "ok", false)),
            ("same length twice", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 2\r\n\r\nok".into(), false, 10, ok(200, "ok", true)),
            ("declared over the limit", "HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n".into(), false, 10, Err(Failed::TooLarge)),
            ("chunks over the limit", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6\r\n123456\r\n6\r\n123456\r\n0\r\n\r\n".into(), false, 10, Err(Failed::TooLarge)),
            ("to the end over the limit", format!("HTTP/1.1 200 OK\r\n\r\n{}", "x".repeat(11)), false, 10, Err(Failed::TooLarge)),
            ("exactly the limit", format!("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{}", "x".repeat(10)), false, 10, ok(200, "xxxxxxxxxx", true)),
            ("body cut off", "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort".into(), false, 10, Err(Failed::CutOff)),
            ("chunk cut off", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab".into(), false, 10, Err(Failed::CutOff)),
            ("trailers cut off", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\nx-t: 1\r\n".into(), false, 10, Err(Failed::CutOff)),
            ("head cut off", "HTTP/1.1 200 OK\r\ncont".into(), false, 10, Err(Failed::CutOff)),
            ("nothing: the request failed", String::new(), false, 10, Err(Failed::Request)),
            ("not HTTP", "SSH-2.0-OpenSSH\r\n\r\n".into(), false, 10, Err(Failed::Malformed)),
            ("lengths differ", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nok!".into(), false, 10, Err(Failed::Malformed)),
            ("length not a number", "HTTP/1.1 200 OK\r\ncontent-length: -2\r\n\r\nok".into(), false, 10, Err(Failed::Malformed)),
            ("chunk size not hex", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n".into(), false, 10, Err(Failed::Malformed)),
            ("most trailer lines", trailers(MAX_HEADERS, 1), false, 10, ok(200, "", true)),
            ("a trailer line too many", trailers(MAX_HEADERS + 1, 1), false, 10, Err(Failed::Malformed)),
            ("trailers too long", trailers(2, MAX_TRAILER_BYTES / 2), false, 10, Err(Failed::Malformed)),
            ("extensions within the bound", extensions(8), false, 100, ok(200, "xxxxxxxx", true)),
            ("extensions past the bound, all chunks together", extensions(9), false, 100, Err(Failed::Malformed)),
            ("a chunk-size line too long", chunked(&format!("1;{}", "e".repeat(MAX_CHUNK_LINE))), false, 10, Err(Failed::Malformed)),
            ("a bare LF in an extension", chunked("1;a\nb\r\nx\r\n0\r\n\r\n"), false, 10, Err(Failed::Malformed)),
            ("an empty chunk-size line", chunked("\r\n\r\n"), false, 10, Err(Failed::Malformed)),
            ("chunk not ended by CRLF", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n".into(), false, 10, Err(Failed::Malformed)),
            ("a protocol switch nobody asked for", "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n".into(), false, 10, Err(Failed::Malformed)),
            ("too many headers", format!("HTTP/1.1 200 OK\r\n{many_headers}content-length: 0\r\n\r\n"), false, 10, Err(Failed::Malformed)),
            ("head over the limit", long_head, false, 10, Err(Failed::Malformed)),
        ];
        for (name, wire, head_only, max, expected) in cases {
            assert_eq!(read(&wire, head_only, max), expected, "{name}");
        }
    }

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
    fn a_request_goes_out_origin_form_with_host_and_length() {
        let request = |method: Method, uri: &str, body: &'static [u8]| Outgoing {
            method,
            uri: uri.parse().unwrap(),
            headers: Vec::new(),
            body: Bytes::from_static(body),
        };
        let origin: Authority = "upstream.test:8080".parse().unwrap();
        let mut post = request(Method::POST, "http://upstream.test:8080/v1/x?a=1", b"{}");
        post.headers.push((
            hyper::header::ACCEPT,
            hyper::header::HeaderValue::from_static("application/json"),
        ));
        assert_eq!(
            String::from_utf8(wire(&origin, &post)).unwrap(),
            "POST /v1/x?a=1 HTTP/1.1\r\nhost: upstream.test:8080\r\naccept: application/json\r\ncontent-length: 2\r\n\r\n{}"
        );
        let get = request(Method::GET, "http://upstream.test/v1/x", b"");
        let origin: Authority = "upstream.test".parse().unwrap();
        assert_eq!(
            String::from_utf8(wire(&origin, &get)).unwrap(),
            "GET /v1/x HTTP/1.1\r\nhost: upstream.test\r\n\r\n"
        );
        // An empty POST still says its length.
        let empty = request(Method::POST, "http://upstream.test/", b"");
        assert!(
            String::from_utf8(wire(&origin, &empty))
                .unwrap()
                .ends_with("content-length: 0\r\n\r\n")
        );
        // A header the request sets itself is not written twice.
        let mut own = request(Method::PUT, "http://upstream.test/", b"ab");
        own.headers.push((
            hyper::header::HOST,
            hyper::header::HeaderValue::from_static("other.test"),
        ));
        own.headers.push((
            hyper::header::CONTENT_LENGTH,
            hyper::header::HeaderValue::from_static("2"),
        ));
        assert_eq!(
            String::from_utf8(wire(&origin, &own)).unwrap(),
            "PUT / HTTP/1.1\r\nhost: other.test\r\ncontent-length: 2\r\n\r\nab"
        );
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
