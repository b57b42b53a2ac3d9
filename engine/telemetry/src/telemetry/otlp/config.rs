//! The exporter's settings, from the standard `OTEL_*` environment variables (the
//! OpenTelemetry specification's names, defaults and precedence: a `TRACES_` variable
//! before the general one). Nothing is exported unless an endpoint is set.
//!
//! What the broker cannot honour is refused at start, saying which variable and why
//! (`grpc`, a custom certificate, another exporter): a setting silently ignored would
//! leave an operator looking for spans that never leave. Header values are secrets:
//! never in a message.

use std::time::Duration;

use percent_encoding::percent_decode_str;

/// How spans are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`: the OTLP protobuf messages (the default).
    Protobuf,
    /// `http/json`: the OTLP JSON mapping.
    Json,
}

/// Which new traces are recorded (`OTEL_TRACES_SAMPLER`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampler {
    /// Every trace.
    AlwaysOn,
    /// None.
    AlwaysOff,
    /// A share of traces, by the trace id's lower 56 bits.
    Ratio(f64),
    /// As the caller's `traceparent` says; the inner sampler for a new trace.
    ParentBased(Root),
}

/// A parent-based sampler's rule for a new trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Root {
    /// Every new trace.
    AlwaysOn,
    /// No new trace.
    AlwaysOff,
    /// A share of new traces.
    Ratio(f64),
}

impl Sampler {
    /// Whether a span of `trace_id` is recorded; `parent_sampled` is the caller's flag.
    pub fn samples(&self, trace_id: &[u8; 16], parent_sampled: Option<bool>) -> bool {
        let ratio = |share: f64| {
            let mut low = [0u8; 8];
            low[1..].copy_from_slice(&trace_id[9..]);
            let bound = (share.clamp(0.0, 1.0) * (1u64 << 56) as f64) as u64;
            u64::from_be_bytes(low) < bound
        };
        match *self {
            Self::AlwaysOn => true,
            Self::AlwaysOff => false,
            Self::Ratio(share) => ratio(share),
            Self::ParentBased(root) => match (parent_sampled, root) {
                (Some(sampled), _) => sampled,
                (None, Root::AlwaysOn) => true,
                (None, Root::AlwaysOff) => false,
                (None, Root::Ratio(share)) => ratio(share),
            },
        }
    }
}

/// Where and how spans go.
#[derive(Clone, PartialEq)]
pub struct ExportConfig {
    /// The full URL spans are posted to (`…/v1/traces`).
    pub endpoint: hyper::Uri,
    /// Protobuf or JSON.
    pub protocol: Protocol,
    /// Headers sent with every export (often a collector's key: never shown).
    pub headers: Vec<(String, String)>,
    /// The longest one export may take.
    pub timeout: Duration,
    /// Resource attributes (`service.name` first).
    pub resource: Vec<(String, String)>,
    /// How long spans wait for a batch.
    pub schedule_delay: Duration,
    /// The most spans held; more are dropped and counted.
    pub max_queue: usize,
    /// The most spans in one export.
    pub max_batch: usize,
}

impl std::fmt::Debug for ExportConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportConfig")
            .field("endpoint", &self.endpoint)
            .field("protocol", &self.protocol)
            .field("headers", &self.headers.len())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The tracing settings: the sampler always, the export when an endpoint is set.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceConfig {
    /// Which traces are recorded.
    pub sampler: Sampler,
    /// Where recorded spans go; `None`: nowhere, and nothing is recorded.
    pub export: Option<ExportConfig>,
}

