//! The catalog floor: the files authors write (tools, rules, templates), compiled once
//! into the immutable form the request path reads, and the error vocabulary every floor
//! speaks. Knows no deployment, no caller, no network (engine/DESIGN.md).

pub mod catalog;
pub mod error;
