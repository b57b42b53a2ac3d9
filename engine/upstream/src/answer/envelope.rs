//! The two exact envelopes of the contract (docs/contract.md, decision 002) and the one place that turns
//! a [`CallError`] into a response. Their JSON Schemas are committed in `schemas/`
//! (`additionalProperties: false`) and every envelope the tests see is validated
//! against them.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use crate::catalog::rules::Rules;
use crate::error::CallError;

/// Safe metadata of a standard envelope. Never a header value, key or token.
///
/// Serialised as the struct, in place in its envelope ([`Enveloped::meta`]); the fields are
/// declared in the order of their JSON names, so the text is the one a `Value` (whose
/// keys are sorted) gave.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// An MCP server's content blocks that are not text (images, audio, resources),
    /// kept whole for an `/mcp` caller's `CallToolResult.content`; never in the
    /// envelope, whose `data` summarizes them.
    #[serde(skip)]
    pub content: Option<Box<[Value]>>,
    /// The service's catalog version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_version: Option<Arc<str>>,
    /// Present (`true`) when the tool consumes upstream credits (class `spend` or
    /// `credits`), also on previews and failures.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub consumes_credits: bool,
    /// What a priced call cost (docs/budgets.md): its estimate and, once settled, the
    /// actual charge, each `{ "<unit>": n }`. Boxed: most calls are unpriced, and a
    /// meta moves by value through the call path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Box<Cost>>,
    /// The tool's descriptor hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub descriptor_hash: Option<Arc<str>>,
    /// The raw tool a wrapper ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispatched_to: Option<String>,
    /// Whether this was a dry-run preview.
    pub dry_run: bool,
    /// Time spent in the broker and upstream, in milliseconds.
    pub duration_ms: u64,
    /// The guard rules that acted on the call's arguments or its answer, by id (never a
    /// value; docs/guards.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<Arc<str>>,
    /// Pagination figures copied from the upstream answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pagination: Option<Value>,
    /// How many values redaction replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redacted: Option<usize>,
    /// The JSON-RPC id, as a string.
    pub request_id: String,
    /// Service id, when the tool resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<Arc<str>>,
    /// Catalog snapshot id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<Arc<str>>,
    /// Full tool name, when the tool resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<Arc<str>>,
    /// The broker's trace id for this call.
    pub trace_id: String,
    /// Lists cut to the item budget: `{ pointer, returned, total }` each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub truncation: Vec<Truncation>,
    /// The upstream HTTP status, when the upstream answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_status: Option<u16>,
}

impl Meta {
    /// Appends the JSON text of `meta`, byte for byte what its `Serialize` writes (the
    /// fields in order, the same ones left out), with the keys written as constants and
    /// the strings escaped by [`write_json_string`]: through serde, the keys and values
    /// were escaped a byte at a time, 3.7k instructions per call (2026-11-25).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        let mut fields = Fields { out, first: true };
        if let Some(v) = &self.catalog_version {
            fields.string(b"catalogVersion", v);
        }
        if self.consumes_credits {
            fields.raw(b"consumesCredits", b"true");
        }
        if let Some(v) = &self.cost {
            fields.serialized(b"cost", v);
        }
        if let Some(v) = &self.descriptor_hash {
            fields.string(b"descriptorHash", v);
        }
        if let Some(v) = &self.dispatched_to {
            fields.string(b"dispatchedTo", v);
        }
        fields.raw(b"dryRun", if self.dry_run { b"true" } else { b"false" });
        fields.serialized(b"durationMs", &self.duration_ms);
        if !self.guards.is_empty() {
            fields.serialized(b"guards", &self.guards);
        }
        if let Some(v) = &self.pagination {
            fields.serialized(b"pagination", v);
        }
        if let Some(v) = &self.redacted {
            fields.serialized(b"redacted", v);
        }
        fields.string(b"requestId", &self.request_id);
        if let Some(v) = &self.service {
            fields.string(b"service", v);
        }
        if let Some(v) = &self.snapshot_id {
            fields.string(b"snapshotId", v);
        }
        if let Some(v) = &self.tool {
            fields.string(b"tool", v);
        }
        fields.string(b"traceId", &self.trace_id);
        if !self.truncation.is_empty() {
            fields.serialized(b"truncation", &self.truncation);
        }
        if let Some(v) = &self.upstream_status {
            fields.serialized(b"upstreamStatus", v);
        }
        fields.out.push(b'}');
    }
}

