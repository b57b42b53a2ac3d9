//! The start cache: a start that reads the tools an earlier start kept compiles the same
//! catalog as a full compile, to the last field and line, and a changed catalog is
//! compiled in full.

use tool_broker::catalog::Catalog;
use tool_broker::catalog::compile::{Options, compile_with};
use tool_broker::catalog::source::Sources;
use tool_broker::catalog::start_cache::StartCache;

use crate::support::scratch_root;

/// Compiles `sources` with `cache` (recording into it, or reading from it).
fn compiled_with(sources: &Sources, cache: &StartCache) -> Catalog {
    let options = Options {
        start: Some(cache),
        ..Options::default()
    };
    compile_with(sources, options)
        .unwrap_or_else(|d| panic!("catalog does not compile:\n{d}"))
        .0
}

#[test]
fn a_start_from_the_cache_compiles_what_a_full_compile_does() {
    let data = tempfile::tempdir().unwrap();
    let sources = Sources::embedded();
    let first = StartCache::open(data.path(), &sources).unwrap();
    assert!(!first.holds(), "an empty data folder holds nothing");
    let full = compiled_with(&sources, &first);
    first.save().unwrap();
    let second = StartCache::open(data.path(), &sources).unwrap();
    assert!(second.holds(), "the first start kept its tools");
    let cached = compiled_with(&sources, &second);
    assert_eq!(cached.snapshot_id, full.snapshot_id);
    assert_eq!(cached.tools.len(), 1_818);
    // Every compiled field of every tool, service and rule, with the line each tool was
    // read from (their debug forms), and the same templates (the environment's debug
    // form lists them in a hash map's order: compared sorted).
    assert_same(&format!("{:?}", full.tools), &format!("{:?}", cached.tools));
    assert_same(
        &format!("{:?}", full.services),
        &format!("{:?}", cached.services),
    );
    assert_same(&format!("{:?}", full.rules), &format!("{:?}", cached.rules));
    assert_eq!(template_names(&full), template_names(&cached));
    let names = template_names(&full);
    assert!(names.len() > 100, "{}", names.len());
    // Search works from a cached start (the index is built at its first use).
    let hits = cached_search_hits(&sources, &second);
    assert!(hits > 0);
}

/// Fails with where two debug forms first differ.
fn assert_same(full: &str, cached: &str) {
    assert!(full.len() > 10_000, "the debug form holds the catalog");
    if full != cached {
        let at = full
            .bytes()
            .zip(cached.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(full.len().min(cached.len()));
        let from = at.saturating_sub(200);
        panic!(
            "the cached compile differs at byte {at}:\nfull:   {}\ncached: {}",
            &full[from..(at + 200).min(full.len())],
            &cached[from..(at + 200).min(cached.len())]
        );
    }
}

/// The names of the catalog's templates and expressions, sorted.
fn template_names(catalog: &Catalog) -> Vec<String> {
    let debug = format!("{:?}", catalog.templates);
    let start = debug.find("templates: [").unwrap() + "templates: ".len();
    // The list reads as JSON (names are plain text); the first value is taken.
    let mut names: Vec<String> = serde_json::Deserializer::from_str(&debug[start..])
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    names.sort();
    names
}

fn cached_search_hits(sources: &Sources, cache: &StartCache) -> usize {
    let catalog = compiled_with(sources, cache);
    catalog
        .search()
        .search("payments", "list refunds", |_| true)
        .len()
}

#[test]
fn a_changed_catalog_file_is_compiled_in_full_and_its_mistakes_reported() {
    let (_keep, root) = scratch_root();
    let data = tempfile::tempdir().unwrap();
    let sources = Sources::from_dir(&root).unwrap();
    let cache = StartCache::open(data.path(), &sources).unwrap();
    compiled_with(&sources, &cache);
    cache.save().unwrap();
    assert!(StartCache::open(data.path(), &sources).unwrap().holds());
    // A broken argument schema in a tool file: the cache no longer holds, so the schema
    // check runs again and names the tool's file and line.
    let path = root.join("catalog/hosting/navigation.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let broken = text.replacen(
        "[tool.arguments]\ntype = \"object\"\n",
        "[tool.arguments]\ntype = \"object\"\nminProperties = \"many\"\n",
        1,
    );
    assert_ne!(broken, text);
    std::fs::write(&path, broken).unwrap();
    let changed = Sources::from_dir(&root).unwrap();
    let cache = StartCache::open(data.path(), &changed).unwrap();
    assert!(!cache.holds(), "a changed file is another catalog");
    let options = Options {
        start: Some(&cache),
        ..Options::default()
    };
    let problems = compile_with(&changed, options).unwrap_err().to_string();
    assert!(
        problems.contains("catalog/hosting/navigation.toml:") && problems.contains("schema"),
        "{problems}"
    );
}
