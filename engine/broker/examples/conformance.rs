//! Conformance of imported tools against mocks of their upstreams.
//!
//! For every OpenAPI document an import file names, this starts Stoplight Prism
//! (`prism mock --errors`, which answers 422 to any request that breaks the document),
//! points the broker at it, and calls every exposed tool generated from that document
//! with a minimal sample of the tool's own argument schema (plus its confirmation flag).
//! A call the mock answers with success is accepted; one it answers 422 (or cannot route)
//! is rejected, with Prism's first violation. Everything stays on 127.0.0.1.
//!
//! Run with `conformance/run.sh` (installs Prism from npm, builds this in release mode).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a check tool stops on a broken setup"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_broker::call::{Broker, CallInput};
use tool_broker::caller::Caller;
use tool_broker::catalog::compile::compile;
use tool_broker::catalog::sample::sample;
use tool_broker::catalog::source::Sources;
use tool_broker::catalog::{Action, Catalog};
use tool_broker::config::ConfigFile;
use tool_broker::import::config::ImportFile;
use tool_broker::import::expand_spec;
use tool_broker::import::openapi::Documents;
use tool_broker::import::prune::prune_document;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

struct Prism(Child, PathBuf, u64);

impl Prism {
    /// Violations Prism logged since the last call (its log says why it refused).
    fn new_violations(&mut self) -> Vec<String> {
        let text = std::fs::read(&self.1).unwrap_or_default();
        let start = (self.2 as usize).min(text.len());
        self.2 = text.len() as u64;
        String::from_utf8_lossy(&text[start..])
            .lines()
            .filter_map(|l| l.split("[VALIDATOR] ✖  error").nth(1))
            .map(|v| {
                v.trim()
                    .trim_start_matches("Violation: ")
                    .trim()
                    .to_string()
            })
            .collect()
    }
}

