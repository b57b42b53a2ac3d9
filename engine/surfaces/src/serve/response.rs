//! What the broker sends back over HTTP, in one place: the response of a call endpoint
//! ([`CallResponse`], written as wire text by the broker's own HTTP/1.1 server or made a
//! hyper response), JSON and page responses of hyper's server, and the `date` header.
//! Imports nothing else of `serve/`: every file of the folder may use it.

use std::cell::RefCell;

use bytes::Bytes;
use http_body_util::Full;
use hyper::StatusCode;
use hyper::header::HeaderValue;
use serde_json::Value;

/// What hyper's server answers.
pub(super) type HttpResponse = hyper::Response<Full<Bytes>>;

/// The response of a call endpoint, written by either HTTP/1.1 server: the broker's own
/// writes it as wire text ([`CallResponse::write`]), hyper's takes it as a `Response`
/// ([`into_hyper`]).
#[derive(Debug)]
pub struct CallResponse {
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

impl CallResponse {
    /// A JSON response.
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

    /// Appends the response as HTTP/1.1 wire text (head and body) to `out`; `close` adds
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

/// A call endpoint's response as hyper's.
pub(super) fn into_hyper(answer: CallResponse) -> HttpResponse {
    if answer.json {
        return json_text_response(answer.status, answer.body, &answer.headers);
    }
    let status = answer.status_code();
    let mut response = hyper::Response::new(Full::new(answer.body));
    *response.status_mut() = status;
    response
}

/// A JSON response to a request outside the call endpoints.
pub(super) fn json_response(
    status: u16,
    body: &Value,
    extra: &[(&'static str, String)],
) -> HttpResponse {
    // Straight into bytes: `Value`'s `Display` goes through `fmt` and is slower.
    let text = serde_json::to_vec(body).unwrap_or_default();
    let mut response = json_text_response(status, text, extra);
    // A browser never reads these answers (the console's API, the hub's, health) as
    // anything but JSON. The call endpoints answer programs, alike on both servers.
    response.headers_mut().insert(
        hyper::header::X_CONTENT_TYPE_OPTIONS,
        hyper::header::HeaderValue::from_static("nosniff"),
    );
    response
}

/// A JSON response whose text is already serialised.
pub(super) fn json_text_response(
    status: u16,
    body: impl Into<Bytes>,
    extra: &[(&'static str, String)],
) -> HttpResponse {
    let mut response = hyper::Response::new(Full::new(body.into()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    for (name, value) in extra {
        if let Ok(v) = hyper::header::HeaderValue::from_str(value) {
            headers.insert(*name, v);
        }
    }
    response
}

/// A server-rendered page (approvals, the hub) as hyper's response, with the headers
/// every page carries.
pub(super) fn page_response(answer: crate::html::Page) -> HttpResponse {
    let mut response = hyper::Response::new(Full::new(Bytes::from(answer.body)));
    *response.status_mut() =
        hyper::StatusCode::from_u16(answer.status).unwrap_or(hyper::StatusCode::OK);
    let headers = response.headers_mut();
    for (name, value) in crate::html::PAGE_HEADERS {
        headers.insert(name, hyper::header::HeaderValue::from_static(value));
    }
    for (name, value) in answer.headers {
        if let Ok(v) = hyper::header::HeaderValue::from_str(&value) {
            // A page with a script gives its own policy (its nonce) instead of the
            // default one; two policies would both apply.
            if name == "content-security-policy" {
                headers.insert(name, v);
            } else {
                headers.append(name, v);
            }
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_is_written_as_hyper_writes_it() {
        let answer = CallResponse::json(
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
        let empty = CallResponse {
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
        let odd = CallResponse::json(1000, Bytes::new(), Vec::new());
        assert_eq!(odd.status_code(), hyper::StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[test]
    fn dates_and_lengths_are_written_as_http_has_them() {
        let at = jiff::Timestamp::from_second(784_111_777).unwrap();
        assert_eq!(http_date(at), "Sun, 06 Nov 1994 08:49:37 GMT");
        for n in [0usize, 7, 10, 1_234_567] {
            let mut out = Vec::new();
            CallResponse::json(200, vec![b' '; n], Vec::new()).write(&mut out, false);
            let text = String::from_utf8(out).unwrap();
            assert!(
                text.contains(&format!("\r\ncontent-length: {n}\r\n")),
                "{n}"
            );
        }
    }
}
