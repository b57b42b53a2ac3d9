//! The engine's layout is its pipeline. Its crates are its floors, each depending only on
//! the floors below it: Cargo refuses an import that runs back up, and the first test
//! holds the table of floors in `engine/DESIGN.md` ("Crates by floor") to the crates'
//! manifests and folders.
//!
//! Inside a floor, the modules keep an order of their own that Cargo cannot see (in
//! `broker-core`, `hooks` runs below `call`). Each module may import only the modules
//! below it in the second table ("Who may import whom"): this test reads every `crate::`
//! path (and every `super::` path that climbs to the crate root) in the engine's code,
//! outside comments, strings and `#[cfg(test)]` items, and fails on an edge the table
//! does not allow. Both tables are printed in `engine/DESIGN.md`; the tests fail if they
//! differ, and print the text to paste. Inside each folder the files import one way too:
//! a cycle between the files (or sub-folders) of one folder fails. The rules every file
//! keeps whatever its floor (the gate, parameters, test helpers, files' length) are in
//! `conventions.rs`; how the sources are read, in `support/source.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::support::source::{
    code_only, depth, engine_dir, group_items, ident, imports, is_ident, relative, rust_files,
    without_tests,
};

/// Each top-level module and the modules it may import, lowest first. Acyclic by
/// construction: a module may only name modules listed above it.
const ALLOWED: &[(&str, &[&str])] = &[
    ("error", &[]),
    ("net", &[]),
    ("html", &[]),
    ("reply", &["html"]),
    ("catalog", &["error"]),
    ("config", &["catalog", "error"]),
    ("telemetry", &["error", "net"]),
    ("store", &["catalog", "error"]),
    ("caller", &["catalog", "config", "error", "net"]),
    ("upstream", &["catalog", "config", "error", "telemetry"]),
    ("answer", &["catalog", "error", "upstream"]),
    ("policy", &["caller", "catalog", "config", "error"]),
    (
        "run",
        &[
            "answer",
            "caller",
            "catalog",
            "config",
            "error",
            "policy",
            "store",
            "telemetry",
            "upstream",
        ],
    ),
    (
        "webhook",
        &[
            "answer",
            "caller",
            "catalog",
            "config",
            "error",
            "reply",
            "run",
            "store",
            "telemetry",
            "upstream",
        ],
    ),
    (
        "confirm",
        &[
            "answer",
            "caller",
            "catalog",
            "config",
            "error",
            "html",
            "run",
            "store",
            "telemetry",
            "upstream",
        ],
    ),
    (
        "hub",
        &[
            "caller", "catalog", "config", "confirm", "error", "html", "net", "reply", "run",
            "store",
        ],
    ),
    (
        "hooks",
        &[
            "answer",
            "caller",
            "catalog",
            "config",
            "error",
            "run",
            "store",
            "telemetry",
            "upstream",
            "webhook",
        ],
    ),
    (
        "call",
        &[
            "answer",
            "caller",
            "catalog",
            "config",
            "confirm",
            "error",
            "hooks",
            "hub",
            "policy",
            "run",
            "store",
            "telemetry",
            "upstream",
            "webhook",
        ],
    ),
    (
        "served",
        &[
            "answer", "call", "caller", "catalog", "config", "store", "upstream",
        ],
    ),
    (
        "mcp",
        &[
            "answer",
            "call",
            "caller",
            "catalog",
            "config",
            "confirm",
            "error",
            "hooks",
            "hub",
            "policy",
            "reply",
            "run",
            "served",
            "store",
            "telemetry",
            "upstream",
        ],
    ),
    (
        "console",
        &[
            "call",
            "caller",
            "catalog",
            "config",
            "confirm",
            "error",
            "html",
            "hub",
            "mcp",
            "policy",
            "reply",
            "run",
            "served",
            "store",
            "telemetry",
        ],
    ),
    (
        "serve",
        &[
            "answer",
            "call",
            "caller",
            "catalog",
            "config",
            "confirm",
            "console",
            "error",
            "hooks",
            "html",
            "hub",
            "mcp",
            "reply",
            "run",
            "served",
            "store",
            "telemetry",
            "upstream",
            "webhook",
        ],
    ),
    (
        "oracle",
        &[
            "answer", "call", "catalog", "error", "mcp", "serve", "upstream",
        ],
    ),
    ("import", &["catalog", "error"]),
    (
        "cli",
        &[
            "answer",
            "call",
            "caller",
            "catalog",
            "config",
            "confirm",
            "console",
            "error",
            "hooks",
            "hub",
            "import",
            "mcp",
            "policy",
            "run",
            "serve",
            "served",
            "store",
            "telemetry",
            "upstream",
            "webhook",
        ],
    ),
];

