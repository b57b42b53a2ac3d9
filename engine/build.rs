//! Embeds the default catalog, rules and templates in the binary, so `tool-broker serve`
//! works from any folder. Generates `$OUT_DIR/embedded.rs`: a sorted list of
//! `(relative path, contents)` pairs read with `include_str!`.

use std::fs;
use std::path::{Path, PathBuf};

const ROOTS: [&str; 3] = ["catalog", "rules", "templates"];

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> std::io::Result<()> {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, out)?;
        } else if let Ok(rel) = path.strip_prefix(root) {
            println!("cargo:rerun-if-changed={}", path.display());
            let rel = rel.to_string_lossy().replace('\\', "/");
            out.push((rel, path.canonicalize()?));
        }
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.join("..");
    let mut files = Vec::new();
    for name in ROOTS {
        let dir = root.join(name);
        if dir.is_dir() {
            collect(&root, &dir, &mut files)?;
        }
    }
    let mut code = String::from(
        "/// The embedded catalog root: `(relative path, contents)`.\npub static EMBEDDED: &[(&str, &str)] = &[\n",
    );
    for (rel, abs) in files {
        code.push_str(&format!(
            "    ({rel:?}, include_str!({:?})),\n",
            abs.display().to_string()
        ));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("embedded.rs");
    fs::write(out, code)
}
