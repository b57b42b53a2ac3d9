//! The `[server]` table of the deployment config: what a connection may cost (enforced
//! by `serve::bounds` in broker-surfaces) and which HTTP/1.1 server reads call requests.
//! Design notes and defaults: docs/deployment.md ("Connection limits").

use std::time::Duration;

use serde::Deserialize;

/// The `[server]` table of the deployment config. Every field has a default.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "snake_case", default)]
pub struct ServerBounds {
    /// A request head (request line and headers) must arrive within this, counted from
    /// its first byte.
    pub header_read_timeout_ms: u64,
    /// A request body must arrive whole within this, counted from the end of its head.
    pub body_read_timeout_ms: u64,
    /// A keep-alive connection with no request for this long is closed.
    pub idle_timeout_ms: u64,
    /// Connections open at once; one more is answered 429 and closed.
    pub max_connections: usize,
    /// Header lines of one request (more: 431 from hyper).
    pub max_headers: usize,
    /// Bytes of one request head (more: 431 from hyper); at least 8,192.
    pub max_header_bytes: usize,
    /// After SIGTERM or Ctrl-C, calls in flight may finish for this long.
    pub shutdown_grace_ms: u64,
    /// A body over the size limit is read and thrown away up to this many bytes beyond
    /// the limit before the 413 answer, so a client that writes its whole body first
    /// reads the envelope; a larger body is answered at once and the connection closed.
    pub over_limit_drain_bytes: usize,
    /// Serving threads of `tool-broker serve`, each owning the connections it accepts
    /// and its upstream pool; 0 means one per CPU the process may use.
    pub workers: usize,
    /// Who reads HTTP/1.1 call requests: `own` (the broker's own HTTP/1.1 server,
    /// `serve::http1` (broker-surfaces), handing anything else to hyper) or `hyper` (hyper's
    /// server for everything).
    pub http1_server: Http1Server,
}

/// The `[tls]` table: the broker serves HTTPS itself (deployments without an ingress;
/// behind a proxy or an ingress, plain HTTP stays the default). Both files are PEM,
/// read at start and again on `SIGHUP` (`serve::tls`, broker-surfaces); a relative path is
/// relative to the working directory, as `[policy] dir` is.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct TlsFiles {
    /// The certificate chain: the leaf first, then its intermediates.
    pub cert_file: std::path::PathBuf,
    /// The leaf's private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: std::path::PathBuf,
}

/// The `[server]` `http1_server` setting.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Http1Server {
    /// The broker's own HTTP/1.1 server for the call endpoints; the rest goes to hyper.
    #[default]
    Own,
    /// hyper's server for every request.
    Hyper,
}

/// hyper's own limit on a request's header lines, and the default of `max_headers`:
/// left to hyper when it is this (hyper then parses into an uninitialised array on the
/// stack; any other limit costs a filled heap array per parse, ~1.7k instructions per
/// call, 2026-11-24).
pub const HYPER_MAX_HEADERS: usize = 100;

impl Default for ServerBounds {
    fn default() -> Self {
        Self {
            header_read_timeout_ms: 10_000,
            body_read_timeout_ms: 30_000,
            idle_timeout_ms: 60_000,
            max_connections: 4_096,
            max_headers: HYPER_MAX_HEADERS,
            max_header_bytes: 64 * 1024,
            shutdown_grace_ms: 20_000,
            over_limit_drain_bytes: 4 * 1024 * 1024,
            workers: 0,
            http1_server: Http1Server::Own,
        }
    }
}

impl ServerBounds {
    /// Checks the values; the error names the setting, what it accepts and its default.
    pub fn validate(&self) -> Result<(), String> {
        let d = Self::default();
        let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        // (name, value, lowest, highest, default)
        let ranges = [
            (
                "header_read_timeout_ms",
                self.header_read_timeout_ms,
                1,
                u64::MAX,
                d.header_read_timeout_ms,
            ),
            (
                "body_read_timeout_ms",
                self.body_read_timeout_ms,
                1,
                u64::MAX,
                d.body_read_timeout_ms,
            ),
            (
                "idle_timeout_ms",
                self.idle_timeout_ms,
                1,
                u64::MAX,
                d.idle_timeout_ms,
            ),
            (
                "shutdown_grace_ms",
                self.shutdown_grace_ms,
                1,
                u64::MAX,
                d.shutdown_grace_ms,
            ),
            (
                "max_connections",
                as_u64(self.max_connections),
                1,
                1_000_000,
                as_u64(d.max_connections),
            ),
            (
                "max_headers",
                as_u64(self.max_headers),
                1,
                u64::MAX,
                as_u64(d.max_headers),
            ),
            ("workers", as_u64(self.workers), 0, 1024, as_u64(d.workers)),
            // hyper's smallest read buffer.
            (
                "max_header_bytes",
                as_u64(self.max_header_bytes),
                8192,
                u64::MAX,
                as_u64(d.max_header_bytes),
            ),
        ];
        for (name, value, lowest, highest, default) in ranges {
            if value < lowest || value > highest {
                let bound = if value < lowest {
                    format!("at least {lowest}")
                } else {
                    format!("at most {highest}")
                };
                return Err(format!(
                    "[server] {name} is {value}: it must be {bound} (its default is {default})"
                ));
            }
        }
        Ok(())
    }

    /// The head read timeout (also a TLS handshake's bound).
    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_millis(self.header_read_timeout_ms)
    }

    /// The body read timeout.
    pub fn body_read_timeout(&self) -> Duration {
        Duration::from_millis(self.body_read_timeout_ms)
    }

    /// The serving threads in effect: `workers`, or one per CPU the process may use.
    pub fn worker_threads(&self) -> usize {
        if self.workers > 0 {
            return self.workers;
        }
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    }

    /// The shutdown grace period.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }
}
