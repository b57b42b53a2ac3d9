//! Reading a policy's JSON form (Cedar's EST): every object of it visited once, and
//! the one pattern the broker looks for, `<var>.<attr>`.

use serde_json::{Map, Value};

/// Calls `f` on every object of `v`, depth first.
pub fn visit(v: &Value, f: &mut dyn FnMut(&Map<String, Value>)) {
    match v {
        Value::Object(map) => {
            f(map);
            map.values().for_each(|v| visit(v, f));
        }
        Value::Array(items) => items.iter().for_each(|v| visit(v, f)),
        _ => {}
    }
}

/// Whether some object of `v` satisfies `p`.
pub fn any(v: &Value, p: &dyn Fn(&Map<String, Value>) -> bool) -> bool {
    let mut found = false;
    visit(v, &mut |m| found = found || p(m));
    found
}

/// Whether an object is the expression `<var>.<attr>` (`resource.descriptorHash`).
pub fn is_attr(m: &Map<String, Value>, var: &str, attr: &str) -> bool {
    m.get(".").is_some_and(|dot| {
        dot.get("attr").and_then(Value::as_str) == Some(attr)
            && dot
                .get("left")
                .and_then(|l| l.get("Var"))
                .and_then(Value::as_str)
                == Some(var)
    })
}

/// Whether `v` reads the variable `var` anywhere (`context`).
pub fn reads_var(v: &Value, var: &str) -> bool {
    any(v, &|m| m.get("Var").and_then(Value::as_str) == Some(var))
}
