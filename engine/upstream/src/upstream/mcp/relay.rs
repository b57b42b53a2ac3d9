//! What an MCP server says to the caller while its call runs, passed on by the broker:
//! its progress (`notifications/progress`) and its questions (`elicitation/create`).
//!
//! The door that can carry them (`/mcp`, answering as an event stream) makes a
//! [`Relay`] and keeps the receiving end; the MCP client sends what the server says
//! into it. A call without a relay hears nothing of its server on the way: the
//! server's progress is dropped and its questions are refused with a message that says
//! why. Progress is sent under a token the broker makes for the call (never the
//! caller's), so a server cannot write into another call's stream; a question reaches
//! the caller only when the server's answer is sure to be its call's (docs/mcp-upstreams.md,
//! "Progress and questions").
//!
//! Time spent waiting for the person to answer is not counted in the tool's timeout;
//! the wait has its own bound, [`ANSWER_WITHIN`], after which the server is told the
//! question was cancelled.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use super::wire::RpcError;

/// Events queued for a caller that reads slowly; past it progress is dropped (the next
/// one says as much) and a question is refused.
pub const MOST_QUEUED: usize = 64;
/// How long a person has to answer a server's question.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(600);

/// One thing a server said to the caller.
#[derive(Debug)]
pub enum Relayed {
    /// `notifications/progress`'s params without the token: `progress`, and `total`
    /// and `message` where the server gave them.
    Progress(Map<String, Value>),
    /// `elicitation/create`'s params, the deployment's secrets swept out; the caller's
    /// answer (an `ElicitResult`, or the error its client answered) goes back on
    /// `answer`.
    Ask {
        /// The question.
        params: Value,
        /// Where the answer goes.
        answer: Answer,
    },
}

/// The sending end of one call's relay.
#[derive(Debug, Clone)]
pub struct Relay {
    tx: mpsc::Sender<Relayed>,
    /// Whether the caller may be asked a question.
    can_ask: bool,
    waiting: Arc<Waiting>,
}

/// The time a call spends waiting for its person.
#[derive(Debug, Default)]
struct Waiting {
    /// Questions open now.
    open: AtomicUsize,
    /// Milliseconds waited for answers so far.
    waited_ms: AtomicU64,
}

impl Relay {
    /// A relay and its receiving end; `can_ask`: the caller's client can answer a
    /// server's question (form elicitation).
    pub fn new(can_ask: bool) -> (Self, mpsc::Receiver<Relayed>) {
        let (tx, rx) = mpsc::channel(MOST_QUEUED);
        (
            Self {
                tx,
                can_ask,
                waiting: Arc::default(),
            },
            rx,
        )
    }

    /// Whether the caller may be asked a question.
    pub fn can_ask(&self) -> bool {
        self.can_ask
    }

