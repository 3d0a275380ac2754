//! Fusion of per-path ranked lists into one ranking.

use std::cmp::Ordering;
use std::collections::HashMap;

use hindsight_core::{MemoryId, PathHit, PathKind};
use serde::{Deserialize, Serialize};

/// Weight of each path in a weighted fusion. Seed default: vector 0.5, keyword 0.3, structured 0.2.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathWeights {
    pub vector: f64,
    pub keyword: f64,
    pub structured: f64,
}

impl Default for PathWeights {
    fn default() -> Self {
        PathWeights {
            vector: 0.5,
            keyword: 0.3,
            structured: 0.2,
        }
    }
}

impl PathWeights {
    pub fn new(vector: f64, keyword: f64, structured: f64) -> Self {
        PathWeights {
            vector,
            keyword,
            structured,
        }
    }
    pub fn get(&self, path: PathKind) -> f64 {
        match path {
            PathKind::Vector => self.vector,
            PathKind::Keyword => self.keyword,
            PathKind::Structured => self.structured,
        }
    }
    pub fn as_array(&self) -> [f64; 3] {
        [self.vector, self.keyword, self.structured]
    }
}

/// How a path's raw scores are mapped to a comparable scale before weighting.
///
/// Every normalisation is over the path's *candidate depth* (the number of hits a search asks
/// each path for): a list shorter than the depth is completed with virtual hits scoring 0 (the
/// memories the path did not find), so two or three candidates are never stretched over [0, 1]
/// by a difference between them that means nothing. In a store of two memories whose cosines are
/// 0.61 and 0.60, min-max over the two would give the first 1 and the second 0; over the depth
/// they keep 1 and 0.98.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Normalization {
    /// `(s - lo) / (max - lo)` where `lo` is the list's minimum, or at most 0 when the list is
    /// shorter than the depth; a list whose scores are all equal maps to 1.
    #[default]
    MinMax,
    /// z-score over the list completed to the depth with zeros, shifted so the worst (possibly
    /// virtual) hit maps to 0 (a hit absent from a path contributes 0, so it must never beat a
    /// present one).
    ///
    /// Unlike the others it is not monotone in a single score: raising a list's best score
    /// also raises the list's standard deviation, and can *lower* that hit's normalised score
    /// (`[2.38, 0, -1.53]` gives the top hit 2.430, `[3.22, 0, -1.53]` gives it 2.399), so a hit
    /// whose raw score improves can drop a place in the fused order.
    ZScore,
    /// Rank-based: `(d - rank + 1) / d` with `d` the larger of the depth and the list's length;
    /// tied scores share their mean rank.
    Rank,
    /// A fixed scale: `s / max` (0 for a non-positive score). The best hit of every path gets
    /// 1 and the others keep their ratio to it, whatever the list's length or spread.
    Max,
}

impl Normalization {
    pub const ALL: [Normalization; 4] = [
        Normalization::MinMax,
        Normalization::ZScore,
        Normalization::Rank,
        Normalization::Max,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Normalization::MinMax => "min-max",
            Normalization::ZScore => "z-score",
            Normalization::Rank => "rank",
            Normalization::Max => "max",
        }
    }
}

/// The fusion method.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "kebab-case")]
pub enum FusionMethod {
    /// `sum_p w_p * norm_p(score)`.
    WeightedSum {
        weights: PathWeights,
        normalization: Normalization,
    },
    /// Reciprocal rank fusion: `sum_p w_p / (k + rank_p)`; weights default to 1 per path. Tied
    /// scores within a path share their mean rank (a path that cannot tell memories apart gives
    /// them equal credit).
    Rrf { k: f64, weights: PathWeights },
    /// CombMNZ: `(number of paths that found the hit) * sum_p norm_p(score)`.
    CombMnz { normalization: Normalization },
}

impl Default for FusionMethod {
    fn default() -> Self {
        FusionMethod::WeightedSum {
            weights: PathWeights::default(),
            normalization: Normalization::MinMax,
        }
    }
}

