//! One batch of spans as an OTLP `ExportTraceServiceRequest`: protobuf (hand-written,
//! the handful of fields the broker sets, numbered as `opentelemetry/proto/trace/v1`
//! numbers them) or the OTLP JSON mapping (lower-case hex ids, the kind as a number,
//! 64-bit numbers as decimal strings).

use serde_json::{Value, json};

use crate::telemetry::span::{Kind, Span, Value as Attr, hex};

/// The instrumentation scope every span is under.
const SCOPE: &str = "tool-broker";

/// `flags`: the W3C trace flags, then bit 8 "whether the parent is remote is known"
/// and bit 9 "the parent is remote" (a server span's parent is the caller's).
fn flags(span: &Span, sampled: bool) -> u32 {
    let remote = span.kind == Kind::Server && span.parent.is_some();
    u32::from(sampled) | 0x100 | if remote { 0x200 } else { 0 }
}

/// The batch as OTLP JSON.
pub fn json(resource: &[(String, String)], spans: &[Span]) -> Vec<u8> {
    let attribute = |key: &str, value: &Attr| {
        let value = match value {
            Attr::Text(t) => json!({ "stringValue": t }),
            Attr::Int(i) => json!({ "intValue": i.to_string() }),
            Attr::Bool(b) => json!({ "boolValue": b }),
        };
        json!({ "key": key, "value": value })
    };
    let spans: Vec<Value> = spans
        .iter()
        .map(|s| {
            let mut span = json!({
                "traceId": hex(&s.trace_id),
                "spanId": hex(&s.span_id),
                "name": s.name,
                "kind": s.kind.number(),
                "startTimeUnixNano": s.start_ns.to_string(),
                "endTimeUnixNano": s.end_ns.to_string(),
                "attributes": s.attributes.iter().map(|(k, v)| attribute(k, v)).collect::<Vec<_>>(),
                "status": { "code": if s.error { 2 } else { 0 } },
                "flags": flags(s, true),
            });
            if let Some(parent) = &s.parent {
                span["parentSpanId"] = json!(hex(parent));
            }
            if let Some(state) = &s.state {
                span["traceState"] = json!(state);
            }
            span
        })
        .collect();
    let resource: Vec<Value> = resource
        .iter()
        .map(|(k, v)| attribute(k, &Attr::Text(v.clone())))
        .collect();
    let body = json!({
        "resourceSpans": [{
            "resource": { "attributes": resource },
            "scopeSpans": [{
                "scope": { "name": SCOPE, "version": env!("CARGO_PKG_VERSION") },
                "spans": spans,
            }],
        }],
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

/// Protobuf wire writing: tags, varints, fixed and length-delimited fields.
#[derive(Default)]
struct Wire(Vec<u8>);

impl Wire {
    fn varint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.0.push((n as u8) | 0x80);
            n >>= 7;
        }
        self.0.push(n as u8);
    }

    fn tag(&mut self, field: u32, wire_type: u8) {
        self.varint(u64::from(field << 3 | u32::from(wire_type)));
    }

    fn bytes(&mut self, field: u32, bytes: &[u8]) {
        self.tag(field, 2);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    fn message(&mut self, field: u32, inner: Wire) {
        self.bytes(field, &inner.0);
    }

    fn uint(&mut self, field: u32, n: u64) {
        if n != 0 {
            self.tag(field, 0);
            self.varint(n);
        }
    }

    fn fixed64(&mut self, field: u32, n: u64) {
        self.tag(field, 1);
        self.0.extend_from_slice(&n.to_le_bytes());
    }

    fn fixed32(&mut self, field: u32, n: u32) {
        self.tag(field, 5);
        self.0.extend_from_slice(&n.to_le_bytes());
    }
}

/// `KeyValue { string key = 1; AnyValue value = 2; }`, `AnyValue { string_value = 1;
/// bool_value = 2; int_value = 3; }`.
fn key_value(key: &str, value: &Attr) -> Wire {
    let mut any = Wire::default();
    match value {
        Attr::Text(t) => any.bytes(1, t.as_bytes()),
        Attr::Bool(b) => {
            any.tag(2, 0);
            any.varint(u64::from(*b));
        }
        Attr::Int(i) => {
            any.tag(3, 0);
            any.varint(*i as u64);
        }
    }
    let mut kv = Wire::default();
    kv.bytes(1, key.as_bytes());
    kv.message(2, any);
    kv
}

/// The batch as OTLP protobuf.
pub fn protobuf(resource: &[(String, String)], spans: &[Span]) -> Vec<u8> {
    let mut scope_spans = Wire::default();
    let mut scope = Wire::default();
    scope.bytes(1, SCOPE.as_bytes());
    scope.bytes(2, env!("CARGO_PKG_VERSION").as_bytes());
    scope_spans.message(1, scope);
    for s in spans {
        let mut span = Wire::default();
        span.bytes(1, &s.trace_id);
        span.bytes(2, &s.span_id);
        if let Some(state) = &s.state {
            span.bytes(3, state.as_bytes());
        }
        if let Some(parent) = &s.parent {
            span.bytes(4, parent);
        }
        span.bytes(5, s.name.as_bytes());
        span.uint(6, u64::from(s.kind.number()));
        span.fixed64(7, s.start_ns);
        span.fixed64(8, s.end_ns);
        for (k, v) in &s.attributes {
            span.message(9, key_value(k, v));
        }
        // `Status { string message = 2; StatusCode code = 3; }`: unset, or error.
        let mut status = Wire::default();
        status.uint(3, if s.error { 2 } else { 0 });
        span.message(15, status);
        span.fixed32(16, flags(s, true));
        scope_spans.message(2, span);
    }
    let mut attributes = Wire::default();
    for (k, v) in resource {
        attributes.message(1, key_value(k, &Attr::Text(v.clone())));
    }
    let mut resource_spans = Wire::default();
    resource_spans.message(1, attributes);
    resource_spans.message(2, scope_spans);
    let mut request = Wire::default();
    request.message(1, resource_spans);
    request.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span() -> Span {
        let mut s = Span {
            trace_id: [0xab; 16],
            span_id: [0x01; 8],
            parent: Some([0x02; 8]),
            state: Some("a=1".into()),
            name: "tools/call crm.get_contact".into(),
            kind: Kind::Server,
            start_ns: 1_700_000_000_000_000_000,
            end_ns: 1_700_000_000_000_500_000,
            attributes: Vec::new(),
            error: true,
        };
        s.text("gen_ai.tool.name", "crm.get_contact");
        s.int("http.response.status_code", -1);
        s.bool("tool_broker.dry_run", false);
        s
    }

    #[test]
    fn json_is_the_otlp_json_mapping() {
        let body: Value =
            serde_json::from_slice(&json(&[("service.name".into(), "b".into())], &[span()]))
                .expect("json");
        let rs = &body["resourceSpans"][0];
        assert_eq!(
            rs["resource"]["attributes"][0],
            json!({"key": "service.name", "value": {"stringValue": "b"}})
        );
        let s = &rs["scopeSpans"][0]["spans"][0];
        assert_eq!(s["traceId"], "abababababababababababababababab");
        assert_eq!(s["spanId"], "0101010101010101");
        assert_eq!(s["parentSpanId"], "0202020202020202");
        assert_eq!(s["traceState"], "a=1");
        assert_eq!(s["kind"], 2);
        assert_eq!(s["startTimeUnixNano"], "1700000000000000000");
        assert_eq!(s["status"]["code"], 2);
        assert_eq!(s["flags"], 0x301);
        assert_eq!(s["attributes"][1]["value"], json!({"intValue": "-1"}));
        assert_eq!(s["attributes"][2]["value"], json!({"boolValue": false}));
    }

    /// Reads a protobuf message into (field, wire type, payload) by the wire format
    /// alone: a second reading of what the writer wrote.
    fn fields(mut b: &[u8]) -> Vec<(u32, u8, Vec<u8>)> {
        fn varint(b: &mut &[u8]) -> u64 {
            let mut n = 0u64;
            for shift in (0..64).step_by(7) {
                let byte = b[0];
                *b = &b[1..];
                n |= u64::from(byte & 0x7f) << shift;
                if byte < 0x80 {
                    break;
                }
            }
            n
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = varint(&mut b);
            let (field, wt) = ((key >> 3) as u32, (key & 7) as u8);
            let payload = match wt {
                0 => varint(&mut b).to_le_bytes().to_vec(),
                1 => {
                    let (v, rest) = b.split_at(8);
                    b = rest;
                    v.to_vec()
                }
                5 => {
                    let (v, rest) = b.split_at(4);
                    b = rest;
                    v.to_vec()
                }
                2 => {
                    let len = varint(&mut b) as usize;
                    let (v, rest) = b.split_at(len);
                    b = rest;
                    v.to_vec()
                }
                other => panic!("wire type {other}"),
            };
            out.push((field, wt, payload));
        }
        out
    }

    fn one(fields: &[(u32, u8, Vec<u8>)], field: u32) -> Vec<u8> {
        fields
            .iter()
            .find(|f| f.0 == field)
            .map(|f| f.2.clone())
            .expect("field present")
    }

    #[test]
    fn protobuf_puts_each_field_where_the_proto_numbers_it() {
        let body = protobuf(&[("service.name".into(), "b".into())], &[span()]);
        let request = fields(&body);
        let resource_spans = fields(&one(&request, 1));
        let resource = fields(&one(&resource_spans, 1));
        let kv = fields(&one(&resource, 1));
        assert_eq!(one(&kv, 1), b"service.name");
        let scope_spans = fields(&one(&resource_spans, 2));
        assert_eq!(fields(&one(&scope_spans, 1))[0].2, b"tool-broker");
        let s = fields(&one(&scope_spans, 2));
        assert_eq!(one(&s, 1), vec![0xab; 16]);
        assert_eq!(one(&s, 2), vec![0x01; 8]);
        assert_eq!(one(&s, 3), b"a=1");
        assert_eq!(one(&s, 4), vec![0x02; 8]);
        assert_eq!(one(&s, 5), b"tools/call crm.get_contact");
        assert_eq!(one(&s, 6)[0], 2);
        assert_eq!(one(&s, 7), 1_700_000_000_000_000_000u64.to_le_bytes());
        assert_eq!(one(&s, 16), 0x301u32.to_le_bytes());
        let attrs: Vec<_> = s.iter().filter(|f| f.0 == 9).collect();
        assert_eq!(attrs.len(), 3);
        let int = fields(&one(&fields(&attrs[1].2), 2));
        assert_eq!(int[0].0, 3);
        assert_eq!(int[0].2, (-1i64 as u64).to_le_bytes());
        let status = fields(&one(&s, 15));
        assert_eq!(status[0].0, 3);
        assert_eq!(status[0].2[0], 2);
    }
}