/// The engine's crates (its floors), lowest first: each with its folder under `engine/`,
/// the modules its `src/` holds, and the engine crates its manifest depends on. The
/// folder `broker` is the package `tool-broker`; every other `x` is `broker-x`.
const CRATES: &[(&str, &[&str], &[&str])] = &[
    ("catalog", &["catalog", "error"], &[]),
    ("config", &["config"], &["catalog"]),
    ("telemetry", &["net", "telemetry"], &["catalog"]),
    ("store", &["store"], &["catalog"]),
    (
        "identity",
        &["caller", "policy"],
        &["catalog", "config", "telemetry"],
    ),
    (
        "upstream",
        &["answer", "upstream"],
        &["catalog", "config", "telemetry"],
    ),
    (
        "core",
        &[
            "call", "confirm", "hooks", "html", "hub", "reply", "run", "webhook",
        ],
        &[
            "catalog",
            "config",
            "identity",
            "store",
            "telemetry",
            "upstream",
        ],
    ),
    (
        "surfaces",
        &["console", "mcp", "serve", "served"],
        &[
            "catalog",
            "config",
            "core",
            "identity",
            "store",
            "telemetry",
            "upstream",
        ],
    ),
    ("import", &["import"], &["catalog"]),
    (
        "oracle",
        &["oracle"],
        &["catalog", "core", "surfaces", "upstream"],
    ),
    (
        "broker",
        &["cli"],
        &[
            "catalog",
            "config",
            "core",
            "identity",
            "import",
            "store",
            "surfaces",
            "telemetry",
            "upstream",
        ],
    ),
];

/// The package a crate's folder holds.
fn package(folder: &str) -> String {
    if folder == "broker" {
        "tool-broker".into()
    } else {
        format!("broker-{folder}")
    }
}

