//! A `tools/call` of an MCP server's tool whose server says something on the way:
//! its progress and its questions reach the caller (decision 019, docs/mcp-upstreams.md,
//! "Progress and questions").
//!
//! A call is relayed when the tool it names (through `call_tool` too) is an MCP
//! server's and its caller takes `text/event-stream` or answers questions
//! ([`can_ask`]). It runs as its own task with a [`Relay`]; while the server says
//! nothing the answer is the plain JSON it would be without one. The first thing the
//! caller will hear turns the answer into a stream: each progress notification as
//! `notifications/progress` under the caller's own `progressToken`, each question of a
//! handshake-era caller as an `elicitation/create` request of the broker's whose id
//! names it, and the call's result as the last event. An idle stream carries a comment
//! every [`KEEP_ALIVE`], so proxies do not cut it while a person thinks.
//!
//! A handshake-era caller answers a question with a JSON-RPC response `POST`ed to
//! `/mcp` ([`answered`]). A 2026-07-28 caller is asked by an input-required result (its
//! revision has no requests in a stream): the call is held ([`HeldCall`]) and its
//! retry brings the answer ([`resume`]). Either way the answer is taken only from the
//! caller that was asked, on the replica that asked (held in memory, [`Questions`]).
//!
//! A caller that goes away does not stop the call: it runs to its end and is audited,
//! as a call whose answer was lost always is.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::HeaderMap;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use tokio::task::JoinHandle;

use super::connect::Ask;
use crate::answer::envelope::Enveloped;
use crate::call::{Broker, CallInput};
use crate::caller::Caller;
use crate::catalog::Action;
use crate::reply::{Body, Chunks, Reply};
use crate::served::{HeldCall, Served};
use crate::upstream::mcp::relay::{self, Held, Questions, Relay, Relayed};
use crate::upstream::mcp::wire::RpcError;

/// How often an idle stream says it is alive.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The prefix of the ids of the broker's questions.
const QUESTION: &str = "tb-q-";

/// A new question id: the prefix and 128 random bits.
fn question_id() -> Option<String> {
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw).ok()?;
    Some(format!("{QUESTION}{}", crate::catalog::identity::hex(&raw)))
}

/// Who a question was put to: the caller's key or user, never a secret.
fn owner(caller: &Caller) -> String {
    match &caller.user {
        Some(user) => format!("{}\n{}\n{}", caller.name, user.issuer, user.subject),
        None => caller.name.clone(),
    }
}

/// Whether the caller accepts an event stream.
pub fn accepts_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(hyper::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|part| {
            part.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("text/event-stream")
        })
}

/// Whether a call names an MCP server's tool (through `call_tool` too).
pub fn names_mcp_tool(broker: &Broker, name: &str, arguments: Option<&Value>) -> bool {
    let name = if name == super::tools::CALL {
        match arguments
            .and_then(|a| a.get("name"))
            .and_then(Value::as_str)
        {
            Some(inner) => inner,
            None => return false,
        }
    } else {
        name
    };
    broker
        .parts
        .catalog
        .resolve(name)
        .is_some_and(|t| matches!(t.action, Action::Mcp(_)))
}

/// How a relayed call answers: its id, revision, connect round, and the caller's
/// progress token.
pub struct Answering {
    /// The request's id.
    pub id: Value,
    /// A 2026-07-28 request.
    pub modern: bool,
    /// How a missing key is asked for.
    pub ask: Ask,
    /// The caller's `_meta.progressToken`, when it takes a stream.
    pub progress_token: Option<Value>,
    /// Whether the caller may be asked its server's questions ([`can_ask`]).
    pub can_ask: bool,
}

/// Whether a caller may be asked its server's questions: a handshake-era caller that
/// takes a stream (the broker keeps no session, so it cannot know what the client
/// declared at `initialize`: a client that cannot answer says "method not found", and
/// the server hears that), or a 2026-07-28 caller that declares form elicitation.
pub fn can_ask(modern: bool, streams: bool, params: &Value) -> bool {
    if !modern {
        return streams;
    }
    super::client_capabilities(params)
        .and_then(|c| c.get("elicitation"))
        .and_then(Value::as_object)
        .is_some_and(|e| e.contains_key("form") || !e.contains_key("url"))
}

/// A relayed call in flight: its task (the call's envelope when it ends) and what its
/// server says meanwhile.
struct Running {
    task: JoinHandle<Enveloped>,
    heard: mpsc::Receiver<Relayed>,
}

/// Whether a held call has ended (its question timed out, its server answered).
fn done(held: &HeldCall) -> bool {
    held.0.is_finished()
}

