//! `policy schema` (the Cedar schema of the catalog) and `policy check` (a folder
//! validated against it, what each policy applies to; docs/policy.md).

use super::args::{Format, PolicyCommand, SchemaFormat};
use super::catalog::CatalogRoot;
use crate::config::{ConfigFile, PolicyConfig};
use crate::policy::schema::{schema_json, schema_text};
use crate::policy::{Policies, check, load};

/// Runs a `policy` command on the catalog at `root`; what to print, or why it failed.
pub fn policy(command: PolicyCommand, root: &CatalogRoot) -> Result<String, String> {
    let catalog = root.load()?;
    match command {
        PolicyCommand::Schema { config, format } => {
            let config = match config {
                Some(path) => Some(ConfigFile::load(&path)?),
                None => None,
            };
            let units = config
                .as_ref()
                .and_then(|c| c.costs.as_ref())
                .map(|c| c.units.clone())
                .unwrap_or_default();
            let (claims, set_claims) = config
                .and_then(|c| c.policy)
                .map(|p| (p.claims, p.set_claims))
                .unwrap_or_default();
            let json = schema_json(&catalog, &claims, &set_claims, &units)?;
            match format {
                SchemaFormat::Json => {
                    serde_json::to_string_pretty(&json).map_err(|e| e.to_string())
                }
                SchemaFormat::Cedar => schema_text(&json),
            }
        }
        PolicyCommand::Check {
            config,
            dir,
            format,
        } => {
            let config = match (config, dir) {
                (_, Some(dir)) => PolicyConfig {
                    dir,
                    claims: Vec::new(),
                    set_claims: Vec::new(),
                    units: Vec::new(),
                },
                (Some(path), None) => ConfigFile::load(&path)?.policy.ok_or_else(|| {
                    format!(
                        "{} has no `[policy]` table; add `[policy] dir = \"<folder>\"` or pass --dir",
                        path.display()
                    )
                })?,
                (None, None) => {
                    return Err(
                        "policy check: pass --config FILE (its `[policy]` names the folder) or --dir FOLDER"
                            .into(),
                    );
                }
            };
            let loaded = load::load_config(&config, &catalog).map_err(|problems| {
                format!(
                    "{}\n{} problem{} in `{}`; the broker does not start with this set",
                    problems.join("\n"),
                    problems.len(),
                    if problems.len() == 1 { "" } else { "s" },
                    config.dir.display()
                )
            })?;
            let policies = Policies::compile(loaded, &catalog)?;
            Ok(match format {
                Format::Text => check::report_text(&policies, &catalog),
                Format::Json => check::report_json(&policies, &catalog).to_string(),
            })
        }
    }
}
