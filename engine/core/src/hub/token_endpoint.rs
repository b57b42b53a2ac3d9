//! Talking to an authorization server as a confidential (or public) client: its
//! metadata (RFC 8414, else OpenID discovery), and form posts to its token and
//! revocation endpoints with the client authenticated (RFC 6749 section 2.3.1).
//! Shared by the hub's sign-in and by connected accounts. Nothing here logs or
//! returns a body's secrets: errors name the URL and the status only.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::Value;
use zeroize::Zeroizing;

use crate::config::oauth::TokenEndpointAuth;

/// The longest an authorization server may take to answer.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read from it.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// The client the hub talks to authorization servers with.
pub type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A new client (unpooled: these requests are rare).
pub fn client() -> Result<HttpsClient, String> {
    crate::net::unpooled_client(FETCH_TIMEOUT)
}

/// How the client proves itself to the token endpoint.
#[derive(Clone)]
pub struct ClientAuth {
    /// The client id.
    pub client_id: String,
    /// The secret; `None` for a public client (its id goes in the form).
    pub secret: Option<Zeroizing<String>>,
    /// Basic or in the form.
    pub method: TokenEndpointAuth,
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientAuth")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl ClientAuth {
    /// A form post to `url` of `pairs`, the client authenticated; the form and the
    /// secret are wiped once written.
    pub fn form_post(
        &self,
        url: &str,
        pairs: &[(&str, &str)],
    ) -> Result<hyper::Request<Full<Bytes>>, String> {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        for (name, value) in pairs {
            form.append_pair(name, value);
        }
        let mut request = hyper::Request::post(url)
            .header(hyper::header::ACCEPT, "application/json")
            .header(
                hyper::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            );
        match (&self.secret, self.method) {
            (Some(secret), TokenEndpointAuth::ClientSecretBasic) => {
                let enc = |s: &str| {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                };
                let pair = Zeroizing::new(format!("{}:{}", enc(&self.client_id), enc(secret)));
                let value = Zeroizing::new(format!("Basic {}", STANDARD.encode(pair.as_bytes())));
                request = request.header(hyper::header::AUTHORIZATION, value.as_str());
            }
            (Some(secret), TokenEndpointAuth::ClientSecretPost) => {
                form.append_pair("client_id", &self.client_id)
                    .append_pair("client_secret", secret);
            }
            (None, _) => {
                form.append_pair("client_id", &self.client_id);
            }
        }
        let body = Zeroizing::new(form.finish());
        request
            .body(Full::new(Bytes::from(body.as_bytes().to_vec())))
            .map_err(|_| format!("the request to {url} could not be written"))
    }
}

/// Sends `request`: its status and JSON body (an empty body reads as `null`). The
/// error names the URL, never a body.
pub async fn send(
    client: &HttpsClient,
    request: hyper::Request<Full<Bytes>>,
) -> Result<(u16, Value), String> {
    let url = request.uri().to_string();
    let fetch = async {
        let response = client
            .request(request)
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let status = response.status().as_u16();
        let body = Limited::new(response.into_body(), MAX_DOCUMENT_BYTES)
            .collect()
            .await
            .map_err(|_| format!("{url}: the answer broke off or is over 256 KiB"))?
            .to_bytes();
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok((status, Value::Null));
        }
        let json =
            serde_json::from_slice::<Value>(&body).map_err(|_| format!("{url}: not JSON"))?;
        Ok((status, json))
    };
    tokio::time::timeout(FETCH_TIMEOUT, fetch)
        .await
        .map_err(|_| format!("{url} did not answer within 10 s"))?
}

/// The authorization server metadata of `issuer` (RFC 8414's well-known URL, else
/// OpenID discovery's), refused when it names another issuer.
pub async fn discover(client: &HttpsClient, issuer: &str) -> Result<Value, String> {
    let mut tried = Vec::new();
    for url in crate::caller::oauth::jwks::metadata_urls(issuer) {
        let request = hyper::Request::get(url.as_str())
            .header(hyper::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|e| e.to_string())?;
        match send(client, request).await {
            Ok((200, meta)) => {
                if meta.get("issuer").and_then(Value::as_str) != Some(issuer) {
                    return Err(format!(
                        "{url} names another issuer than the configured one"
                    ));
                }
                return Ok(meta);
            }
            Ok((status, _)) => tried.push(format!("{url} answered {status}")),
            Err(e) => tried.push(e),
        }
    }
    Err(tried.join("; "))
}

/// A metadata document's endpoint `name`.
pub fn endpoint(meta: &Value, name: &str) -> Result<String, String> {
    meta.get(name)
        .and_then(Value::as_str)
        .map(String::from)
        .ok_or_else(|| format!("the provider's metadata has no `{name}`"))
}

/// The OAuth `error` of a refusal, cut to a safe word (never echoed whole: a
/// provider's description may quote what it was sent).
pub fn error_code(answer: &Value) -> String {
    safe_code(
        answer
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("unknown"),
    )
}

/// An OAuth error code as a page or a log may show it: letters, digits and `_`, at
/// most 64 (a redirect's `error` parameter is anyone's text).
pub fn safe_code(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(64)
        .collect()
}
