//! Held connections' answer reading against hyper's HTTP/1.1 client, on any answer an
//! upstream might send (then the connection's end): where the held reading takes an
//! answer, hyper's client takes it too, with the same status and body. An answer the
//! held reading refuses is an `upstream_unavailable` envelope, whatever hyper makes of it.

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Verdict, block_on};
use crate::upstream::http1::read_answer;

/// The largest body either side reads.
const MAX_BODY: usize = 64 * 1024;

/// What hyper's client reads of `answer` to a `GET`: status and body, or why not.
fn hyper_reads(answer: &[u8]) -> Option<Result<(u16, Bytes), String>> {
    block_on(async {
        let (client, mut server) = tokio::io::duplex(256 * 1024);
        let Ok((mut sender, conn)) =
            hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(client)).await
        else {
            return Err("no handshake".to_string());
        };
        let driven = tokio::spawn(conn);
        let request = hyper::Request::get("/")
            .header("host", "upstream")
            .body(Empty::new())
            .map_err(|e| e.to_string())?;
        // The answer goes once the request has come (hyper's client takes bytes on an
        // idle connection for a broken one).
        let answer = answer.to_vec();
        let upstream = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut chunk = [0u8; 1024];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match server.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => got.extend_from_slice(&chunk[..n]),
                }
            }
            let _ = server.write_all(&answer).await;
            let _ = server.shutdown().await;
            // Held open until the client is done: its end is the answer's end.
            let _ = server.read(&mut chunk).await;
        });
        let read = async {
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let body = Limited::new(response.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok((status, body))
        };
        let read = tokio::time::timeout(std::time::Duration::from_secs(2), read)
            .await
            .unwrap_or_else(|_| Err("hyper's client did not finish".to_string()));
        driven.abort();
        upstream.abort();
        read
    })
}