impl FusionMethod {
    /// Checks the parameters a fused score is meaningful for: path weights finite, >= 0 and not
    /// all zero; RRF's `k` finite and >= 0 (at `k <= -1` a rank-1 hit divides by zero or less).
    pub fn validate(&self) -> Result<(), String> {
        let weights = |w: &PathWeights| {
            let all = [w.vector, w.keyword, w.structured];
            if all.iter().any(|x| !x.is_finite() || *x < 0.0) {
                return Err(format!(
                    "path weights must be finite and >= 0, got vector {} keyword {} structured {}",
                    w.vector, w.keyword, w.structured
                ));
            }
            if all.iter().all(|x| *x == 0.0) {
                return Err("path weights are all zero".to_owned());
            }
            Ok(())
        };
        match self {
            FusionMethod::WeightedSum { weights: w, .. } => weights(w),
            FusionMethod::Rrf { k, weights: w } => {
                if !(k.is_finite() && *k >= 0.0) {
                    return Err(format!("rrf k must be finite and >= 0, got {k}"));
                }
                weights(w)
            }
            FusionMethod::CombMnz { .. } => Ok(()),
        }
    }

    pub fn rrf() -> Self {
        FusionMethod::Rrf {
            k: 60.0,
            weights: PathWeights::new(1.0, 1.0, 1.0),
        }
    }
}

/// What one path contributed to a fused hit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathContribution {
    /// 1-based rank within the path's list (the position it was served at; tied scores share
    /// their mean rank in rank-based fusion).
    pub rank: usize,
    /// The path's raw score (cosine, BM25, structured score).
    pub raw: f32,
    /// The normalised score used by the fusion (for RRF, `1 / (k + rank)`).
    pub normalized: f64,
}

/// A hit after fusion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FusedHit {
    pub id: MemoryId,
    pub score: f64,
    /// Indexed by [`PathKind::index`]: vector, keyword, structured.
    pub paths: [Option<PathContribution>; 3],
}

impl FusedHit {
    pub fn path(&self, p: PathKind) -> Option<&PathContribution> {
        self.paths[p.index()].as_ref()
    }
    pub fn found_by(&self) -> Vec<PathKind> {
        PathKind::ALL
            .into_iter()
            .filter(|p| self.paths[p.index()].is_some())
            .collect()
    }
}

/// Sorts a path's hits best first (score descending, ties by id descending so the order is
/// deterministic), dropping duplicate ids (the best-scored occurrence wins) and non-finite
/// scores. No fusion depends on the order among tied hits: rank-based ones give them their mean
/// rank.
fn sorted_unique(hits: &[PathHit]) -> Vec<&PathHit> {
    let mut v: Vec<&PathHit> = hits.iter().filter(|h| h.score.is_finite()).collect();
    v.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| b.id.cmp(&a.id)));
    let mut seen = std::collections::HashSet::with_capacity(v.len());
    v.retain(|h| seen.insert(&h.id));
    v
}

/// 1-based ranks of a list sorted best first, tied scores sharing their mean rank.
pub fn tied_ranks(scores: &[f32]) -> Vec<f64> {
    let mut ranks = vec![0.0; scores.len()];
    let mut i = 0;
    while i < scores.len() {
        let mut j = i;
        while j + 1 < scores.len() && scores[j + 1] == scores[i] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        ranks[i..=j].iter_mut().for_each(|r| *r = mean);
        i = j + 1;
    }
    ranks
}

/// Normalised scores for a list already sorted best first, over a candidate depth of `depth`
/// (see [`Normalization`]: a shorter list is completed with virtual zero scores).
pub fn normalize(scores: &[f32], normalization: Normalization, depth: usize) -> Vec<f64> {
    let n = scores.len();
    if n == 0 {
        return Vec::new();
    }
    let s: Vec<f64> = scores.iter().map(|&x| f64::from(x)).collect();
    let padded = n < depth;
    let missing = depth.saturating_sub(n) as f64;
    match normalization {
        Normalization::MinMax => {
            let (mut min, max) = s
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                    (lo.min(x), hi.max(x))
                });
            if padded {
                min = min.min(0.0);
            }
            let span = max - min;
            if span <= f64::EPSILON * max.abs().max(1.0) {
                vec![1.0; n]
            } else {
                s.iter().map(|&x| (x - min) / span).collect()
            }
        }
        Normalization::ZScore => {
            let total = n as f64 + missing;
            let mean = s.iter().sum::<f64>() / total;
            let var = (s.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>()
                + missing * mean * mean)
                / total;
            let sd = var.sqrt();
            if sd <= f64::EPSILON * mean.abs().max(1.0) {
                vec![1.0; n]
            } else {
                let z: Vec<f64> = s.iter().map(|&x| (x - mean) / sd).collect();
                let mut zmin = z.iter().copied().fold(f64::INFINITY, f64::min);
                if padded {
                    zmin = zmin.min(-mean / sd);
                }
                z.into_iter().map(|x| x - zmin).collect()
            }
        }
        Normalization::Rank => {
            let d = depth.max(n) as f64;
            tied_ranks(scores)
                .into_iter()
                .map(|r| (d - r + 1.0) / d)
                .collect()
        }
        Normalization::Max => {
            let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if max <= 0.0 {
                vec![0.0; n]
            } else {
                s.iter().map(|&x| (x / max).max(0.0)).collect()
            }
        }
    }
}

