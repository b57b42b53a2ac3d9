//! Every HTTP tool of the shipped catalog accepts a minimal sample of its own argument
//! schema, and that call renders an upstream request. This is what a conformance run
//! sends to a mock of each upstream; here it proves, offline, that no imported or
//! hand-written schema is unsatisfiable and no request mapping fails on valid input.

use serde_json::{Map, Value, json};
use tool_broker::args;
use tool_broker::catalog::Action;
use tool_broker::render::render;
use tool_broker::sample::sample;
use tool_broker::template::Templates;

use crate::support::embedded_catalog;

#[test]
fn every_tool_accepts_a_sample_of_its_schema_and_renders_a_request() {
    let catalog = embedded_catalog();
    let mut failures = Vec::new();
    let mut checked = 0;
    for tool in &catalog.tools {
        let Action::Http(plan) = &tool.action else {
            continue;
        };
        let arguments = sample(&tool.arguments);
        let prepared: Map<String, Value> = match args::prepare(tool, Some(arguments.clone())) {
            Ok(a) => a,
            Err(e) => {
                failures.push(format!(
                    "{}: sample {arguments} fails its schema: {:?}",
                    tool.full_name, e.details
                ));
                continue;
            }
        };
        let context = Templates::context(&json!({
            "args": prepared,
            "ctx": { "location_id": "loc_sample" },
            "settings": { "drive_folder_id": "folder_sample" },
            "tool": { "service": tool.service, "name": tool.name },
        }));
        if let Err(e) = render(plan, &catalog.templates, &context) {
            failures.push(format!(
                "{}: sample {arguments} does not render: {}",
                tool.full_name, e.message
            ));
            continue;
        }
        checked += 1;
    }
    assert!(checked > 1500, "only {checked} tools checked");
    assert!(
        failures.is_empty(),
        "{} of {} tools failed:\n{}",
        failures.len(),
        checked + failures.len(),
        failures.join("\n")
    );
}
