//! One call, end to end (decisions 002-005, 008, 017), as phases in order. Each phase
//! is a function of its own, in the file named beside it; a call's state goes through
//! them in one `Call` (`resolve.rs`) and never climbs back.
//!
//! | # | phase | where | what it does |
//! |---|-------|-------|--------------|
//! | 1 | resolve | `resolve.rs` | the tool by its name; the clock, the trace and the policy set taken; the broker's own arguments taken out |
//! | 2 | authorize | `admit.rs` | the caller's key or role fields; the descriptor the caller pinned |
//! | 3 | guard, validate and price | `guard.rs`, `admit.rs`, `price.rs` | the guard rules on the arguments (redacted, or refused); the arguments against the schema (defaults in), the estimate |
//! | 4 | decide | `policy.rs` | the policies on the validated, priced arguments; the confirmation mode |
//! |   | hold the key | `idempotency.rs` | a write's idempotency key held; a repeat answered from the store |
//! | 5 | confirm | `confirmed.rs` | flags, a bound token or a person's approval; a plan for a tool that runs others |
//! |   | run | `execute.rs` | tenancy, preconditions, the flags' verdict; a hook, or a request rendered |
//! | 6 | reserve | `gate.rs`, `budget.rs` | the request's cover, rate limit and budget reservation: its permit |
//! | 7 | render and send | `execute.rs`, `send.rs` | the request rendered, the key chosen, sent through the gate |
//! | 8 | read the answer | `send.rs` | refusals classified, the answer read (as a tree, or in one pass) |
//! | 9 | redact and guard | `send.rs`, `guard.rs` | every secret the answer holds replaced; the guard rules on it; shaped and truncated |
//! | 10 | settle | `gate.rs`, `budget.rs`, `settle.rs` | each permit's reservation settled; a task watches its job; a failed call's cost |
//! | 11 | audit | `audit.rs` | the write's record |
//! | 12 | envelope | `respond.rs` | the answer in its envelope; metrics, the log line and the span |
//!
//! Every door enters phase 1: `POST /` and the REST projection (`serve`), `/mcp` and
//! MCP tasks (`mcp`) call [`Broker::call`]. A tool run inside another (a hook's step, a
//! portal read) enters at phase 2 ([`Broker::execute`]): it is resolved already, and is
//! authorized, validated, priced and decided the same way, under the door's cover. Phases
//! 6 to 10 run once for every request that leaves, whoever's it is: the gate
//! (`gate.rs`) is the only way out.
//!
//! [`Broker`] (`broker.rs`) holds everything a call needs that is not in the request: the
//! parts every stage reads ([`crate::run::Parts`]), the caller keys, the confirmation
//! settings, the hooks' caches and the upstream client. It is
//! the [`crate::run::Pipeline`] hooks and webhooks run tools through. What only the
//! driver uses: `args`, `tenancy`, `ratelimit`.
//!
//! May import every stage below it (confirm, hooks, webhook, run, answer, upstream,
//! the store, callers, config, telemetry, the catalog); never an endpoint (`mcp`,
//! `serve`: broker-surfaces).

mod admit;
pub mod args;
mod audit;
mod broker;
mod budget;
mod confirmed;
mod endpoint;
mod execute;
mod gate;
mod guard;
mod idempotency;
mod mcp;
mod policy;
mod price;
pub mod ratelimit;
mod resolve;
mod respond;
mod send;
mod settle;
mod span;
pub mod tenancy;

pub use admit::check_pin;
pub use broker::Drift;
pub use span::call_span;

use serde_json::Value;

use crate::caller::Caller;
use crate::hooks;
use crate::run::{Elicitation, TaskWatch};

/// The broker: the parts every stage reads ([`crate::run::Parts`], its field `parts`),
/// who may call, this deployment's confirmation settings, the hooks' caches and the
/// upstream client. It drives each call ([`Broker::call`]) and
/// is the [`crate::run::Pipeline`] the stages it drives run tools through.
pub struct Broker {
    /// What every stage may read: the catalog, the store, routes, settings, counters,
    /// callback keys, the clock.
    pub parts: crate::run::Parts,
    /// Who may call: the keys and the users of access tokens.
    pub callers: crate::caller::Callers,
    /// Who confirms writes, and how (modes `bound` and `human`).
    pub confirmations: crate::confirm::Confirmations,
    /// The keys users store (`vault_key_env`; decision 012).
    pub hub: Option<crate::hub::Hub>,
    /// The hooks' own caches.
    pub hooks: hooks::State,
    /// The one way out: the upstream client behind the gate (decision 017).
    gate: gate::Gate,
}

