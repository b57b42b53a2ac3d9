//! Per-caller rate limits declared by tools (`rate_limit = { requests, per_seconds }`),
//! enforced before anything is sent upstream: the hosting domain-availability check is
//! limited to 10 requests per minute per caller.
//!
//! A caller is its broker key name plus a fingerprint of its upstream key (the same
//! owner as jobs), so users behind one broker key do not share a budget. The window is
//! a sliding log counted in the store ([`crate::store::ratelimit`]): with PostgreSQL it
//! holds across replicas. Previews (dry runs) send nothing and are not counted. Over
//! the limit: `rate_limited` (429) with `Retry-After` in seconds until the oldest
//! counted request leaves the window. A store that cannot count refuses the call
//! (`upstream_unavailable` would blame the upstream; the limit cannot be checked, so
//! nothing is sent): `rate_limited` with a short retry.

use crate::catalog::descriptor::RateLimit;
use crate::error::{CallError, Classification};
use crate::store::Store;
use crate::store::ratelimit::Count;

/// Counts one request of `caller` to `tool`, or refuses it.
pub async fn check(
    store: &Store,
    tool: &str,
    caller: &str,
    limit: &RateLimit,
    now: jiff::Timestamp,
) -> Result<(), CallError> {
    let window_ms = i64::try_from(limit.per_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
    let key = format!("{tool}\u{1f}{caller}");
    let counted = store
        .count_request(&key, limit.requests, window_ms, crate::store::millis(now))
        .await;
    let retry_ms = match counted {
        Ok(Count::Allowed) => return Ok(()),
        Ok(Count::Refused { retry_after_ms }) => retry_after_ms,
        Err(e) => {
            tracing::error!(error = %e, tool, "rate limit not counted; the call is refused");
            let mut err = CallError::new(
                Classification::RateLimited,
                format!(
                    "`{tool}` is rate limited and the broker cannot count requests right now; retry shortly"
                ),
            );
            err.retry_after_seconds = Some(5);
            return Err(err);
        }
    };
    let seconds = u64::try_from(retry_ms.div_euclid(1000) + i64::from(retry_ms % 1000 > 0))
        .unwrap_or(1)
        .max(1);
    let mut err = CallError::new(
        Classification::RateLimited,
        format!(
            "`{tool}` allows {} requests per {} seconds per caller; retry in {seconds} s",
            limit.requests, limit.per_seconds
        ),
    );
    err.retry_after_seconds = Some(seconds);
    Err(err)
}
