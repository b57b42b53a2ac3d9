//! Shared test harness: a broker on an ephemeral loopback port, a client that checks
//! every envelope against the committed JSON Schemas, and captured logs.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};
use tool_broker::call::Broker;
use tool_broker::catalog::Catalog;
use tool_broker::catalog::compile::compile;
use tool_broker::catalog::source::Sources;
use tool_broker::config::ConfigFile;
use tool_broker::served::Served;
use tool_broker::store::{Store, StoreConfig};

pub mod approval;
pub mod bounds;
pub mod console;
pub mod failures;
pub mod generate;
pub mod hub;
pub mod idp;
pub mod poll;
pub mod provider;
pub mod source;
pub mod store;

/// The bearer token every test broker accepts.
pub const API_KEY: &str = "tb_test_bearer_0123456789";

/// The project root (the folder holding `catalog/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// This test's log lines: what was logged on the test's own thread and on the serving
/// threads of the brokers it started (they log through the dispatcher of the thread that
/// started them), from its first [`TestBroker::start`] or [`capture`] on. A line of
/// another test running beside it is never here, so a test that looks for a line finds
/// its own.
pub fn logs() -> String {
    let buffer = capture();
    let guard = buffer.lock().unwrap();
    String::from_utf8_lossy(&guard).into_owned()
}

/// Every line any test of this binary logged, on any thread: for the sweeps that hold a
/// secret out of every log line, whoever wrote it.
pub fn all_logs() -> String {
    let guard = all_lines().lock().unwrap();
    String::from_utf8_lossy(&guard).into_owned()
}

/// Starts capturing this test's log lines (once per test thread; [`TestBroker::start`]
/// calls it) and returns its buffer.
pub fn capture() -> Arc<Mutex<Vec<u8>>> {
    thread_local! {
        static CAPTURED: std::cell::RefCell<Option<Captured>> = const { std::cell::RefCell::new(None) };
    }
    let test = std::thread::current()
        .name()
        .unwrap_or_default()
        .to_string();
    CAPTURED.with(|captured| {
        let mut captured = captured.borrow_mut();
        if let Some(this) = captured.as_ref()
            && this.test == test
        {
            return this.buffer.clone();
        }
        // Lines of threads that capture nothing still reach the binary's buffer.
        let _ = all_lines();
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let guard = tracing::subscriber::set_default(subscriber(LogWriter {
            test: Some(buffer.clone()),
        }));
        *captured = Some(Captured {
            test,
            buffer: buffer.clone(),
            _guard: guard,
        });
        buffer
    })
}

/// What a test thread captures: the test it runs (libtest names a test's thread after
/// it), its buffer, and the guard that keeps its subscriber the thread's default.
struct Captured {
    test: String,
    buffer: Arc<Mutex<Vec<u8>>>,
    _guard: tracing::subscriber::DefaultGuard,
}

/// Every line of the binary, and the fallback subscriber of threads that capture none.
fn all_lines() -> &'static Mutex<Vec<u8>> {
    static ALL: OnceLock<Mutex<Vec<u8>>> = OnceLock::new();
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = tracing::subscriber::set_global_default(subscriber(LogWriter { test: None }));
    });
    ALL.get_or_init(|| Mutex::new(Vec::new()))
}

/// A plain-text subscriber at every level into `writer`.
fn subscriber(writer: LogWriter) -> impl tracing::Subscriber + Send + Sync {
    tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .finish()
}

