//! What confirms the writes one call sends (decision 017, `docs/decisions/017-one-gate.md`):
//! the [`Cover`] the driver gives a call, read by the one gate every upstream request
//! leaves through (`call::gate`). A write is a request of a write tool, or a request of
//! the allowlisted endpoint tool that no read tool describes and is not a `GET`.
//!
//! - [`Cover::Flags`]: the caller's writes are confirmed by the contract's flags, each
//!   tool's own (mode `flag`).
//! - [`Cover::ReadsOnly`]: nothing confirmed a write in this call (a read tool, or the
//!   preview of a tool whose caller confirms by token or by a person): no write leaves.
//! - [`Cover::Door`]: a token or an approval confirmed the door's own request.
//! - [`Cover::Plan`]: the preview of a tool that runs others: reads are sent, every write
//!   is written into the plan and not sent.
//! - [`Cover::Confirmed`]: a token or an approval covers a plan: exactly its writes, in
//!   its order, each once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

/// What confirms the writes of one call.
#[derive(Debug)]
pub enum Cover<'a> {
    /// Mode `flag`: each tool's own flags confirm its write.
    Flags,
    /// No write may leave.
    ReadsOnly,
    /// The door's own request (`RequestCtx::door`'s) is confirmed; nothing else.
    Door,
    /// A preview: writes are planned, not sent.
    Plan(&'a Plan),
    /// The writes of this plan, in order, each once.
    Confirmed(&'a Plan),
}

impl Cover<'_> {
    /// Whether a token or an approval stands behind the call's writes, so the flags a
    /// model sets decide nothing: a tool run under it runs (or is planned) as if its
    /// confirmation flags were given; an explicit preview is still a preview.
    pub fn by_the_door(&self) -> bool {
        matches!(self, Self::Plan(_) | Self::Confirmed(_))
    }
}

/// One write of a plan: the tool it belongs to and its request as a preview shows it,
/// with the digest that binds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// The tool's full name.
    pub tool: String,
    /// `{method, path, query, body}` as rendered (before redaction).
    pub request: Value,
    /// sha256 (hex) of the tool, the request and its rendered headers in canonical JSON.
    pub digest: String,
}

impl Planned {
    /// A write of `tool` with its rendered `request` preview and rendered `headers`
    /// (never credentials: the key is attached later, by the client).
    pub fn new(tool: &str, request: Value, headers: &[(String, String)]) -> Self {
        let bound = json!({ "tool": tool, "request": request, "headers": headers });
        let text = crate::catalog::identity::canonical_json(&bound);
        Self {
            tool: tool.to_string(),
            request,
            digest: crate::catalog::identity::sha256_hex(text.as_bytes()),
        }
    }
}

/// The writes a call would send, in the order it would send them; then, confirmed,
/// the cursor of the next one to let through.
#[derive(Debug, Default)]
pub struct Plan {
    writes: Mutex<Vec<Planned>>,
    next: AtomicUsize,
}

/// What a confirmed plan says of a write about to leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matched {
    /// It is the plan's next write: it may leave (this is its place, from 0).
    Next(usize),
    /// It is not: the plan changed while it ran.
    Changed,
}

impl Plan {
    /// A plan of these writes (a confirmed one is checked against them).
    pub fn of(writes: Vec<Planned>) -> Self {
        Self {
            writes: Mutex::new(writes),
            next: AtomicUsize::new(0),
        }
    }

    /// Writes `write` into the plan; answers its place.
    pub fn record(&self, write: Planned) -> usize {
        let mut writes = self.lock();
        writes.push(write);
        writes.len() - 1
    }

    /// Checks a write about to leave against the plan's next one, and moves past it.
    pub fn take(&self, write: &Planned) -> Matched {
        let writes = self.lock();
        let at = self.next.load(Ordering::SeqCst);
        match writes.get(at) {
            Some(next) if next.digest == write.digest => {
                self.next.store(at + 1, Ordering::SeqCst);
                Matched::Next(at)
            }
            _ => Matched::Changed,
        }
    }

    /// The writes, in order.
    pub fn writes(&self) -> Vec<Planned> {
        self.lock().clone()
    }

    /// Whether the plan holds no write.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// sha256 (hex) of the writes' digests in order: what a token or an approval binds;
    /// `None` for a plan without writes.
    pub fn digest(&self) -> Option<String> {
        let writes = self.lock();
        if writes.is_empty() {
            return None;
        }
        let joined: Vec<&str> = writes.iter().map(|w| w.digest.as_str()).collect();
        Some(crate::catalog::identity::sha256_hex(
            joined.join("\n").as_bytes(),
        ))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Planned>> {
        // A panic while holding it cannot leave the list half written: take it as is.
        self.writes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Matched, Plan, Planned};

    fn write(path: &str, body: serde_json::Value) -> Planned {
        Planned::new(
            "crm.update_task",
            json!({ "method": "PUT", "path": path, "query": {}, "body": body }),
            &[],
        )
    }

    #[test]
    fn a_confirmed_plan_lets_its_writes_through_once_in_order() {
        let planned = Plan::default();
        planned.record(write("/a", json!({ "x": 1 })));
        planned.record(write("/b", json!({ "x": 2 })));
        let digest = planned.digest();
        assert!(digest.is_some());
        let confirmed = Plan::of(planned.writes());
        assert_eq!(confirmed.digest(), digest);
        assert_eq!(
            confirmed.take(&write("/b", json!({ "x": 2 }))),
            Matched::Changed
        );
        assert_eq!(
            confirmed.take(&write("/a", json!({ "x": 1 }))),
            Matched::Next(0)
        );
        assert_eq!(
            confirmed.take(&write("/a", json!({ "x": 1 }))),
            Matched::Changed
        );
        assert_eq!(
            confirmed.take(&write("/b", json!({ "x": 2 }))),
            Matched::Next(1)
        );
        assert_eq!(
            confirmed.take(&write("/b", json!({ "x": 2 }))),
            Matched::Changed
        );
    }

    #[test]
    fn digests_differ_by_body_order_and_tool() {
        let one = |a: &str, b: &str| {
            let plan = Plan::default();
            plan.record(write(a, json!({})));
            plan.record(write(b, json!({})));
            plan.digest()
        };
        assert_ne!(one("/a", "/b"), one("/b", "/a"));
        assert_ne!(
            write("/a", json!({ "x": 1 })).digest,
            write("/a", json!({ "x": 2 })).digest
        );
        let other = Planned::new("crm.other", write("/a", json!({})).request, &[]);
        assert_ne!(other.digest, write("/a", json!({})).digest);
        assert_eq!(Plan::default().digest(), None);
    }
}
