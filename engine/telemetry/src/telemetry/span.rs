//! A finished span as the exporter encodes it. Attribute values are what the broker
//! chose to say about a call (names, classes, statuses), never an argument value, a key,
//! a token or a header value: nothing here is read from a request but the tool's name,
//! the request id and the caller's name. Ids are written as lower-case hex ([`hex`]).

/// Whom a span stands for (OTLP `SpanKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The broker serving a call.
    Server,
    /// The broker's request to an upstream.
    Client,
}

impl Kind {
    /// OTLP's number for the kind.
    pub fn number(self) -> u32 {
        match self {
            Self::Server => 2,
            Self::Client => 3,
        }
    }
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Text.
    Text(String),
    /// A whole number.
    Int(i64),
    /// Yes or no.
    Bool(bool),
}

/// A finished span.
#[derive(Debug, Clone)]
pub struct Span {
    /// Trace id.
    pub trace_id: [u8; 16],
    /// This span's id.
    pub span_id: [u8; 8],
    /// The span it is a child of, when any.
    pub parent: Option<[u8; 8]>,
    /// The caller's `tracestate`.
    pub state: Option<String>,
    /// Name (`tools/call <tool>`, `GET /v1/customers/{id}`).
    pub name: String,
    /// Server or client.
    pub kind: Kind,
    /// Start, nanoseconds since the Unix epoch.
    pub start_ns: u64,
    /// End, nanoseconds since the Unix epoch.
    pub end_ns: u64,
    /// Attributes, in the order they were set.
    pub attributes: Vec<(&'static str, Value)>,
    /// The span ended in an error (status code `ERROR`; the class is in `error.type`).
    pub error: bool,
}

impl Span {
    /// Sets a text attribute.
    pub fn text(&mut self, key: &'static str, value: impl Into<String>) {
        self.attributes.push((key, Value::Text(value.into())));
    }

    /// Sets a number attribute.
    pub fn int(&mut self, key: &'static str, value: i64) {
        self.attributes.push((key, Value::Int(value)));
    }

    /// Sets a yes-or-no attribute.
    pub fn bool(&mut self, key: &'static str, value: bool) {
        self.attributes.push((key, Value::Bool(value)));
    }
}

/// Lower-case hex of `bytes` (`format!("{:02x}")` per byte, at a tenth of its cost).
pub fn hex(bytes: &[u8]) -> String {
    let mut out = vec![0u8; bytes.len() * 2];
    hex_into(bytes, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// Writes lower-case hex of `bytes` into `out` (two bytes each; `out` as long as that).
pub fn hex_into(bytes: &[u8], out: &mut [u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        if let [high, low] = pair {
            *high = HEX[usize::from(b >> 4)];
            *low = HEX[usize::from(b & 0xf)];
        }
    }
}