/// Any answer: what the held reading takes, hyper's client takes the same.
pub fn answer(bytes: &[u8]) -> Verdict {
    let ours = block_on(async {
        let mut stream = bytes;
        let mut buf = BytesMut::new();
        read_answer(&mut stream, &mut buf, false, MAX_BODY).await
    });
    let ours = match ours {
        None => return Err("no runtime for the held reading".into()),
        Some(Err(_)) => return Ok(()),
        Some(Ok((ours, _))) => ours,
    };
    match hyper_reads(bytes) {
        Some(Ok((status, body))) if status == ours.status && body == ours.body => Ok(()),
        Some(Ok((status, body))) => Err(format!(
            "held read {} with {} body bytes, hyper's client {status} with {}: {:?}",
            ours.status,
            ours.body.len(),
            body.len(),
            String::from_utf8_lossy(bytes)
        )),
        Some(Err(why)) => Err(format!(
            "held took an answer hyper's client refuses ({why}): {:?}",
            String::from_utf8_lossy(bytes)
        )),
        None => Err("no runtime for hyper's client".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::answer;

    /// Answers upstreams send, and answers probing the edges.
    const SEEDS: &[&[u8]] = &[
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        b"HTTP/1.1 404 Not Found\r\n\r\nnot found, to the end",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\ncontent-length: 5\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\ncontent-length: 3\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        b"HTTP/1.0 200 OK\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\ntrailer: x\r\n\r\n",
        b"HTTP/1.1 200 OK\ncontent-length: 1\n\nx",
    ];

    /// Three answers: one with `headers` header lines (its length one of them), one with
    /// `trailers` trailer lines, one with `extended` chunks of 1,000 extension bytes each.
    fn bounded(headers: usize, trailers: usize, extended: usize) -> [Vec<u8>; 3] {
        let chunked = |chunks: String| {
            format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{chunks}").into_bytes()
        };
        let line = "x: y\r\n";
        let extension = format!("1;{}\r\nx\r\n", "e".repeat(1000));
        [
            format!(
                "HTTP/1.1 200 OK\r\n{}content-length: 0\r\n\r\n",
                line.repeat(headers - 1)
            )
            .into_bytes(),
            chunked(format!("0\r\n{}\r\n", line.repeat(trailers))),
            chunked(format!("{}0\r\n\r\n", extension.repeat(extended))),
        ]
    }

    /// What the held reading makes of `answer` (bodies up to 1 KiB): taken or why not.
    fn held_reads(answer: &[u8]) -> Result<(), crate::upstream::http1::Failed> {
        super::block_on(async {
            let mut stream = answer;
            let mut buf = bytes::BytesMut::new();
            crate::upstream::http1::read_answer(&mut stream, &mut buf, false, 1024).await
        })
        .expect("runtime")
        .map(|_| ())
    }

    /// The reference itself: hyper's client reads a plain answer and refuses the
    /// findings (so an oracle that passed could not have passed by never asking).
    #[test]
    fn the_reference_reads_and_refuses() {
        let read = super::hyper_reads(SEEDS[0]).expect("runtime");
        assert_eq!(read, Ok((200, bytes::Bytes::from_static(b"{}"))));
        let chunked = |chunks: String| {
            format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{chunks}").into_bytes()
        };
        let findings: Vec<Vec<u8>> = vec![
            b"HTTP/1.1 200 OK\r\ncontent-length: +3\r\n\r\nabc".to_vec(),
            b"HTTP/1.0 404\r\ntransfer-encoding: identity\r\n\r\n".to_vec(),
            // Found by cargo fuzz (2026-11-26): a status under 100.
            b"HTTP/1.1 020 OK\r\ncontent-length: 2\r\n\r\n{}".to_vec(),
            // An empty chunk-size line.
            chunked("4;ext=2\r\nabc0\r\n\r\ntrailer: x\r\n\r\n".into()),
            // A trailer line without a colon.
            chunked("3;ext=1\r\nabc\r\n0\r\nK\r\nilre: x\r\n\r\n".into()),
            // Read off hyper's decoder (2026-11-26): a bare LF inside a chunk extension
            // (httparse takes it), more than 100 headers or trailer lines, more than
            // 16 KiB of chunk extensions over the body.
            chunked("3;a\nb\r\nabc\r\n0\r\n\r\n".into()),
        ];
        let findings = findings.into_iter().chain(bounded(101, 101, 17));
        for finding in findings {
            let finding = finding.as_slice();
            assert!(super::hyper_reads(finding).expect("runtime").is_err());
            // Found by the oracle, the fuzzer or reading hyper: held refuses them too.
            assert_eq!(
                held_reads(finding).err(),
                Some(crate::upstream::http1::Failed::Malformed)
            );
        }
    }

    /// Found by cargo fuzz (2026-11-26): a Transfer-Encoding value with obs-text ends
    /// in `chunked`; hyper's client reads it as not chunked (a value that is not visible
    /// ASCII) and the body to the connection's end, where held read the chunks. Held now
    /// refuses such a value.
    #[test]
    fn a_transfer_coding_outside_visible_ascii_is_refused() {
        let answer_bytes =
            b"HTTP/1.1 200\ntransfer-encoding: \xb2Fj,chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let read = super::hyper_reads(answer_bytes).expect("runtime");
        assert_eq!(
            read,
            Ok((200, bytes::Bytes::from_static(b"3\r\nabc\r\n0\r\n\r\n")))
        );
        assert_eq!(
            held_reads(answer_bytes).err(),
            Some(crate::upstream::http1::Failed::Malformed)
        );
        assert_eq!(answer(answer_bytes), Ok(()));
    }

    /// At held's bounds (100 headers, 100 trailer lines, 8 KiB of extensions) both read
    /// the answer, the same.
    #[test]
    fn answers_at_the_bounds_are_read_by_both() {
        for edge in bounded(100, 100, 8) {
            assert!(super::hyper_reads(&edge).expect("runtime").is_ok());
            assert!(held_reads(&edge).is_ok());
            assert_eq!(answer(&edge), Ok(()));
        }
    }

    #[test]
    fn seeds_are_read_as_hyper_reads_them() {
        for seed in SEEDS {
            assert_eq!(answer(seed), Ok(()), "{:?}", String::from_utf8_lossy(seed));
        }
    }

    fn line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just("content-length: 3".to_string()),
            Just("Content-Length: 0".to_string()),
            Just("content-length: +3".to_string()),
            Just("content-length: 3, 3".to_string()),
            Just("transfer-encoding: chunked".to_string()),
            Just("Transfer-Encoding: gzip, chunked".to_string()),
            Just("transfer-encoding: identity".to_string()),
            Just("connection: close".to_string()),
            "[a-zA-Z-]{1,8}:[ \t]?[ -~\t]{0,12}",
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        #[test]
        fn answers_are_read_as_hyper_reads_them(
            version in proptest::sample::select(vec!["HTTP/1.1", "HTTP/1.0", "HTTP/1.2", "http/1.1"]),
            status in proptest::sample::select(vec!["200 OK", "204 No Content", "304 Not Modified", "100 Continue", "101 Switching", "404", "999 x", "20 x"]),
            lines in proptest::collection::vec(line(), 0..5),
            end in proptest::sample::select(vec!["\r\n", "\n"]),
            body in proptest::sample::select(vec!["", "abc", "3\r\nabc\r\n0\r\n\r\n", "3\r\nab", "zz\r\n", "0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"]),
        ) {
            let mut text = format!("{version} {status}{end}");
            for l in &lines {
                text.push_str(l);
                text.push_str(end);
            }
            text.push_str(end);
            text.push_str(body);
            proptest::prop_assert_eq!(answer(text.as_bytes()), Ok(()), "{:?}", text);
        }
    }
}
