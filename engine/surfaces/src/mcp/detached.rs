//! A call's input owned, to run after the request that brought it has been answered:
//! an MCP task, or a call whose server's progress and questions are relayed.

use hyper::HeaderMap;
use serde_json::Value;

use crate::call::{CallInput, Endpoint};
use crate::caller::Caller;
use crate::run::{Elicitation, TaskWatch};
use crate::upstream::mcp::relay::Relay;

/// What a call brought, owned (its relay and task watch are the runner's to give).
pub struct Detached {
    request_id: String,
    name: String,
    arguments: Option<Value>,
    headers: HeaderMap,
    caller: Caller,
    idempotency_key: Option<String>,
    elicitation: Option<Elicitation>,
    descriptor_hash: Option<String>,
    trace_parent: Option<crate::telemetry::trace::Parent>,
}

impl Detached {
    /// `input` owned; `keep_elicitation`: the round it brought goes along (a task's
    /// call runs without one).
    pub fn of(input: CallInput<'_>, keep_elicitation: bool) -> Self {
        Self {
            request_id: input.request_id,
            name: input.name.to_string(),
            arguments: input.arguments,
            headers: input.headers.clone(),
            caller: input.caller.clone(),
            idempotency_key: input.idempotency_key,
            elicitation: input.elicitation.filter(|_| keep_elicitation),
            descriptor_hash: input.descriptor_hash,
            trace_parent: input.trace_parent,
        }
    }

    /// The call's input again, through `/mcp`, with its relay and task watch (the
    /// owned parts moved out: call it once).
    pub fn input(&mut self, relay: Option<Relay>, task_watch: Option<TaskWatch>) -> CallInput<'_> {
        CallInput {
            request_id: std::mem::take(&mut self.request_id),
            name: &self.name,
            arguments: self.arguments.take(),
            headers: &self.headers,
            caller: &self.caller,
            idempotency_key: self.idempotency_key.take(),
            elicitation: self.elicitation.take(),
            relay,
            task_watch,
            descriptor_hash: self.descriptor_hash.take(),
            trace_parent: self.trace_parent.take(),
            endpoint: Endpoint::Mcp,
        }
    }
}
