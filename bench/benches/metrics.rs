//! Metric evaluation over 10k queries x 100 hits (target: well under a second), plus the bootstrap
//! CI and permutation test over 10k per-query values at their default 10,000 iterations.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hindsight_eval::{
    BootstrapConfig, Metric, PermutationConfig, Qrels, Run, aggregate, bootstrap_ci, evaluate,
    paired_randomization_test,
};

/// SplitMix64: a few lines of deterministic pseudo-randomness (keeps this bench free of rand).
struct SplitMix(u64);

impl SplitMix {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// 10k queries, 20 judged docs each (graded), 100 scored hits each (half of them judged).
fn fixture() -> (Qrels, Run) {
    let mut rng = SplitMix(7);
    let mut qrels = Qrels::new();
    let mut run = Run::new();
    for q in 0..10_000 {
        let qid = format!("q{q}");
        let judged = (0..20)
            .map(|d| (format!("doc{}", d * 7), rng.below(4) as i32))
            .collect();
        qrels.insert(qid.clone(), judged);
        let hits = (0..100)
            .map(|d| (format!("doc{}", d * 3), rng.below(1000) as f64 / 100.0))
            .collect();
        run.insert(qid, hits);
    }
    (qrels, run)
}

fn bench(c: &mut Criterion) {
    let (qrels, run) = fixture();
    let mut group = c.benchmark_group("metrics");
    group.sample_size(10);
    group.bench_function("evaluate_10k_queries_x100", |b| {
        b.iter(|| aggregate(&evaluate(black_box(&qrels), black_box(&run))))
    });
    let per_query = evaluate(&qrels, &run);
    let values: Vec<f64> = per_query
        .values(Metric::Ndcg10)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    let shifted: Vec<f64> = values.iter().map(|v| v * 0.98).collect();
    group.bench_function("bootstrap_ci_10k_values_10k_resamples", |b| {
        b.iter(|| bootstrap_ci(black_box(&values), &BootstrapConfig::default()))
    });
    group.bench_function("permutation_test_10k_pairs_10k_perms", |b| {
        b.iter(|| {
            paired_randomization_test(
                black_box(&values),
                black_box(&shifted),
                &PermutationConfig::default(),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
