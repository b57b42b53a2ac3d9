//! Outbound HTTP for the broker's rare requests of its own (an identity provider's
//! metadata, keys and token endpoint; an OTLP collector): not the upstream client
//! (`upstream`, broker-upstream), which pools and holds connections per serving thread.
//!
//! Imports nothing of the crate; every stage may use it.

use std::time::Duration;

use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A client for rare requests: https (or http), the platform's certificate verifier,
/// `connect_timeout`, and no pooled connections: a connection must not outlive the
/// runtime that opened it (a serving thread's, or the main one's).
pub fn unpooled_client<B>(
    connect_timeout: Duration,
) -> Result<Client<hyper_rustls::HttpsConnector<HttpConnector>, B>, String>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
{
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(connect_timeout));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .try_with_platform_verifier()
        .map_err(|e| format!("cannot load the platform's certificate verifier: {e}"))?
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build(https))
}