/// Writes a line into the binary's buffer and, for a capturing test, into its own.
#[derive(Clone)]
struct LogWriter {
    test: Option<Arc<Mutex<Vec<u8>>>>,
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(test) = &self.test {
            test.lock().unwrap().extend_from_slice(buf);
        }
        all_lines().lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The embedded catalog root with some files replaced or added.
pub fn sources_with(overlay: &[(&str, &str)]) -> Sources {
    let mut sources = Sources::embedded();
    for (path, text) in overlay {
        sources
            .files
            .insert((*path).to_string(), (*text).to_string());
    }
    sources
}

/// Compiles sources or fails the test with the diagnostics.
pub fn compiled(sources: &Sources) -> Catalog {
    compile(sources).unwrap_or_else(|d| panic!("catalog does not compile:\n{d}"))
}

/// The embedded catalog, compiled once for the whole test binary.
pub fn embedded_catalog() -> Arc<Catalog> {
    static CATALOG: OnceLock<Arc<Catalog>> = OnceLock::new();
    CATALOG
        .get_or_init(|| Arc::new(compiled(&Sources::embedded())))
        .clone()
}

/// A broker serving on 127.0.0.1 for one test.
pub struct TestBroker {
    /// `http://127.0.0.1:port` (`https://` under a `[tls]` config).
    pub url: String,
    /// The broker itself, for direct inspection.
    pub broker: Arc<Broker>,
    /// The broker with the endpoints' state, as the servers hold it.
    pub served: Arc<Served>,
    /// The TLS pair of a `[tls]` config, as `serve` holds it (a test reloads it).
    pub tls: Option<Arc<tool_broker::serve::tls::Tls>>,
    /// The client its calls go through (a test streams an answer with it).
    pub client: reqwest::Client,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    serving: Option<tokio::task::JoinHandle<()>>,
}

/// How to build a test broker.
#[derive(Default)]
pub struct Setup {
    /// Upstream base URL per service id.
    pub upstreams: BTreeMap<String, String>,
    /// Extra config file text (TOML), merged before upstreams.
    pub config: Option<String>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// Catalog sources; embedded when `None`.
    pub sources: Option<Sources>,
    /// A pinned clock.
    pub clock: Option<fn() -> jiff::Timestamp>,
    /// Listen address; `127.0.0.1:0` when `None`.
    pub listen: Option<&'static str>,
    /// The store; a fresh in-memory SQLite store when `None`.
    pub store: Option<Store>,
    /// Serve with this many worker threads, as `tool-broker serve` does
    /// (`server::serve_workers`); one when `None`, so every call runs where a served
    /// call runs: on a worker thread, over the upstream connections it holds.
    pub workers: Option<usize>,
    /// Serve on the test's runtime instead (`server::serve`, the embedders' layout).
    pub on_test_runtime: bool,
    /// Keep the config's text as `serve` does for a file it read (`broker.toml`): what
    /// the console shows as written.
    pub config_as_file: bool,
}

impl Setup {
    /// Every service of the embedded catalog pointed at one upstream.
    pub fn all_upstreams(url: &str) -> Self {
        let mut setup = Self::default();
        for id in embedded_catalog().services.keys() {
            setup.upstreams.insert(id.clone(), url.to_string());
        }
        setup
    }
}

impl TestBroker {
    /// Starts a broker.
    pub async fn start(setup: Setup) -> Self {
        let _ = capture();
        let catalog = match &setup.sources {
            Some(sources) => Arc::new(compiled(sources)),
            None => embedded_catalog(),
        };
        let listener = tokio::net::TcpListener::bind(setup.listen.unwrap_or("127.0.0.1:0"))
            .await
            .unwrap();
        // Clients always reach the broker on loopback, whatever it listens on.
        let port = listener.local_addr().unwrap().port();
        let scheme = match &setup.config {
            Some(text) if text.contains("[tls]") => "https",
            _ => "http",
        };
        let url = format!("{scheme}://127.0.0.1:{port}");
        // `{broker_url}` in the config is the address the broker was given.
        let mut config: ConfigFile = match &setup.config {
            Some(text) => toml::from_str(&text.replace("{broker_url}", &url)).unwrap(),
            None => ConfigFile::default(),
        };
        if setup.config_as_file
            && let Some(text) = &setup.config
        {
            config.file = Some(("broker.toml".into(), text.replace("{broker_url}", &url)));
        }
        for (id, url) in setup.upstreams {
            if catalog.services.contains_key(&id) {
                config.upstreams.insert(id, url);
            }
        }
        let tls = config
            .tls
            .as_ref()
            .map(|files| Arc::new(tool_broker::serve::tls::Tls::load(files).unwrap()));
        let mut env = setup.env;
        env.insert("TOOL_BROKER_API_KEY".into(), API_KEY.into());
        let lookup = move |name: &str| env.get(name).cloned();
        let store = match setup.store {
            Some(store) => store,
            None => Store::open(&StoreConfig::Memory).await.unwrap(),
        };
        let mut broker = Broker::new(catalog, &config, &lookup, store).unwrap();
        if let Some(clock) = setup.clock {
            broker = broker.with_clock(clock);
        }
        let broker = Arc::new(broker);
        let served = Arc::new(Served::new(broker.clone(), &config, &lookup).unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let serving = served.clone();
        let shutdown = async {
            let _ = rx.await;
        };
        let workers = setup.workers.unwrap_or(1);
        let serving_task = if setup.on_test_runtime {
            let tls = tls.clone();
            tokio::spawn(async move {
                let _ =
                    tool_broker::serve::server::serve_tls(serving, listener, tls, shutdown).await;
            })
        } else {
            let tls = tls.clone();
            tokio::spawn(async move {
                let _ = tool_broker::serve::server::serve_workers(
                    serving, listener, workers, tls, shutdown,
                )
                .await;
            })
        };
        Self {
            url,
            broker,
            served,
            tls,
            client: reqwest::Client::new(),
            shutdown: Some(tx),
            serving: Some(serving_task),
        }
    }

    /// Starts the shutdown `serve` does on SIGTERM; [`TestBroker::stopped`] waits for it.
    pub fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    /// Waits until `serve` has returned (after [`TestBroker::stop`]).
    pub async fn stopped(&mut self) {
        if let Some(serving) = self.serving.take() {
            serving.await.unwrap();
        }
    }

    /// Posts raw bytes to `/` with the test bearer and extra headers.
    pub async fn post_raw(&self, body: Vec<u8>, headers: &[(&str, &str)]) -> (u16, Value) {
        self.post_as(API_KEY, body, headers).await
    }

    /// Posts raw bytes to `/` with a given bearer token.
    pub async fn post_as(
        &self,
        bearer: &str,
        body: Vec<u8>,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let mut req = self
            .client
            .post(format!("{}/", self.url))
            .header("authorization", format!("Bearer {bearer}"))
            .header("content-type", "application/json")
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let response = req.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body: Value =
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("response is not JSON: {text}"));
        check_envelope(&body);
        (status, body)
    }

