//! JSON-RPC as the broker speaks it to an MCP server, whatever carries it: requests
//! written, messages read and sorted (a response to one of ours, a notification, a
//! request of the server's), and what a failed exchange was.

use serde_json::{Value, json};

/// The handshake revision the broker offers first, and those it accepts back.
pub(super) const HANDSHAKE_VERSION: &str = "2025-11-25";
/// Revisions of the handshake era a server may answer `initialize` with.
pub(super) const HANDSHAKE_ACCEPTED: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// The stateless revision (no session; every request carries its `_meta`).
pub(super) const MODERN_VERSION: &str = "2026-07-28";

/// How the broker names itself to a server.
pub(super) fn client_info() -> Value {
    json!({ "name": "tool-broker", "version": env!("CARGO_PKG_VERSION") })
}

/// `initialize`'s params for `version`: the one client capability is form
/// elicitation, passed on to the caller where it can answer (sampling and roots are
/// refused; docs/mcp-upstreams.md).
pub(super) fn initialize_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": { "elicitation": { "form": {} } },
        "clientInfo": client_info(),
    })
}

/// A JSON-RPC request of ours.
pub(super) fn request(id: u64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// A JSON-RPC notification of ours.
pub(super) fn notification(method: &str) -> Value {
    json!({ "jsonrpc": "2.0", "method": method })
}

/// The answer to a request the server sent that is not a question for the caller:
/// `ping` is answered, every other method refused (no sampling, no roots).
pub(super) fn answer_server_request(id: &Value, method: &str) -> Value {
    if method == "ping" {
        return json!({ "jsonrpc": "2.0", "id": id, "result": {} });
    }
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32601,
            "message": format!("the tool broker does not serve `{method}` to an upstream MCP server"),
        },
    })
}

/// The answer to the server's request `id`: a result, or an error.
pub(super) fn answer(id: &Value, outcome: Result<Value, RpcError>) -> Value {
    match outcome {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err(e) => json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": e.code, "message": e.message },
        }),
    }
}

/// The method of a server's question for the caller.
pub(super) const ELICIT: &str = "elicitation/create";

/// A JSON-RPC error a server answered.
#[derive(Debug, Clone)]
pub struct RpcError {
    /// Its code.
    pub code: i64,
    /// Its message, as the server wrote it (redacted before anyone reads it).
    pub message: String,
}

/// What a message from a server is.
#[derive(Debug)]
pub(super) enum Message {
    /// The answer to our request `id`.
    Response {
        /// Our id.
        id: u64,
        /// Its result, or its error.
        outcome: Result<Value, RpcError>,
    },
    /// A notification (`notifications/progress`, `notifications/tools/list_changed`).
    Notification {
        /// Its method.
        method: String,
        /// Its params.
        params: Value,
    },
    /// A request of the server's (`ping`, `elicitation/create`, ...).
    Request {
        /// Its id, as the server wrote it.
        id: Value,
        /// Its method.
        method: String,
        /// Its params.
        params: Value,
    },
    /// Not a JSON-RPC message the broker could have asked for.
    Garbage,
}

/// Sorts one message.
pub(super) fn classify(message: Value) -> Message {
    let Value::Object(mut map) = message else {
        return Message::Garbage;
    };
    let method = map.get("method").and_then(Value::as_str).map(String::from);
    match (map.remove("id"), method) {
        (Some(id), Some(method)) => Message::Request {
            id,
            method,
            params: map.remove("params").unwrap_or(Value::Null),
        },
        (None, Some(method)) => Message::Notification {
            method,
            params: map.remove("params").unwrap_or(Value::Null),
        },
        (Some(Value::Number(n)), None) => {
            let Some(id) = n.as_u64() else {
                return Message::Garbage;
            };
            let outcome = match (map.remove("result"), map.remove("error")) {
                (Some(result), None) => Ok(result),
                (None, Some(error)) => Err(RpcError {
                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("no message")
                        .to_string(),
                }),
                _ => return Message::Garbage,
            };
            Message::Response { id, outcome }
        }
        _ => Message::Garbage,
    }
}

/// The id of a response too large to read, from the start and end of its text: JSON
/// writers put `"id"` first or last.
pub(super) fn id_in(head: &[u8], tail: &[u8]) -> Option<u64> {
    for part in [head, tail] {
        let text = String::from_utf8_lossy(part);
        if let Some(at) = text.find("\"id\":") {
            let digits: String = text[at + 5..]
                .trim_start()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(id) = digits.parse() {
                return Some(id);
            }
        }
    }
    None
}

/// Why an exchange with a server failed.
#[derive(Debug)]
pub enum Failure {
    /// The server cannot be reached, died, or wrote what is not its answer.
    Unavailable(String),
    /// No answer within the time.
    Timeout,
    /// The answer is over the size bound.
    TooLarge,
    /// The server answered a JSON-RPC error.
    Rpc(RpcError),
    /// An HTTP server answered a status that is not its answer (401, 403, 5xx...).
    Status(u16),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_sorted() {
        let m = |v: Value| classify(v);
        assert!(matches!(
            m(json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": []}})),
            Message::Response {
                id: 3,
                outcome: Ok(_)
            }
        ));
        assert!(matches!(
            m(json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "bad"}})),
            Message::Response {
                id: 4,
                outcome: Err(RpcError { code: -32602, .. })
            }
        ));
        assert!(matches!(
            m(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})),
            Message::Notification { .. }
        ));
        assert!(matches!(
            m(json!({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage"})),
            Message::Request { .. }
        ));
        for garbage in [
            json!("hello"),
            json!({"id": "x"}),
            json!({"id": 1}),
            json!([1]),
        ] {
            assert!(matches!(m(garbage), Message::Garbage));
        }
    }

    #[test]
    fn a_large_answer_is_known_by_its_id_at_either_end() {
        assert_eq!(
            id_in(br#"{"jsonrpc":"2.0","id":17,"result":{"#, b"}}"),
            Some(17)
        );
        assert_eq!(
            id_in(
                br#"{"result":{"content":"#,
                br#"aaa"}]},"jsonrpc":"2.0","id": 9}"#
            ),
            Some(9)
        );
        assert_eq!(id_in(b"{\"result\":", b"xxxx"), None);
    }
}
