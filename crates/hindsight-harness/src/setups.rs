//! Named retrieval setups, built in or read from a TOML file.

use hindsight_engine::RetrievalConfig;
use hindsight_retrieval::{FusionMethod, Normalization, PathWeights, RankingFactors};
use serde::{Deserialize, Serialize};

use crate::HarnessError;

/// A named retrieval configuration to evaluate. `tune` setups have their fusion weights and
/// normalisation chosen by cross-validated grid search; their `retrieval.fusion` is ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct Setup {
    pub name: String,
    pub description: String,
    pub retrieval: RetrievalConfig,
    pub tune: bool,
}

/// Which ranking factors a setup switches on (TOML form).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FactorSwitches {
    pub decay: bool,
    pub importance: bool,
    pub access: bool,
    pub trust: bool,
    pub usefulness: bool,
}

impl Default for FactorSwitches {
    fn default() -> Self {
        FactorSwitches {
            decay: true,
            importance: true,
            access: true,
            trust: true,
            usefulness: true,
        }
    }
}

impl FactorSwitches {
    pub const NONE: FactorSwitches = FactorSwitches {
        decay: false,
        importance: false,
        access: false,
        trust: false,
        usefulness: false,
    };

    pub fn to_factors(self) -> RankingFactors {
        let d = RankingFactors::default();
        RankingFactors {
            decay: if self.decay { d.decay } else { None },
            importance: self.importance,
            access_boost: self.access,
            trust: if self.trust { d.trust } else { None },
            usefulness: self.usefulness,
            ..d
        }
    }
}

/// One `[[setup]]` table of a setups file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupDef {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Paths to run: any of `vector`, `keyword`, `structured`.
    pub paths: Vec<String>,
    /// Fusion method, e.g. `{ method = "weighted-sum", weights = { vector = 0.5, keyword = 0.3,
    /// structured = 0.2 }, normalization = "min-max" }` or `{ method = "rrf", k = 60.0, weights = ... }`.
    #[serde(default)]
    pub fusion: Option<FusionMethod>,
    #[serde(default)]
    pub factors: FactorSwitches,
    /// Choose weights + normalisation by cross-validated grid search.
    #[serde(default)]
    pub tune: bool,
}

/// A setups file: `[[setup]]` tables.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupsFile {
    #[serde(default)]
    pub setup: Vec<SetupDef>,
}

impl SetupDef {
    pub fn to_setup(&self) -> Result<Setup, HarnessError> {
        let mut r = RetrievalConfig {
            vector: false,
            keyword: false,
            structured: false,
            ..RetrievalConfig::default()
        };
        if self.paths.is_empty() {
            return Err(HarnessError::Setup(format!(
                "setup {:?}: `paths` must name at least one path",
                self.name
            )));
        }
        for p in &self.paths {
            match p.as_str() {
                "vector" => r.vector = true,
                "keyword" | "bm25" => r.keyword = true,
                "structured" => r.structured = true,
                other => {
                    return Err(HarnessError::Setup(format!(
                        "setup {:?}: unknown path {other:?} (expected vector, keyword, structured)",
                        self.name
                    )));
                }
            }
        }
        r.fusion = self.fusion.unwrap_or_default();
        r.fusion
            .validate()
            .map_err(|e| HarnessError::Setup(format!("setup {:?}: fusion: {e}", self.name)))?;
        r.factors = self.factors.to_factors();
        Ok(Setup {
            name: self.name.clone(),
            description: self.description.clone(),
            retrieval: r,
            tune: self.tune,
        })
    }
}

