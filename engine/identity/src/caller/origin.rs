//! Browser origins and DNS rebinding: the MCP transport says a server MUST validate
//! `Origin`, and a broker on loopback must not answer a page that rebinds a public name
//! to 127.0.0.1. Checked on every request, before routing, so no tool runs for a
//! refused one.
//!
//! - `Host` (or the HTTP/2 authority), when the broker listens on a loopback address:
//!   its host must be `localhost`, `127.0.0.1`, `[::1]` or the host of an
//!   `allowed_origins` entry (any port). A request without one is a non-browser client.
//! - `Origin`, when present: allowed when it is on `allowed_origins`, or when it is the
//!   broker's own origin, meaning the same `host:port` as the request's `Host` (on
//!   loopback the Host rule has already pinned that to a loopback name). With
//!   `allowed_origins` configured on a non-loopback listener, only the list counts:
//!   list the broker's public origin there too. `Origin: null` (sandboxed frames,
//!   `file:` pages) is refused. Requests without `Origin` (every non-browser client)
//!   are unaffected.

use hyper::HeaderMap;

/// The broker's public base URL for links it hands out (approvals, the hub): the
/// deployment's `public_url`, else the host the request came to, over https when a
/// proxy says so (`X-Forwarded-Proto`), else http.
pub fn public_base(public_url: Option<&str>, headers: &HeaderMap) -> String {
    match public_url {
        Some(base) => base.trim_end_matches('/').to_string(),
        None => {
            let host = headers
                .get(hyper::header::HOST)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("localhost");
            let https = headers
                .get("x-forwarded-proto")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|p| p.eq_ignore_ascii_case("https"));
            format!("{}://{host}", if https { "https" } else { "http" })
        }
    }
}

/// The TCP peer of a request, put in its extensions by the server (what sign-in limits
/// count by, through [`client_address`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer(pub std::net::SocketAddr);

/// The address a request came from, for limits counted per client: the TCP peer, or,
/// when the peer is a proxy on this host or a private network (loopback, RFC 1918, IPv6
/// unique-local) and names one, the last address of `X-Forwarded-For` (the one that
/// proxy saw). A public peer's `X-Forwarded-For` is never read: anyone can write it.
pub fn client_address(peer: Option<Peer>, headers: &HeaderMap) -> String {
    let Some(Peer(peer)) = peer else {
        return "unknown".into();
    };
    let ip = peer.ip();
    let proxy = match ip {
        std::net::IpAddr::V4(v4) => v4.is_loopback() || v4.is_private(),
        std::net::IpAddr::V6(v6) => v6.is_loopback() || (v6.segments()[0] & 0xfe00) == 0xfc00,
    };
    if proxy
        && let Some(forwarded) = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter_map(|a| a.parse::<std::net::IpAddr>().ok())
            .next_back()
    {
        return forwarded.to_string();
    }
    ip.to_string()
}

/// The compiled `allowed_origins` setting.
#[derive(Debug, Clone, Default)]
pub struct OriginPolicy {
    /// Normalised origins: lowercase `scheme://host[:port]`, default ports dropped.
    allowed: Vec<String>,
    /// Hosts (without port) of the allowed origins.
    hosts: Vec<String>,
}

/// Why a request was refused (safe to show: it names only the header, never its value
/// beyond the origin the browser itself announced).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

const LOOPBACK_HOSTS: [&str; 4] = ["localhost", "127.0.0.1", "[::1]", "::1"];

/// Splits `host[:port]` into host and port (IPv6 literals keep their brackets).
fn split_authority(authority: &str) -> (&str, Option<&str>) {
    if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => {
                let (host, rest) = authority.split_at(end + 1);
                (host, rest.strip_prefix(':'))
            }
            None => (authority, None),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    }
}

/// `scheme://host[:port]` normalised, or `None` when the text is not an origin.
fn normalise(origin: &str) -> Option<String> {
    let origin = origin.trim().to_ascii_lowercase();
    let (scheme, rest) = origin.split_once("://")?;
    if !matches!(scheme, "http" | "https") || rest.is_empty() || rest.contains(['/', '?', '#', '@'])
    {
        return None;
    }
    let (host, port) = split_authority(rest);
    if host.is_empty()
        || port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let default = if scheme == "http" { "80" } else { "443" };
    Some(match port {
        Some(p) if p != default => format!("{scheme}://{host}:{p}"),
        _ => format!("{scheme}://{host}"),
    })
}

