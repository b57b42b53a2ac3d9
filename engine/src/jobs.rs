//! The job registry: asynchronous upstream jobs submitted through this broker (imagegen
//! generations, blueprint runs), so a caller can list its recent jobs without an
//! upstream call.
//!
//! A tool whose `[tool.response] job_id` names where its answer carries a job id records
//! the job when the call succeeds; `submit_and_poll` updates the status it reads. Jobs
//! belong to an owner: the caller's key name and a fingerprint (sha256 prefix) of the
//! upstream key the job was submitted with, so two users behind one broker key never
//! see each other's jobs and no key is stored. The registry lives in memory, per broker
//! process, bounded (oldest dropped first); the upstream stays the source of truth.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::Serialize;
use sha2::{Digest, Sha256};

/// Jobs kept at most.
pub const CAPACITY: usize = 2000;

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
    #[serde(skip)]
    owner: String,
}

/// The owner of a job: caller key name plus upstream key fingerprint.
pub fn owner(principal: &str, upstream_key: Option<&str>) -> String {
    match upstream_key {
        Some(key) => {
            let digest = Sha256::digest(key.as_bytes());
            let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
            format!("{principal}:{hex}")
        }
        None => principal.to_string(),
    }
}

/// The registry.
#[derive(Debug, Default)]
pub struct JobRegistry {
    jobs: Mutex<VecDeque<Job>>,
}

impl JobRegistry {
    /// Records a submitted job (a repeated id of the same owner is updated, not doubled).
    pub fn record(&self, service: &str, owner: &str, id: &str, tool: &str, at: &str) {
        let Ok(mut jobs) = self.jobs.lock() else {
            return;
        };
        jobs.retain(|j| !(j.service == service && j.id == id && j.owner == owner));
        if jobs.len() >= CAPACITY {
            jobs.pop_front();
        }
        jobs.push_back(Job {
            service: service.to_string(),
            id: id.to_string(),
            tool: tool.to_string(),
            status: None,
            submitted_at: at.to_string(),
            updated_at: None,
            owner: owner.to_string(),
        });
    }

    /// Notes the status of a job this owner submitted (unknown jobs are ignored).
    pub fn update(&self, service: &str, owner: &str, id: &str, status: &str, at: &str) {
        let Ok(mut jobs) = self.jobs.lock() else {
            return;
        };
        if let Some(job) = jobs
            .iter_mut()
            .find(|j| j.service == service && j.id == id && j.owner == owner)
        {
            job.status = Some(status.to_string());
            job.updated_at = Some(at.to_string());
        }
    }

    /// The owner's jobs of a service, newest first.
    pub fn list(&self, service: &str, owner: &str) -> Vec<Job> {
        let Ok(jobs) = self.jobs.lock() else {
            return Vec::new();
        };
        jobs.iter()
            .rev()
            .filter(|j| j.service == service && j.owner == owner)
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_see_only_their_jobs_and_the_registry_is_bounded() {
        let r = JobRegistry::default();
        let a = owner("agent", Some("key-a"));
        let b = owner("agent", Some("key-b"));
        assert_ne!(a, b);
        assert!(!a.contains("key-a"));
        r.record("imagegen", &a, "g1", "create_generation", "t1");
        r.record("imagegen", &b, "g2", "create_generation", "t2");
        r.update("imagegen", &a, "g1", "COMPLETE", "t3");
        r.update("imagegen", &a, "g2", "HIJACKED", "t3");
        let mine = r.list("imagegen", &a);
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].status.as_deref(), Some("COMPLETE"));
        assert_eq!(r.list("imagegen", &b)[0].status, None);
        for i in 0..CAPACITY + 5 {
            r.record("imagegen", &a, &format!("x{i}"), "t", "t");
        }
        assert_eq!(
            r.list("imagegen", &a).len() + r.list("imagegen", &b).len(),
            CAPACITY
        );
    }
}
