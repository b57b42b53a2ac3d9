//! `policy schema`: the Cedar schema of the catalog (docs/policy.md).

use super::args::PolicyCommand;
use super::catalog::CatalogRoot;
use crate::config::ConfigFile;
use crate::policy::schema::schema_json;

/// Runs a `policy` command on the catalog at `root`; what to print, or why it failed.
pub fn policy(command: PolicyCommand, root: &CatalogRoot) -> Result<String, String> {
    let catalog = root.load()?;
    match command {
        PolicyCommand::Schema { config } => {
            let claims = match config {
                Some(path) => ConfigFile::load(&path)?
                    .policy
                    .map(|p| p.claims)
                    .unwrap_or_default(),
                None => Vec::new(),
            };
            let json = schema_json(&catalog, &claims)?;
            serde_json::to_string_pretty(&json).map_err(|e| e.to_string())
        }
    }
}
