//! Where the catalog root comes from: the copy embedded in the binary, or a folder on
//! disk (`--catalog-dir`). Either way the compiler sees the same thing: the text of
//! every file under `catalog/`, `rules/` and `templates/`, keyed by relative path.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
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
    /// The catalog, rules and templates embedded at build time.
    pub fn embedded() -> Self {
        Self {
            files: embedded::EMBEDDED
                .iter()
                .map(|(p, t)| ((*p).to_string(), (*t).to_string()))
                .collect(),
            origin: "embedded".into(),
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
