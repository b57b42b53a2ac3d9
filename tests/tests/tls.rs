//! HTTPS served by the broker itself (`[tls]`): calls over HTTP/1.1 (the broker's own
//! server) and HTTP/2 (ALPN), a reload that new connections see while an open one keeps
//! its pair, a reload of a bad pair that changes nothing, a handshake that never comes,
//! and the start's errors for bad files. Certificates: tests/fixtures/tls (README).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use tool_broker::config::server::TlsFiles;
use tool_broker::serve::tls::Tls;

use crate::support::{API_KEY, Setup, TestBroker};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/tls")
        .join(name)
}

/// A client trusting only the test CA `ca` (`a` or `b`).
fn client(ca: &str, http1_only: bool) -> reqwest::Client {
    let pem = std::fs::read(fixture(&format!("ca-{ca}.crt"))).unwrap();
    let mut builder = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()])
        .timeout(Duration::from_secs(30));
    if http1_only {
        builder = builder.http1_only();
    }
    builder.build().unwrap()
}

/// A broker serving the pair copied into a folder of the test's (`cert`, `key`: the
/// files a reload reads again), with `extra` config.
async fn broker_with_pair(folder: &std::path::Path, pair: &str, extra: &str) -> TestBroker {
    install(folder, pair);
    let config = format!(
        "{extra}\n[tls]\ncert_file = \"{}\"\nkey_file = \"{}\"\n",
        folder.join("tls.crt").display(),
        folder.join("tls.key").display()
    );
    TestBroker::start(Setup {
        config: Some(config),
        ..Setup::default()
    })
    .await
}

/// Puts the fixture pair `pair` where the broker reads it.
fn install(folder: &std::path::Path, pair: &str) {
    std::fs::copy(
        fixture(&format!("server-{pair}.crt")),
        folder.join("tls.crt"),
    )
    .unwrap();
    std::fs::copy(
        fixture(&format!("server-{pair}.key")),
        folder.join("tls.key"),
    )
    .unwrap();
}

/// `portal.check_connection` over `client`: the HTTP version and the envelope, or the
/// client's error.
async fn check(
    client: &reqwest::Client,
    url: &str,
) -> Result<(reqwest::Version, Value), reqwest::Error> {
    let answer = client
        .post(format!("{url}/"))
        .bearer_auth(API_KEY)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "portal.check_connection"}}))
        .send()
        .await?;
    let version = answer.version();
    Ok((version, answer.json().await?))
}

#[tokio::test]
async fn calls_are_answered_over_https_on_http1_and_http2() {
    let folder = tempfile::tempdir().unwrap();
    let broker = broker_with_pair(folder.path(), "a", "").await;
    assert!(broker.url.starts_with("https://"));
    for (http1_only, expected) in [
        (true, reqwest::Version::HTTP_11),
        (false, reqwest::Version::HTTP_2),
    ] {
        let (version, envelope) = check(&client("a", http1_only), &broker.url).await.unwrap();
        assert_eq!(version, expected);
        assert_eq!(envelope["data"]["authenticated"], true, "{envelope}");
    }
    // The health endpoints (hyper's server) answer over TLS too.
    let ready = client("a", true)
        .get(format!("{}/readyz", broker.url))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    // Plain HTTP to the TLS port gets no HTTP answer.
    let plain = reqwest::Client::new()
        .get(format!(
            "{}/healthz",
            broker.url.replace("https://", "http://")
        ))
        .timeout(Duration::from_secs(10))
        .send()
        .await;
    assert!(plain.is_err(), "plain HTTP was answered: {plain:?}");
}

#[tokio::test]
async fn a_reload_serves_new_connections_the_new_pair_and_open_ones_keep_theirs() {
    let folder = tempfile::tempdir().unwrap();
    let broker = broker_with_pair(folder.path(), "a", "").await;
    let tls = broker.tls.clone().unwrap();
    // A keep-alive connection made under pair a.
    let kept = client("a", true);
    check(&kept, &broker.url).await.unwrap();

    install(folder.path(), "b");
    tls.reload().unwrap();
    // New connections get pair b: a client trusting only a cannot connect any more...
    assert!(check(&client("a", true), &broker.url).await.is_err());
    let (_, envelope) = check(&client("b", false), &broker.url).await.unwrap();
    assert_eq!(envelope["data"]["authenticated"], true);
    // ...while the open connection, which no client trusting only a could make now,
    // still answers.
    let (_, envelope) = check(&kept, &broker.url).await.unwrap();
    assert_eq!(envelope["data"]["authenticated"], true);

    // A reload of a bad pair (b's certificate, a's key) is refused and b stays.
    std::fs::copy(fixture("server-a.key"), folder.path().join("tls.key")).unwrap();
    let refused = tls.reload().unwrap_err();
    assert!(refused.contains("do not make a pair"), "{refused}");
    check(&client("b", true), &broker.url).await.unwrap();
}

