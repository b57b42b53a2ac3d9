//! An MCP server's `CallToolResult` read into a tool's result: `structuredContent` is
//! `data`; else the content blocks, each text block parsed as JSON where it is JSON
//! (one block is the value itself, several an array), every other block (an image,
//! audio, a resource) summarized by its type, MIME type and size, never its bytes.
//! `isError` makes it a failure with the server's own text. The blocks that are not text
//! are kept whole beside it, for an `/mcp` caller.

use serde_json::{Map, Value, json};

/// A `CallToolResult`, read.
#[derive(Debug)]
pub struct Read {
    /// The result's data.
    pub data: Value,
    /// The server's text when it says the tool failed (`isError`).
    pub failed: Option<String>,
    /// The blocks that are not text, whole (an `/mcp` caller gets them as they came).
    pub blocks: Vec<Value>,
}

/// Reads a `CallToolResult`.
pub fn read(mut result: Value) -> Read {
    let failed = result.get("isError") == Some(&Value::Bool(true));
    let blocks = match result.get_mut("content").map(Value::take) {
        Some(Value::Array(blocks)) => blocks,
        _ => Vec::new(),
    };
    let text: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let failed = failed.then(|| {
        let said = text.join("\n");
        if said.is_empty() {
            "the tool failed and said nothing more".to_string()
        } else {
            said
        }
    });
    let kept: Vec<Value> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) != Some("text"))
        .cloned()
        .collect();
    let data = match result.get_mut("structuredContent").map(Value::take) {
        Some(structured) if !structured.is_null() => structured,
        _ => from_blocks(blocks),
    };
    Read {
        data,
        failed,
        blocks: kept,
    }
}

/// The data of content blocks.
fn from_blocks(blocks: Vec<Value>) -> Value {
    let mut out: Vec<Value> = blocks.into_iter().map(block).collect();
    match out.len() {
        0 => Value::Null,
        1 => out.pop().unwrap_or(Value::Null),
        _ => Value::Array(out),
    }
}

/// One block: text parsed where it is JSON, else kept as text; any other kind
/// summarized.
fn block(block: Value) -> Value {
    let Value::Object(mut map) = block else {
        return Value::Null;
    };
    let kind = map
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    if kind == "text" {
        let text = match map.remove("text") {
            Some(Value::String(text)) => text,
            _ => return Value::Null,
        };
        let trimmed = text.trim_start();
        if trimmed.starts_with(['{', '['])
            && let Ok(value) = serde_json::from_str::<Value>(&text)
        {
            return value;
        }
        return Value::String(text);
    }
    let mut summary = Map::new();
    summary.insert("type".into(), json!(kind));
    if let Some(mime) = map
        .get("mimeType")
        .or_else(|| map.get("resource").and_then(|r| r.get("mimeType")))
    {
        summary.insert("mimeType".into(), mime.clone());
    }
    if let Some(Value::String(data)) = map.get("data") {
        // Base64: three bytes for every four characters, less the padding.
        let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
        summary.insert(
            "bytes".into(),
            json!((data.len() / 4 * 3).saturating_sub(padding)),
        );
    }
    if let Some(uri) = map
        .get("uri")
        .or_else(|| map.get("resource").and_then(|r| r.get("uri")))
    {
        summary.insert("uri".into(), uri.clone());
    }
    if let Some(text) = map.get("resource").and_then(|r| r.get("text")) {
        summary.insert("text".into(), text.clone());
    }
    Value::Object(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_read() {
        let r = read(
            json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"b": 2}}),
        );
        assert_eq!((r.data, r.failed), (json!({"b": 2}), None));
        let r = read(json!({"content": [{"type": "text", "text": "{\"a\":1}"}]}));
        assert_eq!(r.data, json!({"a": 1}));
        let r = read(json!({"content": [{"type": "text", "text": "Echo: hi"}]}));
        assert_eq!(r.data, json!("Echo: hi"));
        let r = read(json!({"content": [
            {"type": "text", "text": "a tiny image"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"}
        ]}));
        assert_eq!(
            r.data,
            json!(["a tiny image", {"type": "image", "mimeType": "image/png", "bytes": 3}])
        );
        assert_eq!(
            r.blocks,
            vec![json!({"type": "image", "mimeType": "image/png", "data": "AAAA"})]
        );
        let r =
            read(json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}));
        assert_eq!(r.failed.as_deref(), Some("no such file"));
        let r = read(json!({}));
        assert_eq!(r.data, Value::Null);
    }
}