/// Runs `input` with a relay: its plain answer when the server said nothing before it
/// ended, else a stream of what it said and then the answer (or, to a 2026-07-28 caller
/// that can answer questions, an input-required result at the server's first question).
pub async fn call(served: &Served, input: CallInput<'_>, answering: Answering) -> Reply {
    let broker = served.broker.clone();
    let (relay, heard) = Relay::new(answering.can_ask);
    let caller = input.caller;
    let mut detached = super::detached::Detached::of(input, true);
    let task = tokio::spawn(async move {
        let input = detached.input(Some(relay), None);
        super::run_call(&broker, input).await
    });
    drive(served, caller, Running { task, heard }, answering).await
}

/// Whether a 2026-07-28 request retries a call held for its server's question (its
/// `requestState` names one).
pub fn asked(elicitation: &crate::run::Elicitation) -> bool {
    elicitation
        .state
        .as_deref()
        .is_some_and(|s| s.starts_with(QUESTION))
}

/// The retry of a 2026-07-28 caller asked a question ([`asked`]): the answer in its
/// `inputResponses` goes to the server, and the held call is driven on.
pub async fn resume(
    served: &Served,
    caller: &Caller,
    elicitation: &crate::run::Elicitation,
    answering: Answering,
) -> Reply {
    let state = elicitation.state.as_deref().unwrap_or_default();
    let owner = owner(caller);
    let held = served.endpoints.held_calls.take(state, &owner);
    let answer = served.endpoints.questions.take(state, &owner);
    let (Some((task, heard)), Some(answer)) = (held, answer) else {
        return super::error(
            &answering.id,
            super::code::INVALID_PARAMS,
            "requestState names no question open for this caller on this broker: it was answered already, it timed out, or another replica asked it (retries go to the replica that asked)",
            None,
        );
    };
    let outcome = match elicitation.responses.as_ref().and_then(|r| r.get(state)) {
        Some(response) => Ok(response.clone()),
        None => Err(RpcError {
            code: -32602,
            message: "the caller's retry carried no answer to the question".into(),
        }),
    };
    let _ = answer.send(outcome);
    drive(served, caller, Running { task, heard }, answering).await
}

/// Waits for a relayed call: its plain answer when the server says nothing the caller
/// hears before it ends; else a stream (or a held call and its question).
async fn drive(
    served: &Served,
    caller: &Caller,
    mut running: Running,
    answering: Answering,
) -> Reply {
    let broker = &served.broker;
    // Until the server says something the caller will hear, the answer may still be
    // plain JSON.
    let first = loop {
        let heard = tokio::select! {
            biased;
            done = &mut running.task => return answer(broker, caller, done, &answering),
            heard = running.heard.recv() => heard,
        };
        match heard {
            None => {
                let done = running.task.await;
                return answer(broker, caller, done, &answering);
            }
            Some(Relayed::Progress(_)) if answering.progress_token.is_none() => {}
            Some(said) => break said,
        }
    };
    let pump = Pump {
        served_questions: served.endpoints.questions.clone(),
        held_calls: served.endpoints.held_calls.clone(),
        owner: owner(caller),
        answering,
    };
    if pump.answering.modern
        && let Relayed::Ask { params, answer } = first
    {
        return pump.hold(running, params, answer);
    }
    let (tx, rx) = mpsc::channel(16);
    let broker = broker.clone();
    let caller = caller.clone();
    tokio::spawn(async move {
        let mut next = Some(first);
        let mut alive = tokio::time::interval(KEEP_ALIVE);
        alive.reset();
        loop {
            let said = match next.take() {
                Some(said) => said,
                None => tokio::select! {
                    biased;
                    heard = running.heard.recv() => match heard {
                        Some(said) => said,
                        None => break,
                    },
                    _ = alive.tick() => {
                        if tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                            return;
                        }
                        continue;
                    }
                },
            };
            let message = match said {
                Relayed::Ask { params, answer } if pump.answering.modern => {
                    // A stateless caller is asked by the result that ends its stream.
                    let reply = pump.hold(running, params, answer);
                    let _ = tx.send(event(reply.body_bytes())).await;
                    return;
                }
                said => pump.message(said),
            };
            if let Some(message) = message
                && tx.send(event(&message)).await.is_err()
            {
                return;
            }
        }
        let done = running.task.await;
        let reply = answer(&broker, &caller, done, &pump.answering);
        let _ = tx.send(event(reply.body_bytes())).await;
    });
    Reply {
        status: 200,
        headers: Vec::new(),
        body: Body::Stream("text/event-stream", Chunks::new(rx)),
    }
}

/// The call's answer, or the internal error of a call that panicked.
fn answer(
    broker: &Broker,
    caller: &Caller,
    done: Result<Enveloped, tokio::task::JoinError>,
    answering: &Answering,
) -> Reply {
    match done {
        Ok(response) => super::answer_of(
            broker,
            caller,
            &answering.id,
            &response,
            answering.modern,
            answering.ask,
        ),
        Err(_) => {
            tracing::error!("a relayed MCP call panicked; answered internal error");
            super::error(
                &answering.id,
                -32603,
                "the broker failed while running this call",
                None,
            )
        }
    }
}

