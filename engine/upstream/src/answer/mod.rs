//! What comes back: an upstream answer read into `data` with its pagination and cut
//! lists (`response`), redacted by JSONPath, key name and known secret (`redact`), or
//! all of that in one pass over the bytes (`scan`); shaped as asked (`shape`); put in
//! one of the two exact envelopes (`envelope`). The guard rules read every string of
//! an answer, and of a call's arguments (`guard`).
//!
//! May import: the catalog, [`crate::upstream`] (an answer's refusal) and
//! [`crate::error`].

pub mod envelope;
pub mod guard;
pub mod mcp;
pub mod redact;
pub mod response;
pub mod scan;
pub mod shape;