    /// Sends any request to any path: `(status, response headers, body text)`.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> (u16, reqwest::header::HeaderMap, String) {
        self.send_with(&self.client, method, path, body, headers)
            .await
    }

    /// [`TestBroker::send`] through another client (one that does not follow redirects).
    pub async fn send_with(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> (u16, reqwest::header::HeaderMap, String) {
        let mut req = client.request(method, format!("{}{path}", self.url));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(body) = body {
            req = req.body(body);
        }
        let response = req.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    }

    /// Calls a tool; returns status and envelope (already schema-checked).
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        self.call_as(API_KEY, name, arguments, headers).await
    }

    /// Calls a tool with a given bearer token.
    pub async fn call_as(
        &self,
        bearer: &str,
        name: &str,
        arguments: Value,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let body = json!({
            "jsonrpc": "2.0",
            "id": "t-1",
            "method": "tools/call",
            "params": { "name": name, "arguments": arguments },
        });
        self.post_as(bearer, body.to_string().into_bytes(), headers)
            .await
    }
}

fn schema(name: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("schemas").join(name)).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// Validates a body against the standard or portal envelope schema.
pub fn check_envelope(body: &Value) {
    static STANDARD: OnceLock<jsonschema::Validator> = OnceLock::new();
    static PORTAL: OnceLock<jsonschema::Validator> = OnceLock::new();
    let (name, validator) = if body.get("serviceId").is_some() {
        (
            "portal",
            PORTAL.get_or_init(|| schema("envelope-portal.schema.json")),
        )
    } else {
        (
            "standard",
            STANDARD.get_or_init(|| schema("envelope-standard.schema.json")),
        )
    };
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{name} envelope does not match its schema: {errors:#?}\n{body:#}"
    );
}

/// The classification of a failure envelope ("" on success).
pub fn classification(body: &Value) -> &str {
    body["error"]["classification"].as_str().unwrap_or_default()
}

/// `http://127.0.0.1:<port>` where nothing listens.
pub fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// A scratch copy of the project's catalog root (`catalog/`, `rules/`, `templates/`).
pub fn scratch_root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for name in ["catalog", "rules", "templates"] {
        copy_tree(&root().join(name), &dir.path().join(name));
    }
    let path = dir.path().to_path_buf();
    (dir, path)
}