/// Fuses per-path ranked lists, each asked for `depth` candidates (see [`Normalization`]).
/// Input lists may be in any order; the result is sorted by fused score descending, ties broken
/// by id descending (the final ranking, [`crate::rank`], orders ties by recency). Paths absent
/// from `lists` contribute nothing.
pub fn fuse(
    lists: &[(PathKind, &[PathHit])],
    method: &FusionMethod,
    depth: usize,
) -> Vec<FusedHit> {
    let mut acc: HashMap<&MemoryId, FusedHit> = HashMap::new();
    for &(path, hits) in lists {
        let sorted = sorted_unique(hits);
        let raw: Vec<f32> = sorted.iter().map(|h| h.score).collect();
        let norm = match method {
            FusionMethod::WeightedSum { normalization, .. }
            | FusionMethod::CombMnz { normalization } => normalize(&raw, *normalization, depth),
            FusionMethod::Rrf { k, .. } => tied_ranks(&raw)
                .into_iter()
                .map(|r| 1.0 / (k + r))
                .collect(),
        };
        for (i, (hit, normalized)) in sorted.into_iter().zip(norm).enumerate() {
            let entry = acc.entry(&hit.id).or_insert_with(|| FusedHit {
                id: hit.id.clone(),
                score: 0.0,
                paths: [None; 3],
            });
            entry.paths[path.index()] = Some(PathContribution {
                rank: i + 1,
                raw: hit.score,
                normalized,
            });
        }
    }
    let mut fused: Vec<FusedHit> =
        acc.into_values()
            .map(|mut h| {
                h.score = match method {
                    FusionMethod::WeightedSum { weights, .. }
                    | FusionMethod::Rrf { weights, .. } => PathKind::ALL
                        .into_iter()
                        .filter_map(|p| h.paths[p.index()].map(|c| weights.get(p) * c.normalized))
                        .sum(),
                    FusionMethod::CombMnz { .. } => {
                        let found = h.paths.iter().flatten().count() as f64;
                        found * h.paths.iter().flatten().map(|c| c.normalized).sum::<f64>()
                    }
                };
                h
            })
            .collect();
    fused.sort_by(|a, b| {
        score_key(b.score)
            .total_cmp(&score_key(a.score))
            .then_with(|| b.id.cmp(&a.id))
    });
    fused
}

/// A score as ordered: NaN last, -0.0 tied with 0.0.
fn score_key(score: f64) -> f64 {
    if score.is_nan() {
        f64::NEG_INFINITY
    } else if score == 0.0 {
        0.0
    } else {
        score
    }
}

