//! Trace ids: every call's `meta.traceId` is a per-process random seed mixed with a
//! counter, as 16 hex digits, then the request id.

use std::sync::atomic::{AtomicU64, Ordering};

/// Makes trace ids and request ids for calls that brought none.
#[derive(Debug)]
pub struct TraceIds {
    seed: u64,
    counter: AtomicU64,
}

impl Default for TraceIds {
    fn default() -> Self {
        let mut seed = [0u8; 8];
        let _ = getrandom::fill(&mut seed);
        Self {
            seed: u64::from_le_bytes(seed),
            counter: AtomicU64::new(0),
        }
    }
}

impl TraceIds {
    /// A new trace id that carries the request id.
    pub fn trace_id(&self, request_id: &str) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mixed = self.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        trace_text(mixed, request_id)
    }

    /// A request id for a call that brought none (the REST door without `X-Request-Id`).
    pub fn next_request_id(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("rest-{:x}-{n}", self.seed & 0xffff_ffff)
    }
}

/// A trace id's text: `mixed` as 16 lower-case hex digits, a dash, the request id (as
/// `format!("{mixed:016x}-{request_id}")` writes it, at a tenth of its cost).
fn trace_text(mixed: u64, request_id: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(17 + request_id.len());
    for shift in (0..16).rev() {
        let digit = (mixed >> (4 * shift)) & 0xf;
        text.push(char::from(HEX[digit as usize]));
    }
    text.push('-');
    text.push_str(request_id);
    text
}

#[cfg(test)]
mod tests {
    use super::trace_text;

    #[test]
    fn a_trace_id_is_written_as_format_writes_it() {
        let numbers = [
            0,
            1,
            0xf,
            0x10,
            0x0123_4567_89ab_cdef,
            0x8000_0000_0000_0000,
            u64::MAX,
        ];
        for mixed in numbers {
            for id in ["", "1", "req-é", "a-b-c"] {
                assert_eq!(trace_text(mixed, id), format!("{mixed:016x}-{id}"));
            }
        }
    }
}
