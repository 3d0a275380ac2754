//! Statistics over per-query metric values: paired randomisation test, bootstrap confidence
//! intervals, k-fold cross-validation for grid search, and the fusion-weight simplex grid.
//!
//! Everything random takes an explicit seed (ChaCha8), so a report is reproducible bit for bit.

use std::collections::BTreeSet;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{EvalError, Result};

/// Default seed of every randomised procedure in this crate.
pub const DEFAULT_SEED: u64 = 0x5EED_2026;

/// Settings of [`paired_randomization_test`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PermutationConfig {
    /// Number of random sign-flip permutations (default 10,000).
    pub permutations: usize,
    /// RNG seed.
    pub seed: u64,
}

impl Default for PermutationConfig {
    fn default() -> Self {
        Self {
            permutations: 10_000,
            seed: DEFAULT_SEED,
        }
    }
}

/// Result of a paired test between setups `a` and `b`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairedTest {
    /// Number of paired queries.
    pub n: usize,
    /// Mean of `a - b` over the pairs.
    pub mean_diff: f64,
    /// Two-sided p-value, `(count + 1) / (permutations + 1)`, where `count` is the number of
    /// permutations whose |mean difference| is at least the observed one.
    pub p_value: f64,
}

/// Holm-Bonferroni adjusted p-values of a family of tests, in the input order: the i-th smallest
/// of `m` p-values is multiplied by `m - i` (i from 0), made non-decreasing in that order, and
/// capped at 1. Rejecting where the adjusted value is <= alpha controls the family-wise error rate
/// at alpha. A NaN p-value stays NaN and counts in `m`.
pub fn holm_adjust(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    // NaN sorts last, so it never lowers the running maximum of the real values.
    order.sort_by(|&a, &b| {
        let key = |p: f64| if p.is_nan() { f64::INFINITY } else { p };
        key(p_values[a]).total_cmp(&key(p_values[b]))
    });
    let mut out = vec![f64::NAN; m];
    let mut running = 0.0_f64;
    for (rank, &i) in order.iter().enumerate() {
        let p = p_values[i];
        if p.is_nan() {
            continue;
        }
        running = running.max(((m - rank) as f64 * p).min(1.0));
        out[i] = running;
    }
    out
}

/// A proportion with its sample size and a 95 % confidence interval.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rate {
    /// Number of cases.
    pub n: usize,
    /// Cases counted (caught attacks for a TPR, flagged benign writes for an FPR).
    pub hits: usize,
    /// `hits / n` (0 when `n` is 0).
    pub rate: f64,
    /// 95 % interval `[lo, hi]`.
    pub ci95: [f64; 2],
}

/// Paired randomisation (permutation) test: under the null hypothesis each per-query difference
/// `a[i] - b[i]` is equally likely to have either sign, so we flip signs at random and see how often
/// the mean difference is at least as extreme as the observed one.
pub fn paired_randomization_test(
    a: &[f64],
    b: &[f64],
    config: &PermutationConfig,
) -> Result<PairedTest> {
    if a.len() != b.len() {
        return Err(EvalError::InvalidInput(format!(
            "paired test needs equally long samples, got {} and {}",
            a.len(),
            b.len()
        )));
    }
    if a.is_empty() {
        return Err(EvalError::InvalidInput(
            "paired test over zero queries".into(),
        ));
    }
    if config.permutations == 0 {
        return Err(EvalError::InvalidInput(
            "paired test needs at least one permutation".into(),
        ));
    }
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let n = diffs.len() as f64;
    let observed = diffs.iter().sum::<f64>() / n;
    // Sums are compared with a small tolerance so that exact ties (e.g. all differences 0, or a
    // permutation equal to the identity) count as "at least as extreme" despite rounding.
    let threshold = observed.abs() * n - 1e-9;
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut count = 0_usize;
    for _ in 0..config.permutations {
        let mut sum = 0.0;
        for chunk in diffs.chunks(64) {
            let signs: u64 = rng.random();
            for (j, d) in chunk.iter().enumerate() {
                sum += if (signs >> j) & 1 == 1 { -d } else { *d };
            }
        }
        if sum.abs() >= threshold {
            count += 1;
        }
    }
    Ok(PairedTest {
        n: diffs.len(),
        mean_diff: observed,
        p_value: (count + 1) as f64 / (config.permutations + 1) as f64,
    })
}

