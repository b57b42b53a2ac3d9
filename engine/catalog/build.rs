//! Embeds the default catalog, rules and templates in the binary, so `tool-broker serve`
//! works from any folder. Every file under `catalog/`, `rules/` and `templates/` is
//! packed in path order (`u32` LE path length, path, `u32` LE text length, text) and
//! the pack deflated into `$OUT_DIR/embedded.deflate` (7.1 MB of TOML take 0.7 MB of
//! the binary; `crate::catalog::source` inflates it once at start, in milliseconds).

use std::fs;
use std::path::{Path, PathBuf};

const ROOTS: [&str; 3] = ["catalog", "rules", "templates"];

/// Deflate's level: 9 packs tighter than the default for the same inflation time.
const LEVEL: u8 = 9;

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
            out.push((rel, path));
        }
    }
    Ok(())
}

fn push_part(pack: &mut Vec<u8>, bytes: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(bytes.len())
        .map_err(|_| std::io::Error::other("a catalog file over 4 GiB"))?;
    pack.extend_from_slice(&len.to_le_bytes());
    pack.extend_from_slice(bytes);
    Ok(())
}

fn main() -> std::io::Result<()> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.join("../..");
    let mut files = Vec::new();
    for name in ROOTS {
        let dir = root.join(name);
        if dir.is_dir() {
            collect(&root, &dir, &mut files)?;
        }
    }
    let mut pack = Vec::new();
    for (rel, path) in files {
        // Text only, as `include_str!` required: a file that is not UTF-8 stops the build.
        let text = fs::read_to_string(&path)
            .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?;
        push_part(&mut pack, rel.as_bytes())?;
        push_part(&mut pack, text.as_bytes())?;
    }
    let packed = miniz_oxide::deflate::compress_to_vec(&pack, LEVEL);
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default());
    fs::write(out.join("embedded.deflate"), packed)?;
    fs::write(out.join("embedded.len"), pack.len().to_string())
}