/// `meta.cost`: a priced call's estimate and, once settled, its actual charge, in its
/// one unit. An estimate the arguments could not give (an absent amount, another
/// currency) is `null`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cost {
    /// The unit (`credits`).
    pub unit: Arc<str>,
    /// Units estimated before the call (`None`: unpriced).
    pub estimate: Option<u64>,
    /// Units charged once the call ran (`None`: not settled; a preview).
    pub actual: Option<u64>,
    /// In a preview: each budget binding the call, with what it holds now and what it
    /// would hold after the call (empty otherwise, and then not written).
    pub budgets: Vec<Room>,
}

/// A budget binding a previewed call (`meta.cost.budgets[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Room {
    /// The budget's name.
    pub name: String,
    /// The unit it counts.
    pub unit: String,
    /// Units its window holds.
    pub limit: u64,
    /// Units spent or reserved in the current window.
    pub used: u64,
    /// Units left now.
    pub remaining: u64,
    /// Units left after this call, were it to run (0 when it would not fit).
    pub would_remain: u64,
    /// Whether the call fits: run now, it would be admitted under this budget.
    pub fits: bool,
    /// When the window resets (RFC 3339, UTC).
    pub resets_at: String,
}

impl Serialize for Cost {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct One<'a>(&'a str, Option<u64>);
        impl Serialize for One<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(self.0, &self.1)?;
                map.end()
            }
        }
        let mut map = s.serialize_map(None)?;
        if let Some(actual) = self.actual {
            map.serialize_entry("actual", &One(&self.unit, Some(actual)))?;
        }
        map.serialize_entry("estimate", &One(&self.unit, self.estimate))?;
        if !self.budgets.is_empty() {
            map.serialize_entry("budgets", &self.budgets)?;
        }
        map.end()
    }
}

/// An object being written by hand: its members, each after a comma but the first.
struct Fields<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl Fields<'_> {
    /// `"key":` after the right separator. Keys are plain names (nothing to escape).
    fn key(&mut self, key: &[u8]) {
        if !std::mem::take(&mut self.first) {
            self.out.push(b',');
        }
        self.out.push(b'"');
        self.out.extend_from_slice(key);
        self.out.extend_from_slice(b"\":");
    }

    fn raw(&mut self, key: &[u8], text: &[u8]) {
        self.key(key);
        self.out.extend_from_slice(text);
    }

    fn string(&mut self, key: &[u8], text: &str) {
        self.key(key);
        write_json_string(self.out, text.as_bytes());
    }

    fn serialized(&mut self, key: &[u8], value: &impl Serialize) {
        self.key(key);
        // Serialising into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut *self.out, value);
    }
}

/// One truncated list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Truncation {
    /// JSON pointer of the list inside `data`.
    pub pointer: String,
    /// Items kept.
    pub returned: usize,
    /// Items the upstream returned.
    pub total: usize,
}

