//! Layer 2: logistic-regression heads over the sentence embedding, the lexical features and
//! hashed n-grams.
//!
//! Four heads are trained together and stored in one JSON file (`model/classifier.json`, the
//! committed default, `include_str!`'d):
//! - `full`: embedding (384-d MiniLM) ++ standardised lexical features.
//! - `lexical`: standardised lexical features only.
//! - `embedding`: embedding only. Used by the evaluation's "classifier-only" row.
//! - `ngram`: TF-IDF over hashed word and character n-grams of the normalised text
//!   ([`crate::ngram`]), with the idf learnt on the train split stored beside its weights.
//!
//! The guard decides with an ensemble: the mean of the `full` and `ngram` logits
//! ([`HeadKind::FullNgram`]), or of the `lexical` and `ngram` logits when no embedding is given
//! ([`HeadKind::LexicalNgram`]). The n-gram head sees the wording (which phrases recur in
//! injections), the embedding the meaning; on template-grouped cross-validation of the train and
//! validation data each alone caught fewer attacks at 1 % FPR than their mean.
//!
//! A write scoring at or above the ensemble's threshold (trust-scaled, see
//! [`crate::effective_threshold`]) is quarantined; one between the suspect threshold and it is
//! stored `suspect`. The thresholds and the training that produced the weights are recorded in
//! the model (`training`); training and threshold choice live in `hindsight-guard-lab`.

use serde::{Deserialize, Serialize};

use crate::GuardError;
use crate::features::LEXICAL_FEATURES;
use crate::ngram::{NGRAM_DIM, sparse_dot, tfidf};
use crate::rules::{RuleHit, Severity};

/// The committed default model.
pub const DEFAULT_MODEL_JSON: &str = include_str!("../model/classifier.json");

/// Which head scores a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadKind {
    Full,
    Lexical,
    Embedding,
    Ngram,
    /// Mean logit of `full` and `ngram`: what the guard decides with given an embedding.
    #[serde(rename = "full+ngram")]
    FullNgram,
    /// Mean logit of `lexical` and `ngram`: the guard's fallback without an embedding.
    #[serde(rename = "lexical+ngram")]
    LexicalNgram,
}

impl HeadKind {
    /// Every head, the two the guard decides with first (the order reports list them in).
    pub const ALL: [HeadKind; 6] = [
        HeadKind::FullNgram,
        HeadKind::LexicalNgram,
        HeadKind::Full,
        HeadKind::Lexical,
        HeadKind::Embedding,
        HeadKind::Ngram,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HeadKind::Full => "full",
            HeadKind::Lexical => "lexical",
            HeadKind::Embedding => "embedding",
            HeadKind::Ngram => "ngram",
            HeadKind::FullNgram => "full+ngram",
            HeadKind::LexicalNgram => "lexical+ngram",
        }
    }
}

/// A threshold chosen on the validation split, with the catch rate and false-positive rate
/// reached there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Validated {
    pub threshold: f32,
    pub validation_tpr: f64,
    pub validation_fpr: f64,
}

/// The suspect band's lower ends, per ensemble.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuspectThresholds {
    pub full_ngram: Validated,
    pub lexical_ngram: Validated,
}

/// One logistic-regression head: `p = σ(w·x + b)`, flagged when `p ≥ threshold` (trust-scaled).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub weights: Vec<f32>,
    pub bias: f32,
    #[serde(flatten)]
    pub validated: Validated,
}

/// The n-gram head: its weights over [`NGRAM_DIM`] buckets and the idf it was trained with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NgramHead {
    pub idf: Vec<f32>,
    #[serde(flatten)]
    pub head: Head,
}

/// How the model was trained (recorded in the JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingInfo {
    pub seed: u64,
    pub epochs: usize,
    pub batch_size: usize,
    pub learning_rate: f32,
    pub l2: f32,
    #[serde(default)]
    pub ngram_l2: f32,
    pub target_fpr: f64,
    pub train_attacks: usize,
    pub train_benign: usize,
    pub validation_attacks: usize,
    pub validation_benign: usize,
    pub note: String,
}