/// Settings of [`bootstrap_ci`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BootstrapConfig {
    /// Number of resamples (default 10,000).
    pub resamples: usize,
    /// Confidence level (default 0.95).
    pub level: f64,
    /// RNG seed.
    pub seed: u64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        Self {
            resamples: 10_000,
            level: 0.95,
            seed: DEFAULT_SEED,
        }
    }
}

/// Percentile-bootstrap confidence interval `(lo, hi)` of the mean of `values`. The percentiles of
/// the resampled means use linear interpolation between order statistics.
pub fn bootstrap_ci(values: &[f64], config: &BootstrapConfig) -> Result<(f64, f64)> {
    let cis = bootstrap_cis(&[values], config)?;
    Ok(cis[0])
}

/// [`bootstrap_ci`] of several equally long columns (e.g. every metric of the same queries) from
/// the *same* resamples: one pass, and the intervals of different metrics come from identical
/// query samples. With one column this is exactly [`bootstrap_ci`].
pub fn bootstrap_cis(columns: &[&[f64]], config: &BootstrapConfig) -> Result<Vec<(f64, f64)>> {
    let n = columns.first().map_or(0, |c| c.len());
    if n == 0 {
        return Err(EvalError::InvalidInput("bootstrap over zero values".into()));
    }
    if let Some(bad) = columns.iter().find(|c| c.len() != n) {
        return Err(EvalError::InvalidInput(format!(
            "bootstrap columns differ in length ({} and {})",
            n,
            bad.len()
        )));
    }
    if config.resamples == 0 {
        return Err(EvalError::InvalidInput(
            "bootstrap needs at least one resample".into(),
        ));
    }
    if !(config.level > 0.0 && config.level < 1.0) {
        return Err(EvalError::InvalidInput(format!(
            "bootstrap confidence level must be in (0, 1), got {}",
            config.level
        )));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut means: Vec<Vec<f64>> = vec![Vec::with_capacity(config.resamples); columns.len()];
    let mut sums = vec![0.0; columns.len()];
    for _ in 0..config.resamples {
        sums.iter_mut().for_each(|s| *s = 0.0);
        for _ in 0..n {
            let i = rng.random_range(0..n);
            for (sum, column) in sums.iter_mut().zip(columns) {
                *sum += column[i];
            }
        }
        for (m, sum) in means.iter_mut().zip(&sums) {
            m.push(sum / n as f64);
        }
    }
    let alpha = (1.0 - config.level) / 2.0;
    Ok(means
        .into_iter()
        .map(|mut m| {
            m.sort_by(f64::total_cmp);
            (quantile_sorted(&m, alpha), quantile_sorted(&m, 1.0 - alpha))
        })
        .collect())
}

/// Linear-interpolation quantile (R type 7) of sorted, non-empty data.
fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Splits queries into `k` folds, returning `(train, test)` per fold. The split depends only on the
/// *set* of query ids and the seed (ids are deduplicated and sorted before shuffling); fold sizes
/// differ by at most one; every id is in exactly one test fold; both lists are sorted.
pub fn kfold_split(
    qids: &[String],
    k: usize,
    seed: u64,
) -> Result<Vec<(Vec<String>, Vec<String>)>> {
    let mut ids: Vec<&String> = qids.iter().collect::<BTreeSet<_>>().into_iter().collect();
    if k < 2 || k > ids.len() {
        return Err(EvalError::InvalidInput(format!(
            "k-fold split needs 2 <= k <= number of distinct queries, got k = {k} for {} queries",
            ids.len()
        )));
    }
    ids.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    let folds = (0..k)
        .map(|fold| {
            let (mut train, mut test): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
            for (i, id) in ids.iter().enumerate() {
                if i % k == fold {
                    test.push((*id).clone())
                } else {
                    train.push((*id).clone())
                }
            }
            train.sort();
            test.sort();
            (train, test)
        })
        .collect();
    Ok(folds)
}

/// One fold of [`cross_validate`].
#[derive(Clone, Debug, PartialEq)]
pub struct FoldResult<C> {
    /// Fold index, from 0.
    pub fold: usize,
    /// The candidate with the best score on the training queries.
    pub best: C,
    /// Its score on the training queries.
    pub train_score: f64,
    /// Its score on the held-out queries: the number to report.
    pub test_score: f64,
    /// Number of training queries.
    pub train_queries: usize,
    /// Number of held-out queries.
    pub test_queries: usize,
}

/// Outcome of [`cross_validate`].
#[derive(Clone, Debug, PartialEq)]
pub struct CvResult<C> {
    /// One entry per fold.
    pub per_fold: Vec<FoldResult<C>>,
    /// Mean held-out score over all queries, each counted once (the fold scores weighted by fold
    /// size): for a per-query mean metric it equals the pooled out-of-fold run's score, the tuned
    /// setup's reported number.
    pub mean_test: f64,
    /// Mean training score of the chosen candidates, weighted by training-set size.
    pub mean_train: f64,
    /// `mean_train - mean_test`: how much tuning overfits.
    pub gap: f64,
}

/// k-fold cross-validated grid search: in each fold, picks the candidate with the highest
/// `score(candidate, train_qids)` (ties and NaN: the earlier candidate wins) and scores it on the
/// held-out queries. `score` returns the mean metric over the given queries.
pub fn cross_validate<C: Clone>(
    qids: &[String],
    k: usize,
    seed: u64,
    candidates: &[C],
    score: impl Fn(&C, &[String]) -> f64,
) -> Result<CvResult<C>> {
    if candidates.is_empty() {
        return Err(EvalError::InvalidInput(
            "cross-validation over zero candidates".into(),
        ));
    }
    let mut per_fold = Vec::with_capacity(k);
    for (fold, (train, test)) in kfold_split(qids, k, seed)?.into_iter().enumerate() {
        let mut best = 0;
        let mut best_score = score(&candidates[0], &train);
        for (i, c) in candidates.iter().enumerate().skip(1) {
            let s = score(c, &train);
            if s > best_score || (best_score.is_nan() && !s.is_nan()) {
                best = i;
                best_score = s;
            }
        }
        let test_score = score(&candidates[best], &test);
        per_fold.push(FoldResult {
            fold,
            best: candidates[best].clone(),
            train_score: best_score,
            test_score,
            train_queries: train.len(),
            test_queries: test.len(),
        });
    }
    // Weighted by fold size: folds differ by one query when k does not divide the query count,
    // and an unweighted mean of fold means is then not the mean over queries.
    let weighted = |score: fn(&FoldResult<C>) -> (f64, usize)| {
        let (sum, n) = per_fold
            .iter()
            .map(score)
            .fold((0.0, 0), |(s, n), (x, m)| (s + x * m as f64, n + m));
        sum / n as f64
    };
    let mean_test = weighted(|f| (f.test_score, f.test_queries));
    let mean_train = weighted(|f| (f.train_score, f.train_queries));
    Ok(CvResult {
        per_fold,
        mean_test,
        mean_train,
        gap: mean_train - mean_test,
    })
}

/// All weight triples `[vector, keyword, structured]` on a simplex grid with the given step (e.g.
/// 0.1 gives 66 triples) summing to 1. Values are built from integer counts (`i / n`), so 0.3 is the
/// same `f64` as the literal `0.3` and each triple sums to 1 up to one rounding.
pub fn simplex_grid(step: f64) -> Result<Vec<[f64; 3]>> {
    let n = (1.0 / step).round();
    if !(step > 0.0 && step <= 1.0) || ((n * step) - 1.0).abs() > 1e-9 || n > 1000.0 {
        return Err(EvalError::InvalidInput(format!(
            "simplex grid step must divide 1 into at most 1000 parts, got {step}"
        )));
    }
    let n = n as u32;
    let total = f64::from(n);
    let mut grid = Vec::new();
    for i in 0..=n {
        for j in 0..=n - i {
            grid.push([
                f64::from(i) / total,
                f64::from(j) / total,
                f64::from(n - i - j) / total,
            ]);
        }
    }
    Ok(grid)
}

/// The Wilson score interval at 95 % of `k` successes in `n` trials, as a [`Rate`] (all
/// zeros when `n` is 0).
pub fn wilson(k: usize, n: usize) -> Rate {
    if n == 0 {
        return Rate {
            n,
            hits: k,
            rate: 0.0,
            ci95: [0.0, 0.0],
        };
    }
    let z = 1.959_964f64;
    let nf = n as f64;
    let p = k as f64 / nf;
    let denom = 1.0 + z * z / nf;
    let centre = (p + z * z / (2.0 * nf)) / denom;
    let half = z * ((p * (1.0 - p) / nf) + z * z / (4.0 * nf * nf)).sqrt() / denom;
    Rate {
        n,
        hits: k,
        rate: p,
        ci95: [(centre - half).max(0.0), (centre + half).min(1.0)],
    }
}

/// Percentile bootstrap 95 % interval (R type 7 percentiles) of `stat` over resamples of whole
/// clusters: each resample draws `clusters.len()` clusters with replacement. Resamples where
/// `stat` is `None` are left out; `None` without clusters or when every resample is left out.
pub fn cluster_bootstrap<T>(
    clusters: &[T],
    resamples: usize,
    seed: u64,
    stat: impl Fn(&[&T]) -> Option<f64>,
) -> Option<[f64; 2]> {
    use rand::{Rng, SeedableRng};
    if clusters.is_empty() || resamples == 0 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut stats = Vec::with_capacity(resamples);
    let mut sample: Vec<&T> = Vec::with_capacity(clusters.len());
    for _ in 0..resamples {
        sample.clear();
        sample.extend((0..clusters.len()).map(|_| &clusters[rng.random_range(0..clusters.len())]));
        stats.extend(stat(&sample));
    }
    if stats.is_empty() {
        return None;
    }
    stats.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let h = (stats.len() - 1) as f64 * q;
        let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
        stats[lo] + (h - lo as f64) * (stats[hi] - stats[lo])
    };
    Some([at(0.025), at(0.975)])
}