/// A call's envelope with its HTTP status and extra headers: what a call endpoint makes
/// a reply of (`reply::Reply`, in broker-core).
#[derive(Debug, Clone)]
pub struct Enveloped {
    /// HTTP status.
    pub status: u16,
    /// The envelope, without the fields kept apart: `meta` when [`Enveloped::meta`] holds
    /// it, `data` when [`Enveloped::data`] does, `error` and `ok` when
    /// [`Enveloped::ok_members`] says so. Readers ask [`Enveloped::envelope`] for the whole
    /// `Value`, [`Enveloped::is_ok`] for `ok`, or [`Enveloped::to_json`] for the text.
    pub body: Value,
    /// A standard envelope's `meta`, kept as the struct and written in its place when the
    /// envelope is serialised ([`Enveloped::to_json`]): built as a `Value` it cost a tree
    /// of a dozen strings per call, built, written and dropped.
    pub meta: Option<Box<Meta>>,
    /// A result kept as JSON text, written in place of `data` (which `body` then lacks).
    /// Always whole JSON: a local answer written from a `Value`, or an upstream answer
    /// written in one pass ([`crate::answer::scan`]).
    pub data: Option<Arc<str>>,
    /// A standard success's constant members, `"error":null` and `"ok":true`, kept apart
    /// from `body` (which then lacks them) and written in their places: put in `body`
    /// they cost a map of two strings per call, built, written and dropped.
    pub ok_members: bool,
    /// Extra headers (e.g. `Retry-After`).
    pub headers: Vec<(&'static str, String)>,
}

impl Enveloped {
    /// The envelope's JSON text: `body` with the fields kept apart written in their
    /// places, keys in the order a `Value` keeps them.
    pub fn to_json(&self) -> Vec<u8> {
        let mut next = self.kept_apart().peekable();
        let map = match &self.body {
            Value::Object(map) if next.peek().is_some() => map,
            // Serialising a `Value` into a `Vec` cannot fail.
            body => return serde_json::to_vec(body).unwrap_or_default(),
        };
        let text = self.data.as_ref().map_or(0, |d| d.len());
        let mut out = Vec::with_capacity(text + 512);
        out.push(b'{');
        for (key, value) in map {
            while let Some((name, field)) = next.next_if(|(name, _)| *name < key.as_str()) {
                entry(&mut out, name, |out| field.write(out));
            }
            entry(&mut out, key, |out| {
                let _ = serde_json::to_writer(out, value);
            });
        }
        for (name, field) in next {
            entry(&mut out, name, |out| field.write(out));
        }
        out.push(b'}');
        out
    }

    /// Whether the envelope says `"ok": true`.
    pub fn is_ok(&self) -> bool {
        self.ok_members || self.body.get("ok") == Some(&Value::Bool(true))
    }

    /// The whole envelope as a `Value` (for readers that look into it).
    pub fn envelope(&self) -> Value {
        let mut body = self.body.clone();
        if let Value::Object(map) = &mut body {
            for (key, value) in self.kept_apart() {
                map.insert(key.into(), value.value());
            }
        }
        body
    }

    /// The fields kept apart from `body`, by name in order.
    fn kept_apart(&self) -> impl Iterator<Item = (&'static str, Apart<'_>)> {
        let ok = self.ok_members;
        [
            self.data.as_deref().map(|data| ("data", Apart::Text(data))),
            ok.then_some(("error", Apart::Raw("null"))),
            self.meta.as_deref().map(|meta| ("meta", Apart::Meta(meta))),
            ok.then_some(("ok", Apart::Raw("true"))),
        ]
        .into_iter()
        .flatten()
    }
}

/// What a byte becomes inside a JSON string, as serde_json writes it: 0 (itself), `u`
/// (`\u00XX`), or the letter after the backslash.
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Appends `text` as a JSON string, byte for byte as `serde_json::to_writer` writes it:
/// for a long text with many quotes (an envelope carried as MCP `content[0].text`) and
/// the short strings of `meta`. The text is UTF-8 (bytes from 0x80 up are copied as
/// they are), taken as bytes so a text just written as bytes is not checked again.
///
/// 32 bytes at a time: a mask of the bytes to escape (`escape_mask`, vectorised); a
/// block with none is copied whole, one with some is written through `Spill`, each run
/// between escapes copied as one fixed-size load and store. For a 717-byte envelope with
/// about a hundred quotes: 5.2k instructions, from 8.7k plus 1.9k in copy calls when the
/// mask was built a byte at a time and each run was copied by a call (2026-11-25; a block
/// written byte by byte measured 10k, word arithmetic for the mask 9.7k, 2026-11-24).
pub fn write_json_string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + bytes.len() / 8 + 2);
    out.push(b'"');
    let mut spill: Option<Spill> = None;
    for block in bytes.chunks(32) {
        let mask = escape_mask(block);
        if mask == 0 {
            out.extend_from_slice(block);
        } else {
            escape_marked(out, spill.get_or_insert_with(Spill::new), block, mask);
        }
    }
    out.push(b'"');
}

