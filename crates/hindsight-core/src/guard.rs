//! The write-guard hook: every write passes a [`WriteGuard`] before it is embedded and stored.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::memory::NewMemory;

/// What the guard decided for one write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum GuardDecision {
    /// Store as is.
    Allow,
    /// Store with sensitive spans replaced (`content` is the redacted text).
    Redact {
        content: String,
        categories: Vec<String>,
    },
    /// Store with status `quarantined` (never returned by search, releasable by an operator).
    Quarantine {
        reason: String,
        categories: Vec<String>,
        score: f32,
    },
    /// Refuse the write.
    Reject {
        reason: String,
        categories: Vec<String>,
        score: f32,
    },
}

impl GuardDecision {
    pub fn name(&self) -> &'static str {
        match self {
            GuardDecision::Allow => "allow",
            GuardDecision::Redact { .. } => "redact",
            GuardDecision::Quarantine { .. } => "quarantine",
            GuardDecision::Reject { .. } => "reject",
        }
    }
}

/// Screens writes. Implementations must be cheap relative to embedding (target: < 1 ms).
pub trait WriteGuard: Send + Sync + fmt::Debug {
    fn check(&self, memory: &NewMemory) -> GuardDecision;
}

/// The guard used until a real one is configured: allows everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllowAll;

impl WriteGuard for AllowAll {
    fn check(&self, _memory: &NewMemory) -> GuardDecision {
        GuardDecision::Allow
    }
}