/// `host[:port]` of a request's Host, normalised against a scheme's default port.
fn same_origin(origin: &str, host_header: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let host_header = host_header.trim().to_ascii_lowercase();
    let (host, port) = split_authority(&host_header);
    let default = if scheme == "http" { "80" } else { "443" };
    let expected = match port {
        Some(p) if p != default => format!("{host}:{p}"),
        _ => host.to_string(),
    };
    authority == expected
}

impl OriginPolicy {
    /// Compiles `allowed_origins`; an entry that is not `http(s)://host[:port]` is an
    /// error naming it.
    pub fn new(allowed: &[String]) -> Result<Self, String> {
        let mut policy = Self::default();
        for entry in allowed {
            let origin = normalise(entry).ok_or_else(|| {
                format!(
                    "config `allowed_origins`: `{entry}` is not an origin; write `https://host` or `http://host:port` (no path)"
                )
            })?;
            if let Some((_, authority)) = origin.split_once("://") {
                policy.hosts.push(split_authority(authority).0.to_string());
            }
            policy.allowed.push(origin);
        }
        Ok(policy)
    }

    /// Checks one request. `loopback`: the broker listens on a loopback address.
    /// `authority`: the HTTP/2 `:authority` when there is no `Host` header.
    pub fn check(
        &self,
        headers: &HeaderMap,
        authority: Option<&str>,
        loopback: bool,
    ) -> Result<(), Refusal> {
        let host = headers
            .get(hyper::header::HOST)
            .and_then(|v| v.to_str().ok())
            .or(authority);
        // Every request passes here: compared without allocating.
        if loopback && let Some(host) = host {
            let name = split_authority(host.trim()).0;
            let known = |h: &str| h.eq_ignore_ascii_case(name);
            if !LOOPBACK_HOSTS.iter().any(|h| known(h)) && !self.hosts.iter().any(|h| known(h)) {
                return Err(Refusal(
                    "the Host header names a host this broker does not serve: it listens on loopback and answers localhost, 127.0.0.1 and [::1] (and the hosts of `allowed_origins`)".into(),
                ));
            }
        }
        let Some(origin) = headers.get(hyper::header::ORIGIN) else {
            return Ok(());
        };
        let refused = |shown: &str| {
            Err(Refusal(format!(
                "the Origin `{shown}` may not call this broker: add it to `allowed_origins` in the deployment config if browsers there should"
            )))
        };
        let Some(text) = origin.to_str().ok() else {
            return refused("(not text)");
        };
        let Some(origin) = normalise(text) else {
            return refused(if text.trim() == "null" {
                "null"
            } else {
                "(not an origin)"
            });
        };
        if self.allowed.contains(&origin) {
            return Ok(());
        }
        let own = (loopback || self.allowed.is_empty())
            && host.is_some_and(|host| same_origin(&origin, host));
        if own { Ok(()) } else { refused(&origin) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_use_the_public_url_else_the_host_and_the_proxys_scheme() {
        let mut h = HeaderMap::new();
        h.insert(hyper::header::HOST, "broker.local:8080".parse().unwrap());
        assert_eq!(
            public_base(Some("https://b.example.com/"), &h),
            "https://b.example.com"
        );
        assert_eq!(public_base(None, &h), "http://broker.local:8080");
        h.insert("x-forwarded-proto", "HTTPS".parse().unwrap());
        assert_eq!(public_base(None, &h), "https://broker.local:8080");
        assert_eq!(public_base(None, &HeaderMap::new()), "http://localhost");
    }

    #[test]
    fn the_client_address_is_the_peer_unless_a_private_proxy_names_one() {
        let headers = |xff: &str| {
            let mut h = HeaderMap::new();
            h.insert("x-forwarded-for", xff.parse().unwrap());
            h
        };
        let peer = |a: &str| Some(Peer(a.parse().unwrap()));
        let forged = headers("198.51.100.1, 203.0.113.9");
        assert_eq!(client_address(peer("192.0.2.7:5000"), &forged), "192.0.2.7");
        assert_eq!(
            client_address(peer("127.0.0.1:5000"), &forged),
            "203.0.113.9"
        );
        assert_eq!(
            client_address(peer("10.1.2.3:5000"), &forged),
            "203.0.113.9"
        );
        assert_eq!(
            client_address(peer("[fd00::1]:5000"), &forged),
            "203.0.113.9"
        );
        assert_eq!(
            client_address(peer("10.1.2.3:5000"), &headers("junk")),
            "10.1.2.3"
        );
        assert_eq!(
            client_address(peer("10.1.2.3:5000"), &HeaderMap::new()),
            "10.1.2.3"
        );
        assert_eq!(client_address(None, &HeaderMap::new()), "unknown");
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().unwrap());
        }
        map
    }