/// One `tools/call`.
#[derive(Debug)]
pub struct CallInput<'a> {
    /// JSON-RPC id as a string.
    pub request_id: String,
    /// `params.name`.
    pub name: &'a str,
    /// `params.arguments`.
    pub arguments: Option<Value>,
    /// Request headers.
    pub headers: &'a hyper::HeaderMap,
    /// The authenticated caller.
    pub caller: &'a Caller,
    /// An idempotency key given outside the headers (MCP `_meta.idempotencyKey`); the
    /// `Idempotency-Key` header is read when this is `None`.
    pub idempotency_key: Option<String>,
    /// The trace the caller's request continues: its `traceparent` header, or on `/mcp`
    /// `params._meta.traceparent` first (read by the MCP endpoint).
    pub trace_parent: Option<crate::telemetry::trace::Parent>,
    /// The call endpoint the call came through.
    pub endpoint: Endpoint,
    /// The MCP endpoint's elicitation capability and round (`None` on other endpoints).
    pub elicitation: Option<Elicitation>,
    /// Where an MCP server's progress and questions go while the call runs (`/mcp`
    /// answering as an event stream); `None`: dropped and refused.
    pub relay: Option<crate::upstream::mcp::relay::Relay>,
    /// Run as an MCP task (see [`crate::run::RequestCtx::task_watch`]).
    pub task_watch: Option<TaskWatch>,
    /// The descriptor hash the caller reviewed (MCP `_meta.descriptorHash`,
    /// `params.descriptorHash`, `X-Descriptor-Hash`): when the tool's differs, nothing
    /// runs ([`check_pin`]).
    pub descriptor_hash: Option<String>,
}

/// The call endpoint a call came through (its span's `tool_broker.endpoint`; the JSON-RPC
/// endpoints also set `jsonrpc.request.id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /`: JSON-RPC `tools/call`.
    Rpc,
    /// `POST /mcp`: MCP Streamable HTTP.
    Mcp,
    /// `POST /mcp/<service>/<tool>`: the REST paths of the OpenAPI projection.
    Rest,
}

impl Endpoint {
    /// The call endpoint a `POST` to `path` (no query) goes to, if any.
    pub fn of(path: &str) -> Option<Self> {
        match path {
            "/" => Some(Self::Rpc),
            "/mcp" => Some(Self::Mcp),
            _ if path.starts_with("/mcp/") => Some(Self::Rest),
            _ => None,
        }
    }

    /// The endpoint's name in a span.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rpc => "rpc",
            Self::Mcp => "mcp",
            Self::Rest => "rest",
        }
    }
}

impl Broker {
    /// Runs one `tools/call` through the phases, in order, and returns the response to
    /// send.
    pub async fn call(&self, input: CallInput<'_>) -> crate::answer::envelope::Enveloped {
        // 1. resolve.
        let mut call = match self.resolve(input) {
            Ok(call) => call,
            Err(unknown) => return *unknown,
        };
        // 2. authorize, 3. validate and price, 4. decide.
        let admission = self.admit(&mut call);
        // Who the call runs as: a permitting policy's `@confirm` may raise its mode.
        let caller = admission.raised.as_ref().unwrap_or(call.caller);
        let mut ctx = call.request_ctx(caller, admission.cover(caller));
        let mut admitted = admission.admitted;
        // A write's idempotency key held: a repeat is answered here.
        let mut held = None;
        if let (Ok(_), Some(sha)) = (&admitted, &call.args_sha256) {
            match self.hold_key(&call, sha, &mut ctx).await {
                idempotency::Claim::Go(key) => held = key,
                idempotency::Claim::Refused(e) => admitted = Err(e),
                idempotency::Claim::Replay(response) => return self.replayed(&call, response),
            }
        }
        // 5. confirm; then run, and for each request that leaves: 6. reserve, 7. render
        // and send, 8. read the answer, 9. redact, 10. settle its reservation.
        let mut result = match admitted {
            Ok(admitted) => {
                self.execute_confirmed(call.tool, admitted, &call.brought, &ctx)
                    .await
            }
            Err(e) => Err(e),
        };
        // 10. settle the call: a task watches its job; a failed call says what it cost.
        if admission.task_args.is_some() {
            result = self
                .watch_job(&call, result, admission.task_args, &ctx)
                .await;
        }
        let settled = settle::settle_call(&call, result, admission.priced);
        // 11. audit.
        if call.args_sha256.is_some() {
            self.audit_call(&call, &admission.ruling, &settled, &ctx)
                .await;
        }
        drop(ctx);
        // 12. envelope; a held idempotency key keeps it.
        let ran =
            audit::write_outcome(&settled.result) == Some(crate::store::audit::Outcome::Executed);
        let response = self.respond(&mut call, &admission.ruling, settled);
        if let Some(held) = &held {
            crate::confirm::idempotency::finish(&self.parts.store, held, ran, &response).await;
        }
        response
    }
}

impl Broker {
    /// Redacts what a preview or an approver is shown (a request, arguments, a plan's
    /// writes) as every answer is: the rules' secret names and every secret this
    /// request's headers carry. How many values it replaced.
    fn redact_shown(&self, shown: &mut Value, headers: &hyper::HeaderMap) -> usize {
        let secrets = self.parts.secrets(headers);
        crate::answer::redact::redact(shown, &self.parts.catalog.rules.redaction, &[], &secrets)
    }
}
