//! What each toolset costs a model: the size of the `tools/list` a client receives,
//! in bytes and estimated tokens (`tool-broker catalog surface`, recorded in
//! `docs/mcp.md`). A size is a property of the catalog, not a timing, so tests may hold
//! a budget on it.

use serde::Serialize;

use super::tools::{EntryText, all_entries, listing};
use crate::caller::Caller;
use crate::catalog::Catalog;
use crate::config::{Toolset, ToolsetName};

/// Bytes per token used for the estimate: JSON schemas tokenise at roughly 3.5 to 4
/// bytes per token in the common BPE vocabularies; 4 keeps the estimate conservative
/// about what fits, not generous.
pub const BYTES_PER_TOKEN: usize = 4;

/// One toolset's `tools/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Surface {
    /// The toolset as config writes it (`discovery`, `all`, a service id).
    pub toolset: String,
    /// Tools listed.
    pub tools: usize,
    /// Bytes of the listed entries as the JSON array `tools/list` pages carry.
    pub bytes: usize,
    /// `bytes / BYTES_PER_TOKEN`, rounded up.
    pub tokens: usize,
    /// The largest single entry, bytes.
    pub largest: usize,
}

/// Measures a listing.
pub fn measure(toolset: &Toolset, listed: &[&EntryText]) -> Surface {
    let sizes: Vec<usize> = listed.iter().map(|e| e.len()).collect();
    // `[` + entries joined by `,` + `]`.
    let bytes = 2 + sizes.iter().sum::<usize>() + sizes.len().saturating_sub(1);
    Surface {
        toolset: toolset.label(),
        tools: listed.len(),
        bytes,
        tokens: bytes.div_ceil(BYTES_PER_TOKEN),
        largest: sizes.iter().copied().max().unwrap_or(0),
    }
}

/// The surface of every toolset for a key allowed everything: `discovery`, `all`, then
/// each service on its own.
pub fn surfaces(catalog: &Catalog) -> Vec<Surface> {
    let entries = all_entries(catalog);
    let mut toolsets = vec![
        Toolset::Named(ToolsetName::Discovery),
        Toolset::Named(ToolsetName::All),
    ];
    toolsets.extend(
        catalog
            .services
            .keys()
            .map(|id| Toolset::Services(vec![id.clone()])),
    );
    toolsets
        .into_iter()
        .map(|toolset| {
            let caller = Caller {
                toolset: toolset.clone(),
                ..Caller::unrestricted("surface")
            };
            measure(&toolset, &listing(catalog, &entries, &caller, None))
        })
        .collect()
}
