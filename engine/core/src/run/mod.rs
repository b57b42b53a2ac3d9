//! What the call driver ([`crate::call`]) and the stages it drives share: the facts of
//! one request ([`RequestCtx`]), what a tool produced ([`Exec`]), the deployment's parts
//! every stage may read ([`Parts`]: the catalog, the store, where requests go and with
//! which key, settings, counters, callback keys, the clock), and [`Pipeline`]: the narrow
//! view of the broker that hooks, confirmation and webhooks get instead of the driver.
//! Through it a stage runs another tool the ordinary way (resolve, arguments,
//! confirmation, upstream, redaction), and reads the parts; it never sees the driver's
//! own state (caller keys, confirmation settings, the endpoints' settings).
//!
//! May import: the catalog, config, callers, the store, upstream, answers, telemetry and
//! [`crate::error`]. The driver implements [`Pipeline`]; nothing here names it.

pub mod budgets;
pub mod cover;
mod parts;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::answer::envelope::Truncation;
use crate::caller::Caller;
use crate::catalog::Tool;
use crate::error::CallError;
use crate::upstream::render::RenderedRequest;

pub use crate::answer::envelope::Data;
pub use parts::Parts;

/// A future a [`Pipeline`] method returns (boxed: the pipeline is a trait object, and a
/// hook that runs a tool may run a hook again).
pub type Running<'a> = Pin<Box<dyn Future<Output = Result<Exec, CallError>> + Send + 'a>>;

/// What a stage may ask of the broker beyond reading its [`Parts`]: running a tool
/// through the ordinary pipeline, and sending the allowlisted endpoint tool's request.
/// Implemented by [`crate::call::Broker`]. `&dyn Pipeline` reads the parts directly
/// (`cx.catalog`, `cx.store`, `cx.now()`). Neither way sends anything but through the
/// driver's one gate (decision 017), which decides, prices, confirms and audits each
/// request as the tool it belongs to.
pub trait Pipeline: Send + Sync {
    /// The parts every stage may read.
    fn parts(&self) -> &Parts;

    /// Runs a resolved tool the caller may use: everything after the permission check
    /// (arguments, tenancy, preconditions, confirmation, hook or upstream, answer).
    fn execute<'a>(
        &'a self,
        tool: &'a Tool,
        arguments: Option<Value>,
        ctx: &'a RequestCtx<'_>,
    ) -> Running<'a>;

    /// Sends the request the allowlisted endpoint tool `tool` built (its service's own
    /// host, a path it checked) as the catalog tool whose method and path it matches:
    /// that tool's key fields, policies, confirmation, rate limit, price and audit; then
    /// the answer as that tool's (refusals classified, redaction). `max_response` lowers
    /// the largest answer read.
    fn send_endpoint<'a>(
        &'a self,
        tool: &'a Tool,
        request: &'a RenderedRequest,
        ctx: &'a RequestCtx<'_>,
        max_response: usize,
    ) -> Running<'a>;

    /// The services whose key the calling user stored in the hub (decision
    /// 012), by presence of the sealed row (nothing is opened); empty for keys and
    /// deployments without a hub, or when the store does not answer (logged).
    fn stored_keys<'a>(
        &'a self,
        caller: &'a Caller,
    ) -> Pin<Box<dyn Future<Output = Vec<String>> + Send + 'a>>;
}

impl std::ops::Deref for dyn Pipeline + '_ {
    type Target = Parts;

    fn deref(&self) -> &Parts {
        self.parts()
    }
}

/// What a tool produced, before it is put in an envelope.
#[derive(Debug, Clone, Default)]
pub struct Exec {
    /// The result: a value, or JSON text where the caller wanted text ([`Want::Text`]).
    pub data: Data,
    /// Upstream status, when contacted.
    pub upstream_status: Option<u16>,
    /// Pagination figures.
    pub pagination: Option<Value>,
    /// Truncated lists.
    pub truncation: Vec<Truncation>,
    /// Whether this was a preview.
    pub dry_run: bool,
    /// Values replaced by redaction.
    pub redacted: Option<usize>,
    /// Next-action text.
    pub next_action: Option<String>,
    /// Summary text.
    pub summary: Option<String>,
    /// The resource acted on (portal envelope).
    pub resource: Option<Value>,
    /// The raw tool a wrapper ran.
    pub dispatched_to: Option<String>,
    /// A preview that answered a confirmation token (mode `bound`; audited).
    pub token_issued: bool,
    /// What the upstream answer said of a priced call's charge (read before anything
    /// was redacted or cut).
    pub cost_reading: Option<crate::catalog::costs::Reading>,
    /// A priced call's cost (`meta.cost`; boxed, since most calls are unpriced and an
    /// `Exec` moves by value).
    pub cost: Option<Box<crate::answer::envelope::Cost>>,
    /// An MCP server's content blocks that are not text, kept whole for `/mcp`
    /// (`data` summarizes them).
    pub content: Option<Box<[Value]>>,
}

/// The form a caller of a tool wants its result in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A value ([`Data::Value`]): a hook reads into the result of its step tools.
    Value,
    /// JSON text ([`Data::Text`]) where the tool's plan allows it (an answer in
    /// one pass, [`crate::answer::scan`]): the envelope only writes the result out.
    Text,
}

