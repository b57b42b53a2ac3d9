//! W3C Trace Context (level 1): the `traceparent` and `tracestate` a caller brings, read
//! as the recommendation says, and the `traceparent` written upstream.
//!
//! A `traceparent` that does not parse is ignored and the call starts a trace of its
//! own (the recommendation's rule; a caller's tracing mistake never fails its call). A
//! `tracestate` is kept only beside a valid `traceparent`, and only when it is well
//! formed (at most 32 members, 512 characters).

use hyper::header::{HeaderName, HeaderValue};

use super::ids::hex_into;

/// `traceparent`, looked up without parsing the name per request.
pub const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
/// `tracestate`.
pub const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// The trace a caller's request continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent {
    /// The trace id (never all zero).
    pub trace_id: [u8; 16],
    /// The caller's span (never all zero).
    pub span_id: [u8; 8],
    /// The caller sampled this trace (flag `01`).
    pub sampled: bool,
    /// The caller's `tracestate`, passed on unchanged.
    pub state: Option<String>,
}

impl Parent {
    /// The parent in a request's headers (`traceparent`, and `tracestate` joined as the
    /// recommendation joins repeated headers).
    pub fn from_headers(headers: &hyper::HeaderMap) -> Option<Self> {
        let parent = headers.get(TRACEPARENT)?.to_str().ok()?;
        let mut state = String::new();
        for value in headers.get_all(TRACESTATE) {
            let Ok(text) = value.to_str() else {
                state.clear();
                break;
            };
            if !state.is_empty() {
                state.push(',');
            }
            state.push_str(text);
        }
        Self::parse(parent, (!state.is_empty()).then_some(state.as_str()))
    }

    /// Reads a `traceparent` value and an optional `tracestate`.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let text = traceparent.trim_matches(|c| c == ' ' || c == '\t');
        let b = text.as_bytes();
        if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let version = hex_byte(&b[0..2])?;
        // Version ff is invalid; version 00 is exactly 55 characters; a later version
        // may add fields after a dash, and is read as 00 is.
        if version == 0xff || (version == 0 && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
            return None;
        }
        let mut trace_id = [0u8; 16];
        for (i, byte) in trace_id.iter_mut().enumerate() {
            *byte = hex_byte(&b[3 + 2 * i..5 + 2 * i])?;
        }
        let mut span_id = [0u8; 8];
        for (i, byte) in span_id.iter_mut().enumerate() {
            *byte = hex_byte(&b[36 + 2 * i..38 + 2 * i])?;
        }
        let flags = hex_byte(&b[53..55])?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
            state: tracestate.and_then(valid_state).map(str::to_string),
        })
    }
}

/// A byte from two lower-case hex digits (upper case is not valid Trace Context).
fn hex_byte(pair: &[u8]) -> Option<u8> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    Some(digit(pair[0])? << 4 | digit(pair[1])?)
}

/// A `tracestate` worth passing on: at most 512 characters of at most 32 `key=value`
/// members, printable ASCII; empty members are allowed and dropped by no one.
fn valid_state(state: &str) -> Option<&str> {
    let state = state.trim_matches(|c| c == ' ' || c == '\t');
    if state.is_empty() || state.len() > 512 || !state.bytes().all(|c| (0x20..0x7f).contains(&c)) {
        return None;
    }
    let mut members = 0;
    for member in state.split(',') {
        let member = member.trim_matches(|c| c == ' ' || c == '\t');
        if member.is_empty() {
            continue;
        }
        members += 1;
        let (key, value) = member.split_once('=')?;
        if members > 32 || key.is_empty() || value.is_empty() || key.len() > 256 {
            return None;
        }
    }
    (members > 0).then_some(state)
}

/// The `traceparent` value `00-<trace>-<span>-<flags>`; `trace_hex` is the trace id's
/// 32 hex digits, written once per call ([`super::CallTrace::id`]).
pub fn traceparent(trace_hex: &str, span_id: &[u8; 8], sampled: bool) -> HeaderValue {
    let mut text = *b"00-00000000000000000000000000000000-0000000000000000-00";
    if let Some(at) = text.get_mut(3..35) {
        at.copy_from_slice(trace_hex.as_bytes().get(..32).unwrap_or(&[b'0'; 32]));
    }
    if let Some(at) = text.get_mut(36..52) {
        hex_into(span_id, at);
    }
    if sampled && let Some(flag) = text.last_mut() {
        *flag = b'1';
    }
    HeaderValue::from_bytes(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::{Parent, traceparent};

    const GOOD: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn a_traceparent_is_read_as_the_recommendation_says() {
        let p = Parent::parse(GOOD, Some("congo=t61rcWkgMzE")).expect("valid");
        assert_eq!(p.trace_id[0], 0x0a);
        assert_eq!(p.span_id[7], 0x31);
        assert!(p.sampled);
        assert_eq!(p.state.as_deref(), Some("congo=t61rcWkgMzE"));
        let unsampled = GOOD.replace("-01", "-00");
        assert!(!Parent::parse(&unsampled, None).expect("valid").sampled);
        // A later version with more fields is read as version 00.
        assert!(Parent::parse(&format!("cc{}-what-comes", &GOOD[2..]), None).is_some());
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            &GOOD.to_uppercase(),
            &format!("ff{}", &GOOD[2..]),
            &format!("{GOOD}-extra"),
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g",
            "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            &format!("cc{}x", &GOOD[2..]),
        ] {
            assert_eq!(Parent::parse(bad, None), None, "{bad}");
        }
    }

    #[test]
    fn a_malformed_tracestate_is_dropped_not_the_trace() {
        for bad in ["", "no-equals", "a=1,=2", &"k=v,".repeat(40), "a=\u{7f}"] {
            let p = Parent::parse(GOOD, Some(bad)).expect("the parent stays");
            assert_eq!(p.state, None, "{bad}");
        }
        let p = Parent::parse(GOOD, Some("a=1, ,b=2")).expect("valid");
        assert_eq!(p.state.as_deref(), Some("a=1, ,b=2"));
    }

    #[test]
    fn repeated_tracestate_headers_are_joined() {
        let mut headers = hyper::HeaderMap::new();
        headers.insert("traceparent", GOOD.parse().expect("value"));
        headers.append("tracestate", "a=1".parse().expect("value"));
        headers.append("tracestate", "b=2".parse().expect("value"));
        let p = Parent::from_headers(&headers).expect("valid");
        assert_eq!(p.state.as_deref(), Some("a=1,b=2"));
    }

    #[test]
    fn what_goes_upstream_reads_back() {
        let p = Parent::parse(GOOD, None).expect("valid");
        let trace = super::super::ids::hex(&p.trace_id);
        let value = traceparent(&trace, &p.span_id, true);
        assert_eq!(value.to_str().expect("text"), GOOD);
        let off = traceparent(&trace, &p.span_id, false);
        assert!(off.to_str().expect("text").ends_with("-00"));
    }
}
