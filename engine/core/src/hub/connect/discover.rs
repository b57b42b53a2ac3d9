//! Finding an MCP server's authorization server, and registering the broker at it.
//!
//! - [`protected_resource`]: the server's protected resource metadata (RFC 9728), at the
//!   well-known URL built from the server's own URL (the path kept after it, then the
//!   root), its `resource` checked to be that URL, its first authorization server taken.
//! - [`register`]: dynamic client registration (RFC 7591) as a confidential web client
//!   with the hub's exact redirect URI; the secret sealed under the vault key before it
//!   is kept (`hub_oauth_clients`), so every replica uses the one client.
//! - [`opened`]: a kept registration, its secret opened.

use bytes::Bytes;
use http_body_util::Full;
use serde_json::{Value, json};
use zeroize::Zeroizing;

use crate::config::oauth::TokenEndpointAuth;
use crate::hub::cipher::VaultCipher;
use crate::hub::token_endpoint::{self, ClientAuth, HttpsClient};
use crate::store::hub_connections::OAuthClient;

/// The well-known URLs of `url`'s protected resource metadata, the path-aware one first.
fn metadata_urls(url: &str) -> Result<Vec<String>, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("`{url}`: {e}"))?;
    let origin = parsed.origin().ascii_serialization();
    let path = parsed.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    Ok(urls)
}

/// `(resource, authorization server)` of the MCP server at `url`.
pub async fn protected_resource(
    client: &HttpsClient,
    url: &str,
) -> Result<(String, String), String> {
    let mut tried = Vec::new();
    for meta_url in metadata_urls(url)? {
        let request = hyper::Request::get(meta_url.as_str())
            .header(hyper::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|e| e.to_string())?;
        match token_endpoint::send(client, request).await {
            Ok((200, meta)) => {
                let resource = meta
                    .get("resource")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if resource.trim_end_matches('/') != url.trim_end_matches('/') {
                    return Err(format!(
                        "{meta_url} names the resource `{resource}`, not the server's URL `{url}` (RFC 9728 section 3.3)"
                    ));
                }
                let issuer = meta
                    .get("authorization_servers")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{meta_url} names no authorization server"))?;
                return Ok((resource.to_string(), issuer.to_string()));
            }
            Ok((status, _)) => tried.push(format!("{meta_url} answered {status}")),
            Err(e) => tried.push(e),
        }
    }
    Err(format!(
        "no protected resource metadata: {}",
        tried.join("; ")
    ))
}

fn binding(service: &str, issuer: &str) -> Vec<u8> {
    serde_json::to_vec(&["hub-client/v1", service, issuer]).unwrap_or_default()
}

fn method_of(text: &str) -> Option<TokenEndpointAuth> {
    match text {
        "client_secret_basic" => Some(TokenEndpointAuth::ClientSecretBasic),
        "client_secret_post" => Some(TokenEndpointAuth::ClientSecretPost),
        _ => None,
    }
}

/// What a registration asks for, and where.
#[derive(Debug, Clone, Copy)]
pub struct Registration<'a> {
    /// The registration endpoint.
    pub endpoint: &'a str,
    /// The hub's redirect URI for the service.
    pub redirect_uri: &'a str,
    /// The scopes the client will ask for.
    pub scopes: &'a [String],
    /// The service it is for.
    pub service: &'a str,
    /// The authorization server.
    pub issuer: &'a str,
}

/// Registers the broker as `asked`: the row to keep.
pub async fn register(
    client: &HttpsClient,
    cipher: &VaultCipher,
    asked: Registration<'_>,
    now_ms: i64,
) -> Result<OAuthClient, String> {
    let Registration {
        endpoint,
        redirect_uri,
        scopes,
        service,
        issuer,
    } = asked;
    let mut metadata = json!({
        "client_name": "tool-broker",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic",
        "application_type": "web",
    });
    if !scopes.is_empty() {
        metadata["scope"] = json!(scopes.join(" "));
    }
    let request = hyper::Request::post(endpoint)
        .header(hyper::header::ACCEPT, "application/json")
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(metadata.to_string())))
        .map_err(|e| e.to_string())?;
    let (status, answer) = token_endpoint::send(client, request).await?;
    if status != 200 && status != 201 {
        return Err(format!(
            "{endpoint} refused the registration ({status}, {})",
            token_endpoint::error_code(&answer)
        ));
    }
    let client_id = answer
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| format!("{endpoint} answered no client_id"))?;
    let secret = answer
        .get("client_secret")
        .and_then(Value::as_str)
        .map(|s| Zeroizing::new(s.to_string()));
    let auth_method = match (
        &secret,
        answer
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str),
    ) {
        (None, _) => "none",
        (Some(_), Some(m)) if method_of(m).is_some() => m,
        (Some(_), _) => "client_secret_basic",
    };
    let sealed = match &secret {
        Some(secret) => Some(
            cipher
                .seal_row(&binding(service, issuer), secret)
                .ok_or("no randomness available")?,
        ),
        None => None,
    };
    Ok(OAuthClient {
        service: service.to_string(),
        issuer: issuer.to_string(),
        client_id: client_id.to_string(),
        sealed,
        auth_method: auth_method.to_string(),
        key_id: cipher.current_id().to_string(),
        registered_ms: now_ms,
    })
}

/// A kept registration as the client it is: its secret opened.
pub fn opened(cipher: &VaultCipher, row: &OAuthClient) -> Result<ClientAuth, String> {
    let secret = match &row.sealed {
        Some(sealed) => Some(
            cipher
                .open_row(&binding(&row.service, &row.issuer), sealed)
                .map(|(s, _)| s)
                .ok_or("the registered client's secret does not open under the vault keys given")?,
        ),
        None => None,
    };
    Ok(ClientAuth {
        client_id: row.client_id.clone(),
        secret,
        method: method_of(&row.auth_method).unwrap_or_default(),
    })
}

/// A kept registration with its secret sealed anew under the current vault key
/// (`vault rekey`); `None` when no key given opens it.
pub fn resealed(cipher: &VaultCipher, row: &OAuthClient) -> Option<OAuthClient> {
    let binding = binding(&row.service, &row.issuer);
    let (secret, _) = cipher.open_row(&binding, row.sealed.as_deref()?)?;
    Some(OAuthClient {
        sealed: Some(cipher.seal_row(&binding, &secret)?),
        key_id: cipher.current_id().to_string(),
        ..row.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_is_looked_for_after_the_servers_path_then_at_the_root() {
        assert_eq!(
            metadata_urls("https://mcp.example.com/v1/mcp").unwrap(),
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/v1/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            metadata_urls("http://127.0.0.1:9/").unwrap(),
            ["http://127.0.0.1:9/.well-known/oauth-protected-resource"]
        );
    }
}
