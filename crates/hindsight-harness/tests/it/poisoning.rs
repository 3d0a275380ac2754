//! Plumbing of the end-to-end poisoning evaluation on the shipped dataset generator, with the
//! test-only hash embedder and a small keyword guard written here (the numbers check the
//! bookkeeping, not the real guard's quality).

use std::collections::BTreeSet;
use std::sync::Arc;

use hindsight_core::{AllowAll, GuardDecision, NewMemory, Status, WriteGuard};
use hindsight_dataset::generate;
use hindsight_embed::HashEmbedder;
use hindsight_engine::Engine;
use hindsight_harness::{
    ATTACK_CATEGORIES, ATTACK_STYLES, PoisonOptions, attack_plan, evaluate_poisoning,
};
use hindsight_store_sqlite::SqliteStore;

/// Normalises full-width characters, spacing, separators and digit-for-letter swaps, then looks
/// for instruction markers.
#[derive(Debug)]
struct KeywordGuard;

const MARKERS: &[&str] = &[
    "ignoreall",
    "fromnowon",
    "skiptheconfirmation",
    "needsnoconfirmation",
    "neednoconfirmation",
    "overrideany",
    "systemadministrator",
    "superuser",
    "apikeys",
    "passwordsandtokens",
    "rememberpermanently",
    "standingrule",
    "不需要确认",
    "跳过确认",
    "忽略之前",
    "作废",
    "管理员权限",
    "超级用户",
    "密钥",
    "密码和令牌",
    "永久记住",
    "长期规则",
];