#[test]
fn the_crates_are_the_floors_of_design_md() {
    let engine = engine_dir();
    let mut folders: BTreeSet<String> = BTreeSet::new();
    for entry in std::fs::read_dir(&engine).unwrap() {
        let path = entry.unwrap().path();
        if path.join("Cargo.toml").is_file() {
            folders.insert(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    let listed: BTreeSet<String> = CRATES.iter().map(|(c, _, _)| c.to_string()).collect();
    assert_eq!(
        listed, folders,
        "the table must list exactly the crates under engine/"
    );
    let mut below: BTreeSet<&str> = BTreeSet::new();
    let mut home: BTreeMap<&str, &str> = BTreeMap::new();
    for (folder, modules, deps) in CRATES {
        for dep in *deps {
            assert!(
                below.contains(dep),
                "`{folder}` depends on `{dep}`, which is not listed above it: the table \
                 must list a crate after everything it depends on"
            );
        }
        below.insert(folder);
        let dir = engine.join(folder);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains(&format!("name = \"{}\"", package(folder))),
            "engine/{folder}/Cargo.toml must be the package {}",
            package(folder)
        );
        let in_manifest: BTreeSet<String> = engine_dependencies(&manifest);
        let in_table: BTreeSet<String> = deps.iter().map(|d| package(d)).collect();
        assert_eq!(
            in_manifest, in_table,
            "engine/{folder}/Cargo.toml's engine dependencies against the table"
        );
        let held: BTreeSet<String> = top_modules(&dir.join("src")).into_keys().collect();
        let in_table: BTreeSet<String> = modules.iter().map(|m| m.to_string()).collect();
        assert_eq!(held, in_table, "the modules of engine/{folder}/src");
        for m in *modules {
            home.insert(m, folder);
        }
    }
    // The module table below runs inside the floors: a module imports only its own
    // floor's modules or those of a floor its crate depends on.
    let deps: BTreeMap<&str, &[&str]> = CRATES.iter().map(|(c, _, d)| (*c, *d)).collect();
    for (module, may) in ALLOWED {
        let floor = home[module];
        for m in *may {
            let other = home[m];
            assert!(
                other == floor || deps[floor].contains(&other),
                "`{module}` (engine/{floor}) may import `{m}` (engine/{other}), a floor its \
                 crate does not depend on"
            );
        }
    }
    let design = std::fs::read_to_string(engine.join("DESIGN.md")).unwrap();
    let table = crates_table();
    assert!(
        design.contains(&table),
        "engine/DESIGN.md must print the crates' table this test holds; paste:\n{table}"
    );
}

/// The engine packages a manifest's `[dependencies]` names.
fn engine_dependencies(manifest: &str) -> BTreeSet<String> {
    manifest
        .split("\n[")
        .filter(|section| section.starts_with("dependencies]"))
        .flat_map(|section| section.lines().skip(1))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| name.starts_with("broker-") || *name == "tool-broker")
        .map(str::to_string)
        .collect()
}

/// The crates' table as `engine/DESIGN.md` prints it.
fn crates_table() -> String {
    let mut out = String::from("| crate | folder | modules | depends on |\n|---|---|---|---|\n");
    for (folder, modules, deps) in CRATES {
        let list = |names: &[&str], f: &dyn Fn(&str) -> String| {
            if names.is_empty() {
                "nothing".to_string()
            } else {
                names.iter().map(|n| f(n)).collect::<Vec<_>>().join(", ")
            }
        };
        out.push_str(&format!(
            "| `{}` | `engine/{folder}` | {} | {} |\n",
            package(folder),
            list(modules, &|m| format!("`{m}`")),
            list(deps, &|d| format!("`{}`", package(d))),
        ));
    }
    out
}

#[test]
fn every_import_goes_down_the_table() {
    let mut modules = BTreeMap::new();
    for src in sources() {
        modules.extend(top_modules(&src));
    }
    let listed: BTreeSet<&str> = ALLOWED.iter().map(|(m, _)| *m).collect();
    let named: BTreeSet<&str> = modules.keys().map(String::as_str).collect();
    assert_eq!(
        listed, named,
        "the table must list exactly the top-level modules of the engine's crates"
    );
    let edges = edges(&modules);
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for ((from, to), places) in &edges {
        if !allowed[from.as_str()].contains(&to.as_str()) {
            wrong.push(format!(
                "{from} -> {to} (in {}): {from} may import only {:?}",
                places.iter().cloned().collect::<Vec<_>>().join(", "),
                allowed[from.as_str()]
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that go up or sideways (move the code to the stage that owns it, or \
         define what is shared below both):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_table_has_no_cycle_and_is_printed_in_design_md() {
    let mut below: BTreeSet<&str> = BTreeSet::new();
    for (module, may) in ALLOWED {
        for m in *may {
            assert!(
                below.contains(m),
                "`{module}` may import `{m}`, which is not listed above it: the table \
                 must list a module after everything it imports"
            );
        }
        below.insert(module);
    }
    let design = std::fs::read_to_string(engine_dir().join("DESIGN.md"))
        .unwrap_or_else(|e| panic!("engine/DESIGN.md: {e}"));
    let table = markdown_table();
    assert!(
        design.contains(&table),
        "engine/DESIGN.md must print the table this test holds; paste:\n{table}"
    );
}

#[test]
fn no_folder_has_a_cycle_between_its_files() {
    let mut cycles = Vec::new();
    for src in sources() {
        let mut folders = Vec::new();
        module_folders(&src, &mut folders);
        for folder in &folders {
            let graph = sibling_edges(&src, folder);
            for cycle in strongly_connected(&graph) {
                let name = folder.strip_prefix(&src).unwrap_or(folder).display();
                let mut edges = Vec::new();
                for from in &cycle {
                    for (to, via) in &graph[from] {
                        if cycle.contains(to) {
                            edges.push(format!("{from} -> {to} ({via})"));
                        }
                    }
                }
                cycles.push(format!("{name}/: {}", edges.join("; ")));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "files of one folder that import each other (move what both need into a file \
         both import, so the imports inside the folder run one way):\n{}",
        cycles.join("\n")
    );
}

#[test]
fn sibling_imports_are_read_through_paths_and_re_exports() {
    let root = std::env::temp_dir().join(format!("arch-{}", std::process::id()));
    let folder = root.join("stage");
    std::fs::create_dir_all(folder.join("inner")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(folder.join(name), text).unwrap();
    write(
        "mod.rs",
        "mod a;\nmod b;\nmod c;\nmod inner;\npub use c::{Shared, other::Thing};\n",
    );
    write(
        "a.rs",
        "use super::b::Answer;\nfn f() { crate::stage::Shared::new(); }\n",
    );
    write("b.rs", "use super::{Thing, inner};\n// super::a::nothing\n");
    write("c.rs", "pub struct Shared;\n");
    write("inner/mod.rs", "fn g() { super::super::stage::a::f(); }\n");
    let graph = sibling_edges(&root, &folder);
    std::fs::remove_dir_all(&root).unwrap();
    let edges: BTreeSet<(&str, &str)> = graph
        .iter()
        .flat_map(|(from, tos)| tos.keys().map(move |to| (from.as_str(), to.as_str())))
        .collect();
    assert_eq!(
        edges,
        BTreeSet::from([
            ("a", "b"),
            ("a", "c"),
            ("b", "c"),
            ("b", "inner"),
            ("inner", "a")
        ])
    );
    assert_eq!(
        strongly_connected(&graph),
        vec![BTreeSet::from([
            "a".to_string(),
            "b".into(),
            "inner".into()
        ])]
    );
}

/// Every folder of the engine that is a module (has a `mod.rs`).
fn module_folders(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.map(|e| e.path()).unwrap_or_default();
        if path.is_dir() && path.join("mod.rs").is_file() {
            out.push(path.clone());
            module_folders(&path, out);
        }
    }
}

/// The module path of a file under `src`: `serve/http1.rs` is `["serve", "http1"]`,
/// `serve/mod.rs` is `["serve"]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop()
        && last != "mod.rs"
    {
        parts.push(last.trim_end_matches(".rs").to_string());
    }
    parts
}

/// The children of a module folder (its files other than `mod.rs` and its module
/// folders) and, for each, the siblings its code names, with one file that does it.
/// A name `mod.rs` re-exports from a child (`pub use child::Item`) counts as that child.
fn sibling_edges(src: &Path, folder: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let base = module_path(src, &folder.join("mod.rs"));
    let children = module_children(folder, &["mod"]);
    // What mod.rs re-exports from a child, by the name it is known under.
    let mut re_exported: BTreeMap<String, String> = BTreeMap::new();
    let root = std::fs::read_to_string(folder.join("mod.rs")).unwrap_or_default();
    for path in paths(&without_tests(&code_only(&root)), &base, true) {
        if let Some(rest) = path.strip_prefix(base.as_slice())
            && let [child, .., item] = rest
            && children.contains_key(child)
        {
            re_exported.insert(item.clone(), child.clone());
        }
    }
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (child, files) in &children {
        let edges = out.entry(child.clone()).or_default();
        for file in files {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            let here = module_path(src, file);
            let own = file.file_name().is_some_and(|n| n == "mod.rs");
            for path in paths(&without_tests(&code_only(&text)), &here, own) {
                let Some([first, ..]) = path.strip_prefix(base.as_slice()) else {
                    continue;
                };
                let to = match children.contains_key(first) {
                    true => first.clone(),
                    false => match re_exported.get(first) {
                        Some(to) => to.clone(),
                        None => continue,
                    },
                };
                if &to != child {
                    let relative = file.strip_prefix(src).unwrap_or(file);
                    edges
                        .entry(to)
                        .or_insert_with(|| relative.display().to_string());
                }
            }
        }
    }
    out
}

/// Every `crate::`, `super::` and `self::` path of the code, made absolute (segments
/// from the crate root) for a file whose module path is `here`; `is_mod_rs` says whether
/// `self` is `here` itself (a `mod.rs`) or `here` is a file whose `super` is its folder.
/// A `mod.rs`'s own `use child::Item` (edition 2018 paths) is read as `self::child::Item`.
fn paths(code: &str, here: &[String], is_mod_rs: bool) -> Vec<Vec<String>> {
    // The module `self` names: a file `a/b.rs` is module `a::b`, and so is `a/b/mod.rs`.
    let module = here.to_vec();
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let word_start = i == 0 || !is_ident(bytes[i - 1]);
        if !word_start {
            i += 1;
            continue;
        }
        let rest = &code[i..];
        let (prefix, consumed) = if rest.starts_with("crate::") {
            (Vec::new(), "crate::".len())
        } else if rest.starts_with("self::") {
            (module.clone(), "self::".len())
        } else if rest.starts_with("super::") {
            let mut n = 0;
            let mut at = 0;
            while rest[at..].starts_with("super::") {
                n += 1;
                at += "super::".len();
            }
            let keep = module.len().saturating_sub(n);
            (module[..keep].to_vec(), at)
        } else if is_mod_rs && rest.starts_with("use ") {
            let after = rest["use ".len()..].trim_start();
            let pub_offset = rest.len() - after.len();
            if after.starts_with("crate::")
                || after.starts_with("super::")
                || after.starts_with("self::")
            {
                i += pub_offset;
                continue;
            }
            (module.clone(), pub_offset)
        } else {
            i += 1;
            continue;
        };
        i += consumed;
        for tail in expand(&code[i..]) {
            let mut path = prefix.clone();
            path.extend(tail);
            out.push(path);
        }
    }
    out
}

/// The paths a `use` tail or an expression path spells: `a::b::C` is one, `a::{b, c::D}`
/// two, nested groups expanded.
fn expand(rest: &str) -> Vec<Vec<String>> {
    let rest = rest.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        let items = group_items(group);
        return items
            .into_iter()
            .flat_map(expand)
            .filter(|p| !p.is_empty())
            .collect();
    }
    let head = ident(rest);
    if head.is_empty() {
        return vec![Vec::new()];
    }
    let after = &rest[head.len()..];
    match after.strip_prefix("::") {
        Some(more) => expand(more)
            .into_iter()
            .map(|mut tail| {
                tail.insert(0, head.clone());
                tail
            })
            .collect(),
        None => vec![vec![head]],
    }
}

/// The strongly connected parts of more than one child (Tarjan's algorithm).
fn strongly_connected(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flat_map(|m| m.keys()) {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut part = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                part.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            if part.len() > 1 {
                s.out.push(part);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Every crate's `src/`, lowest floor first.
fn sources() -> Vec<PathBuf> {
    CRATES
        .iter()
        .map(|(folder, _, _)| engine_dir().join(folder).join("src"))
        .collect()
}

/// Each top-level module with its files (`name.rs`, or a folder with `mod.rs`).
fn top_modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    module_children(src, &["lib", "main"])
}

/// The modules a folder holds, each with its files: `name.rs` (its stem not in `skip`)
/// or a folder with a `mod.rs` (every file under it).
fn module_children(dir: &Path, skip: &[&str]) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.map(|e| e.path()).unwrap_or_default();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() && path.join("mod.rs").is_file() {
            let mut files = Vec::new();
            rust_files(&path, &mut files);
            out.insert(name, files);
        } else if let Some(stem) = name.strip_suffix(".rs")
            && !skip.contains(&stem)
        {
            out.insert(stem.to_string(), vec![path]);
        }
    }
    out
}

/// Every edge between two top-level modules, with the files that make it.
fn edges(modules: &BTreeMap<String, Vec<PathBuf>>) -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (module, files) in modules {
        for file in files {
            let text =
                std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let relative = relative(file);
            for to in imports(&text, depth(relative)) {
                if &to != module && modules.contains_key(&to) {
                    out.entry((module.clone(), to))
                        .or_default()
                        .insert(relative.display().to_string());
                }
            }
        }
    }
    out
}

/// The table as `engine/DESIGN.md` prints it.
fn markdown_table() -> String {
    let mut out = String::from("| module | may import |\n|---|---|\n");
    for (module, may) in ALLOWED {
        let may = if may.is_empty() {
            "nothing".to_string()
        } else {
            may.iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!("| `{module}` | {may} |\n"));
    }
    out
}
