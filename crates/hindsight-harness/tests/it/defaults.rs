//! The pooled choice of defaults on two small datasets (hash embedder: plumbing and invariants,
//! not retrieval quality).

use hindsight_engine::RetrievalConfig;
use hindsight_harness::{
    Candidate, PreparedDataset, choose_defaults, default_grid, default_setups, prepare_dataset,
};

use crate::end_to_end::{dataset, engine};

async fn prepared() -> Vec<PreparedDataset> {
    let full = dataset();
    // A second dataset: the operations queries alone, so the two weigh the same queries
    // differently.
    let mut ops = dataset();
    ops.meta.name = "tiny-ops".into();
    ops.queries.retain(|q| q.namespace == "ops");
    ops.qrels
        .retain(|q, _| ops.queries.iter().any(|x| &x.id == q));
    let mut out = Vec::new();
    for ds in [full, ops] {
        let e = engine(64).await;
        out.push(
            prepare_dataset(&ds, &e, 45, 10, false, &|_, _, _| {})
                .await
                .expect("prepared"),
        );
    }
    out
}

fn references() -> Vec<Candidate> {
    default_setups()
        .into_iter()
        .filter(|s| s.name == "bm25-only" || s.name == "pure-vector")
        .map(|s| Candidate {
            label: s.name,
            config: s.retrieval,
        })
        .collect()
}

#[tokio::test]
async fn the_choice_is_the_best_macro_average_and_its_held_out_run_is_pooled() {
    let sets = prepared().await;
    let grid = default_grid(0.5).expect("grid");
    let refs = references();
    let choice = choose_defaults(&sets, &grid, &refs, 2, 7, 10, &|_, _| {}).expect("choice");
    assert_eq!(choice.candidates, grid.len());
    assert_eq!(choice.per_fold.len(), 2);
    assert_eq!(choice.per_dataset.len(), 2);
    assert_eq!(
        choice.per_dataset[0].queries, 6,
        "judged queries with a relevant memory"
    );
    assert_eq!(choice.per_dataset[1].queries, 4);
    let chosen_macro = choice
        .per_dataset
        .iter()
        .map(|d| d.chosen_ndcg10)
        .sum::<f64>()
        / 2.0;
    // Each candidate alone: its in-sample numbers, and (one candidate) a held-out run that is
    // the same configuration on every fold, so held-out equals in-sample.
    for c in &grid {
        let one = choose_defaults(&sets, std::slice::from_ref(c), &refs, 2, 7, 10, &|_, _| {})
            .expect("one candidate");
        let m = one.per_dataset.iter().map(|d| d.chosen_ndcg10).sum::<f64>() / 2.0;
        assert!(
            m <= chosen_macro + 1e-12,
            "{} beats the choice: {m} > {chosen_macro}",
            c.label
        );
        for d in &one.per_dataset {
            assert!(
                (d.held_out_ndcg10 - d.chosen_ndcg10).abs() < 1e-12,
                "{}",
                c.label
            );
        }
        if c.label == choice.chosen {
            assert_eq!(one.config, choice.config);
        }
    }
    for d in &choice.per_dataset {
        assert!((0.0..=1.0).contains(&d.held_out_ndcg10));
        assert_eq!(d.references.len(), 2);
        for r in d.references.values() {
            assert!(r.p > 0.0 && r.p <= 1.0 && r.p_holm >= r.p - 1e-12, "{r:?}");
        }
        assert_eq!(d.ablations.len(), 7);
    }
    let md = choice.to_markdown("hindsight-lab defaults");
    assert!(md.contains(&choice.chosen) && md.contains("tiny-ops"));
    // What `--write` commits reads back as the same configuration.
    assert_eq!(
        RetrievalConfig::from_toml(&choice.config.to_toml()),
        Ok(choice.config.clone())
    );
}