/// The trained heads plus the lexical standardisation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Classifier {
    pub version: u32,
    pub embedding_model: String,
    pub embedding_dim: usize,
    pub lexical_features: Vec<String>,
    pub lexical_mean: Vec<f32>,
    pub lexical_std: Vec<f32>,
    pub full: Head,
    pub lexical: Head,
    pub embedding: Head,
    pub ngram: NgramHead,
    /// The ensembles' thresholds (they have no weights of their own): at or above it a write
    /// is quarantined.
    pub full_ngram: Validated,
    pub lexical_ngram: Validated,
    /// The ensembles' suspect thresholds, below the quarantine ones: a write scoring between
    /// the two is stored active but flagged `suspect`. Models without the field have no suspect
    /// band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspect: Option<SuspectThresholds>,
    /// The policy the ensembles' thresholds were validated under: true when every Rule-severity
    /// hit flags a write whatever the classifier says, false when rule hits are only features
    /// (Reject-severity hits flag under both). The guard follows it (see
    /// [`crate::GuardConfig::rule_hits_flag`]). Models from before the field: true.
    #[serde(default = "rules_flag_default")]
    pub rule_hits_flag: bool,
    /// Rule-severity rules that are only features under this model even when `rule_hits_flag`
    /// is true (the training options' `feature_only_rules`): a hit of one alone is not evidence
    /// enough.
    #[serde(default)]
    pub feature_only_rules: Vec<String>,
    pub training: TrainingInfo,
}

fn rules_flag_default() -> bool {
    true
}

/// Whether `hit`'s rule is one of `feature_only_rules` (a feature, never a flag on its own).
pub fn demoted(feature_only_rules: &[String], hit: &RuleHit) -> bool {
    feature_only_rules.iter().any(|r| r == hit.rule)
}

/// A standardised lexical feature, clipped to ±[`Z_CLIP`]: a text far outside the training
/// range of a feature (a rare feature's std is tiny) must not get a logit of -20 from it alone.
pub fn z_score(x: f32, mean: f32, std: f32) -> f32 {
    ((x - mean) / std).clamp(-Z_CLIP, Z_CLIP)
}

/// See [`z_score`].
const Z_CLIP: f32 = 4.0;

/// The logistic function: a head's logit to its probability.
pub fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

/// The inverse of [`sigmoid`], with `p` clamped away from 0 and 1.
pub fn logit(p: f32) -> f32 {
    let p = p.clamp(1e-6, 1.0 - 1e-6);
    (p / (1.0 - p)).ln()
}

impl Classifier {
    /// Whether `hit` flags a write on its own under the policy this model's thresholds were
    /// validated with: Reject-severity hits always, Rule-severity hits when `rule_hits_flag` is
    /// set and the rule is not in `feature_only_rules`, cues never.
    pub fn rule_flags(&self, hit: &RuleHit) -> bool {
        match hit.severity {
            Severity::Reject => true,
            Severity::Rule => self.rule_hits_flag && !demoted(&self.feature_only_rules, hit),
            Severity::Cue => false,
        }
    }

    /// The committed default model.
    pub fn default_model() -> Result<Classifier, GuardError> {
        Classifier::from_json(DEFAULT_MODEL_JSON)
    }

    /// Parses and validates a model file (dimensions and feature names must agree with this build).
    pub fn from_json(json: &str) -> Result<Classifier, GuardError> {
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        if let Ok(Version { version }) = serde_json::from_str::<Version>(json)
            && version < 2
        {
            return Err(GuardError::Invalid(format!(
                "classifier JSON: version {version} has no n-gram head, which this build decides with; retrain with `hindsight-lab guard train`"
            )));
        }
        let c: Classifier = serde_json::from_str(json)
            .map_err(|e| GuardError::Invalid(format!("classifier JSON: {e}")))?;
        let names: Vec<&str> = c.lexical_features.iter().map(String::as_str).collect();
        if names != LEXICAL_FEATURES {
            return Err(GuardError::Invalid(format!(
                "classifier JSON: lexical_features {names:?} differ from this build's {LEXICAL_FEATURES:?}; retrain with `hindsight-lab guard train`"
            )));
        }
        let l = LEXICAL_FEATURES.len();
        let check = |field: &str, got: usize, want: usize| {
            if got == want {
                Ok(())
            } else {
                Err(GuardError::Invalid(format!(
                    "classifier JSON: {field} has {got} values, expected {want}"
                )))
            }
        };
        check("lexical_mean", c.lexical_mean.len(), l)?;
        check("lexical_std", c.lexical_std.len(), l)?;
        check("full.weights", c.full.weights.len(), c.embedding_dim + l)?;
        check("lexical.weights", c.lexical.weights.len(), l)?;
        check(
            "embedding.weights",
            c.embedding.weights.len(),
            c.embedding_dim,
        )?;
        check("ngram.weights", c.ngram.head.weights.len(), NGRAM_DIM)?;
        check("ngram.idf", c.ngram.idf.len(), NGRAM_DIM)?;
        Ok(c)
    }

    pub fn to_json(&self) -> Result<String, GuardError> {
        serde_json::to_string(self)
            .map_err(|e| GuardError::Invalid(format!("serialising classifier: {e}")))
    }