    /// Passes a progress notification on, its token taken out (dropped when the caller
    /// reads too slowly).
    pub(super) fn progress(&self, params: &Value) {
        let Some(given) = params.as_object() else {
            return;
        };
        let kept: Map<String, Value> = given
            .iter()
            .filter(|(k, _)| matches!(k.as_str(), "progress" | "total" | "message"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if kept.get("progress").is_some_and(Value::is_number) {
            let _ = self.tx.try_send(Relayed::Progress(kept));
        }
    }

    /// Asks the caller the server's question and waits for the answer, at most
    /// [`ANSWER_WITHIN`] (then the answer is `cancel`). A caller that cannot be asked,
    /// or that went away, is answered for with an error saying so.
    pub(super) async fn ask(&self, params: Value) -> Result<Value, RpcError> {
        if !self.can_ask {
            return Err(cannot_ask());
        }
        let (answer, answered) = oneshot::channel();
        if self.tx.try_send(Relayed::Ask { params, answer }).is_err() {
            return Err(RpcError {
                code: -32603,
                message: "the caller of this tool is not reading its answer; the question was not passed on".into(),
            });
        }
        self.waiting.open.fetch_add(1, Ordering::AcqRel);
        let started = tokio::time::Instant::now();
        let outcome = tokio::time::timeout(ANSWER_WITHIN, answered).await;
        let waited = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.waiting.waited_ms.fetch_add(waited, Ordering::AcqRel);
        self.waiting.open.fetch_sub(1, Ordering::AcqRel);
        match outcome {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(RpcError {
                code: -32603,
                message: "the caller of this tool went away before answering".into(),
            }),
            Err(_) => Ok(json!({ "action": "cancel" })),
        }
    }

    /// Whether a question is open, and how long answers took so far.
    fn paused(&self) -> (bool, Duration) {
        (
            self.waiting.open.load(Ordering::Acquire) > 0,
            Duration::from_millis(self.waiting.waited_ms.load(Ordering::Acquire)),
        )
    }
}

/// What is held at once for callers on a replica; past it a server's question is
/// refused.
const MOST_HELD: usize = 10_000;

/// What a replica holds for a caller between two of its requests, by the id the caller
/// was given (an open question's answer, a call waiting for it): only that caller (its
/// key or user) takes it back, once (decision 019).
#[derive(Debug)]
pub struct Held<T>(Mutex<HashMap<String, (String, T)>>);

impl<T> Default for Held<T> {
    fn default() -> Self {
        Self(Mutex::default())
    }
}

impl<T> Held<T> {
    /// Holds `value` under `id` for `owner`; false when too many are held (those
    /// `over` says are done are dropped first).
    pub fn open(&self, id: &str, owner: String, value: T, over: impl Fn(&T) -> bool) -> bool {
        let Ok(mut held) = self.0.lock() else {
            return false;
        };
        held.retain(|_, (_, v)| !over(v));
        if held.len() >= MOST_HELD {
            return false;
        }
        held.insert(id.to_string(), (owner, value));
        true
    }

    /// Takes what is held under `id` when `owner` was given it.
    pub fn take(&self, id: &str, owner: &str) -> Option<T> {
        let mut held = self.0.lock().ok()?;
        if held.get(id)?.0 != owner {
            return None;
        }
        held.remove(id).map(|(_, v)| v)
    }
}

/// Where the answer to an open question goes.
pub type Answer = oneshot::Sender<Result<Value, RpcError>>;

/// The questions put to callers and not yet answered.
pub type Questions = Held<Answer>;

/// Whether a question's call has ended (nobody waits for its answer).
pub fn ended(answer: &Answer) -> bool {
    answer.is_closed()
}

/// The refusal of a question put to a call whose caller cannot be asked.
pub(super) fn cannot_ask() -> RpcError {
    RpcError {
        code: -32601,
        message: "the caller of this tool cannot be asked a question: its client did not declare elicitation, or it called through the tool broker's POST / (docs/mcp-upstreams.md)".into(),
    }
}

/// Runs `work` within `timeout`, not counting the time its relay waited for a person
/// (nor the time a question is open): `None` when the time ran out.
///
/// The work is taken behind a pointer: its (large) future is polled where it was made,
/// not copied into each caller's state machine.
pub(super) async fn within<T>(
    timeout: Duration,
    relay: Option<&Relay>,
    mut work: Pin<&mut (dyn Future<Output = T> + Send + '_)>,
) -> Option<T> {
    let Some(relay) = relay else {
        return tokio::time::timeout(timeout, work).await.ok();
    };
    let started = tokio::time::Instant::now();
    loop {
        let (open, waited) = relay.paused();
        let deadline = started + timeout + waited;
        tokio::select! {
            done = &mut work => return Some(done),
            () = tokio::time::sleep_until(deadline) => {
                let (open_now, waited_now) = relay.paused();
                if !open && !open_now && waited_now == waited {
                    return None;
                }
                if open_now {
                    // A question is open: its own bound applies; look again later.
                    tokio::select! {
                        done = &mut work => return Some(done),
                        () = tokio::time::sleep(Duration::from_millis(250)) => {}
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn progress_is_passed_on_without_its_token() {
        let (relay, mut rx) = Relay::new(false);
        relay.progress(&json!({"progressToken": "tb-1", "progress": 2, "total": 5, "message": "half", "other": 1}));
        relay.progress(&json!({"progressToken": "tb-1"}));
        let Some(Relayed::Progress(p)) = rx.recv().await else {
            panic!("no progress");
        };
        assert_eq!(
            Value::Object(p),
            json!({"progress": 2, "total": 5, "message": "half"})
        );
        assert!(
            rx.try_recv().is_err(),
            "a notification without progress is dropped"
        );
    }

    #[test]
    fn a_question_is_answered_only_by_whom_it_was_put_to() {
        let questions = Questions::default();
        let (tx, _rx) = oneshot::channel();
        assert!(questions.open("q1", "alice".into(), tx, ended));
        assert!(questions.take("q1", "mallory").is_none());
        assert!(questions.take("q1", "alice").is_some());
        assert!(questions.take("q1", "alice").is_none(), "once");
        let (tx, rx) = oneshot::channel();
        assert!(questions.open("q2", "alice".into(), tx, ended));
        drop(rx);
        let (tx, _rx) = oneshot::channel();
        assert!(questions.open("q3", "bob".into(), tx, ended));
        assert!(
            questions.take("q2", "alice").is_none(),
            "a question whose call ended is dropped"
        );
    }

    #[tokio::test]
    async fn a_caller_that_cannot_be_asked_is_answered_for() {
        let (relay, _rx) = Relay::new(false);
        let refused = relay.ask(json!({"message": "name?"})).await.unwrap_err();
        assert_eq!(refused.code, -32601);
        assert!(refused.message.contains("elicitation"));
    }

    #[tokio::test(start_paused = true)]
    async fn time_waiting_for_a_person_is_not_the_tools() {
        let (relay, mut rx) = Relay::new(true);
        let asking = relay.clone();
        let work = async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let answer = asking.ask(json!({"message": "ok?"})).await;
            tokio::time::sleep(Duration::from_secs(2)).await;
            answer
        };
        let person = async {
            let Some(Relayed::Ask { answer, .. }) = rx.recv().await else {
                panic!("no question");
            };
            tokio::time::sleep(Duration::from_secs(60)).await;
            let _ = answer.send(Ok(json!({"action": "accept"})));
        };
        let work = std::pin::pin!(work);
        let (done, ()) = tokio::join!(within(Duration::from_secs(5), Some(&relay), work), person);
        assert_eq!(done.unwrap().unwrap(), json!({"action": "accept"}));
        // Without a question the same bound runs out.
        let (quiet, _rx) = Relay::new(true);
        let sleep = std::pin::pin!(tokio::time::sleep(Duration::from_secs(6)));
        let idle = within(Duration::from_secs(5), Some(&quiet), sleep);
        assert!(idle.await.is_none());
    }
}