/// Bit `i` set where byte `i` of a block of up to 32 bytes is escaped. The bytes are
/// marked 0 or 1 in a loop the compiler vectorises, then packed 8 at a time by one
/// multiplication: each mark lands on its own bit of the top byte, and no two partial
/// products meet.
fn escape_mask(block: &[u8]) -> u32 {
    let mut marks = [0u8; 32];
    for (mark, &b) in marks.iter_mut().zip(block) {
        // The bytes `ESCAPE` marks, as comparisons (a table lookup is not vectorised).
        *mark = u8::from(b < 0x20 || b == b'"' || b == b'\\');
    }
    let mut mask = 0u32;
    for (i, eight) in marks.chunks_exact(8).enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(eight);
        let packed = u64::from_le_bytes(word).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        mask |= (packed as u32) << (8 * i);
    }
    mask
}

/// Room to write one block of up to 32 bytes escaped, with each run between escapes
/// copied as a whole 32-byte load and store (no copy call for a run of a few bytes); what
/// a run copies past its end is written over by what follows. Every index stays inside:
/// a run starts at most 32 bytes into `block` (so reads end by byte 63), and the text
/// written before a copy is at most 6 bytes per byte read (192, so writes end by 224).
struct Spill {
    /// The block, then 32 bytes of slack a run's copy may read.
    block: [u8; 64],
    /// The escaped text: at most 32 x 6 bytes, then slack for the last copy.
    text: [u8; 32 * 6 + 64],
}

impl Spill {
    fn new() -> Self {
        Spill {
            block: [0; 64],
            text: [0; 32 * 6 + 64],
        }
    }
}

/// Appends a block of up to 32 bytes whose escaped bytes `mask` marks.
fn escape_marked(out: &mut Vec<u8>, spill: &mut Spill, block: &[u8], mut mask: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let Spill {
        block: at_hand,
        text,
    } = spill;
    let len = block.len().min(32);
    at_hand[..len].copy_from_slice(&block[..len]);
    let (mut n, mut from) = (0, 0);
    while mask != 0 {
        let at = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        text[n..n + 32].copy_from_slice(&at_hand[from..from + 32]);
        n += at - from;
        let b = at_hand[at];
        match ESCAPE[usize::from(b)] {
            b'u' => {
                text[n..n + 6].copy_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 0xf)],
                ]);
                n += 6;
            }
            letter => {
                text[n] = b'\\';
                text[n + 1] = letter;
                n += 2;
            }
        }
        from = at + 1;
    }
    text[n..n + 32].copy_from_slice(&at_hand[from..from + 32]);
    n += len - from;
    out.extend_from_slice(&text[..n]);
}

/// Appends `"key":value` to an object being written in `out`, after a comma unless it
/// is the first member.
fn entry(out: &mut Vec<u8>, key: &str, value: impl FnOnce(&mut Vec<u8>)) {
    if out.last() != Some(&b'{') {
        out.push(b',');
    }
    let _ = serde_json::to_writer(&mut *out, key);
    out.push(b':');
    value(out);
}