/// Reads the settings from `env` (`std::env::var` in the broker, a map in tests), in
/// the order the OpenTelemetry specification lists them.
pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<TraceConfig, String> {
    // An empty value is an unset one (the OpenTelemetry specification's rule).
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let either = |name: &str| {
        var(&format!("OTEL_EXPORTER_OTLP_TRACES_{name}"))
            .map(|v| (format!("OTEL_EXPORTER_OTLP_TRACES_{name}"), v))
            .or_else(|| {
                var(&format!("OTEL_EXPORTER_OTLP_{name}"))
                    .map(|v| (format!("OTEL_EXPORTER_OTLP_{name}"), v))
            })
    };
    let sampler = sampler(var("OTEL_TRACES_SAMPLER"), var("OTEL_TRACES_SAMPLER_ARG"))?;
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if let Some(exporters) = var("OTEL_TRACES_EXPORTER") {
        for name in exporters.split(',').map(str::trim) {
            if !matches!(name, "otlp" | "none") {
                return Err(format!(
                    "OTEL_TRACES_EXPORTER={name}: this broker exports traces over OTLP only; set `otlp` (with an OTEL_EXPORTER_OTLP_ENDPOINT) or `none`"
                ));
            }
        }
        if exporters.split(',').all(|n| n.trim() == "none") {
            return Ok(TraceConfig {
                sampler,
                export: None,
            });
        }
    }
    let endpoint = match (
        var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        var("OTEL_EXPORTER_OTLP_ENDPOINT"),
    ) {
        (Some(full), _) => (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            full.trim().to_string(),
        ),
        (None, Some(base)) => {
            let base = base.trim();
            let joined = if base.ends_with('/') {
                format!("{base}v1/traces")
            } else {
                format!("{base}/v1/traces")
            };
            ("OTEL_EXPORTER_OTLP_ENDPOINT", joined)
        }
        (None, None) => {
            return Ok(TraceConfig {
                sampler,
                export: None,
            });
        }
    };
    if disabled {
        return Ok(TraceConfig {
            sampler,
            export: None,
        });
    }
    let (endpoint_var, endpoint) = endpoint;
    let uri = endpoint
        .parse::<hyper::Uri>()
        .ok()
        .filter(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some())
        .ok_or_else(|| {
            format!(
                "{endpoint_var} must be an http:// or https:// URL of an OTLP receiver (a collector's port 4318)"
            )
        })?;
    let protocol = transport(&either)?;
    let headers = export_headers(&var)?;
    let millis = |name: &str, default: u64| -> Result<Duration, String> {
        match var(name) {
            None => Ok(Duration::from_millis(default)),
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| format!("{name}={v}: must be a whole number of milliseconds")),
        }
    };
    let count = |name: &str, default: usize| -> Result<usize, String> {
        match var(name) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{name}={v}: must be a positive whole number")),
        }
    };
    let timeout = match either("TIMEOUT") {
        None => Duration::from_secs(10),
        Some((name, _)) => millis(&name, 10_000)?,
    };
    let export_timeout = millis("OTEL_BSP_EXPORT_TIMEOUT", 30_000)?;
    let max_queue = count("OTEL_BSP_MAX_QUEUE_SIZE", 2048)?;
    let max_batch = count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)?.min(max_queue);
    Ok(TraceConfig {
        sampler,
        export: Some(ExportConfig {
            endpoint: uri,
            protocol,
            headers,
            timeout: timeout.min(export_timeout).max(Duration::from_millis(1)),
            resource: resource(var("OTEL_SERVICE_NAME"), var("OTEL_RESOURCE_ATTRIBUTES"))?,
            schedule_delay: millis("OTEL_BSP_SCHEDULE_DELAY", 5000)?.max(Duration::from_millis(1)),
            max_queue,
            max_batch,
        }),
    })
}

/// The exporter's protocol (`http/protobuf` or `http/json`), refusing what this broker
/// does not do (gRPC, certificate files) and warning that gzip is not offered.
fn transport(either: &dyn Fn(&str) -> Option<(String, String)>) -> Result<Protocol, String> {
    let protocol = match either("PROTOCOL") {
        None => Protocol::Protobuf,
        Some((_, p)) if p.trim() == "http/protobuf" => Protocol::Protobuf,
        Some((_, p)) if p.trim() == "http/json" => Protocol::Json,
        Some((name, p)) => {
            return Err(format!(
                "{name}={}: this broker exports over `http/protobuf` or `http/json`, not gRPC; point the endpoint at the collector's HTTP port (4318)",
                p.trim()
            ));
        }
    };
    for name in ["CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE"] {
        if let Some((var_name, _)) = either(name) {
            return Err(format!(
                "{var_name} is set, and this broker does not read certificate files: it verifies an https collector with the platform's trust store (add the CA there), and sends no client certificate"
            ));
        }
    }
    if let Some((name, c)) = either("COMPRESSION")
        && c.trim() != "none"
    {
        if c.trim() != "gzip" {
            return Err(format!(
                "{name}={}: the compression must be `none` or `gzip`",
                c.trim()
            ));
        }
        tracing::warn!(
            variable = %name,
            "gzip is not offered by this broker; spans are exported uncompressed (every OTLP receiver accepts that)"
        );
    }
    Ok(protocol)
}

