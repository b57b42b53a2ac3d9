//! Differential oracles for the hand-written fast paths each takes any
//! bytes, runs the fast path and the reference it must agree with, and says how they
//! disagree. The fuzz targets under `fuzz/` run them on what libFuzzer makes; property
//! tests run them in `cargo test`. A finding becomes a regression test beside the oracle.
//!
//! | oracle | fast path | reference |
//! |---|---|---|
//! | [`http1::head`] | the own HTTP/1.1 server's request head reading | hyper's HTTP/1.1 server |
//! | [`held::answer`] | held connections' answer reading | hyper's HTTP/1.1 client |
//! | [`readers::jsonrpc`] | the one-pass `POST /` reader | the body read as a `Value` |
//! | [`readers::mcp_message`] | the one-pass MCP message reader | the body read as a `Value` |
//! | [`readers::json_string`] | the envelope's JSON string escaper | serde_json |
//! | [`scan::answer`] | the one-pass answer scan with redaction | parse, redact, cut, write |
//! | [`render::hostile`] | request mapping with hostile arguments | no panic, bounded fuel |
//!
//! Not on any request path. May import what it checks: `answer`, `catalog`, `error`,
//! `mcp`, `serve`, `upstream`.

pub mod held;
pub mod http1;
pub mod readers;
pub mod render;
pub mod scan;

/// Agreement, or what differed (the input is the caller's to show).
pub type Verdict = Result<(), String>;

/// Runs `work` on a current-thread runtime of this thread's own (hyper's side of an
/// oracle is async).
fn block_on<F: std::future::Future>(work: F) -> Option<F::Output> {
    thread_local! {
        static RUNTIME: Option<tokio::runtime::Runtime> = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok();
    }
    RUNTIME.with(|rt| rt.as_ref().map(|rt| rt.block_on(work)))
}

/// An oracle as a fuzz target calls it: any bytes in, agreement or what differed out.
pub type Oracle = fn(&[u8]) -> Verdict;

/// Every fuzz target's oracle by the target's name (`fuzz/fuzz_targets/<name>.rs`), as
/// the target calls it on libFuzzer's bytes.
pub const TARGETS: &[(&str, Oracle)] = &[
    ("held_answer", held::answer),
    ("http1_head", http1::head),
    ("json_string", |data| match std::str::from_utf8(data) {
        Ok(text) => readers::json_string(text),
        Err(_) => Ok(()),
    }),
    ("jsonrpc_reader", readers::jsonrpc),
    ("mcp_message", readers::mcp_message),
    ("render_hostile", render::hostile),
    ("scan_answer", scan::answer),
];

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    fn fuzz_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Every committed corpus input (the seeds and every finding) through its oracle:
    /// what a fuzz run once found stays mended without building the fuzzer.
    #[test]
    fn the_committed_corpus_replays_without_a_disagreement() {
        let mut replayed = 0;
        for (target, oracle) in super::TARGETS {
            let dir = fuzz_dir().join("corpus").join(target);
            for name in names(&dir) {
                let input =
                    std::fs::read(dir.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(oracle(&input), Ok(()), "fuzz/corpus/{target}/{name}");
                replayed += 1;
            }
        }
        assert!(replayed >= super::TARGETS.len(), "{replayed} inputs");
    }

    /// The table names every fuzz target and every corpus folder, and nothing else.
    #[test]
    fn every_fuzz_target_has_its_oracle_in_the_table() {
        let table: Vec<String> = super::TARGETS
            .iter()
            .map(|(name, _)| (*name).to_owned())
            .collect();
        let targets: Vec<String> = names(&fuzz_dir().join("fuzz_targets"))
            .into_iter()
            .filter_map(|file| file.strip_suffix(".rs").map(str::to_owned))
            .collect();
        assert_eq!(targets, table);
        assert_eq!(names(&fuzz_dir().join("corpus")), table);
    }
}
