//! The guard rules' hits (docs/guards.md): since start by rule, direction and action
//! (`tool_broker_guard_hits_total`), and by rule per minute over the last hour (the
//! console's rules page). A call counts each rule once per direction.

use std::collections::{BTreeMap, VecDeque};

/// Minutes kept for the last hour.
const MINUTES: i64 = 60;

/// The hits, under the metrics' lock.
#[derive(Debug, Default)]
pub struct GuardHits {
    /// By (rule, direction, action).
    totals: BTreeMap<(String, &'static str, &'static str), u64>,
    /// Per minute (Unix seconds / 60), by rule, oldest first.
    minutes: VecDeque<(i64, BTreeMap<String, u64>)>,
}

impl GuardHits {
    /// Counts one hit of `rule` on `direction` (`arguments` or `answers`) doing `action`
    /// at `now_s` (Unix seconds).
    pub fn record(
        &mut self,
        rule: &str,
        direction: &'static str,
        action: &'static str,
        now_s: i64,
    ) {
        let key = (rule.to_string(), direction, action);
        *self.totals.entry(key).or_default() += 1;
        let minute = now_s.div_euclid(60);
        match self.minutes.back_mut() {
            Some((at, counts)) if *at == minute => {
                *counts.entry(rule.to_string()).or_default() += 1;
            }
            _ => {
                let counts = BTreeMap::from([(rule.to_string(), 1)]);
                self.minutes.push_back((minute, counts));
            }
        }
        while self
            .minutes
            .front()
            .is_some_and(|(at, _)| *at <= minute - MINUTES)
        {
            self.minutes.pop_front();
        }
    }

    /// Hits by rule in the hour before `now_s`.
    pub fn last_hour(&self, now_s: i64) -> BTreeMap<String, u64> {
        let since = now_s.div_euclid(60) - MINUTES;
        let mut out = BTreeMap::new();
        for (_, counts) in self.minutes.iter().filter(|(at, _)| *at > since) {
            for (rule, n) in counts {
                *out.entry(rule.clone()).or_default() += n;
            }
        }
        out
    }

    /// The totals, for the exposition.
    pub fn totals(&self) -> &BTreeMap<(String, &'static str, &'static str), u64> {
        &self.totals
    }
}

#[cfg(test)]
mod tests {
    use super::GuardHits;

    #[test]
    fn hits_count_since_start_and_fall_out_of_the_last_hour() {
        let mut hits = GuardHits::default();
        hits.record("card", "arguments", "redact", 0);
        hits.record("card", "answers", "redact", 30);
        hits.record("iban", "answers", "redact", 61);
        assert_eq!(hits.totals().len(), 3);
        assert_eq!(hits.last_hour(120).get("card"), Some(&2));
        // An hour and a minute later only the later minute's are left.
        hits.record("card", "answers", "redact", 3_661);
        let hour = hits.last_hour(3_661);
        assert_eq!((hour.get("card"), hour.get("iban")), (Some(&1), None));
        assert_eq!(hits.totals().values().sum::<u64>(), 4);
    }
}