impl Drop for Prism {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_prism(prism: &str, doc: &Path, port: u16) -> Option<Prism> {
    let log = std::env::temp_dir().join(format!("prism-{port}.log"));
    let file = std::fs::File::create(&log).ok()?;
    let child = Command::new(prism)
        .args([
            "mock",
            "--errors",
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .arg(doc)
        .stdout(Stdio::from(file))
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut guard = Prism(child, log, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(guard);
        }
        // A document Prism refuses makes it exit at once: no need to wait out the minute.
        if guard.0.try_wait().ok().flatten().is_some() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    None
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `conformance/documents.toml`: documents validated through a pruned copy.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DocumentRules {
    #[serde(default)]
    pruned: Vec<PrunedRule>,
    #[serde(default)]
    validator_errors: Vec<ValidatorError>,
}

/// A known mistake of the validator itself: a rejection whose every violation matches
/// one of these is reported as the validator's error, not as a broker defect.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ValidatorError {
    name: String,
    message_contains: String,
    /// Only when the violation is about a top-level argument the call did not send.
    #[serde(default)]
    only_unsent: bool,
}

impl ValidatorError {
    fn matches(&self, violation: &str, sent: &Value) -> bool {
        if !violation.contains(&self.message_contains) {
            return false;
        }
        if !self.only_unsent {
            return true;
        }
        // `Request body property bank_transfer.eu_bank_transfer must have ...`: the object
        // Prism complains about is the dotted path after `property` / `parameter`.
        let words: Vec<&str> = violation.split_whitespace().collect();
        let Some(path) = words
            .windows(2)
            .find(|w| matches!(w[0], "property" | "parameter"))
            .map(|w| w[1])
            .filter(|p| *p != "must")
        else {
            return false;
        };
        // Flat arguments, or the `body` / `params` / `query` objects of the contract and
        // query_body styles: the path must be absent from all of them.
        ["", "/body", "/params", "/query"].iter().all(|at| {
            let mut node = sent.pointer(at);
            for part in path.split('.') {
                node = node.and_then(|n| match n {
                    Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
                    other => other.get(part),
                });
            }
            node.is_none()
        })
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PrunedRule {
    spec: String,
    max_depth: usize,
    reason: String,
}

#[derive(Default)]
struct Tally {
    accepted: usize,
    /// Passed Prism's request validation, but Prism could not build an answer (5xx).
    mock_failed: usize,
    rejected: Vec<(String, String)>,
    /// Rejections that are the validator's own error: `(tool, rule name)`.
    validator: Vec<(String, String)>,
    other: Vec<(String, String)>,
    documents: usize,
    unchecked: Vec<(String, String)>,
    /// Documents checked through a pruned copy: `(document, what was cut and why)`.
    pruned: Vec<(String, String)>,
}

/// Prism's first violation, from the redacted upstream body in `details`.
fn violation(envelope: &Value) -> String {
    let body = &envelope["error"]["details"]["upstreamBody"];
    let first = body["validation"][0].clone();
    if first.is_object() {
        format!(
            "{} {}",
            first["location"]
                .as_array()
                .map(|l| l
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("."))
                .unwrap_or_default(),
            first["message"].as_str().unwrap_or("")
        )
    } else if let Some(preview) = envelope["error"]["details"]["upstreamBodyPreview"].as_str() {
        // A long answer is cut to a text preview: take its first message.
        preview
            .split("\"message\":\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or("rejected")
            .to_string()
    } else {
        body["title"]
            .as_str()
            .or(body["detail"].as_str())
            .unwrap_or("rejected")
            .to_string()
    }
}

/// What every document's check reads: the catalog, where the documents and Prism are,
/// and the rules of conformance/documents.toml.
struct Run {
    catalog: Arc<Catalog>,
    specs_dir: PathBuf,
    prism: String,
    rules: DocumentRules,
    /// Where pruned copies of documents are written.
    scratch: PathBuf,
}

/// One document of a service: its path, its label (relative to the documents' folder)
/// and the tools imported from it.
struct Document<'c> {
    service: &'c str,
    path: PathBuf,
    label: String,
    tools: Vec<&'c tool_broker::catalog::Tool>,
    key_header: Option<String>,
}

#[tokio::main]
async fn main() {
    let root = PathBuf::from(arg("--catalog-dir").unwrap_or_else(|| ".".into()));
    let Some(specs_dir) = arg("--specs-dir").map(PathBuf::from) else {
        eprintln!("conformance: --specs-dir DIR (the upstreams' OpenAPI documents) is required");
        std::process::exit(2);
    };
    let out = arg("--out");
    let only: Option<Vec<String>> =
        arg("--services").map(|s| s.split(',').map(String::from).collect());
    let skip: Vec<String> = arg("--skip-services")
        .map(|s| s.split(',').map(String::from).collect())
        .unwrap_or_default();
    let run = Run {
        catalog: Arc::new(
            compile(&Sources::from_dir(&root).unwrap()).unwrap_or_else(|d| panic!("{d}")),
        ),
        specs_dir,
        prism: arg("--prism").unwrap_or_else(|| "prism".into()),
        rules: toml::from_str(
            &std::fs::read_to_string(root.join("conformance/documents.toml")).unwrap_or_default(),
        )
        .unwrap(),
        scratch: root.join("target/conformance-pruned"),
    };
    let mut imports: Vec<PathBuf> = std::fs::read_dir(root.join("import"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    imports.sort();
    let mut report: BTreeMap<String, Tally> = BTreeMap::new();
    for import in imports {
        let config: ImportFile =
            toml::from_str(&std::fs::read_to_string(&import).unwrap()).unwrap();
        let service = config.service.clone();
        if only.as_ref().is_some_and(|o| !o.contains(&service)) {
            continue;
        }
        let tally = report.entry(service.clone()).or_default();
        if skip.contains(&service) {
            tally
                .unchecked
                .push(("all".into(), "skipped by --skip-services".into()));
            continue;
        }
        for spec in &config.specs {
            for path in expand_spec(&run.specs_dir, spec).unwrap() {
                if let Some(document) = run.document(&service, path) {
                    run.check(&document, tally).await;
                }
            }
        }
    }
    let (text, totals) = written(&report);
    print!("{text}");
    println!(
        "conformance: {} accepted, {} rejected by the validator's own error, {} rejected, {} other",
        totals.accepted, totals.validator, totals.rejected, totals.other
    );
    if let Some(path) = out {
        std::fs::write(path, &text).unwrap();
    }
    // A gate: a rejection or an unexplained outcome fails the run.
    if totals.rejected + totals.other > 0 {
        std::process::exit(1);
    }
}

impl Run {
    /// A document of `service` and the exposed HTTP tools imported from it (`None`
    /// when none is).
    fn document<'c>(&'c self, service: &'c str, path: PathBuf) -> Option<Document<'c>> {
        let label = path
            .strip_prefix(&self.specs_dir)
            .unwrap()
            .display()
            .to_string();
        let tools: Vec<_> = self
            .catalog
            .tools
            .iter()
            .filter(|t| t.service == service && t.exposed && matches!(t.action, Action::Http(_)))
            .filter(|t| t.provenance.as_ref().is_some_and(|p| p.spec == label))
            .collect();
        let service_def = self.catalog.services.get(service).unwrap();
        (!tools.is_empty()).then(|| Document {
            service,
            path,
            label,
            tools,
            key_header: service_def.credential.as_ref().map(|c| c.header.clone()),
        })
    }

    /// Every tool of one document called against a Prism mock of it.
    async fn check(&self, document: &Document<'_>, tally: &mut Tally) {
        let mock_doc = self.mock_document(document, tally);
        let port = free_port();
        let Some(mut mock) = start_prism(&self.prism, &mock_doc, port) else {
            tally.unchecked.push((
                document.label.clone(),
                "Prism refused the document or did not start within 60 s".into(),
            ));
            return;
        };
        tally.documents += 1;
        let mut cfg = ConfigFile::default();
        cfg.upstreams.insert(
            document.service.to_string(),
            format!("http://127.0.0.1:{port}"),
        );
        let env =
            |name: &str| (name == "TOOL_BROKER_API_KEY").then(|| "tb_conformance".to_string());
        let store = tool_broker::store::Store::open(&tool_broker::store::StoreConfig::Memory)
            .await
            .unwrap();
        let broker = Broker::new(self.catalog.clone(), &cfg, &env, store).unwrap();
        let caller = Caller::unrestricted("conformance");
        let mut headers = hyper::HeaderMap::new();
        if let Some(h) = &document.key_header {
            headers.insert(
                hyper::header::HeaderName::from_bytes(h.as_bytes()).unwrap(),
                "conformance-key".parse().unwrap(),
            );
        }
        headers.insert("x-crm-location-id", "loc_conformance".parse().unwrap());
        for tool in &document.tools {
            let args = sample_arguments(tool);
            let response = broker
                .call(CallInput {
                    request_id: "conformance".into(),
                    name: &tool.full_name,
                    arguments: Some(args.clone()),
                    headers: &headers,
                    caller: &caller,
                    idempotency_key: None,
                    elicitation: None,
                    relay: None,
                    task_watch: None,
                    descriptor_hash: None,
                    trace_parent: None,
                    endpoint: tool_broker::call::Endpoint::Rpc,
                })
                .await;
            let body = response.envelope();
            let violations = mock.new_violations();
            self.tally_call(&tool.full_name, &body, violations, &args, tally);
        }
    }

    /// The document Prism mocks: the document itself, or a pruned copy where
    /// conformance/documents.toml says so (noted in the report).
    fn mock_document(&self, document: &Document<'_>, tally: &mut Tally) -> PathBuf {
        let Some(rule) = self.rules.pruned.iter().find(|r| r.spec == document.label) else {
            return document.path.clone();
        };
        let started = Instant::now();
        let (copy, cuts) =
            prune_document(&mut Documents::default(), &document.path, rule.max_depth).unwrap();
        std::fs::create_dir_all(&self.scratch).unwrap();
        let mock_doc = self
            .scratch
            .join(format!("{}.json", document.label.replace('/', "_")));
        std::fs::write(&mock_doc, serde_json::to_vec(&copy).unwrap()).unwrap();
        tally.pruned.push((
            document.label.clone(),
            format!(
                "{} (copy of {} operations, {:.1} s: {} recursive and {} deeper-than-{} references cut, dangling: {})",
                rule.reason,
                cuts.operations,
                started.elapsed().as_secs_f64(),
                cuts.recursive,
                cuts.too_deep,
                rule.max_depth,
                if cuts.dangling.is_empty() {
                    "none".to_string()
                } else {
                    cuts.dangling.join(", ")
                }
            ),
        ));
        mock_doc
    }

    /// Where one call's answer goes in the tally: accepted, the mock's own failure, a
    /// rejection (the validator's known error, or not), or something else.
    fn tally_call(
        &self,
        tool: &str,
        body: &Value,
        violations: Vec<String>,
        args: &Value,
        tally: &mut Tally,
    ) {
        let status = body["meta"]["upstreamStatus"]
            .as_u64()
            .or(body["error"]["upstreamStatus"].as_u64());
        if body["ok"] == json!(true) {
            tally.accepted += 1;
        } else if status.is_some_and(|s| s >= 500) {
            tally.mock_failed += 1;
        } else if matches!(status, Some(422 | 404 | 400 | 405 | 415)) {
            if std::env::var("CONFORMANCE_DEBUG").is_ok() {
                eprintln!("{tool}: {body}");
            }
            let violations = if violations.is_empty() {
                vec![violation(body)]
            } else {
                violations
            };
            let known: Option<&ValidatorError> = violations
                .iter()
                .map(|v| {
                    self.rules
                        .validator_errors
                        .iter()
                        .find(|r| r.matches(v, args))
                })
                .collect::<Option<Vec<_>>>()
                .and_then(|found| found.first().copied());
            match known {
                Some(rule) => tally.validator.push((tool.to_string(), rule.name.clone())),
                None => tally
                    .rejected
                    .push((tool.to_string(), violations[0].clone())),
            }
        } else {
            tally.other.push((
                tool.to_string(),
                format!(
                    "{}: {}",
                    body["error"]["classification"].as_str().unwrap_or("?"),
                    body["error"]["message"].as_str().unwrap_or("")
                ),
            ));
        }
    }
}

/// A minimal sample of a tool's argument schema, with its confirmation flags set.
fn sample_arguments(tool: &tool_broker::catalog::Tool) -> Value {
    let schema = tool.arguments.value();
    let mut args = sample(&schema);
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(obj) = args.as_object_mut() {
        if props.contains_key("confirm") {
            obj.insert("confirm".into(), json!(true));
        }
        if props.contains_key("confirmApply") {
            obj.insert("confirmApply".into(), json!("CONFIRM APPLY"));
        }
    }
    args
}

/// The run's totals over every service.
#[derive(Default)]
struct Totals {
    accepted: usize,
    validator: usize,
    rejected: usize,
    other: usize,
}

/// The report: a table per service, then what was pruned, unchecked, or refused.
fn written(report: &BTreeMap<String, Tally>) -> (String, Totals) {
    let mut text = String::from(
        "| service | documents | tools called | accepted | accepted, mock could not answer | rejected by the validator's own error | rejected | other |\n|---|---|---|---|---|---|---|---|\n",
    );
    let mut totals = Totals::default();
    for (service, t) in report {
        let called =
            t.accepted + t.mock_failed + t.validator.len() + t.rejected.len() + t.other.len();
        totals.accepted += t.accepted + t.mock_failed;
        totals.rejected += t.rejected.len();
        totals.validator += t.validator.len();
        totals.other += t.other.len();
        text.push_str(&format!(
            "| {service} | {} | {called} | {} | {} | {} | {} | {} |\n",
            t.documents,
            t.accepted,
            t.mock_failed,
            t.validator.len(),
            t.rejected.len(),
            t.other.len()
        ));
    }
    for (service, t) in report {
        for (what, why) in &t.pruned {
            text.push_str(&format!(
                "\n- {service}: `{what}` checked through a pruned copy: {why}"
            ));
        }
        for (what, why) in &t.unchecked {
            text.push_str(&format!("\n- {service}: not checked ({what}): {why}"));
        }
        let mut by_rule: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (tool, rule) in &t.validator {
            by_rule.entry(rule).or_default().push(tool);
        }
        for (rule, tools) in by_rule {
            text.push_str(&format!(
                "\n- {service}: validator's own error ({rule}): {} tools: `{}`",
                tools.len(),
                tools.join("`, `")
            ));
        }
        for (tool, why) in t.rejected.iter().take(40) {
            text.push_str(&format!("\n- rejected `{tool}`: {why}"));
        }
        for (tool, why) in t.other.iter().take(20) {
            text.push_str(&format!("\n- other `{tool}`: {why}"));
        }
    }
    text.push('\n');
    (text, totals)
}