/// [`cluster_bootstrap`] of a pooled rate: each cluster is `(hits, n)`.
pub fn cluster_bootstrap_ci(
    clusters: &[(usize, usize)],
    resamples: usize,
    seed: u64,
) -> Option<[f64; 2]> {
    cluster_bootstrap(clusters, resamples, seed, |sample| {
        let (hits, n) = sample
            .iter()
            .fold((0, 0), |(h, m), &&(a, b)| (h + a, m + b));
        (n > 0).then(|| hits as f64 / n as f64)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("q{i:03}")).collect()
    }

    #[test]
    fn identical_setups_are_not_significant() {
        let a = [0.1, 0.5, 0.9, 0.3];
        let t = paired_randomization_test(&a, &a, &PermutationConfig::default()).unwrap();
        assert_eq!(t.mean_diff, 0.0);
        assert_eq!(t.p_value, 1.0);
    }

    #[test]
    fn consistent_improvement_is_significant() {
        // 30 queries, b better than a by 0.1 on every one: only the identity and the all-flipped
        // permutation (2 of 2^30) are as extreme, so p ~ 1/10001.
        let a: Vec<f64> = (0..30).map(|i| f64::from(i) / 40.0).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 0.1).collect();
        let t = paired_randomization_test(&a, &b, &PermutationConfig::default()).unwrap();
        assert!((t.mean_diff + 0.1).abs() < 1e-12);
        assert!(t.p_value < 0.001, "p = {}", t.p_value);
        assert!(t.p_value >= 1.0 / 10_001.0);
    }

    #[test]
    fn exact_small_case_matches_enumeration() {
        // Differences [1, 1, -1]: of the 8 sign patterns, |sum| >= 1 for all 8 -> p -> 1.
        // Differences [3, 1, 1]: |sum| >= 5 only for +++ and --- (2/8) -> p ~ 0.25.
        let t =
            paired_randomization_test(&[3.0, 1.0, 1.0], &[0.0; 3], &PermutationConfig::default())
                .unwrap();
        assert!((t.p_value - 0.25).abs() < 0.02, "p = {}", t.p_value);
        let t =
            paired_randomization_test(&[1.0, 1.0, -1.0], &[0.0; 3], &PermutationConfig::default())
                .unwrap();
        assert_eq!(t.p_value, 1.0);
    }

    #[test]
    fn paired_test_rejects_bad_input() {
        assert!(
            paired_randomization_test(&[1.0], &[1.0, 2.0], &PermutationConfig::default()).is_err()
        );
        assert!(paired_randomization_test(&[], &[], &PermutationConfig::default()).is_err());
    }

    #[test]
    fn bootstrap_is_deterministic_and_brackets_the_mean() {
        let values: Vec<f64> = (0..200).map(|i| f64::from(i % 7) / 6.0).collect();
        let mean = values.iter().sum::<f64>() / 200.0;
        let cfg = BootstrapConfig::default();
        let (lo, hi) = bootstrap_ci(&values, &cfg).unwrap();
        assert!(lo < mean && mean < hi, "{lo} < {mean} < {hi}");
        // Standard error ~ 0.34 / sqrt(200) = 0.024, so the 95% half-width is ~0.047.
        assert!((hi - lo) > 0.06 && (hi - lo) < 0.13, "width {}", hi - lo);
        assert_eq!(bootstrap_ci(&values, &cfg).unwrap(), (lo, hi));
        assert_eq!(bootstrap_ci(&[0.4; 5], &cfg).unwrap(), (0.4, 0.4));
        assert!(bootstrap_ci(&[], &cfg).is_err());
        // Several columns share resamples; the first column's interval equals its own bootstrap_ci.
        let doubled: Vec<f64> = values.iter().map(|v| v * 2.0).collect();
        let cis = bootstrap_cis(&[&values, &doubled], &cfg).unwrap();
        assert_eq!(cis[0], (lo, hi));
        assert!((cis[1].0 - 2.0 * lo).abs() < 1e-12 && (cis[1].1 - 2.0 * hi).abs() < 1e-12);
        assert!(bootstrap_cis(&[&values, &values[1..]], &cfg).is_err());
    }

    #[test]
    fn kfold_partitions_and_is_order_independent() {
        let q = ids(23);
        let folds = kfold_split(&q, 5, 7).unwrap();
        assert_eq!(folds.len(), 5);
        let mut all_test: Vec<String> = folds.iter().flat_map(|(_, t)| t.clone()).collect();
        all_test.sort();
        assert_eq!(all_test, q);
        for (train, test) in &folds {
            assert!(test.len() == 4 || test.len() == 5);
            assert_eq!(train.len() + test.len(), 23);
            assert!(test.iter().all(|t| !train.contains(t)));
        }
        let mut reversed = q.clone();
        reversed.reverse();
        assert_eq!(kfold_split(&reversed, 5, 7).unwrap(), folds);
        assert_ne!(kfold_split(&q, 5, 8).unwrap(), folds);
        assert!(kfold_split(&q, 1, 7).is_err());
        assert!(kfold_split(&q, 24, 7).is_err());
    }

    #[test]
    fn holm_adjustment_matches_a_worked_example() {
        // Sorted 0.01, 0.02, 0.03, 0.04 of m = 4: 0.04, 0.06, 0.06 (raised to stay monotone:
        // 2 x 0.03 = 0.06), 0.06 (1 x 0.04 = 0.04, raised to 0.06); input order kept.
        let adj = holm_adjust(&[0.03, 0.01, 0.04, 0.02]);
        let want = [0.06, 0.04, 0.06, 0.06];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(holm_adjust(&[0.5, 0.9]), vec![1.0, 1.0]);
        assert!(holm_adjust(&[]).is_empty());
        let with_nan = holm_adjust(&[f64::NAN, 0.01]);
        assert!(with_nan[0].is_nan() && (with_nan[1] - 0.02).abs() < 1e-12);
    }

    proptest::proptest! {
        #[test]
        fn holm_never_lowers_a_p_value_and_keeps_the_order(
            ps in proptest::collection::vec(0.0f64..=1.0, 0..30)
        ) {
            let adj = holm_adjust(&ps);
            proptest::prop_assert_eq!(adj.len(), ps.len());
            for (i, (&p, &a)) in ps.iter().zip(&adj).enumerate() {
                proptest::prop_assert!(a >= p && a <= 1.0, "{i}: {p} -> {a}");
                proptest::prop_assert!(a <= (p * ps.len() as f64).min(1.0) + 1e-12);
                for (&q, &b) in ps.iter().zip(&adj) {
                    if p < q {
                        proptest::prop_assert!(a <= b);
                    }
                }
            }
        }
    }

    #[test]
    fn cross_validated_mean_counts_every_query_once_when_folds_differ_in_size() {
        // 10 queries in 3 folds (4/3/3): the held-out mean must be the mean over queries, which
        // is the pooled out-of-fold run's score, not the plain mean of the three fold means.
        let q = ids(10);
        let value = |s: &String| s[1..].parse::<f64>().unwrap().powi(2);
        let mean = |_: &usize, qs: &[String]| qs.iter().map(value).sum::<f64>() / qs.len() as f64;
        let cv = cross_validate(&q, 3, 5, &[0_usize], mean).unwrap();
        let sizes: Vec<usize> = cv.per_fold.iter().map(|f| f.test_queries).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 10);
        assert!(sizes.iter().any(|&n| n != sizes[0]), "{sizes:?}");
        let pooled = q.iter().map(value).sum::<f64>() / 10.0;
        assert!(
            (cv.mean_test - pooled).abs() < 1e-12,
            "{} vs {pooled}",
            cv.mean_test
        );
        let plain = cv.per_fold.iter().map(|f| f.test_score).sum::<f64>() / 3.0;
        assert!(
            (plain - pooled).abs() > 1e-6,
            "the case must tell the two means apart"
        );
    }

    #[test]
    fn cross_validation_reports_held_out_scores() {
        // Score: candidate c gets 1.0 on queries whose index has the same parity as c, else 0.
        let q = ids(20);
        let score = |c: &usize, qs: &[String]| {
            let hits = qs
                .iter()
                .filter(|s| s[1..].parse::<usize>().unwrap() % 2 == *c)
                .count();
            hits as f64 / qs.len() as f64
        };
        let cv = cross_validate(&q, 4, 1, &[0_usize, 1], score).unwrap();
        assert_eq!(cv.per_fold.len(), 4);
        for f in &cv.per_fold {
            let (train, test) = &kfold_split(&q, 4, 1).unwrap()[f.fold];
            let other = 1 - f.best;
            assert!(f.train_score >= score(&other, train));
            assert_eq!(f.test_score, score(&f.best, test));
        }
        let mean_test = cv.per_fold.iter().map(|f| f.test_score).sum::<f64>() / 4.0;
        assert!(
            (cv.mean_test - mean_test).abs() < 1e-12,
            "equal folds: plain mean"
        );
        assert!((cv.gap - (cv.mean_train - cv.mean_test)).abs() < 1e-12);
        assert!(cross_validate(&q, 4, 1, &[] as &[usize], score).is_err());
    }

    #[test]
    fn simplex_grid_is_exact() {
        let grid = simplex_grid(0.1).unwrap();
        assert_eq!(grid.len(), 66);
        assert!(grid.contains(&[0.5, 0.3, 0.2]));
        assert!(grid.contains(&[0.0, 0.0, 1.0]));
        for w in &grid {
            assert!(w.iter().all(|x| (0.0..=1.0).contains(x)));
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-15, "{w:?}");
            for x in w {
                // Every value is the f64 nearest to a one-decimal literal.
                let lit: f64 = format!("{x:.1}").parse().unwrap();
                assert_eq!(*x, lit);
            }
        }
        assert_eq!(simplex_grid(0.25).unwrap().len(), 15);
        assert!(simplex_grid(0.3).is_err());
        assert!(simplex_grid(0.0).is_err());
    }

    #[test]
    fn template_bootstrap_widens_when_one_template_holds_every_mistake() {
        // 10 templates of 10 records; all 5 false positives come from one template. A record
        // bootstrap treats them as 5 independent events; a template bootstrap sees one failing
        // template of 10, so its interval is much wider.
        let mut clusters = vec![(0, 10); 9];
        clusters.push((5, 10));
        let ci = cluster_bootstrap_ci(&clusters, 4000, 1).unwrap();
        let w = wilson(5, 100);
        assert!(ci[0] <= 0.0 + 1e-12, "{ci:?}");
        assert!(ci[1] - ci[0] > w.ci95[1] - w.ci95[0], "{ci:?} vs {w:?}");
        // Identical clusters: every resample gives the same rate.
        let ci = cluster_bootstrap_ci(&[(1, 4), (1, 4), (1, 4)], 500, 1).unwrap();
        assert!((ci[0] - 0.25).abs() < 1e-12 && (ci[1] - 0.25).abs() < 1e-12);
        assert_eq!(cluster_bootstrap_ci(&[], 10, 1), None);
    }

    #[test]
    fn wilson_interval_brackets_the_rate() {
        let r = wilson(95, 100);
        assert!(r.ci95[0] < 0.95 && r.ci95[1] > 0.95);
        assert!((r.ci95[0] - 0.888).abs() < 0.01, "{r:?}");
        let z = wilson(0, 50);
        assert_eq!(z.ci95[0], 0.0);
        assert!(z.ci95[1] > 0.0 && z.ci95[1] < 0.1);
    }
}
