//! Engine and retrieval configuration.

use hindsight_retrieval::{FusionMethod, RankingFactors};
use serde::{Deserialize, Serialize};

/// How a search is run: which paths, how they are fused, which ranking factors apply.
/// The eval harness builds one per setup; the server uses [`RetrievalConfig::default`], the
/// configuration `default-retrieval.toml` (next to this file) records. That file is written by
/// `hindsight-lab defaults --write`, which chooses it on every retrieval dataset at once by
/// cross-validation; `reports/defaults/` holds the evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default = "RetrievalConfig::builtin", deny_unknown_fields)]
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

/// The committed default configuration (see [`RetrievalConfig`]).
pub const DEFAULT_RETRIEVAL_TOML: &str = include_str!("default-retrieval.toml");

static DEFAULT_RETRIEVAL: std::sync::LazyLock<RetrievalConfig> = std::sync::LazyLock::new(|| {
    RetrievalConfig::from_toml(DEFAULT_RETRIEVAL_TOML)
        .unwrap_or_else(|e| panic!("the committed default-retrieval.toml is invalid: {e}"))
});

impl Default for RetrievalConfig {
    fn default() -> Self {
        DEFAULT_RETRIEVAL.clone()
    }
}

impl RetrievalConfig {
    /// Every path, the seed weighted sum and every ranking factor: what a field missing from a
    /// configuration file falls back to when parsed on its own.
    pub fn builtin() -> Self {
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

    /// Parses a complete configuration (fields it omits take [`RetrievalConfig::builtin`]'s
    /// values) and checks it.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        let c: RetrievalConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.validate()?;
        Ok(c)
    }

    /// Parses `text` as changes to [`RetrievalConfig::default`]: tables merge key by key, except
    /// `fusion`, which a file replaces whole (its method decides its fields).
    pub fn from_toml_overrides(text: &str) -> Result<Self, String> {
        let changes: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut base = toml::Table::try_from(RetrievalConfig::default())
            .map_err(|e| format!("serialising the default: {e}"))?;
        merge(&mut base, changes);
        let c: RetrievalConfig = base
            .try_into()
            .map_err(|e: toml::de::Error| e.to_string())?;
        c.validate()?;
        Ok(c)
    }

    /// The configuration as TOML (what [`RetrievalConfig::from_toml`] reads back).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a retrieval configuration serialises")
    }

    /// Checks what a search needs: a path switched on, fusion parameters that give finite,
    /// non-degenerate scores, a depth.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.vector || self.keyword || self.structured) {
            return Err("no retrieval path is switched on".into());
        }
        self.fusion.validate()?;
        if self.depth_multiplier == 0 && self.min_depth == 0 {
            return Err("depth_multiplier and min_depth are both 0: no candidates".into());
        }
        Ok(())
    }

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

/// Merges `changes` into `base`: nested tables key by key, `fusion` and every other value
/// replaced.
fn merge(base: &mut toml::Table, changes: toml::Table) {
    for (key, value) in changes {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(c)) if key != "fusion" => merge(b, c),
            (_, v) => {
                base.insert(key, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_retrieval::{Normalization, PathWeights};

    #[test]
    fn the_committed_default_parses_and_round_trips() {
        let d = RetrievalConfig::default();
        d.validate().expect("valid");
        assert_eq!(RetrievalConfig::from_toml(&d.to_toml()), Ok(d));
    }

    #[test]
    fn overrides_merge_onto_the_default_and_replace_fusion_whole() {
        let d = RetrievalConfig::default();
        let c = RetrievalConfig::from_toml_overrides(
            "structured = false\n[factors]\ndecay_weight = 0.25\n\
             [fusion]\nmethod = \"comb-mnz\"\nnormalization = \"z-score\"\n",
        )
        .expect("valid");
        assert!(!c.structured && c.vector == d.vector && c.keyword == d.keyword);
        assert_eq!(c.factors.decay_weight, 0.25);
        assert_eq!(c.factors.importance, d.factors.importance);
        assert_eq!(c.factors.trust, d.factors.trust);
        assert_eq!(
            c.fusion,
            FusionMethod::CombMnz {
                normalization: Normalization::ZScore
            }
        );
        assert_eq!(RetrievalConfig::from_toml_overrides(""), Ok(d));
    }

    #[test]
    fn bad_configurations_are_refused_with_the_reason() {
        let typo = RetrievalConfig::from_toml_overrides("[factors]\ndecay_wieght = 0.1\n");
        assert!(typo.unwrap_err().contains("decay_wieght"));
        let none = RetrievalConfig::from_toml_overrides(
            "vector = false\nkeyword = false\nstructured = false\n",
        );
        assert!(none.unwrap_err().contains("no retrieval path"));
        let zero = RetrievalConfig {
            fusion: FusionMethod::WeightedSum {
                weights: PathWeights::new(0.0, 0.0, 0.0),
                normalization: Normalization::MinMax,
            },
            ..RetrievalConfig::builtin()
        };
        assert!(RetrievalConfig::from_toml(&zero.to_toml()).is_err());
    }
}