/// A field kept apart from a response's body.
enum Apart<'a> {
    /// A standard envelope's `meta`.
    Meta(&'a Meta),
    /// A result's JSON text.
    Text(&'a str),
    /// A constant member's JSON text.
    Raw(&'static str),
}

impl Apart<'_> {
    /// Appends the field's JSON text.
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            // Serialising a `Meta` into a `Vec` cannot fail.
            Apart::Meta(meta) => meta.write_json(out),
            Apart::Text(text) | Apart::Raw(text) => out.extend_from_slice(text.as_bytes()),
        }
    }

    /// The field as a `Value`.
    fn value(&self) -> Value {
        match self {
            Apart::Meta(meta) => serde_json::to_value(meta).unwrap_or_default(),
            // The text is whole JSON (see `Enveloped::data`).
            Apart::Text(text) | Apart::Raw(text) => serde_json::from_str(text).unwrap_or_default(),
        }
    }
}

/// The error object of both envelopes.
pub fn error_object(err: &CallError, rules: &Rules) -> Value {
    let mut obj = json!({
        "classification": err.classification.as_str(),
        "message": err.message,
        "retryable": rules.retryable(err.classification),
    });
    if let Some(map) = obj.as_object_mut() {
        if let Some(d) = &err.details {
            map.insert("details".into(), d.clone());
        }
        if let Some(s) = err.upstream_status {
            map.insert("upstreamStatus".into(), json!(s));
        }
        if let Some(s) = err.retry_after_seconds {
            map.insert("retryAfterSeconds".into(), json!(s));
        }
    }
    obj
}

/// The headers an error answer carries: `Retry-After`, `WWW-Authenticate`.
fn retry_headers(err: &CallError) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    if let Some(s) = err.retry_after_seconds {
        headers.push(("retry-after", s.to_string()));
    }
    if let Some(challenge) = &err.challenge {
        headers.push(("www-authenticate", challenge.clone()));
    }
    headers
}

/// A standard success envelope.
pub fn standard_ok(data: Value, meta: Meta) -> Enveloped {
    Enveloped {
        status: 200,
        body: object([
            ("ok", Value::Bool(true)),
            ("data", data),
            ("error", Value::Null),
        ]),
        meta: Some(Box::new(meta)),
        data: None,
        ok_members: false,
        headers: Vec::new(),
    }
}

/// A success envelope of a tool's result, in whichever form it has.
pub fn standard_ok_data(data: Data, meta: Meta) -> Enveloped {
    match data {
        Data::Value(value) => standard_ok(value, meta),
        Data::Text(text) => standard_ok_text(text, meta),
    }
}

/// A standard success envelope whose `data` is kept as JSON text (an answer written in
/// one pass, [`crate::answer::scan`]) and written in place by [`Enveloped::to_json`].
pub fn standard_ok_text(data: Arc<str>, meta: Meta) -> Enveloped {
    Enveloped {
        status: 200,
        body: Value::Object(serde_json::Map::new()),
        meta: Some(Box::new(meta)),
        data: Some(data),
        ok_members: true,
        headers: Vec::new(),
    }
}

/// A JSON object of `fields`, each value moved in. (`json!` would copy every value
/// through serde: for a tool's data, a second build of the whole answer per call.)
pub fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect(),
    )
}

/// A standard failure envelope with the classification's status.
pub fn standard_err(err: &CallError, meta: Meta, rules: &Rules) -> Enveloped {
    Enveloped {
        status: rules.status(err.classification),
        body: object([
            ("ok", Value::Bool(false)),
            ("data", Value::Null),
            ("error", error_object(err, rules)),
        ]),
        meta: Some(Box::new(meta)),
        data: None,
        ok_members: false,
        headers: retry_headers(err),
    }
}

/// A tool's result: a value, or JSON text written once and passed through as it is.
/// Read only through its methods, so text is never taken for a value nor a value
/// lost beside text.
#[derive(Debug, Clone)]
pub enum Data {
    /// A `serde_json` value (what hooks and the tree path build).
    Value(Value),
    /// Whole JSON text: a local answer built once and kept
    /// (`portal.check_connection`), or an upstream answer written in one pass
    /// ([`crate::answer::scan`]). The envelope writes it out as it is.
    Text(Arc<str>),
}

