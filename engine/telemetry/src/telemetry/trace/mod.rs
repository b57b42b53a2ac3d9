//! Traces (decision 013): every call is a W3C trace, continued from the
//! caller's `traceparent` when it brings one, and its id is the envelope's
//! `meta.traceId`. When an OTLP endpoint is set and the sampler says so, the call is a
//! SERVER span and its upstream request a CLIENT span, exported by
//! [`crate::telemetry::otlp`].
//!
//! Nothing is recorded, and no span is built, when nothing is exported: a call then
//! pays for its ids and the `traceparent` it sends upstream, nothing more
//! (`bench/HISTORY.md`). `context` reads and writes Trace Context, `ids` makes ids,
//! what a finished span holds is [`crate::telemetry::span`].

pub mod context;
pub mod ids;

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hyper::header::HeaderValue;

use crate::telemetry::otlp::config::{Sampler, TraceConfig};
use crate::telemetry::otlp::export::Exporter;
pub use crate::telemetry::span::{Kind, Span};
pub use context::Parent;
use ids::Ids;

/// Starts every call's trace; holds the exporter when one is set.
#[derive(Debug)]
pub struct Tracer {
    ids: Arc<Ids>,
    sampler: Sampler,
    exporter: Option<Arc<Exporter>>,
}

impl Default for Tracer {
    /// A tracer that exports nothing.
    fn default() -> Self {
        Self {
            ids: Arc::new(Ids::default()),
            sampler: Sampler::AlwaysOff,
            exporter: None,
        }
    }
}

impl Tracer {
    /// A tracer for `config` (from the `OTEL_*` variables).
    pub fn new(config: TraceConfig) -> Self {
        Self {
            ids: Arc::new(Ids::default()),
            sampler: config.sampler,
            exporter: config.export.map(|e| Arc::new(Exporter::new(e))),
        }
    }

    /// The exporter, when spans are exported.
    pub fn exporter(&self) -> Option<&Arc<Exporter>> {
        self.exporter.as_ref()
    }

    /// A trace id for an answer outside any call (a refused connection, a request that
    /// is no call): the caller's when its headers bring one.
    pub fn answer_trace_id(&self, headers: Option<&hyper::HeaderMap>) -> String {
        match headers.and_then(Parent::from_headers) {
            Some(parent) => ids::hex(&parent.trace_id),
            None => ids::hex(&self.ids.trace_id()),
        }
    }

    /// A request id for a call that brought none (the REST endpoint without `X-Request-Id`).
    pub fn next_request_id(&self) -> String {
        self.ids.next_request_id()
    }

