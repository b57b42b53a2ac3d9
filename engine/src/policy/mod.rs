//! Who may do what, with which arguments: Cedar policies over every tool, typed by the
//! catalog (docs/policy.md).
//!
//! `schema` makes the Cedar schema (JSON form) of a compiled catalog: the entity types,
//! one action per tool in its groups, and each action's context typed from the tool's
//! argument schema.
//!
//! May import: `catalog`, `config`, `error`.

pub mod schema;