/// What turns what a server says into what its caller reads.
struct Pump {
    served_questions: Arc<Questions>,
    held_calls: Arc<Held<HeldCall>>,
    owner: String,
    answering: Answering,
}

impl Pump {
    /// The message a stream carries for what the server said (`None`: nothing).
    fn message(&self, said: Relayed) -> Option<Vec<u8>> {
        let message = match said {
            Relayed::Progress(mut params) => {
                let token = self.answering.progress_token.as_ref()?;
                params.insert("progressToken".into(), token.clone());
                json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": params })
            }
            Relayed::Ask { params, answer } => {
                let id = question_id().filter(|id| {
                    self.served_questions
                        .open(id, self.owner.clone(), answer, relay::ended)
                });
                let Some(id) = id else {
                    tracing::warn!("too many questions open on this replica; one refused");
                    return None;
                };
                json!({ "jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": params })
            }
        };
        serde_json::to_vec(&message).ok()
    }

    /// A 2026-07-28 caller's question: the call held on this replica, the caller
    /// answered an input-required result whose `requestState` names it.
    fn hold(&self, running: Running, params: Value, answer: relay::Answer) -> Reply {
        let id = question_id().filter(|id| {
            self.served_questions
                .open(id, self.owner.clone(), answer, relay::ended)
                && self
                    .held_calls
                    .open(id, self.owner.clone(), (running.task, running.heard), done)
        });
        let Some(id) = id else {
            tracing::warn!("too many questions open on this replica; one refused");
            return super::error(
                &self.answering.id,
                -32603,
                "the tool's server asked a question and this broker holds too many open; try again later",
                None,
            );
        };
        super::result(
            &self.answering.id,
            json!({
                "resultType": "input_required",
                "inputRequests": { id.clone(): { "method": "elicitation/create", "params": params } },
                "requestState": id,
                "_meta": { super::SERVER_INFO_KEY: super::server_info() },
            }),
        )
    }
}

/// One SSE event carrying a JSON-RPC message (compact JSON: one line).
fn event(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 24);
    out.extend_from_slice(b"event: message\ndata: ");
    for (i, line) in message.split(|b| *b == b'\n').enumerate() {
        if i > 0 {
            out.extend_from_slice(b"\ndata: ");
        }
        out.extend_from_slice(line);
    }
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// A JSON-RPC response the caller `POST`ed: the answer to one of the broker's
/// questions, passed to the server that asked (202); anything else is acknowledged
/// as before (202), but an answer to a question this replica does not hold for this
/// caller, which is refused (400) with why.
pub fn answered(
    served: &crate::served::Served,
    caller: &Caller,
    id: &Value,
    bytes: &[u8],
) -> Reply {
    let Some(question) = id.as_str().filter(|q| q.starts_with(QUESTION)) else {
        return super::accepted();
    };
    let Some(answer) = served.endpoints.questions.take(question, &owner(caller)) else {
        return super::error(
            id,
            super::code::INVALID_REQUEST,
            "no open question with this id for this caller on this broker: it was answered already, its call ended, or another replica asked it (answers go to the replica that streamed the question)",
            None,
        );
    };
    let message: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    let outcome = match (message.get("result"), message.get("error")) {
        (Some(result), _) => Ok(result.clone()),
        (None, Some(error)) => Err(RpcError {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(-32603),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the caller refused the question")
                .to_string(),
        }),
        (None, None) => Err(RpcError {
            code: -32603,
            message: "the caller's answer carried neither a result nor an error".into(),
        }),
    };
    let _ = answer.send(outcome);
    super::accepted()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_carries_one_message() {
        assert_eq!(
            &event(br#"{"a":1}"#)[..],
            b"event: message\ndata: {\"a\":1}\n\n"
        );
        assert_eq!(&event(b"{\n}")[..], b"event: message\ndata: {\ndata: }\n\n");
    }

    #[test]
    fn question_ids_are_unguessable() {
        let (a, b) = (question_id().unwrap(), question_id().unwrap());
        assert!(
            a.starts_with(QUESTION) && a.len() == QUESTION.len() + 32,
            "{a}"
        );
        assert_ne!(a, b);
    }

    #[test]
    fn the_stream_is_asked_for_by_accept() {
        let mut headers = HeaderMap::new();
        headers.insert(
            hyper::header::ACCEPT,
            "application/json, text/event-stream".parse().unwrap(),
        );
        assert!(accepts_stream(&headers));
        headers.insert(hyper::header::ACCEPT, "application/json".parse().unwrap());
        assert!(!accepts_stream(&headers));
    }
}