    #[test]
    fn origins_normalise() {
        for (given, expected) in [
            (
                "https://Console.Example.com",
                Some("https://console.example.com"),
            ),
            ("http://localhost:80", Some("http://localhost")),
            ("https://a.example:8443", Some("https://a.example:8443")),
            ("http://[::1]:8080", Some("http://[::1]:8080")),
            ("https://a.example/path", None),
            ("ftp://a.example", None),
            ("a.example", None),
            ("http://a.example:x", None),
            ("null", None),
        ] {
            assert_eq!(normalise(given).as_deref(), expected, "{given}");
        }
    }

    #[test]
    fn table() {
        let policy = OriginPolicy::new(&["https://console.example.com".into()]).unwrap();
        // (headers, the broker listens on loopback, allowed)
        type Case<'a> = (&'a [(&'static str, &'a str)], bool, bool);
        let cases: &[Case] = &[
            // no Origin, loopback Host
            (&[("host", "127.0.0.1:8080")], true, true),
            // no Host at all (HTTP/1.0 tools)
            (&[], true, true),
            // rebinding: a public name resolving to loopback
            (
                &[
                    ("host", "evil.example.com"),
                    ("origin", "http://evil.example.com"),
                ],
                true,
                false,
            ),
            (&[("host", "evil.example.com:8080")], true, false),
            // own origin on loopback
            (
                &[
                    ("host", "localhost:8080"),
                    ("origin", "http://localhost:8080"),
                ],
                true,
                true,
            ),
            (
                &[("host", "[::1]:8080"), ("origin", "http://[::1]:8080")],
                true,
                true,
            ),
            // another local port is another origin
            (
                &[
                    ("host", "localhost:8080"),
                    ("origin", "http://localhost:3000"),
                ],
                true,
                false,
            ),
            // the allow-list
            (
                &[
                    ("host", "127.0.0.1:8080"),
                    ("origin", "https://console.example.com"),
                ],
                true,
                true,
            ),
            (
                &[
                    ("host", "console.example.com"),
                    ("origin", "https://console.example.com"),
                ],
                true,
                true,
            ),
            (
                &[("host", "127.0.0.1:8080"), ("origin", "null")],
                true,
                false,
            ),
            // non-loopback: the list only, once there is one
            (
                &[
                    ("host", "broker.example.com"),
                    ("origin", "https://broker.example.com"),
                ],
                false,
                false,
            ),
            (
                &[
                    ("host", "broker.example.com"),
                    ("origin", "https://console.example.com"),
                ],
                false,
                true,
            ),
            (&[("host", "broker.example.com")], false, true),
        ];
        for (pairs, loopback, allowed) in cases {
            let verdict = policy.check(&headers(pairs), None, *loopback);
            assert_eq!(
                verdict.is_ok(),
                *allowed,
                "{pairs:?} loopback={loopback}: {verdict:?}"
            );
        }
        // Without a list, a non-loopback broker accepts its own origin by Host.
        let open = OriginPolicy::default();
        let own = headers(&[
            ("host", "broker.example.com"),
            ("origin", "https://broker.example.com"),
        ]);
        assert!(open.check(&own, None, false).is_ok());
        let other = headers(&[
            ("host", "broker.example.com"),
            ("origin", "https://evil.example"),
        ]);
        assert!(open.check(&other, None, false).is_err());
    }

    #[test]
    fn bad_entries_are_named() {
        let err = OriginPolicy::new(&["console.example.com".into()]).unwrap_err();
        assert!(
            err.contains("`console.example.com` is not an origin"),
            "{err}"
        );
    }
}
