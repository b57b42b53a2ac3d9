//! The own HTTP/1.1 server's request head reading against hyper's HTTP/1.1 server: a head the
//! own server takes must be one hyper's server takes too, and hyper must see the same request
//! in it (method, target, every header line in order, the body's length, whether the
//! connection closes). A head the own server leaves to hyper is hyper's by construction.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Empty;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt;

use super::{Verdict, block_on};
use crate::serve::http1::{HEADERS, Limits, Parsed, parse};

/// What hyper's server saw of a request: method, target, header lines.
type Seen = (String, String, Vec<(String, Vec<u8>)>);

/// What hyper's server makes of `head` (then the connection's end): the request its
/// service was called with, or `None` when it refused the head.
fn hyper_sees(head: &[u8]) -> Option<Seen> {
    block_on(async {
        let (mut client, server) = tokio::io::duplex(256 * 1024);
        let (tx, rx) = std::sync::mpsc::channel::<Seen>();
        let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let headers = req
                .headers()
                .iter()
                .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
                .collect();
            let _ = tx.send((req.method().to_string(), req.uri().to_string(), headers));
            async { Ok::<_, Infallible>(hyper::Response::new(Empty::<Bytes>::new())) }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(server), service);
        let _ = client.write_all(head).await;
        let _ = client.shutdown().await;
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), conn).await;
        drop(client);
        rx.try_recv().ok()
    })
    .flatten()
}

