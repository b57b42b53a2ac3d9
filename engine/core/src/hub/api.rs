//! The hub's JSON API, with the pages' rules: `GET /hub/keys` ->
//! `[{"service", "present", "setAt"}]`, `PUT /hub/keys/<service>` with `{"key": "..."}`
//! -> 204, `DELETE /hub/keys/<service>` -> 204 (whether or not one was stored).
//!
//! The caller is a user: an access token of the `[oauth]` provider (the endpoint checks
//! it as for a call) or the hub's session cookie. An API key names no person and has no
//! hub (403). A service the user may not use, or whose calls take no caller key, is 404.
//! A stored key is never answered.

use serde_json::Value;

use super::{Hub, Refused, entry_json};
use crate::caller::Caller;
use crate::reply::Reply;
use crate::run::Parts;

fn refusal(status: u16, classification: &str, message: &str) -> Reply {
    Reply::error(status, classification, message)
}

fn refused(e: &Refused) -> Reply {
    match e {
        Refused::UnknownService(_) => refusal(404, "not_found", &e.message()),
        Refused::BadKey(_) => refusal(400, "validation_error", &e.message()),
        Refused::Store => refusal(503, "not_configured", &e.message()),
    }
}

/// One API request, past authentication: `method` on `/hub/keys[/<service>]`.
pub async fn handle(
    hub: &Hub,
    parts: &Parts,
    caller: &Caller,
    method: &hyper::Method,
    service: Option<&str>,
    body: &[u8],
) -> Reply {
    let Some(user) = &caller.user else {
        return refusal(
            403,
            "forbidden",
            "the hub keeps keys of people signed in at this broker's identity provider; an API key has no hub (send the key in its header instead)",
        );
    };
    let may_use = |s: &str| caller.may_use_service(s);
    match (method, service) {
        (&hyper::Method::GET, None) => match hub.list(parts, user, &may_use).await {
            Ok(entries) => {
                Reply::json(200, &Value::Array(entries.iter().map(entry_json).collect()))
            }
            Err(e) => refused(&e),
        },
        (&hyper::Method::PUT | &hyper::Method::DELETE, Some(service)) => {
            if !hub.holds(service) || !may_use(service) {
                return refused(&Refused::UnknownService(service.to_string()));
            }
            let result = if method == hyper::Method::PUT {
                let key = match serde_json::from_slice::<Value>(body) {
                    Ok(Value::Object(mut fields)) => match fields.remove("key") {
                        Some(Value::String(key)) => zeroize::Zeroizing::new(key),
                        _ => {
                            return refusal(
                                400,
                                "validation_error",
                                "the body must be {\"key\": \"<your key>\"} with the key as a string",
                            );
                        }
                    },
                    _ => {
                        return refusal(
                            400,
                            "validation_error",
                            "the body must be the JSON object {\"key\": \"<your key>\"}",
                        );
                    }
                };
                hub.put(parts, user, service, &key, "hub:api")
                    .await
                    .map(|_| ())
            } else {
                hub.delete(parts, user, service, "hub:api")
                    .await
                    .map(|_| ())
            };
            match result {
                Ok(()) => Reply::empty(204),
                Err(e) => refused(&e),
            }
        }
        (_, None) => refusal(
            405,
            "invalid_request",
            "GET /hub/keys lists your keys; PUT or DELETE /hub/keys/<service> changes one",
        ),
        (_, Some(_)) => refusal(
            405,
            "invalid_request",
            "PUT /hub/keys/<service> stores a key, DELETE removes it; GET /hub/keys lists them",
        ),
    }
}
