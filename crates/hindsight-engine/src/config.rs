//! Engine and retrieval configuration.

use hindsight_retrieval::{FusionMethod, RankingFactors};
use serde::{Deserialize, Serialize};

/// How a search is run: which paths, how they are fused, which ranking factors apply.
/// The eval harness builds one per setup; the server uses [`RetrievalConfig::default`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetrievalConfig {
    pub vector: bool,
    pub keyword: bool,
    pub structured: bool,
    pub fusion: FusionMethod,
    pub factors: RankingFactors,
    /// Candidates fetched per path = `depth_multiplier * top_k` (at least `min_depth`).
    pub depth_multiplier: usize,
    pub min_depth: usize,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        RetrievalConfig {
            vector: true,
            keyword: true,
            structured: true,
            fusion: FusionMethod::default(),
            factors: RankingFactors::default(),
            depth_multiplier: 3,
            min_depth: 15,
        }
    }
}

impl RetrievalConfig {
    pub fn depth(&self, top_k: usize) -> usize {
        top_k
            .saturating_mul(self.depth_multiplier)
            .max(self.min_depth)
    }
}

/// Write-pipeline settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WriteConfig {
    /// Cosine at or above which a new memory is a duplicate of an active one (same namespace and kind).
    pub dedup_threshold: f32,
    /// Lower bound of the conflict band `[conflict_threshold, dedup_threshold)`.
    pub conflict_threshold: f32,
    /// How many similar memories the conflict judge looks at.
    pub conflict_candidates: usize,
    /// Importance when neither an explicit value nor signals are given.
    pub default_importance: f32,
    /// Longest content accepted, in characters; the context has the same limit.
    pub max_content_chars: usize,
    /// Most tags and entities a memory may carry.
    pub max_labels: usize,
    /// Longest tag, entity name or entity value, in characters.
    pub max_label_chars: usize,
    /// How many earlier turns of its conversation a turn is indexed and embedded with (its
    /// neighbourhood; 0: none). A memory is a turn when it names its conversation
    /// ([`hindsight_core::conversation_of`]).
    pub conversation_window: usize,
}

impl Default for WriteConfig {
    fn default() -> Self {
        WriteConfig {
            dedup_threshold: 0.9,
            conflict_threshold: 0.7,
            conflict_candidates: 3,
            default_importance: 0.5,
            max_content_chars: 8_000,
            max_labels: 64,
            max_label_chars: 256,
            conversation_window: 1,
        }
    }
}