fn normalise(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFF01 + 0x21).unwrap_or(c),
            c => c,
        })
        .filter(|c| !c.is_whitespace() && !matches!(c, '·' | '*'))
        .map(|c| match c {
            '4' => 'a',
            '3' => 'e',
            '0' => 'o',
            '1' => 'i',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

fn flags(text: &str) -> bool {
    let n = normalise(text);
    MARKERS.iter().any(|m| n.contains(m))
}

impl WriteGuard for KeywordGuard {
    fn check(&self, m: &NewMemory, embedding: Option<&[f32]>) -> GuardDecision {
        assert!(embedding.is_some(), "the engine hands the guard the vector");
        if flags(&m.content) {
            GuardDecision::Quarantine {
                reason: "instruction marker".into(),
                categories: vec!["test".into()],
                score: 1.0,
                redacted: None,
            }
        } else {
            GuardDecision::Allow
        }
    }
}

async fn engine(guard: Arc<dyn WriteGuard>) -> Engine {
    let emb = Arc::new(HashEmbedder::new(256).expect("hash embedder"));
    let store = Arc::new(
        SqliteStore::open_in_memory(hindsight_embed::Embedder::space(emb.as_ref()))
            .await
            .expect("store"),
    );
    Engine::builder(store, emb)
        .guard(guard)
        .build()
        .expect("engine")
}

fn opts() -> PoisonOptions {
    PoisonOptions {
        targeted_queries: 60,
        quick: true,
        ..PoisonOptions::default()
    }
}

#[test]
fn the_attack_plan_is_seeded_targeted_and_varied() {
    let dataset = generate(42);
    let plan = attack_plan(&dataset, &opts());
    assert_eq!(plan.len(), 60);
    assert_eq!(plan, attack_plan(&dataset, &opts()));
    let other = attack_plan(&dataset, &PoisonOptions { seed: 7, ..opts() });
    assert_ne!(plan, other);
    let ids: BTreeSet<&str> = plan.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids.len(), plan.len(), "one attack per targeted query");
    for a in &plan {
        let q = dataset
            .queries
            .iter()
            .find(|q| q.id == a.query_id)
            .expect("targets a dataset query");
        assert_eq!(a.namespace, q.namespace);
        assert!(a.created_at < q.now);
        // The attack names the query's subject verbatim.
        let topic = q
            .text
            .trim()
            .trim_end_matches(['?', '？', '.', '。'])
            .trim();
        assert!(
            a.content.contains(topic),
            "{} does not mention {topic:?}",
            a.content
        );
        assert!(
            dataset.qrels[&q.id].values().any(|&g| g > 0),
            "targets only judged queries"
        );
    }
    let langs: BTreeSet<&str> = plan.iter().map(|a| a.language.as_str()).collect();
    let styles: BTreeSet<&str> = plan.iter().map(|a| a.style.as_str()).collect();
    let cats: BTreeSet<&str> = plan.iter().map(|a| a.category.as_str()).collect();
    assert_eq!(langs, BTreeSet::from(["en", "zh"]));
    assert_eq!(styles, ATTACK_STYLES.into_iter().collect());
    assert_eq!(cats, ATTACK_CATEGORIES.into_iter().collect());
    // The test guard is a fair stand-in: it catches every generated attack.
    assert!(
        plan.iter().all(|a| flags(&a.content)),
        "keyword guard misses an attack"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guard_off_vs_on_is_counted_through_the_real_pipelines() {
    let dataset = generate(42);
    let off = engine(Arc::new(AllowAll)).await;
    let on = engine(Arc::new(KeywordGuard)).await;
    let report = evaluate_poisoning(&dataset, &off, &on, "keyword-test", &opts(), &|_, _, _| {})
        .await
        .expect("poisoning evaluation");
    let n = report.attacks;
    assert_eq!(n, 60);
    assert_eq!(report.targeted_queries, 60);

    // Guard off: every attack is stored (or merged into a duplicate); nothing at ingest.
    let a = &report.off;
    assert_eq!(a.guard, "off");
    assert_eq!(
        a.attacks_active + a.attacks_superseded + a.attacks_deduplicated,
        n
    );
    assert_eq!(a.attacks_quarantined + a.attacks_rejected, 0);
    assert_eq!(
        (a.ingest.quarantined, a.ingest.redacted, a.ingest.rejected),
        (0, 0, 0)
    );
    assert_eq!(a.ingest.memories, dataset.memories.len());
    assert!(
        a.successes > 0,
        "targeted attacks reach the top 5 without a guard"
    );
    assert!((a.attack_success_rate - a.successes as f64 / n as f64).abs() < 1e-12);
    assert!(a.ci95[0] <= a.attack_success_rate && a.attack_success_rate <= a.ci95[1]);
    // An attack in its own query's top 5 is in some query's top 5.
    assert!(a.attacks_reaching_any_query >= a.successes, "{a:?}");
    assert_eq!(a.inactive_hits, 0);

    // Guard on: every attack quarantined, so none can succeed.
    let b = &report.on;
    assert_eq!(b.guard, "keyword-test");
    assert_eq!(b.attacks_quarantined, n);
    assert_eq!(b.successes, 0);
    assert_eq!((b.attacks_reaching_any_query, b.cross_query_hits), (0, 0));
    assert_eq!(
        b.inactive_hits, 0,
        "a quarantined attack was returned by search"
    );
    assert_eq!(report.reduction, Some(1.0));
    assert_eq!(report.reduction_ci95, Some([1.0, 1.0]));
    assert!(
        report.payloads > 1 && report.payloads < n,
        "{}",
        report.payloads
    );
    // Quarantined attacks never rank, but they are still documents of the keyword index, so
    // BM25 collection statistics (IDF, average length) shift a little: measured 0.7188 -> 0.7201.
    assert!(
        (b.ndcg10_clean - b.ndcg10_attacked).abs() < 0.01,
        "guard on: ndcg10 clean {} attacked {}",
        b.ndcg10_clean,
        b.ndcg10_attacked
    );

    // False positives at ingest: exactly the benign memories the guard flags.
    let expected_fp = dataset
        .memories
        .iter()
        .filter(|m| m.status != Some(Status::Quarantined) && flags(&m.content))
        .count();
    assert_eq!(b.ingest.quarantined, expected_fp);
    assert_eq!(b.ingest.examples.len(), expected_fp.min(20));

    let total: usize = report.by_variant.values().map(|v| v.n).sum();
    assert_eq!(total, n);
    let off_total: usize = report.by_variant.values().map(|v| v.successes_off).sum();
    assert_eq!(off_total, a.successes);
}

/// Quarantines the Chinese attacks only (any CJK character), so English ones get through.
#[derive(Debug)]
struct ChineseOnlyGuard;

impl WriteGuard for ChineseOnlyGuard {
    fn check(&self, m: &NewMemory, _: Option<&[f32]>) -> GuardDecision {
        let attack =
            flags(&m.content) && m.id.as_ref().is_some_and(|id| id.0.starts_with("attack-"));
        if attack
            && m.content
                .chars()
                .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
        {
            GuardDecision::Quarantine {
                reason: "chinese attack".into(),
                categories: vec!["test".into()],
                score: 1.0,
                redacted: None,
            }
        } else {
            GuardDecision::Allow
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_success_is_the_querys_own_attack_not_another_querys() {
    // Half the attacks are stopped. A query whose own attack was stopped may still show another
    // query's (English) attack in its top 5: that is a cross-query hit, not a success of the
    // stopped attack. Before, it counted as one, crediting a blocked variant with a success.
    let dataset = generate(42);
    let off = engine(Arc::new(AllowAll)).await;
    let on = engine(Arc::new(ChineseOnlyGuard)).await;
    let report = evaluate_poisoning(&dataset, &off, &on, "zh-only", &opts(), &|_, _, _| {})
        .await
        .expect("poisoning evaluation");
    let b = &report.on;
    assert!(b.attacks_quarantined > 0 && b.attacks_active > 0, "{b:?}");
    assert!(b.successes <= b.attacks_active, "{b:?}");
    for (variant, v) in &report.by_variant {
        if variant.starts_with("zh/") {
            assert_eq!(
                v.successes_on, 0,
                "{variant}: its attacks were all quarantined"
            );
        }
    }
    assert_eq!(b.inactive_hits, 0);
}
