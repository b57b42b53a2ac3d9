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
//! | `GET /admin/config` | `GET /admin/api/config` |

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request};

use crate::call::Broker;
use crate::console::{Answer, access};
use crate::serve::response::{HttpResponse, json_response, page_response};

fn answer(a: Answer) -> HttpResponse {
    match a {
        Answer::Json(status, body, headers) => json_response(status, &body, &headers),
        Answer::Page(page) => page_response(page),
        Answer::File(status, content_type, body, extra) => {
            let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
            *response.status_mut() =
                hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::OK);
            let headers = response.headers_mut();
            for (name, value) in [
                ("content-type", content_type),
                ("cache-control", "no-store"),
                ("x-content-type-options", "nosniff"),
            ] {
                headers.insert(name, hyper::header::HeaderValue::from_static(value));
            }
            for (name, value) in extra {
                if let Ok(v) = hyper::header::HeaderValue::from_str(&value) {
                    headers.append(name, v);
                }
            }
            response
        }
    }
}

/// A tool's name from a path segment (percent-decoded).
fn tool_name(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

/// Routes one request under `/admin`.
pub async fn route(broker: Arc<Broker>, req: Request<Incoming>) -> HttpResponse {
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let api = path == "/admin/api" || path.starts_with("/admin/api/");
    if req.method() != Method::GET {
        let message = "the console's pages and API answer GET";
        return if api {
            answer(Answer::error(405, "invalid_request", message))
        } else {
            page_response(crate::html::message(405, "Not allowed", message))
        };
    }
    let viewer = match access::viewer(&broker, req.headers()).await {
        Ok(v) => v,
        Err(refusal) => {
            if refusal.status >= 401 && refusal.status < 404 {
                tracing::info!(path = %path, status = refusal.status, "console refused");
            }
            return if api {
                answer(Answer::error(
                    refusal.status,
                    refusal.classification,
                    &refusal.message,
                ))
            } else {
                let here = if query.is_empty() {
                    path.clone()
                } else {
                    format!("{path}?{query}")
                };
                page_response(crate::console::shell::refused(&refusal, &here))
            };
        }
    };
    let b = &broker;
    let v = &viewer;
    let a = match path.as_str() {
        "/admin/api/overview" => crate::console::overview::api(b).await,
        "/admin/api/tools" => crate::console::catalog::api_list(b, &query),
        "/admin/api/audit" => crate::console::audit::api(b, &query).await,
        "/admin/api/config" => crate::console::settings::api(b),
        p if p.starts_with("/admin/api/tools/") => {
            crate::console::catalog::api_tool(b, &tool_name(&p["/admin/api/tools/".len()..]))
        }
        _ if api => Answer::error(
            404,
            "not_found",
            "no such console API: overview, tools, tools/<name>, audit, config (docs/console.md)",
        ),
        "/admin" | "/admin/" => Answer::Page(crate::console::overview::page(b, v).await),
        "/admin/tools" => Answer::Page(crate::console::catalog::page(b, v, &query)),
        "/admin/audit" => Answer::Page(crate::console::audit::page(b, v, &query).await),
        "/admin/config" => Answer::Page(crate::console::settings::page(b, v)),
        p if p.starts_with("/admin/tools/") => Answer::Page(crate::console::catalog::tool_page(
            b,
            v,
            &tool_name(&p["/admin/tools/".len()..]),
        )),
        _ => Answer::Page(crate::console::shell::page(
            b,
            v,
            "",
            (404, "Not found"),
            "<p class=\"empty\">No such console page. <a href=\"/admin\">Back to the overview</a>.</p>",
        )),
    };
    answer(a)
}
