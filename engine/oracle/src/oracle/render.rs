//! Request mapping with hostile arguments: any tool of the embedded catalog, given any
//! values under its own argument names (unvalidated, which the real path never does),
//! renders or refuses. No panic (the fuzzer's crash), no endless template (its
//! timeout): minijinja's fuel bounds every template.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::Verdict;
use crate::catalog::template::Scope;
use crate::catalog::{Action, Catalog, HttpPlan, Tool};

/// The embedded catalog's HTTP tools, compiled once.
fn tools() -> Option<&'static (Catalog, Vec<usize>)> {
    static TOOLS: OnceLock<Option<(Catalog, Vec<usize>)>> = OnceLock::new();
    TOOLS
        .get_or_init(|| {
            let catalog =
                crate::catalog::compile::compile(&crate::catalog::source::Sources::embedded())
                    .ok()?;
            let http = (0..catalog.tools.len())
                .filter(|i| matches!(catalog.tools[*i].action, Action::Http(_)))
                .collect();
            Some((catalog, http))
        })
        .as_ref()
}

/// `bytes`: two bytes pick the tool; the rest is the arguments (a JSON object as it
/// is, else the text under each of the tool's argument names).
pub fn hostile(bytes: &[u8]) -> Verdict {
    let Some((catalog, http)) = tools() else {
        return Err("the embedded catalog does not compile".into());
    };
    let (pick, rest) = match bytes {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        _ => return Ok(()),
    };
    let Some(tool) = http
        .get(pick % http.len().max(1))
        .and_then(|i| catalog.tools.get(*i))
    else {
        return Ok(());
    };
    let Action::Http(plan) = &tool.action else {
        return Ok(());
    };
    let arguments = match serde_json::from_slice::<Value>(rest) {
        Ok(Value::Object(map)) => map,
        other => spread(
            tool,
            other.unwrap_or_else(|_| json!(String::from_utf8_lossy(rest))),
        ),
    };
    render(catalog, tool, plan, arguments);
    Ok(())
}

/// `value` under each of the tool's argument names.
fn spread(tool: &Tool, value: Value) -> Map<String, Value> {
    tool.arguments.value()["properties"]
        .as_object()
        .map(|p| p.keys().map(|k| (k.clone(), value.clone())).collect())
        .unwrap_or_default()
}

fn render(catalog: &Catalog, tool: &Tool, plan: &HttpPlan, arguments: Map<String, Value>) {
    let context = Scope::new(json!({
        "args": arguments,
        "ctx": { "location_id": "loc_oracle" },
        "settings": {},
        "tool": { "service": tool.service, "name": tool.name },
    }));
    let _ = crate::upstream::render::render(plan, &catalog.templates, &context);
}

#[cfg(test)]
mod tests {
    #[test]
    fn hostile_seeds_render_or_refuse() {
        for seed in [
            &b"\x00\x00{\"path_params\":{\"customer\":\"..\"}}"[..],
            b"\x07\x01{{ 7 * 7 }}",
            b"\xff\xff[[[[[[[[[[",
            b"\x10\x00{\"a\":{\"b\":{\"c\":[1,2,{\"d\":null}]}}}",
        ] {
            assert_eq!(super::hostile(seed), Ok(()));
        }
    }
}
