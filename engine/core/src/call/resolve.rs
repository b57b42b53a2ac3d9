//! Phase 1, resolve: the tool a call names, found in the compiled catalog; the clock,
//! the trace and the policy set taken for the whole call; the broker's own arguments
//! (a confirmation token, an approval's id) taken out before anything hashes or
//! validates the rest. A name no tool has is answered here, with the nearest names.
//!
//! [`Call`] is what every later phase of the door reads.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};

use super::{Broker, CallInput, Endpoint};
use crate::answer::envelope::{self, Enveloped, Meta};
use crate::caller::Caller;
use crate::catalog::Tool;
use crate::catalog::descriptor::Risk;
use crate::run::cover::Cover;
use crate::run::{Elicitation, RequestCtx, TaskWatch};
use crate::telemetry::trace::CallTrace;

/// One call on its way through the phases: what its request brought and what phase 1
/// found. Later phases read it; only phase 2 takes from it (the arguments).
pub(super) struct Call<'a> {
    /// The tool the call names.
    pub(super) tool: &'a Tool,
    /// The JSON-RPC id, as a string (empty on the REST paths).
    pub(super) request_id: String,
    /// The caller as it authenticated (a policy may raise its confirmation: phase 4).
    pub(super) caller: &'a Caller,
    /// The request's headers.
    pub(super) headers: &'a hyper::HeaderMap,
    /// The call endpoint it came through.
    pub(super) endpoint: Endpoint,
    /// The arguments as the caller gave them, less the broker's own; taken by phase 3.
    pub(super) arguments: Option<Value>,
    /// The confirmation the call brought in its arguments.
    pub(super) brought: Brought,
    /// A write's arguments as the caller gave them, hashed for its audit record and
    /// its idempotency key (sha256 of their canonical JSON).
    pub(super) args_sha256: Option<String>,
    /// An idempotency key given outside the headers (MCP `_meta`).
    pub(super) idempotency_key: Option<String>,
    /// The descriptor hash the caller pinned.
    pub(super) descriptor_hash: Option<String>,
    /// The MCP endpoint's elicitation capability and round.
    pub(super) elicitation: Option<Elicitation>,
    /// Where an MCP server's progress and questions go.
    pub(super) relay: Option<crate::upstream::mcp::relay::Relay>,
    /// Run as an MCP task.
    pub(super) task_watch: Option<TaskWatch>,
    /// The policy set the whole call decides under (a reload does not change a call in
    /// flight); `None` without `[policy]`.
    pub(super) policies: Option<Arc<crate::policy::Policies>>,
    /// The call's trace.
    pub(super) trace: CallTrace,
    /// When the call started (its duration).
    pub(super) started: Instant,
    /// When the call started, on the broker's clock (the audit's).
    pub(super) started_at: jiff::Timestamp,
    /// The guard rules that acted on the call, in each direction.
    pub(super) guards: crate::catalog::guards::Acted,
}

/// The confirmation a call brought in its arguments (`confirmationToken`, the approval
/// arg): the broker's, never the tool's, so never validated, hashed or sent.
#[derive(Debug, Default)]
pub(super) struct Brought {
    /// A confirmation token (mode `bound`).
    pub(super) token: Option<String>,
    /// An approval's id (mode `human`, the approval page).
    pub(super) approval_id: Option<String>,
}

impl<'a> Call<'a> {
    /// The request-scoped facts the phases after the door's share, for `caller` (as
    /// the policy left it) under `cover`.
    pub(super) fn request_ctx<'c>(
        &'c self,
        caller: &'c Caller,
        cover: Cover<'c>,
    ) -> RequestCtx<'c> {
        RequestCtx {
            caller,
            headers: self.headers,
            trace: &self.trace,
            idempotency: None,
            elicitation: self.elicitation.as_ref(),
            relay: self.relay.as_ref(),
            task_watch: self.task_watch.clone(),
            policies: self.policies.clone(),
            door: Some(self.tool),
            cover,
            writes: std::sync::atomic::AtomicUsize::new(0),
            guards: Some(&self.guards),
        }
    }
}

impl Broker {
    /// Phase 1: the tool `input` names, and the call's trace, clock and policy set; a
    /// name no tool has is answered (`Err`) with its envelope.
    pub(super) fn resolve<'a>(
        &'a self,
        mut input: CallInput<'a>,
    ) -> Result<Call<'a>, Box<Enveloped>> {
        let started = Instant::now();
        // The broker's own arguments: taken out before anything hashes or validates.
        let brought = Brought {
            token: crate::confirm::bound::take_token(&mut input.arguments),
            approval_id: crate::confirm::bound::take_arg(
                &mut input.arguments,
                crate::confirm::APPROVAL_ARG,
            ),
        };
        let trace = self.parts.traces.start(input.trace_parent.take());
        let Some(tool) = self.parts.catalog.resolve(input.name) else {
            return Err(Box::new(self.unknown(&input, &trace, started)));
        };
        let args_sha256 = (tool.risk == Risk::Write).then(|| audit_hash(input.arguments.as_ref()));
        Ok(Call {
            tool,
            args_sha256,
            request_id: input.request_id,
            caller: input.caller,
            headers: input.headers,
            endpoint: input.endpoint,
            arguments: input.arguments,
            brought,
            idempotency_key: input.idempotency_key,
            descriptor_hash: input.descriptor_hash,
            elicitation: input.elicitation,
            relay: input.relay,
            task_watch: input.task_watch,
            policies: self.parts.policy_set(),
            trace,
            started,
            started_at: self.parts.now(),
            guards: crate::catalog::guards::Acted::default(),
        })
    }

    /// The answer to a name no tool has: `unknown_tool` with the nearest names, in the
    /// portal's envelope for a `portal.` name.
    fn unknown(&self, input: &CallInput<'_>, trace: &CallTrace, started: Instant) -> Enveloped {
        let err = crate::catalog::unknown_tool(&self.parts.catalog, input.name);
        let meta = Meta {
            request_id: input.request_id.clone(),
            trace_id: trace.id.clone(),
            duration_ms: super::span::elapsed_ms(started),
            ..Meta::default()
        };
        self.parts
            .metrics
            .record_call("unknown", err.classification.as_str(), meta.duration_ms);
        trace.finish(
            || "tools/call".into(),
            |span| {
                let name: String = input.name.chars().take(256).collect();
                super::call_span(span, input.endpoint, input.caller, &meta.request_id, &name);
                span.text("error.type", err.classification.as_str());
                span.text("tool_broker.classification", err.classification.as_str());
                span.error = true;
            },
        );
        if input.name.starts_with("portal.") {
            self.portal_response(input.name, &trace.id, Err(err))
        } else {
            envelope::standard_err(&err, meta, &self.parts.catalog.rules)
        }
    }
}

/// sha256 (hex) of the canonical JSON of a call's arguments (absent counts as `{}`).
fn audit_hash(arguments: Option<&Value>) -> String {
    let empty = Value::Object(Map::new());
    let text = crate::catalog::identity::canonical_json(arguments.unwrap_or(&empty));
    crate::catalog::identity::sha256_hex(text.as_bytes())
}
