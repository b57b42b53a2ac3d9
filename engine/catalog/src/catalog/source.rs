//! Where the catalog root comes from: the copy embedded in the binary, or a folder on
//! disk (`--catalog-dir`). Either way the compiler sees the same thing: the text of
//! every file under `catalog/`, `rules/` and `templates/`, keyed by relative path.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

mod embedded {
    /// The catalog root packed and deflated by build.rs.
    pub static DEFLATED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/embedded.deflate"));
    /// The pack's length once inflated.
    pub const LEN: usize = include!(concat!(env!("OUT_DIR"), "/embedded.len"));
}

/// The files of a catalog root, by relative path with `/` separators.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Relative path -> file text.
    pub files: BTreeMap<String, String>,
    /// Where the files came from, for messages.
    pub origin: String,
}

/// Why a catalog root could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A folder or file could not be read.
    #[error("cannot read `{path}`: {source}")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The folder has none of `catalog/`, `rules/`, `templates/`.
    #[error(
        "`{0}` is not a catalog root: it has no `catalog/` folder; pass the folder that holds `catalog/`, `rules/` and `templates/`"
    )]
    NotARoot(String),
}

impl Sources {
    /// The catalog, rules and templates embedded at build time (deflated in the
    /// binary, inflated here). A binary whose copy cannot be read (it cannot happen
    /// short of a damaged file) gets no files, so the compile says what is missing.
    pub fn embedded() -> Self {
        match unpack_embedded() {
            Ok(files) => Self {
                files,
                origin: "embedded".into(),
            },
            Err(why) => Self {
                files: BTreeMap::new(),
                origin: format!("embedded (unreadable: {why}; use --catalog-dir)"),
            },
        }
    }

    /// Reads a catalog root folder from disk.
    pub fn from_dir(root: &Path) -> Result<Self, SourceError> {
        if !root.join("catalog").is_dir() {
            return Err(SourceError::NotARoot(root.display().to_string()));
        }
        let mut files = BTreeMap::new();
        for name in ["catalog", "rules", "templates"] {
            let dir = root.join(name);
            if dir.is_dir() {
                read_tree(root, &dir, &mut files)?;
            }
        }
        Ok(Self {
            files,
            origin: root.display().to_string(),
        })
    }

    /// The text of one file.
    pub fn get(&self, path: &str) -> Option<&str> {
        self.files.get(path).map(String::as_str)
    }
}

fn read_tree(
    root: &Path,
    dir: &Path,
    out: &mut BTreeMap<String, String>,
) -> Result<(), SourceError> {
    let io = |path: &Path, source| SourceError::Io {
        path: path.display().to_string(),
        source,
    };
    for entry in fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let path = entry.map_err(|e| io(dir, e))?.path();
        if path.is_dir() {
            read_tree(root, &path, out)?;
        } else if let Ok(rel) = path.strip_prefix(root) {
            let text = fs::read_to_string(&path).map_err(|e| io(&path, e))?;
            out.insert(rel.to_string_lossy().replace('\\', "/"), text);
        }
    }
    Ok(())
}

/// The embedded pack inflated and read back into files (build.rs wrote it: `u32` LE
/// path length, path, `u32` LE text length, text, for every file in path order).
fn unpack_embedded() -> Result<BTreeMap<String, String>, String> {
    let pack =
        miniz_oxide::inflate::decompress_to_vec_with_limit(embedded::DEFLATED, embedded::LEN)
            .map_err(|e| format!("it does not inflate ({:?})", e.status))?;
    let mut files = BTreeMap::new();
    let mut rest = pack.as_slice();
    while !rest.is_empty() {
        let path = take_part(&mut rest)?;
        let text = take_part(&mut rest)?;
        files.insert(path, text);
    }
    Ok(files)
}

/// One length-prefixed part of the pack.
fn take_part(rest: &mut &[u8]) -> Result<String, String> {
    let (len, tail) = rest
        .split_first_chunk::<4>()
        .ok_or("it ends inside a length")?;
    let len = u32::from_le_bytes(*len) as usize;
    if tail.len() < len {
        return Err("it ends inside a file".into());
    }
    let (bytes, tail) = tail.split_at(len);
    *rest = tail;
    String::from_utf8(bytes.to_vec()).map_err(|_| "a part is not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_copy_is_the_checkouts_catalog_root() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let disk = Sources::from_dir(&root).unwrap();
        let embedded = Sources::embedded();
        assert_eq!(embedded.origin, "embedded");
        assert_eq!(
            embedded.files.keys().collect::<Vec<_>>(),
            disk.files.keys().collect::<Vec<_>>()
        );
        for (path, text) in &disk.files {
            assert!(embedded.get(path) == Some(text.as_str()), "{path} differs");
        }
    }

    #[test]
    fn a_damaged_pack_is_an_error() {
        let mut whole = Vec::new();
        for part in [&b"catalog/a.toml"[..], b"text"] {
            whole.extend_from_slice(&u32::try_from(part.len()).unwrap().to_le_bytes());
            whole.extend_from_slice(part);
        }
        let mut rest = whole.as_slice();
        assert_eq!(take_part(&mut rest).unwrap(), "catalog/a.toml");
        assert_eq!(take_part(&mut rest).unwrap(), "text");
        assert!(rest.is_empty());
        for cut in [2, 6, whole.len() - 1] {
            let mut rest = &whole[..cut];
            let read = take_part(&mut rest).and_then(|_| take_part(&mut rest));
            assert!(read.is_err(), "a pack cut at {cut} was read");
        }
        let mut not_utf8: &[u8] = &[1, 0, 0, 0, 0xff];
        assert!(take_part(&mut not_utf8).is_err());
    }
}
