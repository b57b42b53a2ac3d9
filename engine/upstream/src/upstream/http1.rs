//! HTTP/1.1 as a client speaks it on one plain connection: a request written as it goes
//! on the wire ([`wire`]) and an answer read off the connection ([`read_answer`]); the
//! connections themselves are [`crate::upstream::held`]'s.
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
//!   checked by a differential oracle and fuzz target (`oracle::held`,
//!   fuzz/README.md), so a held `http://` upstream reads as a pooled `https://` one.
//!

use bytes::{Buf, Bytes, BytesMut};
use hyper::Method;
use hyper::http::uri::Authority;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::upstream::Outgoing;

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
pub const READ_CHUNK: usize = 8 * 1024;

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

/// An upstream's answer as read off its connection, before the answer stage: status
/// and body, whole.
#[derive(Debug)]
pub struct RawAnswer {
    /// Status (never 1xx).
    pub status: u16,
    /// The body, de-chunked.
    pub body: Bytes,
}

/// `host` or `host:port` of an authority, without user information: as written when it
/// has none (no copy), else rebuilt. `with_default_port`: `:80` is written.
pub fn host_port(origin: &Authority, with_default_port: bool) -> std::borrow::Cow<'_, str> {
    let text = origin.as_str();
    match origin.port_u16() {
        Some(80) | None if !with_default_port => origin.host().into(),
        Some(_) if !text.contains('@') => text.into(),
        port => format!("{}:{}", origin.host(), port.unwrap_or(80)).into(),
    }
}

/// The request as it goes on the wire: head and body in one buffer (one write).
pub fn wire(origin: &Authority, request: &Outgoing) -> Vec<u8> {
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

/// What the answer's head says about its body and its connection.
struct Framing {
    status: u16,
    chunked: bool,
    length: Option<usize>,
    keep_alive: bool,
}

/// Reads one answer into the connection's buffer `buf` (empty): its status and body, and
/// whether the connection may carry another (then `buf` is empty again).
pub async fn read_answer<R: AsyncRead + Unpin>(
    stream: &mut R,
    buf: &mut BytesMut,
    head_only: bool,
    max_body: usize,
) -> Result<(RawAnswer, bool), Failed> {
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
            RawAnswer {
                status,
                body: Bytes::new(),
            },
            reusable,
        ));
    }
    if framing.chunked {
        let body = read_chunked(stream, buf, max_body).await?;
        let reusable = framing.keep_alive && buf.is_empty();
        return Ok((RawAnswer { status, body }, reusable));
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
            Ok((RawAnswer { status, body }, reusable))
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
                RawAnswer {
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
}
