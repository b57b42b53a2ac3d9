//! Catalog fixtures with mistakes, and the exact diagnostics they produce.
//!
//! Each folder under `tests/fixtures/diagnostics/` holds files laid over the embedded
//! catalog root (same relative paths). The compile must fail, and its report is
//! snapshotted: every problem, its file and line, and its "did you mean" help.
//! Add a folder, run `cargo insta review`.

use std::path::Path;

use tool_broker::catalog::compile::compile;

use crate::support::{root, sources_with};

fn overlay(dir: &Path, base: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            overlay(&path, base, out);
        } else {
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

#[test]
fn every_fixture_reports_its_exact_diagnostics() {
    let dir = root().join("tests").join("fixtures").join("diagnostics");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    assert!(cases.len() >= 6);
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let mut files = Vec::new();
        overlay(&case, &case, &mut files);
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let report = match compile(&sources_with(&refs)) {
            Ok(_) => panic!("fixture `{name}` compiled but must fail"),
            Err(diags) => diags.to_string(),
        };
        insta::assert_snapshot!(format!("diagnostics__{name}"), report);
    }
}

#[test]
fn the_shipped_catalog_compiles() {
    let catalog = crate::support::compiled(&tool_broker::catalog::source::Sources::embedded());
    assert!(catalog.tools.len() >= 35);
    let from_disk = crate::support::compiled(
        &tool_broker::catalog::source::Sources::from_dir(&root()).unwrap(),
    );
    assert_eq!(
        catalog.snapshot_id, from_disk.snapshot_id,
        "the embedded copy is the folder on disk"
    );
    // The counts check_connection reports, made at assembly, are the tools' own.
    for service in catalog.services.values() {
        let tools: Vec<_> = catalog
            .tools
            .iter()
            .filter(|t| t.service == service.id)
            .collect();
        let figures = tool_broker::catalog::ServiceFigures {
            tools: tools.len(),
            agent_ready: tools
                .iter()
                .filter(|t| t.tier == tool_broker::catalog::descriptor::Tier::AgentReady)
                .count(),
            records_jobs: tools.iter().any(|t| t.response.job_id.is_some()),
        };
        assert_eq!(service.figures, figures, "{}", service.id);
        assert!(figures.tools > 0);
    }
}
