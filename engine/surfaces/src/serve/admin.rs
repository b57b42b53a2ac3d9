//! The console's routes (`crate::console`): its pages under `/admin` and their JSON API
//! under `/admin/api`. Every route first learns who is looking; the API answers 401
//! without a credential and 403 for a credential without a console role (or an API
//! key), the pages a sign-in link or a 403 page.
//!
//! | page | API |
//! |---|---|
//! | `GET /admin` | `GET /admin/api/overview` |
//! | `GET /admin/tools`, `/admin/tools/<name>` | `GET /admin/api/tools`, `/admin/api/tools/<name>` |
//! | `GET /admin/audit` | `GET /admin/api/audit` (`format=jsonl\|csv` exports) |
//! | `GET /admin/users` | `GET /admin/api/users`, `GET /admin/api/keys` |
//! | `GET /admin/approvals`, `/admin/approvals/<id>` | `GET /admin/api/approvals`, `/admin/api/approvals/<id>` |
//! | `GET /admin/tasks` | `GET /admin/api/tasks` |
//! | `GET /admin/config` | `GET /admin/api/config` |
//!
//! An admin's actions: the pages' forms `POST /admin/users/end-sessions`,
//! `POST /admin/users/delete-key` and `POST /admin/approvals/<id>/decision` (each with
//! its own CSRF token, answered with a redirect back), and in the API
//! `DELETE /admin/api/users/<user>/sessions`, `DELETE /admin/api/users/<user>/keys/<service>`
//! and `POST /admin/api/approvals/<id>/decision`, which take an access token only: a
//! browser's cookie never acts through the API.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request};

use crate::call::Broker;
use crate::console::actions::Action;
use crate::console::{Viewer, access};
use crate::html::Page;
use crate::reply::Reply;
use crate::serve::request::read_limited;
use crate::served::Served;

