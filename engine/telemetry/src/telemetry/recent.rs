//! The last hour of calls, a slot per minute, for the console's overview: calls,
//! errors by classification, a latency histogram and calls and upstream failures per
//! service. Kept beside the process-wide totals under the same lock, so a call pays a
//! few additions more; nothing is allocated once a minute's services are known.
//!
//! Latency buckets are quarter octaves of milliseconds: bucket 0 holds calls under
//! 1 ms, then four buckets per doubling, so a percentile read from them is within 19%
//! of the true figure (its upper edge is reported).

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// Minutes kept.
pub const MINUTES: usize = 60;
/// Latency buckets: under 1 ms, then four per doubling up to about 4.6 hours.
const BUCKETS: usize = 1 + 4 * 24;

#[derive(Debug, Clone)]
struct Minute {
    /// Minutes since the Unix epoch this slot counts (`-1`: never used).
    minute: i64,
    calls: u64,
    errors: BTreeMap<&'static str, u64>,
    latency: [u32; BUCKETS],
    /// Per service: calls and upstream failures.
    services: Vec<(Box<str>, u64, u64)>,
}

impl Default for Minute {
    fn default() -> Self {
        Self {
            minute: -1,
            calls: 0,
            errors: BTreeMap::new(),
            latency: [0; BUCKETS],
            services: Vec::new(),
        }
    }
}

/// The last [`MINUTES`] minutes.
#[derive(Debug, Clone)]
pub struct Recent {
    slots: Vec<Minute>,
}

impl Default for Recent {
    fn default() -> Self {
        Self {
            slots: vec![Minute::default(); MINUTES],
        }
    }
}

/// The bucket of a duration.
fn bucket(ms: u64) -> usize {
    if ms == 0 {
        return 0;
    }
    let octave = 63 - ms.leading_zeros() as usize;
    let quarter = if octave >= 2 {
        ((ms >> (octave - 2)) & 3) as usize
    } else {
        // 1, 2, 3 ms: spread over the quarters their octave has.
        ((ms << (2 - octave)) & 3) as usize
    };
    (1 + 4 * octave + quarter).min(BUCKETS - 1)
}

/// The upper edge of a bucket, in ms.
fn upper_edge(bucket: usize) -> f64 {
    if bucket == 0 {
        return 1.0;
    }
    let octave = (bucket - 1) / 4;
    let quarter = (bucket - 1) % 4;
    (1u64 << octave) as f64 * (1.0 + (quarter as f64 + 1.0) / 4.0)
}

impl Recent {
    /// Counts one call that ended at `now_s` (Unix seconds).
    pub fn record(&mut self, now_s: i64, tool: &str, outcome: &'static str, duration_ms: u64) {
        let minute = now_s.div_euclid(60);
        let index = usize::try_from(minute.rem_euclid(MINUTES as i64)).unwrap_or(0);
        let Some(slot) = self.slots.get_mut(index) else {
            return;
        };
        if slot.minute != minute {
            slot.minute = minute;
            slot.calls = 0;
            slot.errors.clear();
            slot.latency = [0; BUCKETS];
            for s in &mut slot.services {
                s.1 = 0;
                s.2 = 0;
            }
        }
        slot.calls += 1;
        if outcome != "ok" {
            *slot.errors.entry(outcome).or_default() += 1;
        }
        if let Some(b) = slot.latency.get_mut(bucket(duration_ms)) {
            *b = b.saturating_add(1);
        }
        let service = tool.split_once('.').map_or(tool, |(s, _)| s);
        let upstream_failure = u64::from(outcome.starts_with("upstream_"));
        match slot.services.iter_mut().find(|s| &*s.0 == service) {
            Some(s) => {
                s.1 += 1;
                s.2 += upstream_failure;
            }
            None => slot.services.push((service.into(), 1, upstream_failure)),
        }
    }