/// The request-scoped facts a tool may use.
#[derive(Debug)]
pub struct RequestCtx<'a> {
    /// Who is calling (as the door's policy left its confirmation mode).
    pub caller: &'a Caller,
    /// Request headers (BYOK keys, context headers).
    pub headers: &'a hyper::HeaderMap,
    /// The call's trace: its id (`meta.traceId`), and what its upstream requests carry
    /// and record ([`crate::telemetry::trace`]).
    pub trace: &'a crate::telemetry::trace::CallTrace,
    /// The idempotency key sent upstream (derived), when this call holds one.
    pub idempotency: Option<String>,
    /// What an MCP 2026-07-28 request brought for elicitation (`/mcp` only).
    pub elicitation: Option<&'a Elicitation>,
    /// Where an MCP server's progress and questions go (`/mcp` only).
    pub relay: Option<&'a crate::upstream::mcp::relay::Relay>,
    /// Run as an MCP task: tools that wait watch their job for the task's bound instead
    /// of their own, until the task is cancelled.
    pub task_watch: Option<TaskWatch>,
    /// The policy set this call decides under, taken once when it started (a reload
    /// does not change a call in flight); `None` without `[policy]`.
    pub policies: Option<Arc<crate::policy::Policies>>,
    /// The tool the call named at its door (`None` for the broker's own calls).
    pub door: Option<&'a Tool>,
    /// What confirms the writes this call sends ([`cover::Cover`]).
    pub cover: cover::Cover<'a>,
    /// Writes sent so far inside the door's tool.
    pub writes: AtomicUsize,
    /// Where the guard rules that acted on this call are noted (its arguments, each
    /// answer, a tool's run inside another's too); `None` for the broker's own requests.
    pub guards: Option<&'a crate::catalog::guards::Acted>,
}

impl<'a> RequestCtx<'a> {
    /// The broker's own request (no door, no policy set, no idempotency key, no
    /// elicitation): a read, under which no write may leave.
    pub fn own(
        caller: &'a Caller,
        headers: &'a hyper::HeaderMap,
        trace: &'a crate::telemetry::trace::CallTrace,
    ) -> Self {
        Self {
            caller,
            headers,
            trace,
            idempotency: None,
            elicitation: None,
            relay: None,
            task_watch: None,
            policies: None,
            door: None,
            cover: cover::Cover::ReadsOnly,
            writes: AtomicUsize::new(0),
            guards: None,
        }
    }

    /// The same request under another cover: a pass of a tool that runs others (its
    /// plan read, or its confirmed plan run).
    pub fn pass<'b>(&'b self, cover: cover::Cover<'b>) -> RequestCtx<'b>
    where
        'a: 'b,
    {
        RequestCtx {
            caller: self.caller,
            headers: self.headers,
            trace: self.trace,
            idempotency: self.idempotency.clone(),
            elicitation: self.elicitation,
            relay: self.relay,
            task_watch: self.task_watch.clone(),
            policies: self.policies.clone(),
            door: self.door,
            cover,
            writes: AtomicUsize::new(0),
            guards: self.guards,
        }
    }

    /// Whether a write the caller asked for is confirmed, `flag` being what the contract's
    /// flag says: under a token or an approval ([`cover::Cover::by_the_door`]) the flags
    /// a model sets decide nothing.
    pub fn confirmed(&self, flag: bool) -> bool {
        self.cover.by_the_door() || flag
    }

    /// How many writes this call sent inside the door's tool so far.
    pub fn writes_sent(&self) -> usize {
        self.writes.load(Ordering::Relaxed)
    }

    /// Counts a write sent inside the door's tool.
    pub fn sent_write(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }
}

/// How a call run as an MCP task watches its job.
#[derive(Debug, Clone)]
pub struct TaskWatch {
    /// The longest watch.
    pub limit: std::time::Duration,
    /// Set when the task is cancelled: the watch ends at its next read.
    pub stop: Arc<std::sync::atomic::AtomicBool>,
}

impl TaskWatch {
    /// Whether the task was cancelled.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// What one MCP request brings for elicitation (2026-07-28); the rounds themselves are
/// [`crate::confirm::approval::elicit`]'s.
#[derive(Debug, Clone, Default)]
pub struct Elicitation {
    /// The client declared `elicitation` in `_meta`'s client capabilities.
    pub can_elicit: bool,
    /// `params.inputResponses`.
    pub responses: Option<Value>,
    /// `params.requestState`.
    pub state: Option<String>,
}

impl Elicitation {
    /// Whether a human-mode write goes through the client rather than the approval
    /// page: the client can elicit, or this is the retry of a round.
    pub fn applies(&self) -> bool {
        self.can_elicit || self.state.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::Elicitation;

    #[test]
    fn elicitation_applies_when_the_client_can_or_a_round_is_answered() {
        assert!(!Elicitation::default().applies());
        let can = Elicitation {
            can_elicit: true,
            ..Elicitation::default()
        };
        assert!(can.applies());
        let retry = Elicitation {
            state: Some("s".into()),
            ..Elicitation::default()
        };
        assert!(retry.applies());
    }
}
