//! A [`Reply`] written on the wire: as HTTP/1.1 text by the broker's own server
//! ([`write()`]), or as hyper's response (`into_hyper`), with the same headers; and the
//! `date` header. Imports nothing else of `serve/`: every file of the folder may use it.

use std::cell::RefCell;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::Full;
use hyper::StatusCode;
use hyper::body::{Frame, SizeHint};
use hyper::header::HeaderValue;
use tokio::sync::mpsc::Receiver;

use crate::reply::{Body, Reply};

/// What hyper's server answers.
pub type HttpResponse = hyper::Response<ReplyBody>;

/// A reply's body as hyper writes it: whole, or a stream's chunks as they come.
pub enum ReplyBody {
    /// Every byte at once.
    Whole(Full<Bytes>),
    /// Chunks as they come.
    Stream {
        /// The chunks.
        chunks: Receiver<Bytes>,
        /// Kept until the last chunk is written (the connection's mark of a request
        /// in flight).
        hold: Option<Box<dyn Send + Sync>>,
    },
}

impl ReplyBody {
    /// Keeps `guard` until a stream's last chunk is written (dropped now for a whole
    /// body).
    pub(super) fn hold(&mut self, guard: Box<dyn Send + Sync>) {
        if let Self::Stream { hold, .. } = self {
            *hold = Some(guard);
        }
    }
}

impl hyper::body::Body for ReplyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Self::Whole(full) => Pin::new(full).poll_frame(cx),
            Self::Stream { chunks, .. } => chunks
                .poll_recv(cx)
                .map(|chunk| chunk.map(|c| Ok(Frame::data(c)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Self::Whole(full) => full.is_end_stream(),
            Self::Stream { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Whole(full) => full.size_hint(),
            Self::Stream { .. } => SizeHint::default(),
        }
    }
}

/// The status as HTTP has it: one outside 100-999 is 500.
pub fn status_code(reply: &Reply) -> StatusCode {
    StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// Appends `reply` as HTTP/1.1 wire text (head and body) to `out`; `close` adds
/// `connection: close`. The headers are `into_hyper`'s, in the same order. A stream's
/// head says `transfer-encoding: chunked`, and its chunks are the writer's
/// ([`chunk`]).
pub fn write(reply: &Reply, out: &mut Vec<u8>, close: bool) {
    let status = status_code(reply);
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    if reply.plain_json() {
        // Every call's reply: its three header lines in one copy.
        out.extend_from_slice(crate::reply::JSON_HEAD.as_bytes());
    } else {
        for (name, value) in reply.defaults() {
            header(out, name, value);
        }
    }
    for (name, value) in &reply.headers {
        if HeaderValue::from_str(value).is_ok() {
            header(out, name, value);
        }
    }
    let body = reply.body_bytes();
    if matches!(reply.body, Body::Stream(..)) {
        out.extend_from_slice(b"transfer-encoding: chunked");
    } else {
        out.extend_from_slice(b"content-length: ");
        let _ = serde_json::to_writer(&mut *out, &body.len());
    }
    out.extend_from_slice(b"\r\ndate: ");
    date(out);
    if close {
        out.extend_from_slice(b"\r\nconnection: close");
    }
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(body);
}

/// Appends one chunk of a chunked body (`chunk` empty: the last, which ends it).
pub fn chunk(out: &mut Vec<u8>, chunk: &[u8]) {
    out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
    out.extend_from_slice(chunk);
    out.extend_from_slice(b"\r\n");
}

fn header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
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

/// The one error body for a refusal read off a call error (a credential refused, a
/// body over its limit): the contract's status for its classification, and its
/// challenge (`WWW-Authenticate`) where it has one.
pub(super) fn refused(broker: &crate::call::Broker, e: &crate::error::CallError) -> Reply {
    let status = broker.parts.catalog.rules.status(e.classification);
    let reply = Reply::error(status, e.classification.as_str(), &e.message);
    match &e.challenge {
        Some(challenge) => reply.with_header("www-authenticate", challenge.clone()),
        None => reply,
    }
}

/// A reply as hyper's response: its body's headers ([`Reply::defaults`]), then its own
/// (a value HTTP cannot carry is left out).
pub(super) fn into_hyper(reply: Reply) -> HttpResponse {
    let mut response = hyper::Response::new(ReplyBody::Whole(Full::new(Bytes::new())));
    *response.status_mut() = status_code(&reply);
    let headers = response.headers_mut();
    for (name, value) in reply.defaults() {
        headers.insert(name, HeaderValue::from_static(value));
    }
    let Reply {
        headers: given,
        body,
        ..
    } = reply;
    for (name, value) in given {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.append(name, v);
        }
    }
    *response.body_mut() = match body {
        Body::Stream(_, chunks) => match chunks.take() {
            Some(chunks) => ReplyBody::Stream { chunks, hold: None },
            None => ReplyBody::Whole(Full::new(Bytes::new())),
        },
        whole => ReplyBody::Whole(Full::new(whole.into_bytes())),
    };
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_written_as_hyper_writes_it() {
        let reply = Reply::json_text(429, &b"{\"ok\":false}"[..])
            .with_header("retry-after", "3")
            .with_header("x-bad", "a\r\nx-injected: 1");
        let mut out = Vec::new();
        write(&reply, &mut out, true);
        let text = String::from_utf8(out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let mut lines: Vec<&str> = head.split("\r\n").collect();
        let date = lines.remove(6);
        assert_eq!(
            lines,
            [
                "HTTP/1.1 429 Too Many Requests",
                "content-type: application/json",
                "cache-control: no-store",
                "x-content-type-options: nosniff",
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
        let hyper = into_hyper(reply);
        let names: Vec<&str> = hyper.headers().keys().map(|n| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "content-type",
                "cache-control",
                "x-content-type-options",
                "retry-after"
            ],
            "hyper's response carries the same headers"
        );
        let mut out = Vec::new();
        write(&Reply::empty(202), &mut out, false);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\ndate: ")
                && text.ends_with(" GMT\r\n\r\n"),
            "{text}"
        );
        let odd = Reply::json_text(1000, Bytes::new());
        assert_eq!(status_code(&odd), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[test]
    fn dates_and_lengths_are_written_as_http_has_them() {
        let at = jiff::Timestamp::from_second(784_111_777).unwrap();
        assert_eq!(http_date(at), "Sun, 06 Nov 1994 08:49:37 GMT");
        for n in [0usize, 7, 10, 1_234_567] {
            let mut out = Vec::new();
            write(&Reply::json_text(200, vec![b' '; n]), &mut out, false);
            let text = String::from_utf8(out).unwrap();
            assert!(
                text.contains(&format!("\r\ncontent-length: {n}\r\n")),
                "{n}"
            );
        }
    }

    #[test]
    fn a_page_keeps_its_cookies_and_its_own_policy() {
        let page = crate::html::Page {
            status: 200,
            headers: vec![
                ("set-cookie", "a=1".into()),
                ("set-cookie", "b=2".into()),
                ("content-security-policy", "script-src 'nonce-x'".into()),
            ],
            body: "<p>".into(),
        };
        let hyper = into_hyper(Reply::from(page));
        assert_eq!(hyper.headers().get_all("set-cookie").iter().count(), 2);
        let policies: Vec<_> = hyper
            .headers()
            .get_all("content-security-policy")
            .iter()
            .collect();
        assert_eq!(
            policies,
            ["script-src 'nonce-x'"],
            "one policy: the page's own"
        );
    }
}