/// The headers every export carries (`OTEL_EXPORTER_OTLP_HEADERS`, then the traces'
/// own, which win), each checked as an HTTP header.
fn export_headers(var: &dyn Fn(&str) -> Option<String>) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::new();
    for name in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        if let Some(list) = var(name) {
            for (key, value) in pairs(&list, name)? {
                if hyper::header::HeaderName::from_bytes(key.as_bytes()).is_err()
                    || hyper::header::HeaderValue::from_str(&value).is_err()
                {
                    return Err(format!(
                        "{name}: the header `{key}` is not a valid HTTP header name, or its value holds characters a header cannot carry"
                    ));
                }
                headers.retain(|(k, _): &(String, String)| !k.eq_ignore_ascii_case(&key));
                headers.push((key, value));
            }
        }
    }
    Ok(headers)
}

/// `key=value` pairs, comma-separated, values percent-decoded (the W3C Baggage form
/// the OpenTelemetry specification uses for headers and resource attributes). Values never appear in
/// a message: they may be keys.
fn pairs(list: &str, name: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (n, item) in list.split(',').enumerate() {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some((key, value)) = item.split_once('=') else {
            return Err(format!(
                "{name}: entry {} is not `key=value` (entries are separated by commas)",
                n + 1
            ));
        };
        let key = key.trim();
        let decoded = percent_decode_str(value.trim())
            .decode_utf8()
            .map_err(|_| {
                format!("{name}: the value of `{key}` is not UTF-8 once percent-decoded")
            })?;
        if key.is_empty() {
            return Err(format!("{name}: entry {} has an empty key", n + 1));
        }
        out.push((key.to_string(), decoded.into_owned()));
    }
    Ok(out)
}