/// A request head (and whatever follows): when the own server takes it, hyper's server takes
/// it and sees the same request.
pub fn head(bytes: &[u8]) -> Verdict {
    let limits = Limits {
        lines: HEADERS,
        bytes: 64 * 1024,
    };
    let mut lines = Vec::new();
    let Parsed::Ours(head) = parse(bytes, limits, &mut lines) else {
        return Ok(());
    };
    let raw = bytes.get(..head.len).unwrap_or_default();
    let Some((method, target, headers)) = hyper_sees(raw) else {
        return Err(format!(
            "the own server took a head hyper's server refuses: {:?}",
            String::from_utf8_lossy(raw)
        ));
    };
    let ours: Vec<(String, Vec<u8>)> = lines
        .iter()
        .map(|(name, start, end)| {
            (
                name.as_str().to_string(),
                bytes.get(*start..*end).unwrap_or_default().to_vec(),
            )
        })
        .collect();
    // hyper groups a name's lines together, in their order: compare name by name.
    let grouped = |list: &[(String, Vec<u8>)]| {
        let mut names: Vec<&String> = list.iter().map(|(n, _)| n).collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|n| {
                let values: Vec<&Vec<u8>> = list
                    .iter()
                    .filter(|(m, _)| m == n)
                    .map(|(_, v)| v)
                    .collect();
                (n.clone(), values.into_iter().cloned().collect::<Vec<_>>())
            })
            .collect::<Vec<_>>()
    };
    if method != "POST" {
        return Err(format!("the own server took a {method} request as a POST"));
    }
    let own_target = match head.endpoint {
        crate::call::Endpoint::Rest => head.path.to_string(),
        _ => target.clone(),
    };
    if target != own_target || crate::call::Endpoint::of(&target) != Some(head.endpoint) {
        return Err(format!(
            "the own server read the target {:?} ({:?}), hyper {target:?}",
            head.path, head.endpoint
        ));
    }
    if grouped(&ours) != grouped(&headers) {
        return Err(format!(
            "the own server read the headers {ours:?}, hyper {headers:?}"
        ));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| std::str::from_utf8(v).ok())
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    if length != head.body {
        return Err(format!(
            "the own server read a body of {} bytes, hyper {length}",
            head.body
        ));
    }
    let close = headers.iter().any(|(n, v)| {
        n == "connection"
            && v.split(|b| *b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"))
    });
    if close != head.close {
        return Err(format!(
            "the own server read close = {}, hyper {close}",
            head.close
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::head;

    /// Heads agents send, and heads probing the edges.
    const SEEDS: &[&[u8]] = &[
        b"POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 2\r\n\r\n{}",
        b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        b"POST /mcp/crm/get_contact HTTP/1.1\r\nhost: a\r\nx-a: 1\r\nx-a: 2\r\n\r\n",
        b"POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 007\r\n\r\n",
        b"POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nhost: a\r\nx: a\r\n b\r\n\r\n",
        b"POST /mcp/a/b%00 HTTP/1.1\r\nhost: a\r\n\r\n",
        b"POST /mcp/a/b{} HTTP/1.1\r\nhost: a\r\n\r\n",
        b"POST / HTTP/1.1\r\nhost: a\r\nconnection: keep-alive, close\r\n\r\n",
        b"POST / HTTP/1.1\nhost: a\n\n",
        // Found by the fuzzer (2026-11-26): hyper drops a fragment, the own server kept it.
        b"POST /mcp/crm/get_#ontact HTTP/1.1\r\nhost: a\r\n\r\n",
        b"POST /mcp/crm/get_contact#x HTTP/1.1\r\nhost: a\r\n\r\n",
    ];

    /// The reference itself: hyper's server sees a plain head, and refuses a broken one.
    #[test]
    fn the_reference_sees_and_refuses() {
        let (method, target, headers) = super::hyper_sees(SEEDS[2]).expect("seen");
        assert_eq!(
            (method.as_str(), target.as_str()),
            ("POST", "/mcp/crm/get_contact")
        );
        assert_eq!(headers.len(), 3);
        assert_eq!(
            super::hyper_sees(b"POST / HTTP/1.1\r\nbad header\r\n\r\n"),
            None
        );
    }

    /// The fuzzer's finding: a target the own server does not read (a fragment, a space-less
    /// oddity, a byte outside ASCII) is hyper's.
    #[test]
    fn a_target_outside_the_path_characters_is_left_to_hyper() {
        use crate::serve::http1::{HEADERS, Limits, Parsed, parse};
        for target in [
            "/mcp/crm/get_#ontact",
            "/mcp/a/b{c}",
            "/mcp/a/\u{e9}",
            "/mcp/a/b|",
        ] {
            let head = format!("POST {target} HTTP/1.1\r\nhost: a\r\n\r\n");
            let limits = Limits {
                lines: HEADERS,
                bytes: 1024,
            };
            let parsed = parse(head.as_bytes(), limits, &mut Vec::new());
            assert!(matches!(parsed, Parsed::Hyper(_)), "{target}: {parsed:?}");
        }
    }

    #[test]
    fn seeds_are_read_as_hyper_reads_them() {
        for seed in SEEDS {
            assert_eq!(head(seed), Ok(()), "{:?}", String::from_utf8_lossy(seed));
        }
    }

    fn line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just("host: a".to_string()),
            Just("content-length: 2".to_string()),
            Just("Content-Length:  12 ".to_string()),
            Just("connection: close".to_string()),
            Just("connection: keep-alive".to_string()),
            Just("transfer-encoding: chunked".to_string()),
            "[a-zA-Z!#$%&'*+.^_`|~0-9-]{1,8}:[ \t]?[ -~\t\u{80}-\u{ff}]{0,12}",
            "[ -~\t]{0,16}",
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        #[test]
        fn heads_are_read_as_hyper_reads_them(
            method in proptest::sample::select(vec!["POST", "GET", "post", "POST "]),
            target in proptest::sample::select(vec!["/", "/mcp", "/mcp/a/b", "/mcp/a/b?x", "/mcp/%41/b", "/mcp/a/é", "/mcp//", "*"]),
            version in proptest::sample::select(vec!["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "http/1.1"]),
            lines in proptest::collection::vec(line(), 0..6),
            end in proptest::sample::select(vec!["\r\n", "\n"]),
        ) {
            let mut text = format!("{method} {target} {version}{end}");
            for l in &lines {
                text.push_str(l);
                text.push_str(end);
            }
            text.push_str(end);
            proptest::prop_assert_eq!(head(text.as_bytes()), Ok(()), "{:?}", text);
        }
    }
}