impl Default for Data {
    fn default() -> Self {
        Self::Value(Value::Null)
    }
}

impl From<Value> for Data {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

impl Data {
    /// The result as a value, for a reader that looks into it: text is parsed once
    /// and kept as the value.
    pub fn value_mut(&mut self) -> &mut Value {
        if let Self::Text(text) = self {
            // Whole JSON, written from a `Value` or by `scan`: it always parses.
            *self = Self::Value(serde_json::from_str(text).unwrap_or_default());
        }
        match self {
            Self::Value(value) => value,
            // Made a value just above: this arm is never taken (and ends at once if it were).
            Self::Text(_) => self.value_mut(),
        }
    }

    /// The result as a value, whichever form it has.
    pub fn into_value(self) -> Value {
        match self {
            Self::Value(value) => value,
            Self::Text(text) => serde_json::from_str(&text).unwrap_or_default(),
        }
    }
}

/// The fields of a portal envelope.
#[derive(Debug, Clone, Default)]
pub struct Portal {
    /// Service the call concerned.
    pub service_id: String,
    /// Tool name (without service prefix for portal tools, as called).
    pub tool_name: String,
    /// Trace id.
    pub trace_id: String,
    /// One-line summary.
    pub summary: String,
    /// Tool result (a value, or JSON text written out as it is).
    pub data: Data,
    /// The resource acted on, or null.
    pub resource: Value,
    /// Pagination, or null.
    pub pagination: Value,
    /// What to do next, or null.
    pub next_action: Option<String>,
}

/// A portal envelope: success when `err` is `None`.
pub fn portal(p: Portal, err: Option<&CallError>, rules: &Rules) -> Enveloped {
    let (status, error, headers) = match err {
        None => (200, Value::Null, Vec::new()),
        Some(e) => (
            rules.status(e.classification),
            error_object(e, rules),
            retry_headers(e),
        ),
    };
    let (data, data_text) = match p.data {
        _ if err.is_some() => (Value::Null, None),
        Data::Value(value) => (value, None),
        Data::Text(text) => (Value::Null, Some(text)),
    };
    let mut body = object([
        ("ok", Value::Bool(err.is_none())),
        ("serviceId", Value::String(p.service_id)),
        ("toolName", Value::String(p.tool_name)),
        ("traceId", Value::String(p.trace_id)),
        ("summary", Value::String(p.summary)),
        ("data", data),
        ("resource", p.resource),
        ("pagination", p.pagination),
        (
            "nextAction",
            p.next_action.map_or(Value::Null, Value::String),
        ),
        ("error", error),
    ]);
    if let (Some(_), Value::Object(map)) = (&data_text, &mut body) {
        // Written in place from its text (`Enveloped::data`).
        map.remove("data");
    }
    Enveloped {
        status,
        meta: None,
        data: data_text,
        body,
        ok_members: false,
        headers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::Strategy as _;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// Differential oracle any text, at any length and alignment against
        /// the 32-byte blocks, escapes byte for byte as serde_json escapes it, and reads
        /// back as itself.
        #[test]
        fn any_text_escapes_as_serde_json_escapes_it(
            text in proptest::prop_oneof![
                proptest::string::string_regex("(?s).{0,80}").unwrap_or_else(|_| unreachable!()),
                proptest::string::string_regex("[\\x00-\\x7f\"\\\\]{0,100}").unwrap_or_else(|_| unreachable!()),
                proptest::collection::vec(proptest::sample::select(vec!['a', '"', '\\', '\n', '\u{1}', '\u{7f}', 'é', '😀', '\u{2028}']), 0..120)
                    .prop_map(|c| c.into_iter().collect::<String>()),
            ],
        ) {
            let mut out = Vec::new();
            write_json_string(&mut out, text.as_bytes());
            let expected = serde_json::to_string(&text).unwrap_or_default();
            proptest::prop_assert_eq!(std::str::from_utf8(&out).ok(), Some(expected.as_str()));
            proptest::prop_assert_eq!(serde_json::from_slice::<String>(&out).ok(), Some(text));
        }
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let every_ascii: String = (0u8..128).map(char::from).collect();
        let texts = [
            String::new(),
            "plain".into(),
            r#"{"ok":true,"data":{"name":"a\"b\\c","list":[1,2]},"meta":{"requestId":"7"}}"#.into(),
            "\"\"\\\\".into(),
            "tab\there, line\nend\r\u{8}\u{c}\u{0}\u{1f}\u{7f}".into(),
            "é ✓ 😀 \u{2028}".into(),
            every_ascii.repeat(3),
            // A block with quotes and control characters both, at its edges.
            format!("\u{1}{}\"{}\n", "c".repeat(29), "d".repeat(31)),
            // Escapes at the first and last byte of a 32-byte block, and a block of them.
            format!(
                "{}\"{}\\{}",
                "a".repeat(31),
                "b".repeat(32),
                "\"".repeat(40)
            ),
        ];
        // A quote, a backslash and a control character at every place in a block.
        let placed = (0..33).map(|k| {
            format!(
                "{}\"{}\\{}\u{1f}",
                "a".repeat(k),
                "b".repeat(k),
                "c".repeat(k)
            )
        });
        for text in texts.into_iter().chain(placed) {
            let mut ours = b"x".to_vec();
            write_json_string(&mut ours, text.as_bytes());
            let mut theirs = b"x".to_vec();
            serde_json::to_writer(&mut theirs, &text).unwrap();
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(theirs).unwrap()
            );
        }
    }