    /// The threshold of `kind` chosen on the validation split (before trust scaling), and the
    /// rates it reached there.
    pub fn validated(&self, kind: HeadKind) -> &Validated {
        match kind {
            HeadKind::Full => &self.full.validated,
            HeadKind::Lexical => &self.lexical.validated,
            HeadKind::Embedding => &self.embedding.validated,
            HeadKind::Ngram => &self.ngram.head.validated,
            HeadKind::FullNgram => &self.full_ngram,
            HeadKind::LexicalNgram => &self.lexical_ngram,
        }
    }

    /// Every head this model has a validated threshold for ([`HeadKind::ALL`]).
    pub fn heads(&self) -> Vec<HeadKind> {
        HeadKind::ALL.to_vec()
    }

    fn standardise(&self, lexical: &[f32]) -> Vec<f32> {
        lexical
            .iter()
            .zip(self.lexical_mean.iter().zip(&self.lexical_std))
            .map(|(x, (m, s))| z_score(*x, *m, *s))
            .collect()
    }

    /// Whether `embedding` can be used by the full/embedding heads.
    pub fn accepts_embedding(&self, embedding: Option<&[f32]>) -> bool {
        embedding.is_some_and(|e| e.len() == self.embedding_dim && self.embedding_dim > 0)
    }

    /// Attack probability under `kind` for a text with these lexical features and n-gram
    /// counts ([`crate::ngram::ngram_counts`] of its normalised form). `Full`/`Embedding` need an
    /// accepted embedding: without one `Full` falls back to `Lexical`, `FullNgram` to
    /// `LexicalNgram`, and `Embedding` returns 0. Returns the head that scored.
    pub fn probability(
        &self,
        kind: HeadKind,
        embedding: Option<&[f32]>,
        lexical: &[f32],
        ngrams: &[(u32, f32)],
    ) -> (f32, HeadKind) {
        let emb = embedding.filter(|_| self.accepts_embedding(embedding));
        let lex = self.standardise(lexical);
        let z_full = |e: &[f32]| dense_z(&self.full, &[e, &lex]);
        let z_lex = || dense_z(&self.lexical, &[&lex]);
        let z_ngram = || {
            let h = &self.ngram.head;
            h.bias + sparse_dot(&tfidf(ngrams, &self.ngram.idf), &h.weights)
        };
        match (kind, emb) {
            (HeadKind::Full, Some(e)) => (sigmoid(z_full(e)), HeadKind::Full),
            (HeadKind::Full | HeadKind::Lexical, _) => (sigmoid(z_lex()), HeadKind::Lexical),
            (HeadKind::Embedding, Some(e)) => {
                (sigmoid(dense_z(&self.embedding, &[e])), HeadKind::Embedding)
            }
            (HeadKind::Embedding, None) => (0.0, HeadKind::Embedding),
            (HeadKind::Ngram, _) => (sigmoid(z_ngram()), HeadKind::Ngram),
            (HeadKind::FullNgram, Some(e)) => {
                (sigmoid((z_full(e) + z_ngram()) / 2.0), HeadKind::FullNgram)
            }
            (HeadKind::FullNgram | HeadKind::LexicalNgram, _) => {
                (sigmoid((z_lex() + z_ngram()) / 2.0), HeadKind::LexicalNgram)
            }
        }
    }
}

/// `w·x + b` over the concatenation of `parts`.
pub fn dense_z(h: &Head, parts: &[&[f32]]) -> f32 {
    h.bias
        + parts
            .iter()
            .flat_map(|p| p.iter())
            .zip(&h.weights)
            .map(|(x, w)| x * w)
            .sum::<f32>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_1_model_is_refused_with_a_retrain_hint() {
        let mut v: serde_json::Value =
            serde_json::from_str(DEFAULT_MODEL_JSON).expect("committed model parses");
        v["version"] = 1.into();
        let err = Classifier::from_json(&v.to_string()).expect_err("version 1 refused");
        assert!(err.to_string().contains("retrain"), "{err}");
        assert_eq!(
            serde_json::to_string(&HeadKind::FullNgram).expect("serialises"),
            "\"full+ngram\""
        );
    }

    #[test]
    fn the_committed_model_has_a_suspect_band_below_its_quarantine_threshold() {
        let c = Classifier::default_model().expect("committed model loads");
        assert!(c.rule_hits_flag && c.feature_only_rules.is_empty());
        let band = c.suspect.as_ref().expect("a suspect band");
        assert!(band.full_ngram.threshold < c.full_ngram.threshold);
        assert!(band.lexical_ngram.threshold < c.lexical_ngram.threshold);
    }
}