/// The order of every ranking the engine serves: score descending (NaN last, -0.0 tied with
/// 0.0); equal scores by `created_at` descending (the later memory first: of two memories the
/// ranking cannot tell apart, the newer is the likelier to hold); then by id descending, so the
/// order never depends on how a caller or a dataset numbers its ids except between memories
/// written at the same instant.
pub fn served_order(
    a: (f64, chrono::DateTime<chrono::Utc>, &str),
    b: (f64, chrono::DateTime<chrono::Utc>, &str),
) -> Ordering {
    score_key(b.0)
        .total_cmp(&score_key(a.0))
        .then_with(|| b.1.cmp(&a.1))
        .then_with(|| b.2.cmp(a.2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hits(v: &[(&str, f32)]) -> Vec<PathHit> {
        v.iter()
            .map(|(id, s)| PathHit {
                id: MemoryId::from(*id),
                score: *s,
            })
            .collect()
    }

    fn ids(f: &[FusedHit]) -> Vec<&str> {
        f.iter().map(|h| h.id.as_str()).collect()
    }

    #[test]
    fn weighted_sum_min_max_by_hand() {
        // vector: a=0.9 -> 1, b=0.7 -> 0.5, c=0.5 -> 0 ; keyword: c=10 -> 1, a=2 -> 0
        let v = hits(&[("a", 0.9), ("b", 0.7), ("c", 0.5)]);
        let k = hits(&[("c", 10.0), ("a", 2.0)]);
        let m = FusionMethod::WeightedSum {
            weights: PathWeights::new(0.5, 0.3, 0.2),
            normalization: Normalization::MinMax,
        };
        let f = fuse(&[(PathKind::Vector, &v), (PathKind::Keyword, &k)], &m, 0);
        // a = 0.5*1 + 0.3*0 = 0.5 ; b = 0.5*0.5 = 0.25 ; c = 0 + 0.3*1 = 0.3
        assert_eq!(ids(&f), ["a", "c", "b"]);
        assert!(
            (f[0].score - 0.5).abs() < 1e-9
                && (f[1].score - 0.3).abs() < 1e-9
                && (f[2].score - 0.25).abs() < 1e-9
        );
        assert_eq!(f[1].path(PathKind::Keyword).map(|c| c.rank), Some(1));
        assert_eq!(f[1].found_by(), vec![PathKind::Vector, PathKind::Keyword]);
    }

    #[test]
    fn tied_path_scores_rank_by_id_descending() {
        // Two tied structured hits, listed older first: ranks follow id descending (newest
        // first for time-ordered ids), the order the engine serves ties in.
        let s = hits(&[("01-older", 0.5), ("02-newer", 0.5), ("00-oldest", 0.25)]);
        let f = fuse(&[(PathKind::Structured, &s)], &FusionMethod::rrf(), 0);
        assert_eq!(ids(&f), ["02-newer", "01-older", "00-oldest"]);
        assert_eq!(f[0].path(PathKind::Structured).map(|c| c.rank), Some(1));
        assert_eq!(f[1].path(PathKind::Structured).map(|c| c.rank), Some(2));
    }

    #[test]
    fn tied_scores_share_their_mean_rank() {
        assert_eq!(
            tied_ranks(&[0.9, 0.5, 0.5, 0.5, 0.1]),
            [1.0, 3.0, 3.0, 3.0, 5.0]
        );
        // RRF gives tied hits the same credit, whatever order the path listed them in.
        let s = hits(&[("a", 0.5), ("b", 0.5), ("c", 0.25)]);
        let f = fuse(&[(PathKind::Structured, &s)], &FusionMethod::rrf(), 0);
        let score = |id: &str| f.iter().find(|h| h.id.as_str() == id).map(|h| h.score);
        assert_eq!(score("a"), score("b"));
        assert!(score("a") > score("c"));
    }

    #[test]
    fn a_short_list_is_not_stretched_over_the_unit_interval() {
        // Two candidates, a near tie on the vector path: over the depth (15) the runner-up keeps
        // nearly full credit in every normalisation, instead of 0 (min-max) or half (rank).
        for n in Normalization::ALL {
            let v = normalize(&[0.61, 0.60], n, 15);
            assert!(v[0] >= v[1] && v[1] > 0.0, "{n:?}: {v:?}");
            if n != Normalization::Rank {
                assert!(v[1] / v[0] > 0.9, "{n:?}: {v:?}");
            }
        }
        // A list as deep as the depth is normalised over its own range.
        assert_eq!(
            normalize(&[3.0, 2.0, 1.0], Normalization::MinMax, 3),
            vec![1.0, 0.5, 0.0]
        );
        assert_eq!(
            normalize(&[4.0, 1.0], Normalization::Max, 15),
            vec![1.0, 0.25]
        );
    }

    #[test]
    fn rrf_by_hand() {
        let v = hits(&[("a", 0.9), ("b", 0.8)]);
        let k = hits(&[("b", 5.0), ("c", 4.0)]);
        let f = fuse(
            &[(PathKind::Vector, &v), (PathKind::Keyword, &k)],
            &FusionMethod::rrf(),
            0,
        );
        // b = 1/62 + 1/61, a = 1/61, c = 1/62
        assert_eq!(ids(&f), ["b", "a", "c"]);
        assert!((f[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-12);
    }

    #[test]
    fn comb_mnz_rewards_agreement() {
        let v = hits(&[("a", 1.0), ("b", 0.5), ("c", 0.0)]);
        let k = hits(&[("b", 1.0), ("d", 0.0)]);
        let f = fuse(
            &[(PathKind::Vector, &v), (PathKind::Keyword, &k)],
            &FusionMethod::CombMnz {
                normalization: Normalization::MinMax,
            },
            0,
        );
        // b = 2 * (0.5 + 1) = 3 ; a = 1 ; c = 0, d = 0 (ties by id, descending)
        assert_eq!(ids(&f), ["b", "a", "d", "c"]);
        assert!((f[0].score - 3.0).abs() < 1e-9);
    }

    #[test]
    fn normalizations_by_hand() {
        assert_eq!(
            normalize(&[3.0, 2.0, 1.0], Normalization::MinMax, 0),
            vec![1.0, 0.5, 0.0]
        );
        assert_eq!(
            normalize(&[2.0, 2.0], Normalization::MinMax, 0),
            vec![1.0, 1.0]
        );
        assert_eq!(
            normalize(&[9.0, 5.0, 1.0, 0.0], Normalization::Rank, 0),
            vec![1.0, 0.75, 0.5, 0.25]
        );
        let z = normalize(&[3.0, 2.0, 1.0], Normalization::ZScore, 0);
        // sd = sqrt(2/3); z = [1.2247, 0, -1.2247] shifted by +1.2247
        assert!((z[0] - 2.0 * (1.5f64).sqrt()).abs() < 1e-9 && z[2].abs() < 1e-12);
    }

    #[test]
    fn z_score_is_not_monotone_in_one_score() {
        // Found by the monotonicity property below (now run without z-score): a better raw
        // score lowers the hit's own z-score because the spread grows faster than its distance
        // from the mean.
        let before = normalize(&[2.38, 0.0, -1.53], Normalization::ZScore, 0)[0];
        let after = normalize(&[3.22, 0.0, -1.53], Normalization::ZScore, 0)[0];
        assert!(after < before, "{after} vs {before}");
        for n in [
            Normalization::MinMax,
            Normalization::Rank,
            Normalization::Max,
        ] {
            assert!(
                normalize(&[3.22, 0.0, -1.53], n, 0)[0] >= normalize(&[2.38, 0.0, -1.53], n, 0)[0]
            );
        }
    }

    #[test]
    fn duplicates_and_nan_are_dropped() {
        let v = hits(&[("a", 0.2), ("a", 0.9), ("b", f32::NAN)]);
        let f = fuse(&[(PathKind::Vector, &v)], &FusionMethod::default(), 0);
        assert_eq!(ids(&f), ["a"]);
        assert_eq!(f[0].path(PathKind::Vector).map(|c| c.raw), Some(0.9));
    }

    fn arb_list() -> impl Strategy<Value = Vec<(u8, i16)>> {
        prop::collection::vec((0u8..24, -1000i16..1000), 0..16)
    }

    fn to_hits(v: &[(u8, i16)]) -> Vec<PathHit> {
        // unique ids per list: keep first occurrence
        let mut seen = std::collections::HashSet::new();
        v.iter()
            .filter(|(id, _)| seen.insert(*id))
            .map(|(id, s)| PathHit {
                id: MemoryId(format!("m{id:02}")),
                score: f32::from(*s) / 100.0,
            })
            .collect()
    }

    fn arb_method() -> impl Strategy<Value = FusionMethod> {
        methods(prop_oneof![
            Just(Normalization::MinMax),
            Just(Normalization::ZScore),
            Just(Normalization::Rank)
        ])
    }

    /// Methods whose normalisation is monotone in each score (not z-score; see its docs).
    fn arb_monotone_method() -> impl Strategy<Value = FusionMethod> {
        methods(prop_oneof![
            Just(Normalization::MinMax),
            Just(Normalization::Rank)
        ])
    }

    fn methods(
        norm: impl Strategy<Value = Normalization> + Clone + 'static,
    ) -> impl Strategy<Value = FusionMethod> {
        let w = (0u8..=10, 0u8..=10, 0u8..=10).prop_map(|(a, b, c)| {
            PathWeights::new(
                f64::from(a) / 10.0,
                f64::from(b) / 10.0,
                f64::from(c) / 10.0,
            )
        });
        prop_oneof![
            (w.clone(), norm.clone()).prop_map(|(weights, normalization)| {
                FusionMethod::WeightedSum {
                    weights,
                    normalization,
                }
            }),
            (1u8..100, w).prop_map(|(k, weights)| FusionMethod::Rrf {
                k: f64::from(k),
                weights
            }),
            norm.prop_map(|normalization| FusionMethod::CombMnz { normalization }),
        ]
    }

    fn score_map(f: &[FusedHit]) -> Vec<(String, i64)> {
        let mut v: Vec<(String, i64)> = f
            .iter()
            .map(|h| (h.id.0.clone(), (h.score * 1e9).round() as i64))
            .collect();
        v.sort();
        v
    }

    proptest! {
        #[test]
        fn permutation_invariance(v in arb_list(), k in arb_list(), s in arb_list(), m in arb_method(), seed in any::<u64>(), depth in 0usize..24) {
            let (v, k, s) = (to_hits(&v), to_hits(&k), to_hits(&s));
            let base = fuse(&[(PathKind::Vector, &v), (PathKind::Keyword, &k), (PathKind::Structured, &s)], &m, depth);
            // permute within lists and the order of the lists
            let rot = |x: &[PathHit]| { let mut y = x.to_vec(); if !y.is_empty() { let r = (seed as usize) % y.len(); y.rotate_left(r); y.reverse(); } y };
            let (v2, k2, s2) = (rot(&v), rot(&k), rot(&s));
            let other = fuse(&[(PathKind::Structured, &s2), (PathKind::Vector, &v2), (PathKind::Keyword, &k2)], &m, depth);
            prop_assert_eq!(ids(&base), ids(&other));
            prop_assert_eq!(score_map(&base), score_map(&other));
        }

        #[test]
        fn weight_scaling_keeps_order(v in arb_list(), k in arb_list(), s in arb_list(), c in 1u8..50,
                                      wv in 0u8..=10, wk in 0u8..=10, ws in 0u8..=10, norm in 0usize..4, depth in 0usize..24) {
            let (v, k, s) = (to_hits(&v), to_hits(&k), to_hits(&s));
            let normalization = Normalization::ALL[norm];
            let w = PathWeights::new(f64::from(wv), f64::from(wk), f64::from(ws));
            let c = f64::from(c) / 7.0;
            let scaled = PathWeights::new(w.vector * c, w.keyword * c, w.structured * c);
            let lists = [(PathKind::Vector, v.as_slice()), (PathKind::Keyword, k.as_slice()), (PathKind::Structured, s.as_slice())];
            let a = fuse(&lists, &FusionMethod::WeightedSum { weights: w, normalization }, depth);
            let b = fuse(&lists, &FusionMethod::WeightedSum { weights: scaled, normalization }, depth);
            // Scores scale exactly by c, so the order is the same up to floating-point ties:
            // walking b's order, a's scores never increase (beyond rounding).
            prop_assert_eq!(a.len(), b.len());
            let a_score: HashMap<&MemoryId, f64> = a.iter().map(|h| (&h.id, h.score)).collect();
            for h in &b {
                prop_assert!((a_score[&h.id] * c - h.score).abs() <= 1e-9 * (1.0 + h.score.abs()));
            }
            for pair in b.windows(2) {
                prop_assert!(a_score[&pair[0].id] >= a_score[&pair[1].id] - 1e-9);
            }
        }

        #[test]
        fn raising_a_path_score_never_lowers_rank(v in arb_list(), k in arb_list(), s in arb_list(), m in arb_monotone_method(),
                                                  pick in any::<prop::sample::Index>(), bump in 1i16..500, which in 0usize..3, depth in 0usize..24) {
            let mut lists = [to_hits(&v), to_hits(&k), to_hits(&s)];
            prop_assume!(!lists[which].is_empty());
            let before = fuse(&[(PathKind::Vector, &lists[0]), (PathKind::Keyword, &lists[1]), (PathKind::Structured, &lists[2])], &m, depth);
            let i = pick.index(lists[which].len());
            let target = lists[which][i].id.clone();
            lists[which][i].score += f32::from(bump) / 100.0;
            let after = fuse(&[(PathKind::Vector, &lists[0]), (PathKind::Keyword, &lists[1]), (PathKind::Structured, &lists[2])], &m, depth);
            let pos = |f: &[FusedHit]| f.iter().position(|h| h.id == target);
            let (p0, p1) = (pos(&before), pos(&after));
            prop_assert!(p0.is_some() && p1.is_some());
            // Rank counted as number of hits strictly ahead by score (ties broken by id are not a
            // loss of standing from the bump).
            let ahead = |f: &[FusedHit]| { let t = f.iter().find(|h| h.id == target).map(|h| h.score).unwrap_or(0.0);
                f.iter().filter(|h| h.score > t + 1e-12).count() };
            prop_assert!(ahead(&after) <= ahead(&before), "before {:?} after {:?}", before, after);
        }
    }
}