#[tokio::test]
async fn a_handshake_that_never_comes_is_closed_at_the_head_read_timeout() {
    use tokio::io::AsyncReadExt;
    let folder = tempfile::tempdir().unwrap();
    let broker =
        broker_with_pair(folder.path(), "a", "[server]\nheader_read_timeout_ms = 200").await;
    let address = broker.url.trim_start_matches("https://").to_string();
    let mut silent = tokio::net::TcpStream::connect(&address).await.unwrap();
    let mut byte = [0u8; 1];
    // Bounded so a broker that never closes fails the test instead of hanging it.
    let read = tokio::time::timeout(Duration::from_secs(20), silent.read(&mut byte)).await;
    assert!(
        matches!(read, Ok(Ok(0) | Err(_))),
        "the silent connection was not closed: {read:?}"
    );
    // The broker still serves.
    check(&client("a", true), &broker.url).await.unwrap();
}

#[test]
fn bad_files_stop_the_start_saying_which_file_and_why() {
    let folder = tempfile::tempdir().unwrap();
    let files = |cert: PathBuf, key: PathBuf| TlsFiles {
        cert_file: cert,
        key_file: key,
    };
    let not_pem = folder.path().join("not.pem");
    std::fs::write(&not_pem, "not a certificate\n").unwrap();
    let key_text = std::fs::read_to_string(fixture("server-a.key")).unwrap();
    let cases = [
        (
            files(folder.path().join("missing.crt"), fixture("server-a.key")),
            "cert_file",
            "cannot be read",
        ),
        (
            files(not_pem.clone(), fixture("server-a.key")),
            "cert_file",
            "holds no `BEGIN CERTIFICATE` block",
        ),
        (
            files(fixture("server-a.crt"), folder.path().join("missing.key")),
            "key_file",
            "cannot be read",
        ),
        (
            files(fixture("server-a.crt"), not_pem),
            "key_file",
            "holds no private key",
        ),
        (
            files(fixture("server-a.crt"), fixture("server-b.key")),
            "server-b.key",
            "do not make a pair",
        ),
    ];
    for (files, names, says) in cases {
        let error = Tls::load(&files).unwrap_err();
        assert!(error.starts_with("[tls]"), "{error}");
        assert!(error.contains(names) && error.contains(says), "{error}");
        // Nothing of a key's text is ever in the message.
        for line in key_text.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!error.contains(line), "{error}");
        }
    }
    Tls::load(&files(fixture("server-a.crt"), fixture("server-a.key"))).unwrap();
}

#[test]
fn the_tls_table_is_strict() {
    let refused = toml::from_str::<tool_broker::config::ConfigFile>(
        "[tls]\ncert_file = \"a\"\nkey_file = \"b\"\nkey_password = \"c\"\n",
    )
    .unwrap_err();
    assert!(refused.to_string().contains("key_password"), "{refused}");
    let missing = toml::from_str::<tool_broker::config::ConfigFile>("[tls]\ncert_file = \"a\"\n")
        .unwrap_err();
    assert!(missing.to_string().contains("key_file"), "{missing}");
}

/// The config reference (docs/behaviour.md, "Deployment config") and the TLS example of
/// docs/deployment.md are config files the broker reads: every table and field they
/// show exists, spelled as shown.
#[test]
fn the_documented_config_files_parse() {
    for (doc, heading) in [
        ("docs/behaviour.md", "## Deployment config"),
        ("docs/deployment.md", "## TLS"),
    ] {
        let text = std::fs::read_to_string(crate::support::root().join(doc)).unwrap();
        let section = text
            .split(heading)
            .nth(1)
            .unwrap_or_else(|| panic!("{doc}: no {heading}"));
        let block = section
            .split("```toml\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .unwrap_or_else(|| panic!("{doc}: no toml block under {heading}"));
        if let Err(e) = toml::from_str::<tool_broker::config::ConfigFile>(block) {
            panic!("{doc}, {heading}: {e}");
        }
    }
}

/// A large answer (a page of `tools/list` under `toolset = "all"`) over TLS on the own
/// HTTP/1.1 server arrives whole.
#[tokio::test]
async fn a_large_answer_over_https_arrives_whole() {
    let folder = tempfile::tempdir().unwrap();
    let broker = broker_with_pair(folder.path(), "a", "toolset = \"all\"").await;
    let answer = client("a", true)
        .post(format!("{}/mcp", broker.url))
        .bearer_auth(API_KEY)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.version(), reqwest::Version::HTTP_11);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(
        body["result"]["tools"].as_array().map(Vec::len),
        Some(100),
        "{body:.300}"
    );
}
