//! The hub's routes (`crate::hub`): the JSON API under `/hub/keys`, the pages, the
//! provider sign-in, and what the approval page learns from a hub session.
//!
//! | route | what |
//! |---|---|
//! | `GET /hub/keys`, `PUT\|DELETE /hub/keys/<service>` | the JSON API (access token or session) |
//! | `GET /hub` | the page: each service, stored or not, forms |
//! | `POST /hub/set/<service>`, `POST /hub/delete/<service>`, `POST /hub/logout` | its forms |
//! | `GET /hub/login?next=`, `GET /hub/callback` | signing in at the provider |
//! | `GET\|POST /hub/connect/<service>` | the link a call without a key answers |
//! | `POST /hub/connect/<service>` with a bearer token | `{"authorizationUrl"}`: the link that connects an account |
//! | `GET /hub/oauth/<service>/callback` | the provider's redirect back (accounts connected by OAuth) |

use std::sync::Arc;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request};
use serde_json::json;

use crate::call::Broker;
use crate::confirm::approval::page::{Page, message};
use crate::hub::page::HubCx;
use crate::hub::signin;
use crate::reply::Reply;
use crate::serve::request::{authenticate, read_limited};
use crate::serve::response::refused;
use crate::served::Served;

/// The largest hub form or API body.
const MAX_BODY: usize = 16 * 1024;

