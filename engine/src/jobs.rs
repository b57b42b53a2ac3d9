//! Jobs: asynchronous upstream jobs submitted through this broker (imagegen
//! generations, blueprint runs, agent tasks), so a caller can list its recent jobs
//! without an upstream call, from any replica, after a restart.
//!
//! A tool whose `[tool.response] job_id` names where its answer carries a job id records
//! the job in the store ([`crate::store::jobs`]) when the call succeeds;
//! `submit_and_poll` notes the status it reads. Jobs belong to an owner: the caller's
//! key name and a fingerprint (sha256 prefix) of the upstream key the job was submitted
//! with, so two users behind one broker key never see each other's jobs and no key is
//! stored. The upstream stays the source of truth.

use serde::Serialize;
use sha2::{Digest, Sha256};

/// One recorded job.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// Service id.
    pub service: String,
    /// The upstream's job id.
    pub id: String,
    /// Tool that submitted it.
    pub tool: String,
    /// Last status seen (none until a status read).
    pub status: Option<String>,
    /// When it was submitted (RFC 3339).
    pub submitted_at: String,
    /// When the status was last seen.
    pub updated_at: Option<String>,
}

/// The owner of a job: caller key name plus upstream key fingerprint.
pub fn owner(principal: &str, upstream_key: Option<&str>) -> String {
    match upstream_key {
        Some(key) => {
            let digest = Sha256::digest(key.as_bytes());
            format!("{principal}:{}", crate::identity::hex(&digest[..8]))
        }
        None => principal.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_fingerprints_never_keys() {
        let a = owner("agent", Some("key-a"));
        let b = owner("agent", Some("key-b"));
        assert_ne!(a, b);
        assert!(!a.contains("key-a"));
        assert_eq!(owner("agent", None), "agent");
    }
}