    /// Starts a call's trace: the caller's trace when `parent` is given, else a new one.
    pub fn start(&self, parent: Option<Parent>) -> CallTrace {
        let trace_id = parent
            .as_ref()
            .map_or_else(|| self.ids.trace_id(), |p| p.trace_id);
        let exporter = self.exporter.as_ref().filter(|_| {
            self.sampler
                .samples(&trace_id, parent.as_ref().map(|p| p.sampled))
        });
        let recording = exporter.map(|exporter| Recording {
            exporter: exporter.clone(),
            ids: self.ids.clone(),
            start_ns: now_ns(),
            started: Instant::now(),
        });
        // Not recording: the broker passes the caller's span and flags on, as a proxy
        // that records nothing would, so an upstream's spans join the caller's.
        let (span_id, sampled) = match (&recording, &parent) {
            (Some(_), _) => (self.ids.span_id(), true),
            (None, Some(p)) => (p.span_id, p.sampled),
            (None, None) => (self.ids.span_id(), false),
        };
        CallTrace {
            id: ids::hex(&trace_id),
            trace_id,
            span_id,
            parent: parent.as_ref().map(|p| p.span_id),
            sampled,
            state: parent.and_then(|p| p.state),
            recording,
        }
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// What a recorded span needs at its end.
#[derive(Debug, Clone)]
struct Recording {
    exporter: Arc<Exporter>,
    ids: Arc<Ids>,
    start_ns: u64,
    started: Instant,
}

impl Recording {
    fn end_ns(&self) -> u64 {
        let took = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.start_ns.saturating_add(took)
    }
}

/// One call's trace: its ids, and its SERVER span while it is recorded.
#[derive(Debug)]
pub struct CallTrace {
    /// The trace id as 32 lower-case hex digits (the envelope's `meta.traceId`).
    pub id: String,
    /// The trace id.
    pub trace_id: [u8; 16],
    /// The call's span (the caller's own when nothing is recorded).
    pub span_id: [u8; 8],
    /// The caller's span, when it brought one.
    pub parent: Option<[u8; 8]>,
    /// Whether the trace is sampled (the flag sent upstream).
    pub sampled: bool,
    /// The caller's `tracestate`, passed on.
    pub state: Option<String>,
    recording: Option<Recording>,
}

impl CallTrace {
    /// Whether this call's spans are recorded.
    pub fn recording(&self) -> bool {
        self.recording.is_some()
    }

    /// Ends the call's SERVER span named `name`; `attributes` is run only when the span
    /// is recorded.
    pub fn finish(&self, name: impl FnOnce() -> String, attributes: impl FnOnce(&mut Span)) {
        let Some(rec) = &self.recording else {
            return;
        };
        let mut span = Span {
            trace_id: self.trace_id,
            span_id: self.span_id,
            parent: self.parent,
            state: self.state.clone(),
            name: name(),
            kind: Kind::Server,
            start_ns: rec.start_ns,
            end_ns: rec.end_ns(),
            attributes: Vec::with_capacity(16),
            error: false,
        };
        attributes(&mut span);
        rec.exporter.push(span);
    }

    /// Starts the upstream request's CLIENT span (recorded only when the call is).
    pub fn hop(&self) -> Hop {
        let recording = self.recording.as_ref().map(|rec| Recording {
            start_ns: now_ns(),
            started: Instant::now(),
            ..rec.clone()
        });
        let span_id = match &recording {
            Some(rec) => rec.ids.span_id(),
            None => self.span_id,
        };
        Hop {
            traceparent: context::traceparent(&self.id, &span_id, self.sampled),
            tracestate: self
                .state
                .as_deref()
                .and_then(|s| HeaderValue::from_str(s).ok()),
            span_id,
            recording,
        }
    }

    /// Ends a CLIENT span started by [`CallTrace::hop`]; `attributes` is run only when it
    /// is recorded.
    pub fn finish_hop(
        &self,
        hop: Hop,
        name: impl FnOnce() -> String,
        attributes: impl FnOnce(&mut Span),
    ) {
        let Some(rec) = hop.recording else {
            return;
        };
        let mut span = Span {
            trace_id: self.trace_id,
            span_id: hop.span_id,
            parent: Some(self.span_id),
            state: self.state.clone(),
            name: name(),
            kind: Kind::Client,
            start_ns: rec.start_ns,
            end_ns: rec.end_ns(),
            attributes: Vec::with_capacity(8),
            error: false,
        };
        attributes(&mut span);
        rec.exporter.push(span);
    }
}

/// An upstream request's place in the trace: the `traceparent` (and `tracestate`) it
/// carries, and its CLIENT span while recorded.
#[derive(Debug)]
pub struct Hop {
    /// `traceparent` for the upstream request.
    pub traceparent: HeaderValue,
    /// The caller's `tracestate`, passed on.
    pub tracestate: Option<HeaderValue>,
    span_id: [u8; 8],
    recording: Option<Recording>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::otlp::config::{ExportConfig, Protocol, Root};

    fn exporting(sampler: Sampler) -> Tracer {
        Tracer::new(TraceConfig {
            sampler,
            export: Some(ExportConfig {
                endpoint: "http://127.0.0.1:9/v1/traces".parse().expect("uri"),
                protocol: Protocol::Json,
                headers: Vec::new(),
                timeout: std::time::Duration::from_secs(1),
                resource: Vec::new(),
                schedule_delay: std::time::Duration::from_secs(5),
                max_queue: 4,
                max_batch: 4,
            }),
        })
    }

    const CALLER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn without_an_exporter_the_caller_context_passes_through() {
        let tracer = Tracer::default();
        let call = tracer.start(Parent::parse(CALLER, Some("a=1")));
        assert_eq!(call.id, "0af7651916cd43dd8448eb211c80319c");
        assert!(!call.recording());
        let hop = call.hop();
        assert_eq!(hop.traceparent.to_str().expect("text"), CALLER);
        assert_eq!(
            hop.tracestate.expect("state").to_str().expect("text"),
            "a=1"
        );
        // No caller: a new trace, not sampled.
        let own = tracer.start(None);
        assert_eq!(own.id.len(), 32);
        assert!(
            own.hop()
                .traceparent
                .to_str()
                .expect("text")
                .ends_with("-00")
        );
    }

    #[test]
    fn a_recorded_call_is_a_server_span_with_a_client_child() {
        let tracer = exporting(Sampler::ParentBased(Root::AlwaysOn));
        let call = tracer.start(Parent::parse(CALLER, None));
        assert!(call.recording());
        assert_ne!(call.span_id, call.parent.expect("parent"));
        let hop = call.hop();
        let sent = hop.traceparent.to_str().expect("text").to_string();
        assert!(sent.starts_with("00-0af7651916cd43dd8448eb211c80319c-"));
        assert!(sent.ends_with("-01"));
        call.finish_hop(
            hop,
            || "GET /x".into(),
            |s| s.int("http.response.status_code", 200),
        );
        call.finish(
            || "tools/call a.b".into(),
            |s| s.text("gen_ai.tool.name", "a.b"),
        );
        let exporter = tracer.exporter().expect("exporter");
        let queue = exporter.take_for_test();
        assert_eq!(queue.len(), 2);
        let (client, server) = (&queue[0], &queue[1]);
        assert_eq!(client.kind, Kind::Client);
        assert_eq!(client.parent, Some(server.span_id));
        assert_eq!(hex_of(&client.span_id), sent[36..52]);
        assert_eq!(server.parent, call.parent);
        assert!(server.end_ns >= server.start_ns);
    }

    #[test]
    fn an_unsampled_caller_is_not_recorded_and_stays_unsampled() {
        let tracer = exporting(Sampler::ParentBased(Root::AlwaysOn));
        let call = tracer.start(Parent::parse(&CALLER.replace("-01", "-00"), None));
        assert!(!call.recording());
        assert!(
            call.hop()
                .traceparent
                .to_str()
                .expect("text")
                .ends_with("-00")
        );
        call.finish(
            || unreachable!("not recorded"),
            |_| unreachable!("not recorded"),
        );
        assert!(
            tracer
                .exporter()
                .expect("exporter")
                .take_for_test()
                .is_empty()
        );
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let tracer = exporting(Sampler::AlwaysOn);
        for _ in 0..6 {
            tracer.start(None).finish(|| "n".into(), |_| {});
        }
        let exporter = tracer.exporter().expect("exporter");
        assert_eq!(
            exporter.dropped.load(std::sync::atomic::Ordering::Relaxed),
            2
        );
        assert_eq!(exporter.take_for_test().len(), 4);
    }

    fn hex_of(bytes: &[u8]) -> String {
        ids::hex(bytes)
    }
}