/// Parses a setups TOML file. Errors name the setup and field.
pub fn parse_setups(text: &str) -> Result<Vec<Setup>, HarnessError> {
    let file: SetupsFile =
        toml::from_str(text).map_err(|e| HarnessError::Setup(format!("setups file: {e}")))?;
    if file.setup.is_empty() {
        return Err(HarnessError::Setup(
            "setups file defines no [[setup]]".into(),
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    file.setup
        .iter()
        .map(|d| {
            if !names.insert(d.name.clone()) {
                return Err(HarnessError::Setup(format!(
                    "setup {:?} is defined twice",
                    d.name
                )));
            }
            d.to_setup()
        })
        .collect()
}

fn setup(
    name: &str,
    description: &str,
    paths: [bool; 3],
    fusion: FusionMethod,
    factors: FactorSwitches,
    tune: bool,
) -> Setup {
    Setup {
        name: name.into(),
        description: description.into(),
        retrieval: RetrievalConfig {
            vector: paths[0],
            keyword: paths[1],
            structured: paths[2],
            fusion,
            factors: factors.to_factors(),
            ..RetrievalConfig::default()
        },
        tune,
    }
}

/// The built-in setups: baselines, the seed hybrid, alternative fusions, the tuned hybrid and
/// ablations of the seed hybrid.
pub fn default_setups() -> Vec<Setup> {
    let seed = FusionMethod::WeightedSum {
        weights: PathWeights::default(),
        normalization: Normalization::MinMax,
    };
    let only = |w: PathWeights| FusionMethod::WeightedSum {
        weights: w,
        normalization: Normalization::MinMax,
    };
    let all = FactorSwitches::default();
    let none = FactorSwitches::NONE;
    vec![
        setup(
            "pure-vector",
            "vector path only (cosine), no ranking factors",
            [true, false, false],
            only(PathWeights::new(1.0, 0.0, 0.0)),
            none,
            false,
        ),
        setup(
            "bm25-only",
            "BM25 keyword path only, no ranking factors",
            [false, true, false],
            only(PathWeights::new(0.0, 1.0, 0.0)),
            none,
            false,
        ),
        setup(
            "hybrid-3path",
            "vector+BM25+structured, weighted sum 0.5/0.3/0.2 (min-max), all ranking factors",
            [true, true, true],
            seed,
            all,
            false,
        ),
        Setup {
            name: "hybrid-default".into(),
            description: "the server's default configuration (RetrievalConfig::default(), chosen by `hindsight-lab defaults`)".into(),
            retrieval: RetrievalConfig::default(),
            tune: false,
        },
        setup(
            "hybrid-rrf",
            "vector+BM25+structured, reciprocal rank fusion (k=60), all ranking factors",
            [true, true, true],
            FusionMethod::rrf(),
            all,
            false,
        ),
        setup(
            "hybrid-combmnz",
            "vector+BM25+structured, CombMNZ (min-max), all ranking factors",
            [true, true, true],
            FusionMethod::CombMnz {
                normalization: Normalization::MinMax,
            },
            all,
            false,
        ),
        setup(
            "hybrid-tuned",
            "vector+BM25+structured, weights and normalisation tuned, all ranking factors",
            [true, true, true],
            seed,
            all,
            true,
        ),
        setup(
            "hybrid-no-factors",
            "ablation: hybrid-3path fusion without any ranking factor",
            [true, true, true],
            seed,
            none,
            false,
        ),
        setup(
            "ablation-no-decay",
            "ablation: hybrid-3path without time decay",
            [true, true, true],
            seed,
            FactorSwitches {
                decay: false,
                ..all
            },
            false,
        ),
        setup(
            "ablation-no-structured",
            "ablation: hybrid-3path without the structured path",
            [true, true, false],
            seed,
            all,
            false,
        ),
        setup(
            "ablation-no-trust-importance",
            "ablation: hybrid-3path without source trust and importance",
            [true, true, true],
            seed,
            FactorSwitches {
                trust: false,
                importance: false,
                ..all
            },
            false,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_setups_file() {
        let text = r#"
            [[setup]]
            name = "mine"
            paths = ["vector", "keyword"]
            fusion = { method = "weighted-sum", weights = { vector = 0.6, keyword = 0.4, structured = 0.0 }, normalization = "z-score" }
            factors = { decay = false }

            [[setup]]
            name = "rrf"
            paths = ["vector", "keyword", "structured"]
            fusion = { method = "rrf", k = 30.0, weights = { vector = 1.0, keyword = 1.0, structured = 1.0 } }
            tune = false
        "#;
        let s = parse_setups(text).expect("valid");
        assert_eq!(s.len(), 2);
        assert!(s[0].retrieval.vector && s[0].retrieval.keyword && !s[0].retrieval.structured);
        assert!(s[0].retrieval.factors.decay.is_none() && s[0].retrieval.factors.importance);
        assert_eq!(
            s[0].retrieval.fusion,
            FusionMethod::WeightedSum {
                weights: PathWeights::new(0.6, 0.4, 0.0),
                normalization: Normalization::ZScore
            }
        );
        assert!(matches!(s[1].retrieval.fusion, FusionMethod::Rrf { k, .. } if k == 30.0));
    }

    #[test]
    fn rejects_bad_setups() {
        assert!(
            parse_setups("[[setup]]\nname='x'\npaths=['vectr']")
                .unwrap_err()
                .to_string()
                .contains("unknown path")
        );
        assert!(
            parse_setups(
                "[[setup]]\nname='x'\npaths=['vector']\n[[setup]]\nname='x'\npaths=['vector']"
            )
            .unwrap_err()
            .to_string()
            .contains("twice")
        );
        assert!(parse_setups("[[setup]]\nname='x'\npaths=['vector']\nbogus=1").is_err());
        assert!(parse_setups("").is_err());
        // Fusion parameters whose fused scores would be infinite, NaN or all zero.
        for (fusion, want) in [
            (
                "{ method = 'rrf', k = -1.0, weights = { vector = 1.0, keyword = 1.0, structured = 1.0 } }",
                "rrf k",
            ),
            (
                "{ method = 'rrf', k = nan, weights = { vector = 1.0, keyword = 1.0, structured = 1.0 } }",
                "rrf k",
            ),
            (
                "{ method = 'weighted-sum', weights = { vector = -0.5, keyword = 1.0, structured = 0.0 }, normalization = 'min-max' }",
                "finite and >= 0",
            ),
            (
                "{ method = 'weighted-sum', weights = { vector = inf, keyword = 1.0, structured = 0.0 }, normalization = 'min-max' }",
                "finite and >= 0",
            ),
            (
                "{ method = 'weighted-sum', weights = { vector = 0.0, keyword = 0.0, structured = 0.0 }, normalization = 'min-max' }",
                "all zero",
            ),
        ] {
            let text = format!("[[setup]]\nname='bad'\npaths=['vector']\nfusion = {fusion}");
            let err = parse_setups(&text).unwrap_err().to_string();
            assert!(
                err.contains("\"bad\"") && err.contains(want),
                "{fusion}: {err}"
            );
        }
    }

    #[test]
    fn default_setup_names_are_unique_and_include_the_issue_setups() {
        let names: Vec<String> = default_setups().into_iter().map(|s| s.name).collect();
        for want in [
            "pure-vector",
            "bm25-only",
            "hybrid-3path",
            "hybrid-rrf",
            "hybrid-tuned",
            "ablation-no-decay",
            "ablation-no-structured",
            "ablation-no-trust-importance",
        ] {
            assert!(names.iter().any(|n| n == want), "{want}");
        }
        let set: std::collections::BTreeSet<_> = names.iter().collect();
        assert_eq!(set.len(), names.len());
    }
}
