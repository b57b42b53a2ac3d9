//! What a start keeps for the next: its tool files as parsed, and that their schemas
//! were checked.
//!
//! Two parts of a compile are pure functions of the catalog's text and of the binary
//! compiling it, and together they are over half of a start's work: parsing the tool
//! files (TOML, about 7 MB) and the schema check
//! ([`crate::catalog::schema_check`], which builds every distinct schema once so that no
//! tool's first call meets a schema that does not build). `tool-broker serve` therefore
//! writes, after a start whose compile passed, a file in its data folder
//! (`<data-dir>/catalog-start-cache`):
//!
//! - a first line: the format and a key, the sha256 of the running executable's identity
//!   (its path, size and modification time, and the crate version: a rebuilt or replaced
//!   binary has another) and of every file of the catalog root, path and text;
//! - a second line: the sha256 of the rest and, for each tool file, where its part is;
//! - the rest: each tool file's tools as the compile parsed them, in JSON (spans kept).
//!
//! A later start whose key matches and whose rest hashes as written reads the tools from
//! the JSON (about five times faster than the TOML) and skips the schema check;
//! everything else of the compile (every other check, templates, hashes, the lock) runs
//! as always, from the same tools. A changed catalog file, another binary, or a missing,
//! damaged or unreadable file means a full compile, and a start that cannot write the
//! file (a read-only folder) only loses the shortcut. `tool-broker catalog check` and
//! `verify` never read it.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use sha2::{Digest, Sha256};

use crate::catalog::identity::hex;
use crate::catalog::source::Sources;

/// The file's name in the data folder.
pub const FILE: &str = "catalog-start-cache";

/// The first word of the file: the format (a new format is a new word).
const FORMAT: &str = "tool-broker-start-cache-1";

/// A start's cache: the key of this catalog and binary, what an earlier start kept for
/// them, and what this start's compile recorded to keep.
#[derive(Debug)]
pub struct StartCache {
    path: PathBuf,
    key: String,
    held: Option<Held>,
    recorded: Mutex<Option<BTreeMap<String, String>>>,
}

/// What an earlier start kept: the file's text and each tool file's part of it.
#[derive(Debug)]
struct Held {
    text: String,
    parts: BTreeMap<String, Range<usize>>,
}

impl StartCache {
    /// The cache for `sources` compiled by the running executable, kept in `data_dir`,
    /// with what an earlier start kept where it matches; `None` when the executable
    /// cannot be identified (then every start compiles in full).
    pub fn open(data_dir: &Path, sources: &Sources) -> Option<Self> {
        let exe = std::env::current_exe().ok()?;
        let meta = std::fs::metadata(&exe).ok()?;
        let modified = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        let binary = format!(
            "{} {} {} {}",
            env!("CARGO_PKG_VERSION"),
            exe.display(),
            meta.len(),
            modified.as_nanos()
        );
        Some(Self::open_for(data_dir, sources, &binary))
    }

    /// The cache for `sources` compiled by the binary `binary` names.
    fn open_for(data_dir: &Path, sources: &Sources, binary: &str) -> Self {
        let mut hash = Sha256::new();
        // Every part is length-prefixed: no two different inputs hash the same bytes.
        let mut part = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        };
        part(FORMAT.as_bytes());
        part(binary.as_bytes());
        for (path, text) in &sources.files {
            part(path.as_bytes());
            part(text.as_bytes());
        }
        let path = data_dir.join(FILE);
        let key = hex(&hash.finalize());
        let held = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| Held::read(text, &key));
        Self {
            path,
            key,
            held,
            recorded: Mutex::new(None),
        }
    }

    /// Whether an earlier start of this binary compiled this catalog and kept it: its
    /// schemas were checked, and its tool files are read from [`Self::kept`].
    pub fn holds(&self) -> bool {
        self.held.is_some()
    }

    /// The tools of the tool file `path` as kept (a JSON array of `[offset, tool]`).
    pub fn kept(&self, path: &str) -> Option<&str> {
        let held = self.held.as_ref()?;
        held.text.get(held.parts.get(path)?.clone())
    }

    /// Takes what a compile recorded: each tool file's tools as JSON, by path.
    pub fn record(&self, files: BTreeMap<String, String>) {
        *self.recorded.lock().unwrap_or_else(PoisonError::into_inner) = Some(files);
    }

    /// Writes what the compile recorded, after it passed (nothing when the cache already
    /// held or nothing was recorded). Written to a temporary file and renamed, so a
    /// reader never sees half a file.
    pub fn save(&self) -> std::io::Result<()> {
        let Some(files) = self
            .recorded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return Ok(());
        };
        let mut rest = String::new();
        let mut parts = BTreeMap::new();
        for (path, json) in &files {
            parts.insert(path.as_str(), [rest.len(), rest.len() + json.len()]);
            rest.push_str(json);
        }
        let index = serde_json::to_string(&parts).map_err(std::io::Error::other)?;
        let digest = hex(&Sha256::digest(rest.as_bytes()));
        let text = format!("{FORMAT} {}\n{digest} {index}\n{rest}", self.key);
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let temporary = self.path.with_extension("tmp");
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, &self.path)
    }
}