    /// `meta` written by hand is what serde writes from the struct, byte for byte: every
    /// field left out and given, strings that need escaping, numbers at their edges.
    #[test]
    fn meta_written_by_hand_matches_serde() {
        let odd = "q\"b\\c\u{1}\n\u{7f} é 😀 ".repeat(5);
        let mut metas = vec![Meta::default()];
        for n in [0, 9, 10, 99, 12_345, u64::MAX] {
            metas.push(Meta {
                content: None,
                catalog_version: Some("2026-11-23.2".into()),
                consumes_credits: true,
                cost: Some(Box::new(Cost {
                    unit: "credits".into(),
                    estimate: (n % 3 != 0).then_some(n),
                    actual: (n % 2 == 0).then_some(n / 2),
                    budgets: Vec::new(),
                })),
                descriptor_hash: Some("ab".repeat(32).into()),
                dispatched_to: Some(odd.clone()),
                dry_run: n % 2 == 1,
                duration_ms: n,
                guards: vec!["card".into(), "invisible-characters".into()],
                pagination: Some(json!({ "next": odd, "total": n })),
                redacted: Some(n as usize),
                request_id: odd.clone(),
                service: Some("hosting".into()),
                snapshot_id: Some("catalog-232e84f246c556ac".into()),
                tool: Some("hosting.billing_get_catalog_item_list_v1".into()),
                trace_id: format!("{n:032x}"),
                truncation: vec![Truncation {
                    pointer: "/items".into(),
                    returned: 3,
                    total: n as usize,
                }],
                upstream_status: Some(u16::try_from(n % 600).unwrap()),
            });
        }
        let full = metas[1].clone();
        // Each optional field left out on its own.
        let mut one_out: Vec<Meta> = Vec::new();
        for k in 0..11 {
            let mut m = full.clone();
            match k {
                10 => m.guards.clear(),
                9 => m.cost = None,
                0 => m.catalog_version = None,
                1 => m.consumes_credits = false,
                2 => m.descriptor_hash = None,
                3 => m.dispatched_to = None,
                4 => m.pagination = None,
                5 => m.redacted = None,
                6 => m.truncation.clear(),
                7 => m.upstream_status = None,
                _ => (m.service, m.snapshot_id, m.tool) = (None, None, None),
            }
            one_out.push(m);
        }
        for meta in metas.iter().chain(&one_out) {
            let mut ours = b"x".to_vec();
            meta.write_json(&mut ours);
            let mut theirs = b"x".to_vec();
            serde_json::to_writer(&mut theirs, meta).unwrap();
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(theirs).unwrap()
            );
        }
    }

    /// Moving the data in gives the same envelope, byte for byte, as building it
    /// with `json!` did.
    #[test]
    fn envelopes_built_by_moving_match_the_json_macro() {
        let data = json!({"items": [{"id": 1, "name": "a\"b"}], "total": 1});
        let meta = Meta {
            request_id: "7".into(),
            trace_id: "t".into(),
            tool: Some("hosting.x".into()),
            upstream_status: Some(200),
            ..Meta::default()
        };
        let ok = standard_ok(data.clone(), meta.clone());
        let expected = json!({ "ok": true, "data": data, "meta": meta, "error": null });
        assert_eq!(ok.envelope().to_string(), expected.to_string());
        // Written with `meta` in place: the same text as the whole `Value`.
        assert_eq!(
            String::from_utf8(ok.to_json()).unwrap(),
            expected.to_string()
        );
        // `data` as text and the constant members kept apart: the same text and value.
        let as_text = standard_ok_text(Arc::from(data.to_string()), meta.clone());
        assert_eq!(
            String::from_utf8(as_text.to_json()).unwrap(),
            expected.to_string()
        );
        assert_eq!(as_text.envelope(), expected);
        assert!(as_text.is_ok() && ok.is_ok());

        let catalog =
            crate::catalog::compile::compile(&crate::catalog::source::Sources::embedded())
                .unwrap_or_else(|d| panic!("{d}"));
        let rules = &catalog.rules;
        let err = CallError::new(crate::error::Classification::Forbidden, "not granted");
        let mut meta = meta;
        meta.truncation = vec![Truncation {
            pointer: "/items".into(),
            returned: 1,
            total: 3,
        }];
        meta.pagination = Some(json!({"next": "b", "count": 3}));
        let failed = standard_err(&err, meta.clone(), rules);
        let expected =
            json!({ "ok": false, "data": null, "meta": meta, "error": error_object(&err, rules) });
        assert_eq!(failed.envelope().to_string(), expected.to_string());
        assert_eq!(
            String::from_utf8(failed.to_json()).unwrap(),
            expected.to_string()
        );
        assert!(!failed.is_ok());

        let p = Portal {
            service_id: "portal".into(),
            tool_name: "check_connection".into(),
            trace_id: "t".into(),
            summary: "ok".into(),
            data: Data::Value(data.clone()),
            resource: Value::Null,
            pagination: json!({"page": 1}),
            next_action: Some("call x".into()),
        };
        let as_text = Portal {
            data: Data::Text(Arc::from(data.to_string())),
            ..p.clone()
        };
        let portal = portal(p.clone(), None, rules);
        assert_eq!(portal.to_json(), serde_json::to_vec(&portal.body).unwrap());
        // A result kept as text is written in its place: the same text, the same value.
        let as_text = super::portal(as_text, None, rules);
        assert!(as_text.body.get("data").is_none());
        assert_eq!(as_text.to_json(), portal.to_json());
        assert_eq!(as_text.envelope(), portal.body);
        let body = portal.body;
        let expected = json!({
            "ok": true, "serviceId": p.service_id, "toolName": p.tool_name,
            "traceId": p.trace_id, "summary": p.summary, "data": data,
            "resource": p.resource, "pagination": p.pagination,
            "nextAction": p.next_action, "error": null,
        });
        assert_eq!(body.to_string(), expected.to_string());
    }
}