/// The resource: `service.name` (`OTEL_SERVICE_NAME`, else the attributes', else
/// `tool-broker`), `service.version`, the SDK's name and language, then the rest of
/// `OTEL_RESOURCE_ATTRIBUTES`.
fn resource(
    service_name: Option<String>,
    attributes: Option<String>,
) -> Result<Vec<(String, String)>, String> {
    let listed = match attributes {
        Some(list) => pairs(&list, "OTEL_RESOURCE_ATTRIBUTES")?,
        None => Vec::new(),
    };
    let named = listed
        .iter()
        .find(|(k, _)| k == "service.name")
        .map(|(_, v)| v.clone());
    let mut out = vec![
        (
            "service.name".to_string(),
            service_name
                .map(|s| s.trim().to_string())
                .or(named)
                .unwrap_or_else(|| "tool-broker".into()),
        ),
        (
            "service.version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        ("telemetry.sdk.name".to_string(), "tool-broker".to_string()),
        ("telemetry.sdk.language".to_string(), "rust".to_string()),
    ];
    for (k, v) in listed {
        if !out.iter().any(|(have, _)| *have == k) {
            out.push((k, v));
        }
    }
    Ok(out)
}

/// `OTEL_TRACES_SAMPLER` and its argument (default `parentbased_always_on`).
fn sampler(name: Option<String>, arg: Option<String>) -> Result<Sampler, String> {
    let ratio = || -> Result<f64, String> {
        match &arg {
            None => Ok(1.0),
            Some(a) => a
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|r| (0.0..=1.0).contains(r))
                .ok_or_else(|| format!("OTEL_TRACES_SAMPLER_ARG={a}: must be a share from 0 to 1")),
        }
    };
    Ok(match name.as_deref().map(str::trim) {
        None | Some("parentbased_always_on") => Sampler::ParentBased(Root::AlwaysOn),
        Some("parentbased_always_off") => Sampler::ParentBased(Root::AlwaysOff),
        Some("parentbased_traceidratio") => Sampler::ParentBased(Root::Ratio(ratio()?)),
        Some("always_on") => Sampler::AlwaysOn,
        Some("always_off") => Sampler::AlwaysOff,
        Some("traceidratio") => Sampler::Ratio(ratio()?),
        Some(other) => {
            return Err(format!(
                "OTEL_TRACES_SAMPLER={other}: this broker samples with always_on, always_off, traceidratio or their parentbased_ forms"
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<TraceConfig, String> {
        let map: std::collections::HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        from_env(&|name| map.get(name).cloned())
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint() {
        let config = read(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).expect("reads");
        assert_eq!(config.export, None);
        assert_eq!(config.sampler, Sampler::ParentBased(Root::AlwaysOn));
        for off in [
            [("OTEL_SDK_DISABLED", "TRUE")],
            [("OTEL_TRACES_EXPORTER", "none")],
        ] {
            let mut vars = vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")];
            vars.extend(off);
            assert_eq!(read(&vars).expect("reads").export, None);
        }
    }

    #[test]
    fn the_endpoint_protocol_and_headers_follow_the_specification() {
        let config = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b,x-team=one"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-Team=two"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_SERVICE_NAME", "edge-broker"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment=prod,service.name=x",
            ),
        ])
        .expect("reads");
        let export = config.export.expect("exports");
        assert_eq!(
            export.endpoint.to_string(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(export.protocol, Protocol::Json);
        assert_eq!(
            export.headers,
            vec![
                ("api-key".to_string(), "a b".to_string()),
                ("X-Team".to_string(), "two".to_string())
            ]
        );
        assert_eq!(export.timeout, Duration::from_millis(2500));
        assert_eq!(export.resource[0].1, "edge-broker");
        assert!(
            export
                .resource
                .iter()
                .any(|(k, v)| k == "deployment.environment" && v == "prod")
        );
        // The signal's own endpoint is used as it is; protobuf is the default.
        let own = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored:1"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://collector.example/custom",
            ),
        ])
        .expect("reads")
        .export
        .expect("exports");
        assert_eq!(own.endpoint.to_string(), "https://collector.example/custom");
        assert_eq!(own.protocol, Protocol::Protobuf);
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_without_showing_a_secret() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        for (vars, says) in [
            (
                vec![endpoint, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
                "not gRPC",
            ),
            (
                vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4318")],
                "http:// or https://",
            ),
            (
                vec![endpoint, ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem")],
                "trust store",
            ),
            (
                vec![endpoint, ("OTEL_TRACES_EXPORTER", "zipkin")],
                "OTLP only",
            ),
            (
                vec![endpoint, ("OTEL_TRACES_SAMPLER", "sometimes")],
                "samples with",
            ),
            (
                vec![
                    endpoint,
                    ("OTEL_TRACES_SAMPLER", "traceidratio"),
                    ("OTEL_TRACES_SAMPLER_ARG", "2"),
                ],
                "share",
            ),
            (
                vec![
                    endpoint,
                    ("OTEL_EXPORTER_OTLP_HEADERS", "secret-token-value"),
                ],
                "key=value",
            ),
            (
                vec![endpoint, ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=sec\nret")],
                "api-key",
            ),
            (vec![endpoint, ("OTEL_BSP_MAX_QUEUE_SIZE", "0")], "positive"),
        ] {
            let err = read(&vars).expect_err("refused");
            assert!(err.contains(says), "{err}");
            assert!(!err.contains("secret") && !err.contains("sec\n"), "{err}");
        }
    }

    #[test]
    fn samplers_decide_as_the_specification_says() {
        let id = |low: u8| {
            let mut t = [0u8; 16];
            t[9] = low;
            t
        };
        let parent = Sampler::ParentBased(Root::AlwaysOff);
        assert!(parent.samples(&id(0), Some(true)));
        assert!(!parent.samples(&id(0), None));
        assert!(!Sampler::ParentBased(Root::AlwaysOn).samples(&id(0), Some(false)));
        assert!(Sampler::AlwaysOn.samples(&id(0), Some(false)));
        let half = Sampler::Ratio(0.5);
        assert!(half.samples(&id(0x7f), None));
        assert!(!half.samples(&id(0x80), None));
        assert!(!Sampler::Ratio(0.0).samples(&id(0), None));
        assert!(Sampler::Ratio(1.0).samples(&[0xff; 16], None));
    }
}