/// A tool's name from a path segment (percent-decoded).
fn tool_name(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

/// The largest console form body.
const MAX_FORM: usize = 8 * 1024;

/// How a request asks for an action.
#[derive(Debug, PartialEq, Eq)]
enum Acting {
    /// A page's form: which one is read off the path, the target off its fields.
    Form(FormOf),
    /// The API, the action whole in the path.
    Api(Action),
    /// The API's decision on approval `id`: approve or decline is in the JSON body.
    ApiDecision(String),
}

/// Which form was posted.
#[derive(Debug, PartialEq, Eq)]
enum FormOf {
    EndSessions,
    DeleteKey,
    Decide(String),
}

/// The action a request asks for: `None` for a GET (a read), `Some(Err)` for a method
/// no route takes.
fn action_of(method: &Method, path: &str) -> Option<Result<Acting, ()>> {
    let segments: Vec<String> = path.split('/').map(tool_name).collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    let acting = match (method, segments.as_slice()) {
        (&Method::GET, _) => return None,
        (&Method::POST, ["", "admin", "users", "end-sessions"]) => {
            Acting::Form(FormOf::EndSessions)
        }
        (&Method::POST, ["", "admin", "users", "delete-key"]) => Acting::Form(FormOf::DeleteKey),
        (&Method::POST, ["", "admin", "approvals", id, "decision"]) => {
            Acting::Form(FormOf::Decide((*id).to_string()))
        }
        (&Method::POST, ["", "admin", "api", "approvals", id, "decision"]) => {
            Acting::ApiDecision((*id).to_string())
        }
        (&Method::DELETE, ["", "admin", "api", "users", user, "sessions"]) => {
            Acting::Api(Action::EndSessions {
                user: (*user).to_string(),
            })
        }
        (&Method::DELETE, ["", "admin", "api", "users", user, "keys", service]) => {
            Acting::Api(Action::DeleteKey {
                user: (*user).to_string(),
                service: (*service).to_string(),
            })
        }
        _ => return Some(Err(())),
    };
    Some(Ok(acting))
}

/// A form's action from its fields, once its CSRF token is checked for this viewer.
fn form_action(
    broker: &Broker,
    viewer: &Viewer,
    form: FormOf,
    body: &[u8],
) -> Result<Action, Page> {
    let fields = crate::confirm::approval::page::form(body);
    let text = |name: &str| {
        fields
            .get(name)
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let action = match form {
        FormOf::EndSessions => Action::EndSessions { user: text("user") },
        FormOf::DeleteKey => Action::DeleteKey {
            user: text("user"),
            service: text("service"),
        },
        FormOf::Decide(id) => match text("decision").as_str() {
            "approve" => Action::Decide { id, approve: true },
            "decline" => Action::Decide { id, approve: false },
            _ => {
                return Err(crate::html::message(
                    400,
                    "Not changed",
                    "Choose approve or decline; nothing was changed.",
                ));
            }
        },
    };
    let fresh = viewer.form_token_ok(
        broker,
        &action.form_action(),
        fields.get("csrf").map(|c| c.as_str()),
    );
    if fresh {
        Ok(action)
    } else {
        tracing::warn!("console form refused: no valid CSRF token");
        Err(crate::html::message(
            403,
            "Refused",
            "This form is stale or did not come from the console. Open the page again; nothing was changed.",
        ))
    }
}

/// The decision of an API request's JSON body: `{"decision": "approve" | "decline"}`.
fn api_decision(id: String, body: &[u8]) -> Result<Action, Reply> {
    let refuse = || {
        Reply::error(
            400,
            "invalid_request",
            "send {\"decision\": \"approve\"} or {\"decision\": \"decline\"}",
        )
    };
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|_| refuse())?;
    match value.get("decision").and_then(serde_json::Value::as_str) {
        Some("approve") => Ok(Action::Decide { id, approve: true }),
        Some("decline") => Ok(Action::Decide { id, approve: false }),
        _ => Err(refuse()),
    }
}

/// Takes an action and answers it: JSON for the API, a redirect back for a form.
async fn take(broker: &Broker, viewer: &Viewer, action: Action, api: bool) -> Reply {
    let result = crate::console::actions::act(broker, viewer, &action).await;
    match (result, api) {
        (Ok(done), true) => Reply::ok(&done),
        (Err((status, classification, message)), true) => {
            Reply::error(status, classification, &message)
        }
        (Ok(_), false) => {
            let back = match &action {
                Action::Decide { id, .. } => format!(
                    "/admin/approvals/{}?done=decided",
                    percent_encoding::utf8_percent_encode(id, percent_encoding::NON_ALPHANUMERIC)
                ),
                Action::EndSessions { user } | Action::DeleteKey { user, .. } => {
                    let done = if matches!(action, Action::EndSessions { .. }) {
                        "sessions"
                    } else {
                        "key"
                    };
                    let q = url::form_urlencoded::Serializer::new(String::new())
                        .append_pair("q", user)
                        .append_pair("done", done)
                        .finish();
                    format!("/admin/users?{q}")
                }
            };
            Reply::from(Page {
                status: 303,
                headers: vec![("location", back)],
                body: String::new(),
            })
        }
        (Err((status, _, message)), false) => Reply::from(crate::html::message(
            status,
            "Not changed",
            &format!("{message}."),
        )),
    }
}

/// Routes one request under `/admin`.
pub async fn route(served: Arc<Served>, req: Request<Incoming>) -> Reply {
    let broker = &served.broker;
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let api = path == "/admin/api" || path.starts_with("/admin/api/");
    let acting = action_of(req.method(), &path);
    if let Some(Err(())) = acting {
        let message = "the console's pages and API answer GET; an admin acts with the users page's forms (POST) or the API's DELETE (docs/console.md)";
        return if api {
            Reply::error(405, "invalid_request", message)
        } else {
            Reply::from(crate::html::message(405, "Not allowed", message))
        };
    }
    let viewer = match access::viewer(&served, req.headers()).await {
        Ok(v) => v,
        Err(refusal) => {
            if refusal.status >= 401 && refusal.status < 404 {
                tracing::info!(path = %path, status = refusal.status, "console refused");
            }
            return if api {
                Reply::error(refusal.status, refusal.classification, &refusal.message)
            } else {
                let here = if query.is_empty() {
                    path.clone()
                } else {
                    format!("{path}?{query}")
                };
                Reply::from(crate::console::shell::refused(&refusal, &here))
            };
        }
    };
    if let Some(Ok(acting)) = acting {
        let through_api = !matches!(acting, Acting::Form(_));
        if through_api && viewer.session.is_some() {
            return Reply::error(
                403,
                "forbidden",
                "the API's actions take an access token (Authorization: Bearer); in a browser, use the console's forms",
            );
        }
        let action = match acting {
            Acting::Api(action) => action,
            acting => {
                let (parts, body) = req.into_parts();
                let Ok(body) = read_limited(&served, &parts.headers, &path, body, MAX_FORM).await
                else {
                    return if through_api {
                        Reply::error(
                            413,
                            "invalid_request",
                            "the body is too large or broken; nothing was changed",
                        )
                    } else {
                        Reply::from(crate::html::message(
                            413,
                            "Too large",
                            "The form is too large; nothing was changed.",
                        ))
                    };
                };
                let read = match acting {
                    Acting::Form(form) => {
                        form_action(broker, &viewer, form, &body).map_err(Reply::from)
                    }
                    Acting::ApiDecision(id) => api_decision(id, &body),
                    Acting::Api(action) => Ok(action),
                };
                match read {
                    Ok(action) => action,
                    Err(response) => return response,
                }
            }
        };
        return take(broker, &viewer, action, through_api).await;
    }
    read(&served, &viewer, &path, &query, api).await
}

/// What a read of the console answers: a page, or the API's JSON.
async fn read(served: &Served, viewer: &Viewer, path: &str, query: &str, api: bool) -> Reply {
    let (b, v) = (&served.broker, viewer);
    match path {
        "/admin/api/users" => crate::console::users::api_users(served, query).await,
        "/admin/api/keys" => crate::console::users::api_keys(served).await,
        "/admin/users" => Reply::from(crate::console::users::page(served, v, query).await),
        "/admin/api/approvals" => crate::console::approvals::api_list(served, query).await,
        "/admin/approvals" => Reply::from(crate::console::approvals::page(served, v, query).await),
        "/admin/api/tasks" => crate::console::tasks::api(served, query).await,
        "/admin/tasks" => Reply::from(crate::console::tasks::page(served, v, query).await),
        p if p.starts_with("/admin/api/approvals/") => {
            crate::console::approvals::api_one(
                served,
                &tool_name(&p["/admin/api/approvals/".len()..]),
            )
            .await
        }
        p if p.starts_with("/admin/approvals/") => Reply::from(
            crate::console::approvals::page_one(
                served,
                v,
                &tool_name(&p["/admin/approvals/".len()..]),
                query,
            )
            .await,
        ),
        "/admin/api/overview" => crate::console::overview::api(served).await,
        "/admin/api/tools" => crate::console::catalog::api_list(b, query),
        "/admin/api/audit" => crate::console::audit::api(served, query).await,
        "/admin/api/config" => crate::console::settings::api(served),
        p if p.starts_with("/admin/api/tools/") => {
            crate::console::catalog::api_tool(b, &tool_name(&p["/admin/api/tools/".len()..]))
        }
        _ if api => Reply::error(
            404,
            "not_found",
            "no such console API: overview, tools, tools/<name>, users, keys, approvals, approvals/<id>, tasks, audit, config (docs/console.md)",
        ),
        "/admin" | "/admin/" => Reply::from(crate::console::overview::page(served, v).await),
        "/admin/tools" => Reply::from(crate::console::catalog::page(b, v, query)),
        "/admin/audit" => Reply::from(crate::console::audit::page(served, v, query).await),
        "/admin/config" => Reply::from(crate::console::settings::page(served, v)),
        p if p.starts_with("/admin/tools/") => Reply::from(crate::console::catalog::tool_page(
            b,
            v,
            &tool_name(&p["/admin/tools/".len()..]),
        )),
        _ => Reply::from(crate::console::shell::page(
            b,
            v,
            "",
            404,
            "Not found",
            "<p class=\"empty\">No such console page. <a href=\"/admin\">Back to the overview</a>.</p>",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_read_off_the_method_and_the_decoded_segments() {
        assert_eq!(action_of(&Method::GET, "/admin/users"), None);
        assert_eq!(action_of(&Method::GET, "/admin/api/users/a/sessions"), None);
        assert_eq!(
            action_of(&Method::POST, "/admin/users/end-sessions"),
            Some(Ok(Acting::Form(FormOf::EndSessions)))
        );
        assert_eq!(
            action_of(&Method::POST, "/admin/approvals/ap%2D1/decision"),
            Some(Ok(Acting::Form(FormOf::Decide("ap-1".into()))))
        );
        assert_eq!(
            action_of(&Method::POST, "/admin/api/approvals/ap-1/decision"),
            Some(Ok(Acting::ApiDecision("ap-1".into())))
        );
        assert_eq!(
            action_of(
                &Method::DELETE,
                "/admin/api/users/https%3A%2F%2Fidp%23ana/sessions"
            ),
            Some(Ok(Acting::Api(Action::EndSessions {
                user: "https://idp#ana".into()
            })))
        );
        assert_eq!(
            action_of(&Method::DELETE, "/admin/api/users/idp%23ana/keys/payments"),
            Some(Ok(Acting::Api(Action::DeleteKey {
                user: "idp#ana".into(),
                service: "payments".into()
            })))
        );
        for (method, path) in [
            (Method::POST, "/admin/api/overview"),
            (Method::DELETE, "/admin/api/users/ana"),
            (Method::DELETE, "/admin/users/end-sessions"),
            (Method::PUT, "/admin/api/users/ana/sessions"),
            (Method::POST, "/admin/approvals/ap-1"),
            (Method::HEAD, "/admin"),
        ] {
            assert_eq!(action_of(&method, path), Some(Err(())), "{method} {path}");
        }
    }

    #[test]
    fn an_api_decision_is_approve_or_decline() {
        assert_eq!(
            api_decision("a".into(), br#"{"decision":"approve"}"#).ok(),
            Some(Action::Decide {
                id: "a".into(),
                approve: true
            })
        );
        assert_eq!(
            api_decision("a".into(), br#"{"decision":"decline"}"#).ok(),
            Some(Action::Decide {
                id: "a".into(),
                approve: false
            })
        );
        for bad in [&b"{}"[..], b"{\"decision\":true}", b"approve", b""] {
            assert!(api_decision("a".into(), bad).is_err());
        }
    }
}
