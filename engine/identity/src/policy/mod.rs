//! Who may do what, with which arguments: Cedar policies over every tool, typed by the
//! catalog (docs/policy.md, decision 014).
//!
//! A pipeline read off the module names: `schema` (the catalog's Cedar schema) ->
//! `load` (a folder parsed, named and validated in strict mode) -> `decide` (the set
//! sliced per tool; a call decided, a tool's visibility) with `request` (what Cedar is
//! asked: entities and context) -> `check` (what `policy check` reports to a reviewer).
//! [`PolicyState`] holds the set a deployment decides by and swaps it on reload.
//!
//! May import: `caller`, `catalog`, `config`, `error`.

pub mod check;
pub mod decide;
pub mod est;
pub mod load;
pub mod request;
pub mod schema;

use std::sync::{Arc, RwLock};

pub use decide::{Decision, Facts, Policies, Unreadable};
pub use load::Confirm;

use crate::catalog::Catalog;
use crate::config::PolicyConfig;

/// The policies a deployment decides by: loaded at start, replaced whole by a reload
/// whose set is valid. A call takes the current set once and decides under it to the
/// end.
#[derive(Debug)]
pub struct PolicyState {
    config: PolicyConfig,
    current: RwLock<Arc<Policies>>,
    loaded_at: jiff::Timestamp,
    last_reload: RwLock<Option<Reload>>,
}

/// The last reload of the folder (the console shows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reload {
    /// When it ran.
    pub at: jiff::Timestamp,
    /// The policy count of the set it put in place, or the problems that kept the old.
    pub result: Result<usize, Vec<String>>,
}

impl PolicyState {
    /// Loads and compiles `[policy]` against `catalog`; every problem, one per line.
    pub fn load(config: &PolicyConfig, catalog: &Catalog) -> Result<Self, String> {
        let policies = compile(config, catalog).map_err(|problems| {
            format!(
                "[policy] dir `{}`: {} problem{}:\n{}",
                config.dir.display(),
                problems.len(),
                if problems.len() == 1 { "" } else { "s" },
                problems.join("\n")
            )
        })?;
        Ok(Self {
            config: config.clone(),
            current: RwLock::new(Arc::new(policies)),
            loaded_at: jiff::Timestamp::now(),
            last_reload: RwLock::new(None),
        })
    }

    /// The set new calls decide by.
    pub fn current(&self) -> Arc<Policies> {
        match self.current.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Reads the folder again: a valid set replaces the current one (its policy
    /// count returned); an invalid one leaves it and gives every problem.
    pub fn reload(&self, catalog: &Catalog) -> Result<usize, Vec<String>> {
        let result = compile(&self.config, catalog).map(|policies| {
            let count = policies.sources().len();
            let fresh = Arc::new(policies);
            match self.current.write() {
                Ok(mut guard) => *guard = fresh,
                Err(poisoned) => *poisoned.into_inner() = fresh,
            }
            count
        });
        let reload = Reload {
            at: jiff::Timestamp::now(),
            result: result.clone(),
        };
        match self.last_reload.write() {
            Ok(mut guard) => *guard = Some(reload),
            Err(poisoned) => *poisoned.into_inner() = Some(reload),
        }
        result
    }

    /// When the set was first loaded, and the last reload (none yet: `None`).
    pub fn history(&self) -> (jiff::Timestamp, Option<Reload>) {
        let last = match self.last_reload.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        (self.loaded_at, last)
    }

    /// The folder the policies are read from.
    pub fn dir(&self) -> &std::path::Path {
        &self.config.dir
    }
}

fn compile(config: &PolicyConfig, catalog: &Catalog) -> Result<Policies, Vec<String>> {
    let loaded = load::load_config(config, catalog)?;
    Policies::compile(loaded, catalog).map_err(|e| vec![e])
}