fn service_segment(text: &str) -> Option<&str> {
    (!text.is_empty()
        && text.len() <= 64
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'))
    .then_some(text)
}

/// What the approval page learns from the request's hub session: whether provider
/// sign-in is offered, and the approver signed in there (their roles hold the
/// configured approver role).
pub async fn approval_provider(
    broker: &Broker,
    headers: &hyper::HeaderMap,
) -> crate::confirm::approval::page::Provider {
    let Some(hub) = &broker.hub else {
        return Default::default();
    };
    let Some(sign_in) = &hub.sign_in else {
        return Default::default();
    };
    let approver = match &sign_in.approver_role {
        Some(role) => {
            let now = broker.parts.now().as_millisecond();
            signin::session(&broker.parts.store, hub.site, hub.times, headers, now)
                .await
                .filter(|session| session.roles.contains(role))
                .map(|session| crate::hub::caller_name(&session.user()))
        }
        None => None,
    };
    crate::confirm::approval::page::Provider {
        available: sign_in.approver_role.is_some(),
        approver,
    }
}

/// `GET /hub/budget`: the caller's budgets (docs/budgets.md).
async fn budget(broker: &Broker, method: &Method, caller: &crate::caller::Caller) -> Reply {
    if method != Method::GET {
        return Reply::error(
            405,
            "invalid_request",
            "GET /hub/budget answers your budgets",
        );
    }
    let rooms = crate::run::budgets::standing(&broker.parts, caller, None, None).await;
    let budgets = crate::run::budgets::as_json(&rooms);
    Reply::ok(&json!({ "budgets": budgets }))
}

/// Routes one request under `/hub`.
pub async fn route(served: Arc<Served>, req: Request<Incoming>) -> Reply {
    let broker = &served.broker;
    // A broker without a hub still answers a bearer its budgets.
    if broker.hub.is_none() && req.uri().path() == "/hub/budget" {
        return match authenticate(broker, req.headers()).await {
            Ok(caller) => budget(broker, req.method(), &caller).await,
            Err(e) => refused(broker, &e),
        };
    }
    let (Some(hub), Some(oauth)) = (&broker.hub, &broker.callers.oauth) else {
        return Reply::error(
            404,
            "not_found",
            "this broker has no hub: its config sets no vault_key_env (docs/hub.md)",
        );
    };
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    let query = parts.uri.query().unwrap_or("");
    let headers = &parts.headers;
    let cx = HubCx {
        hub,
        parts: &broker.parts,
        oauth,
    };
    let method = &parts.method;
    // The JSON API (and a script asking for a connect link with its bearer token).
    if path == "/hub/keys"
        || path.starts_with("/hub/keys/")
        || path == "/hub/budget"
        || (path.starts_with("/hub/connect/")
            && method == Method::POST
            && headers.contains_key(hyper::header::AUTHORIZATION))
    {
        return api(&served, hub, oauth, &parts, body).await;
    }
    let (section, rest) = path
        .trim_start_matches("/hub")
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or((path.trim_start_matches("/hub").trim_start_matches('/'), ""));
    // Completed sign-ins (each a code exchange) are counted per client address, like
    // the approval page's.
    if method == Method::GET
        && ((section, rest) == ("callback", "")
            || (section == "oauth" && rest.ends_with("/callback")))
    {
        let client = crate::caller::origin::client_address(
            parts
                .extensions
                .get::<crate::caller::origin::Peer>()
                .copied(),
            headers,
        );
        let key = crate::confirm::approval::page::address_key(&client);
        if let Err(page) = crate::confirm::approval::page::limited(
            broker.confirming(),
            &key,
            crate::confirm::approval::page::SIGN_IN_ATTEMPTS_PER_ADDRESS,
            "Your address has made",
        )
        .await
        {
            tracing::warn!(client = %client, "hub sign-in attempts over the limit");
            return Reply::from(page);
        }
    }
    let page: Page = match (method, section, rest) {
        (&Method::GET, "", "") => crate::hub::page::home(cx, headers).await,
        (&Method::GET, "login", "") => login(broker, hub, headers, query).await,
        (&Method::GET, "callback", "") => callback(broker, hub, oauth, headers, query).await,
        (&Method::GET, "oauth", _) => {
            match rest.strip_suffix("/callback").and_then(service_segment) {
                Some(s) => crate::hub::connect::page::callback(cx, headers, s, query).await,
                None => message(404, "Not found", "No such hub page."),
            }
        }
        (&Method::POST, "set" | "delete" | "logout" | "connect", _)
        | (&Method::GET, "connect", _) => {
            let body = if method == Method::POST {
                match read_limited(&served, headers, path, body, MAX_BODY).await {
                    Ok(b) => b,
                    Err(_) => {
                        return Reply::from(message(413, "Too large", "The form is too large."));
                    }
                }
            } else {
                Bytes::new()
            };
            match (method, section, service_segment(rest)) {
                (&Method::POST, "logout", _) if rest.is_empty() => {
                    crate::hub::page::logout(cx, headers, &body).await
                }
                (&Method::POST, "set", Some(s)) => {
                    crate::hub::page::change(cx, headers, s, true, &body).await
                }
                (&Method::POST, "delete", Some(s)) => {
                    crate::hub::page::change(cx, headers, s, false, &body).await
                }
                (&Method::GET, "connect", Some(s)) => {
                    crate::hub::page::connect(cx, headers, s, query).await
                }
                (&Method::POST, "connect", Some(s)) if hub.connections().by_flow(s) => {
                    crate::hub::connect::page::start(cx, headers, s, &body).await
                }
                (&Method::POST, "connect", Some(s)) => {
                    crate::hub::page::connect_store(cx, headers, s, &body).await
                }
                _ => message(404, "Not found", "No such hub page."),
            }
        }
        _ => message(404, "Not found", "No such hub page."),
    };
    Reply::from(page)
}

/// `/hub/keys[/<service>]` and `/hub/budget`: the JSON API, for a bearer token or a
/// signed-in session.
async fn api(
    served: &Served,
    hub: &crate::hub::Hub,
    oauth: &crate::caller::oauth::OAuth,
    parts: &hyper::http::request::Parts,
    body: Incoming,
) -> Reply {
    let broker = &served.broker;
    let path = parts.uri.path();
    let headers = &parts.headers;
    let method = &parts.method;
    let service = match path
        .strip_prefix("/hub/keys/")
        .or_else(|| path.strip_prefix("/hub/connect/"))
    {
        None => None,
        Some(s) => match service_segment(s) {
            Some(s) => Some(s),
            None => {
                return Reply::error(404, "not_found", "no such service");
            }
        },
    };
    let now = broker.parts.now().as_millisecond();
    let session = if headers.contains_key(hyper::header::AUTHORIZATION) {
        None
    } else {
        signin::session(&broker.parts.store, hub.site, hub.times, headers, now).await
    };
    let caller = if session.is_none() {
        match authenticate(broker, headers).await {
            Ok(p) => p,
            Err(e) => return refused(broker, &e),
        }
    } else {
        match session {
            Some(s) if s.issuer == oauth.issuer() => {
                Arc::new(oauth.signed_in_caller(&s.subject, &s.roles))
            }
            _ => {
                return Reply::error(401, "unauthorized", "sign in again");
            }
        }
    };
    if path == "/hub/budget" {
        return budget(broker, method, &caller).await;
    }
    if let (Some(service), true) = (service, path.starts_with("/hub/connect/")) {
        return crate::hub::api::connect_link(hub, &broker.parts, &caller, service, headers);
    }
    let body = if method == Method::PUT {
        match read_limited(served, headers, path, body, MAX_BODY).await {
            Ok(b) => b,
            Err(e) => return refused(broker, &e),
        }
    } else {
        Bytes::new()
    };
    crate::hub::api::handle(hub, &broker.parts, &caller, method, service, &body).await
}

/// The page of a hub without `[oauth.sign_in]`.
fn no_sign_in() -> Page {
    message(
        503,
        "Sign-in is not configured",
        "This broker has no [oauth.sign_in] client.",
    )
}

/// `GET /hub/login`: the sign-in starts at the identity provider.
async fn login(
    broker: &Broker,
    hub: &crate::hub::Hub,
    headers: &hyper::HeaderMap,
    query: &str,
) -> Page {
    let Some(sign_in) = &hub.sign_in else {
        return no_sign_in();
    };
    let fields: std::collections::BTreeMap<String, String> =
        url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
    let next = signin::safe_next(fields.get("next").map(String::as_str));
    let base = hub.base_url(headers);
    match sign_in
        .start(
            &hub.cipher,
            &base,
            hub.site,
            &next,
            broker.parts.now().as_millisecond(),
        )
        .await
    {
        Ok((location, cookie)) => Page {
            status: 303,
            headers: vec![("location", location), ("set-cookie", cookie)],
            body: String::new(),
        },
        Err(e) => {
            tracing::warn!(error = %e, "hub sign-in could not start");
            message(
                503,
                "Sign-in unavailable",
                "The identity provider cannot be reached right now. Try again shortly.",
            )
        }
    }
}

/// `GET /hub/callback`: the provider's redirect back; a session cookie when it checks.
async fn callback(
    broker: &Broker,
    hub: &crate::hub::Hub,
    oauth: &crate::caller::oauth::OAuth,
    headers: &hyper::HeaderMap,
    query: &str,
) -> Page {
    let Some(sign_in) = &hub.sign_in else {
        return no_sign_in();
    };
    let base = hub.base_url(headers);
    let back = signin::Redirected {
        base: &base,
        site: hub.site,
        headers,
        query,
    };
    match sign_in
        .finish(&hub.cipher, oauth, back, broker.parts.now())
        .await
    {
        Ok((session, next)) => {
            let now = broker.parts.now().as_millisecond();
            match signin::start_session(&broker.parts.store, hub.site, hub.times, &session, now)
                .await
            {
                Some(cookie) => {
                    tracing::info!(user = %crate::hub::caller_name(&session.user()), "signed in to the hub");
                    let [_, clear_login] = signin::cleared_cookies(hub.site);
                    Page {
                        status: 303,
                        headers: vec![
                            ("location", next),
                            ("set-cookie", cookie),
                            ("set-cookie", clear_login),
                        ],
                        body: String::new(),
                    }
                }
                None => message(
                    503,
                    "Sign-in unavailable",
                    "The broker cannot keep sessions right now. Try again shortly.",
                ),
            }
        }
        Err(e) => message(400, "Sign-in failed", &e),
    }
}
