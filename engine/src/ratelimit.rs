//! Per-caller rate limits declared by tools (`rate_limit = { requests, per_seconds }`),
//! enforced before anything is sent upstream: the hosting domain-availability check is
//! limited to 10 requests per minute per caller.
//!
//! A caller is its broker key name plus a fingerprint of its upstream key (the same
//! owner as the job registry), so users behind one broker key do not share a budget.
//! Sliding window in memory, per process; previews (dry runs) send nothing and are not
//! counted. Over the limit: `rate_limited` (429) with `Retry-After` in seconds until the
//! oldest counted request leaves the window.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::descriptor::RateLimit;
use crate::error::{CallError, Classification};

/// Windows kept at most (old callers are dropped first when it is full).
const MAX_WINDOWS: usize = 10_000;

/// The limiter.
#[derive(Debug, Default)]
pub struct Limiter {
    windows: Mutex<HashMap<(String, String), VecDeque<Instant>>>,
}

impl Limiter {
    /// Counts one request of `caller` to `tool`, or refuses it.
    pub fn check(
        &self,
        tool: &str,
        caller: &str,
        limit: &RateLimit,
        now: Instant,
    ) -> Result<(), CallError> {
        let window = Duration::from_secs(limit.per_seconds);
        let Ok(mut windows) = self.windows.lock() else {
            return Ok(());
        };
        if windows.len() >= MAX_WINDOWS {
            windows.retain(|_, times| {
                times
                    .back()
                    .is_some_and(|t| now.duration_since(*t) < window)
            });
        }
        let times = windows
            .entry((tool.to_string(), caller.to_string()))
            .or_default();
        while times
            .front()
            .is_some_and(|t| now.duration_since(*t) >= window)
        {
            times.pop_front();
        }
        if times.len() >= limit.requests as usize {
            let oldest = times.front().copied().unwrap_or(now);
            let wait = window.saturating_sub(now.duration_since(oldest));
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            let mut err = CallError::new(
                Classification::RateLimited,
                format!(
                    "`{tool}` allows {} requests per {} seconds per caller; retry in {seconds} s",
                    limit.requests, limit.per_seconds
                ),
            );
            err.retry_after_seconds = Some(seconds.max(1));
            return Err(err);
        }
        times.push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_slides_and_callers_are_separate() {
        let l = Limiter::default();
        let limit = RateLimit {
            requests: 2,
            per_seconds: 60,
        };
        let t0 = Instant::now();
        assert!(l.check("t", "a", &limit, t0).is_ok());
        assert!(
            l.check("t", "a", &limit, t0 + Duration::from_secs(1))
                .is_ok()
        );
        let refused = l
            .check("t", "a", &limit, t0 + Duration::from_secs(2))
            .unwrap_err();
        assert_eq!(refused.classification, Classification::RateLimited);
        assert_eq!(refused.retry_after_seconds, Some(58));
        assert!(
            l.check("t", "b", &limit, t0 + Duration::from_secs(2))
                .is_ok()
        );
        assert!(
            l.check("t", "a", &limit, t0 + Duration::from_secs(60))
                .is_ok()
        );
    }
}