/// The error a deployment config is refused with, by the broker or by the endpoints
/// (fails the test when both accept it).
pub async fn config_error(config: &str) -> String {
    let config: ConfigFile = toml::from_str(config).unwrap();
    let store = Store::open(&StoreConfig::Memory).await.unwrap();
    let broker = match Broker::new(embedded_catalog(), &config, &|_| None, store) {
        Ok(broker) => broker,
        Err(e) => return e,
    };
    match Served::new(Arc::new(broker), &config, &|_| None) {
        Ok(_) => panic!("the config was accepted"),
        Err(e) => e,
    }
}

/// Every file of a store folder (database, WAL, shared memory) as one text, to check
/// what reached the disk.
pub fn folder_text(dir: &Path) -> String {
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// How many POST requests an upstream mock received.
pub async fn posts(server: &wiremock::MockServer) -> usize {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .count()
}

/// A payments upstream that creates a customer (`POST /v1/customers`) and lists none.
pub async fn mount_customers(server: &wiremock::MockServer) {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, ResponseTemplate};
    Mock::given(method("POST"))
        .and(path("/v1/customers"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({ "id": "cus_1", "object": "customer" })),
        )
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v1/customers"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "data": [] })))
        .mount(server)
        .await;
}

/// A SQLite store in `dir` (replicas of one test share it by sharing the folder).
pub async fn sqlite_store(dir: &Path) -> Store {
    Store::open(&StoreConfig::Sqlite(dir.to_path_buf()))
        .await
        .unwrap()
}

/// The newest 50 write-audit records of a broker's store.
pub async fn audit(broker: &TestBroker) -> Vec<tool_broker::store::audit::AuditRecord> {
    broker
        .broker
        .parts
        .store
        .list_audit(&tool_broker::store::audit::AuditQuery {
            limit: 50,
            ..Default::default()
        })
        .await
        .unwrap()
}

/// Posts one MCP 2026-07-28 request to `/mcp` with its envelope (`_meta` with the
/// protocol version, `capabilities` and client info) and the headers that must match
/// it (`Mcp-Name: name`); `(status, JSON-RPC reply)`.
pub async fn mcp_modern(
    broker: &TestBroker,
    method: &str,
    mut params: Value,
    capabilities: Value,
    name: &str,
    extra: &[(&str, &str)],
) -> (u16, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "test", "version": "1" }
    });
    let body = json!({ "jsonrpc": "2.0", "id": 9, "method": method, "params": params });
    let bearer = format!("Bearer {API_KEY}");
    let mut headers = vec![
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("mcp-name", name),
    ];
    headers.extend_from_slice(extra);
    post_mcp(broker, &body, &headers).await
}

/// Posts one MCP `tools/call` (2025-11-25, no session) to `/mcp` with the test bearer
/// and extra headers; `(status, JSON-RPC reply)`.
pub async fn mcp_tools_call(
    broker: &TestBroker,
    params: Value,
    extra: &[(&str, &str)],
) -> (u16, Value) {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let bearer = format!("Bearer {API_KEY}");
    let mut headers = vec![
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    headers.extend_from_slice(extra);
    post_mcp(broker, &body, &headers).await
}

/// Posts one JSON-RPC body to `/mcp` with these headers; `(status, JSON-RPC reply)`.
async fn post_mcp(broker: &TestBroker, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let (status, _, text) = broker
        .send(
            reqwest::Method::POST,
            "/mcp",
            Some(body.to_string().into_bytes()),
            headers,
        )
        .await;
    (status, serde_json::from_str(&text).unwrap())
}

/// A test's lines are its own: two tests beside each other each read only what they (and
/// the threads they start with their dispatcher) logged; the binary's buffer holds both.
#[test]
fn each_test_reads_its_own_log_lines() {
    let run = |name: &'static str| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let _ = capture();
                tracing::warn!("line of {name}");
                let dispatch = tracing::dispatcher::get_default(Clone::clone);
                std::thread::spawn(move || {
                    let _logs = tracing::dispatcher::set_default(&dispatch);
                    tracing::warn!("worker line of {name}");
                })
                .join()
                .unwrap();
                logs()
            })
            .unwrap()
    };
    let (a, b) = (run("log-test-a"), run("log-test-b"));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    assert!(a.contains("line of log-test-a") && a.contains("worker line of log-test-a"));
    assert!(!a.contains("log-test-b"), "{a}");
    assert!(b.contains("worker line of log-test-b") && !b.contains("log-test-a"));
    let all = all_logs();
    assert!(all.contains("worker line of log-test-a") && all.contains("line of log-test-b"));
}