impl Held {
    /// The kept file `text` when it is of this format and `key` and its rest is whole.
    fn read(text: String, key: &str) -> Option<Self> {
        let (first, after) = text.split_once('\n')?;
        if first != format!("{FORMAT} {key}") {
            return None;
        }
        let (second, rest) = after.split_once('\n')?;
        let (digest, index) = second.split_once(' ')?;
        if hex(&Sha256::digest(rest.as_bytes())) != digest {
            return None;
        }
        let index: BTreeMap<String, [usize; 2]> = serde_json::from_str(index).ok()?;
        let base = text.len() - rest.len();
        let mut parts = BTreeMap::new();
        for (path, [start, end]) in index {
            if start > end || end > rest.len() {
                return None;
            }
            parts.insert(path, base + start..base + end);
        }
        Some(Self { text, parts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder removed when the test ends.
    struct Folder(PathBuf);

    impl Folder {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
            Self(dir)
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn sources(path: &str, text: &str) -> Sources {
        Sources {
            files: [(path.to_string(), text.to_string())].into(),
            origin: "test".into(),
        }
    }

    fn kept(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(p, j)| ((*p).to_string(), (*j).to_string()))
            .collect()
    }

    #[test]
    fn a_cache_holds_for_the_same_catalog_and_binary_only() {
        let dir = Folder::new("start-cache-key");
        let at = dir.0.as_path();
        let src = sources("catalog/a/tools.toml", "x = 1");
        let cache = StartCache::open_for(at, &src, "bin 1");
        assert!(!cache.holds(), "nothing kept yet");
        cache.save().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !StartCache::open_for(at, &src, "bin 1").holds(),
            "nothing recorded, nothing written"
        );
        cache.record(kept(&[
            ("catalog/a/tools.toml", "[[0,{}]]"),
            ("catalog/b/t.toml", "[]"),
        ]));
        cache.save().unwrap_or_else(|e| panic!("{e}"));
        let again = StartCache::open_for(at, &src, "bin 1");
        assert!(again.holds());
        assert_eq!(again.kept("catalog/a/tools.toml"), Some("[[0,{}]]"));
        assert_eq!(again.kept("catalog/b/t.toml"), Some("[]"));
        assert_eq!(again.kept("catalog/c/t.toml"), None);
        // Another text, another binary, the same text at another path: a full compile.
        assert!(
            !StartCache::open_for(at, &sources("catalog/a/tools.toml", "x = 2"), "bin 1").holds()
        );
        assert!(!StartCache::open_for(at, &src, "bin 2").holds());
        assert!(
            !StartCache::open_for(at, &sources("catalog/b/tools.toml", "x = 1"), "bin 1").holds()
        );
    }

    #[test]
    fn a_damaged_cache_is_not_read() {
        let dir = Folder::new("start-cache-damage");
        let at = dir.0.as_path();
        let src = sources("catalog/a/tools.toml", "x = 1");
        let cache = StartCache::open_for(at, &src, "bin");
        cache.record(kept(&[("catalog/a/tools.toml", "[[0,{\"name\":\"a\"}]]")]));
        cache.save().unwrap_or_else(|e| panic!("{e}"));
        let path = at.join(FILE);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(StartCache::open_for(at, &src, "bin").holds());
        for damaged in [
            text.replace("\"a\"", "\"b\""),
            text[..text.len() - 3].to_string(),
            text.replacen('\n', " ", 1),
            String::new(),
        ] {
            std::fs::write(&path, &damaged).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                !StartCache::open_for(at, &src, "bin").holds(),
                "{damaged:?}"
            );
        }
    }

    #[test]
    fn the_running_binary_has_a_key_and_an_unwritable_folder_is_only_an_error() {
        let src = sources("catalog/a/tools.toml", "x = 1");
        let cache = StartCache::open(Path::new("/proc/no-such-folder"), &src);
        let cache = cache.unwrap_or_else(|| panic!("the test binary identifies itself"));
        assert!(!cache.holds());
        cache.record(kept(&[("catalog/a/tools.toml", "[]")]));
        assert!(cache.save().is_err());
    }
}
