//! Trace, span and request ids for what brought none: a per-process random seed mixed
//! with a counter through SplitMix64's finalizer, a bijection on 64 bits, so no two ids
//! of one process are the same and none is guessable from another without the seed.
//! No system call per id (`getrandom` once, at start).

use std::sync::atomic::{AtomicU64, Ordering};

pub use crate::telemetry::span::{hex, hex_into};

/// Makes W3C trace ids, span ids and request ids.
#[derive(Debug)]
pub struct Ids {
    seed: [u64; 3],
    counter: AtomicU64,
}

impl Default for Ids {
    fn default() -> Self {
        let mut bytes = [0u8; 24];
        let _ = getrandom::fill(&mut bytes);
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
            u64::from_le_bytes(w)
        };
        Self {
            seed: [word(0), word(1), word(2)],
            counter: AtomicU64::new(0),
        }
    }
}

/// SplitMix64's finalizer: a bijection on `u64` that spreads every input bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Ids {
    fn next(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed)
    }

    /// A new W3C trace id (16 bytes, never all zero).
    pub fn trace_id(&self) -> [u8; 16] {
        let n = self.next();
        let high = mix(self.seed[0] ^ n);
        // Unique by `high` alone; the low half only spreads it.
        let low = mix(self.seed[1].wrapping_add(n)) | 1;
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&high.to_be_bytes());
        id[8..].copy_from_slice(&low.to_be_bytes());
        id
    }

    /// A new span id (8 bytes, never all zero).
    pub fn span_id(&self) -> [u8; 8] {
        let n = self.next();
        let id = mix(self.seed[2] ^ n);
        (if id == 0 { 1 } else { id }).to_be_bytes()
    }

    /// A request id for a call that brought none (the REST endpoint without `X-Request-Id`).
    pub fn next_request_id(&self) -> String {
        let n = self.next();
        format!("rest-{:x}-{n}", self.seed[0] & 0xffff_ffff)
    }
}

#[cfg(test)]
mod tests {
    use super::{Ids, hex};

    #[test]
    fn hex_is_written_as_format_writes_it() {
        let bytes: Vec<u8> = (0..=255).collect();
        let expected: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&bytes), expected);
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn ids_are_distinct_and_never_zero() {
        let ids = Ids::default();
        let mut traces = std::collections::HashSet::new();
        let mut spans = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let t = ids.trace_id();
            let s = ids.span_id();
            assert_ne!(t, [0; 16]);
            assert_ne!(s, [0; 8]);
            assert!(traces.insert(t));
            assert!(spans.insert(s));
        }
    }
}