    /// The hour up to `now_s`: calls and errors per minute (oldest first), errors by
    /// classification, p50 and p99 latency, and per service calls and upstream
    /// failures.
    pub fn summary(&self, now_s: i64) -> Value {
        let now_minute = now_s.div_euclid(60);
        let mut per_minute = Vec::with_capacity(MINUTES);
        let mut errors: BTreeMap<&str, u64> = BTreeMap::new();
        let mut latency = [0u64; BUCKETS];
        let mut services: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        let mut total = 0u64;
        for back in (0..MINUTES as i64).rev() {
            let minute = now_minute - back;
            let slot = self
                .slots
                .get(usize::try_from(minute.rem_euclid(MINUTES as i64)).unwrap_or(0))
                .filter(|s| s.minute == minute);
            let (calls, failed) = slot.map_or((0, 0), |s| (s.calls, s.errors.values().sum()));
            per_minute.push(json!({ "minute": minute * 60, "calls": calls, "errors": failed }));
            let Some(slot) = slot else { continue };
            total += slot.calls;
            for (k, n) in &slot.errors {
                *errors.entry(k).or_default() += n;
            }
            for (sum, n) in latency.iter_mut().zip(slot.latency) {
                *sum += u64::from(n);
            }
            for (name, calls, failures) in &slot.services {
                if *calls > 0 {
                    let entry = services.entry(name).or_default();
                    entry.0 += calls;
                    entry.1 += failures;
                }
            }
        }
        let percentile = |p: f64| -> Option<f64> {
            let counted: u64 = latency.iter().sum();
            if counted == 0 {
                return None;
            }
            let rank = ((counted as f64) * p).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (i, n) in latency.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    return Some(upper_edge(i));
                }
            }
            None
        };
        json!({
            "calls": total,
            "perMinute": per_minute,
            "errors": errors,
            "p50Ms": percentile(0.50),
            "p99Ms": percentile(0.99),
            "services": services
                .iter()
                .map(|(name, (calls, failures))| json!({ "service": name, "calls": calls, "upstreamFailures": failures }))
                .collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_quarter_octaves_and_their_edges_bound_them() {
        assert_eq!(bucket(0), 0);
        for ms in [1u64, 2, 3, 5, 7, 10, 99, 100, 101, 1_000, 65_535, 3_600_000] {
            let b = bucket(ms);
            assert!(upper_edge(b) >= ms as f64, "{ms} in {b}");
            if b > 1 {
                assert!(
                    upper_edge(b - 1) <= ms as f64 + 1e-9 || b == BUCKETS - 1,
                    "{ms} in {b}"
                );
            }
        }
        assert!(bucket(1) < bucket(2) && bucket(2) < bucket(3) && bucket(3) < bucket(4));
    }

    #[test]
    fn the_hour_counts_per_minute_and_forgets_older_minutes() {
        let mut recent = Recent::default();
        let t0 = 1_790_000_000 - 1_790_000_000 % 60;
        for i in 0..98 {
            recent.record(t0, "crm.a", "ok", 10 + i % 3);
        }
        recent.record(t0 + 1, "crm.a", "upstream_unavailable", 900);
        recent.record(t0 + 1, "payments.b", "invalid_arguments", 0);
        recent.record(t0 + 61, "crm.a", "ok", 20);
        let s = recent.summary(t0 + 61);
        assert_eq!(s["calls"], 101);
        assert_eq!(
            s["errors"],
            json!({ "invalid_arguments": 1, "upstream_unavailable": 1 })
        );
        let minutes = s["perMinute"].as_array().unwrap();
        assert_eq!(minutes.len(), MINUTES);
        assert_eq!(
            minutes[MINUTES - 2],
            json!({ "minute": t0, "calls": 100, "errors": 2 })
        );
        assert_eq!(minutes[MINUTES - 1]["calls"], 1);
        assert!(s["p50Ms"].as_f64().unwrap() >= 10.0 && s["p50Ms"].as_f64().unwrap() <= 14.0);
        assert!(s["p99Ms"].as_f64().unwrap() >= 20.0);
        assert_eq!(
            s["services"],
            json!([{ "service": "crm", "calls": 100, "upstreamFailures": 1 }, { "service": "payments", "calls": 1, "upstreamFailures": 0 }])
        );
        // An hour later the first minute is gone; its slot is reused.
        recent.record(t0 + 3600, "crm.a", "ok", 5);
        let s = recent.summary(t0 + 3600);
        assert_eq!(s["calls"], 2);
    }
}
