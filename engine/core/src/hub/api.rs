//! The hub's JSON API, with the pages' rules: `GET /hub/keys` ->
//! `[{"service", "present", "setAt"}]`, `PUT /hub/keys/<service>` with `{"key": "..."}`
//! -> 204, `DELETE /hub/keys/<service>` -> 204 (whether or not one was stored; a
//! connected account is revoked and ended too), `POST /hub/connect/<service>` ->
//! `{"authorizationUrl"}`.
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

/// `POST /hub/connect/<service>` with a bearer token: `{"authorizationUrl"}`, the
/// hub's link where this user connects the account. The link names the user; the
/// flow itself starts only from a browser signed in as them (decision 020), so a link
/// passed to someone else cannot bind their account to this user's calls.
pub fn connect_link(
    hub: &Hub,
    parts: &Parts,
    caller: &Caller,
    service: &str,
    headers: &hyper::HeaderMap,
) -> Reply {
    let Some(user) = &caller.user else {
        return refusal(
            403,
            "forbidden",
            "accounts are connected for people signed in at this broker's identity provider; an API key has no hub",
        );
    };
    if !hub.holds(service) || !caller.may_use_service(service) {
        return refused(&Refused::UnknownService(service.to_string()));
    }
    if hub.connections().on_behalf(service) {
        return refusal(
            400,
            "invalid_request",
            "this service is called on your behalf with your own access token, exchanged on each call: there is nothing to connect",
        );
    }
    let now = parts.now().as_millisecond();
    match hub.connect_url(headers, user, service, now) {
        Some(url) => Reply::json(
            200,
            &serde_json::json!({
                "service": service,
                "authorizationUrl": url,
                "connects": if hub.connections().by_flow(service) { "oauth" } else { "key" },
                "expiresInSeconds": super::CONNECT_TTL_MS / 1000,
            }),
        ),
        None => refusal(503, "not_configured", "no randomness available; retry"),
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
