//! What every endpoint reads from a request before it answers: its body, within the
//! size limit and the body read timeout, and its caller, from the `Authorization` header.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::call::Broker;
use crate::error::{CallError, Classification};
use crate::served::Served;

/// How a body read ended, short of the body itself.
enum Unread {
    /// Over the limit (what followed was read and dropped up to the drain bound).
    TooLarge,
    /// The body stream broke.
    Broken,
}

/// Reads a body up to `limit` bytes, within the `[server]` `body_read_timeout_ms`.
///
/// A body over the limit answers `payload_too_large` (413) in a way every ordinary
/// client reads: the rest of the body is read and dropped, up to `over_limit_drain_bytes`
/// beyond the limit, before the answer. Answered at once, without reading: a declared
/// length past that bound, or a client waiting on `Expect: 100-continue` (it has not sent
/// the body and will not). A body that does not arrive in time is `invalid_request`, and
/// the connection closes (the log says so).
pub(super) async fn read_limited(
    served: &Served,
    headers: &hyper::HeaderMap,
    path: &str,
    mut body: Incoming,
    limit: usize,
) -> Result<Bytes, CallError> {
    let drain = served.endpoints.bounds.over_limit_drain_bytes;
    let declared = headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let waits_to_send = headers
        .get(hyper::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if declared.is_some_and(|n| n > limit && (waits_to_send || n - limit > drain)) {
        return Err(too_large(limit));
    }
    let timeout = served.endpoints.bounds.body_read_timeout();
    let read = async {
        // A body that comes in one frame (the usual case) is kept as it came, uncopied.
        let mut first: Option<Bytes> = None;
        let mut buf = bytes::BytesMut::new();
        let mut seen = 0usize;
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.map_err(|_| Unread::Broken)?.into_data() else {
                continue;
            };
            seen = seen.saturating_add(data.len());
            if seen > limit {
                if seen - limit > drain {
                    return Err(Unread::TooLarge);
                }
            } else if first.is_none() && buf.is_empty() {
                first = Some(data);
            } else {
                if let Some(earlier) = first.take() {
                    buf.extend_from_slice(&earlier);
                }
                buf.extend_from_slice(&data);
            }
        }
        if seen > limit {
            Err(Unread::TooLarge)
        } else {
            Ok(first.unwrap_or_else(|| buf.freeze()))
        }
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(Unread::TooLarge)) => Err(too_large(limit)),
        Ok(Err(Unread::Broken)) => Err(CallError::invalid_request(
            "the request body could not be read",
        )),
        Err(_) => Err(body_timed_out(&served.endpoints.bounds, path)),
    }
}

/// A body over `limit` bytes: `payload_too_large` (413).
pub(crate) fn too_large(limit: usize) -> CallError {
    CallError::new(
        Classification::PayloadTooLarge,
        format!("the request body is over the broker's limit of {limit} bytes"),
    )
}

/// A body that did not arrive within the body read timeout: says so in the log and
/// answers `invalid_request`; the connection closes after the answer.
pub(crate) fn body_timed_out(
    bounds: &crate::config::server::ServerBounds,
    path: &str,
) -> CallError {
    tracing::info!(
        body_read_timeout_ms = bounds.body_read_timeout_ms,
        path = %path,
        "slow client closed: its request body did not arrive in time"
    );
    CallError::invalid_request(format!(
        "the request body did not arrive within {} ms; the connection is closed",
        bounds.body_read_timeout_ms
    ))
}

/// Who a request's `Authorization` header names ([`crate::caller::Callers`]).
pub(super) async fn authenticate(
    broker: &Broker,
    headers: &hyper::HeaderMap,
) -> Result<Arc<crate::caller::Caller>, CallError> {
    broker
        .callers
        .authenticate(
            headers
                .get(hyper::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok()),
            broker.parts.now(),
        )
        .await
}
