//! The write-guard part of `hindsight eval`: the guard's catch rate on the labelled injection
//! corpus (test split) and the end-to-end poisoning evaluation, converted into the report's
//! `guard` section ([`GuardSection`]). This is the edge where the guard crate's and the engine's
//! types meet the eval crate's plain wire structs.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use hindsight_dataset::Dataset;
use hindsight_embed::{Embedder, Embedders};
use hindsight_engine::{EngineBuilder, RuleConsensus};
use hindsight_eval::{
    GuardCatchReport, GuardE2eReport, GuardSection, Rate, RedactionReport, RedactionTypeRow,
    TemplateInterval,
};
use hindsight_guard::corpus::{CORPUS_FILE, Split, generate_corpus, load_corpus};
use hindsight_guard::{Guard, GuardConfig, GuardEvalReport, HeadKind, evaluate};
use hindsight_harness::{PoisonOptions, evaluate_poisoning};
use hindsight_index::AnnConfig;

use crate::backend::{BackendUrl, open_store};

/// Name of the guarded arm in the report.
pub const GUARD_ARM: &str = "hindsight-guard+consensus";

fn rate(r: &hindsight_guard::Rate) -> Rate {
    Rate {
        n: r.n,
        hits: r.k,
        rate: r.rate,
        ci95: [r.ci_low, r.ci_high],
    }
}

/// The redaction evaluation of the secrets set at `dir` (`datasets/secrets`), as the report's
/// wire struct. Lines that fail to load are named on stderr and left out.
/// Writes [`hindsight_guard::redaction_mistakes`] of the secrets set `dir` to `path` as JSONL.
pub fn write_redaction_mistakes(dir: &Path, path: &Path) -> Result<()> {
    let (records, _) = hindsight_guard::load_secrets(dir)
        .with_context(|| format!("loading the secrets set {}", dir.display()))?;
    let mut out = String::new();
    let mistakes = hindsight_guard::redaction_mistakes(&records);
    for m in &mistakes {
        out.push_str(&serde_json::to_string(m)?);
        out.push('\n');
    }
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))?;
    eprintln!(
        "{} records with a mistake written to {}",
        mistakes.len(),
        path.display()
    );
    Ok(())
}

pub fn redaction_report(dir: &Path) -> Result<RedactionReport> {
    let (records, issues) = hindsight_guard::load_secrets(dir)
        .with_context(|| format!("loading the secrets set {}", dir.display()))?;
    for i in &issues {
        eprintln!("skipped {}: line {}: {}", dir.display(), i.line, i.message);
    }
    if records.is_empty() {
        anyhow::bail!("the secrets set {} has no usable record", dir.display());
    }
    let e = hindsight_guard::evaluate_redaction(&records);
    Ok(RedactionReport {
        corpus: dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        records: e.records,
        secrets: e.secrets,
        by_type: e
            .by_type
            .iter()
            .map(|t| RedactionTypeRow {
                kind: t.kind.clone(),
                removed: rate(&t.removed),
                typed: rate(&t.typed),
                precision: rate(&t.precision),
            })
            .collect(),
        removed: rate(&e.removed),
        precision: rate(&e.precision),
        hard_negatives_redacted: rate(&e.hard_negatives_redacted),
    })
}

/// Console lines for a redaction report.
pub fn print_redaction(r: &RedactionReport) {
    println!(
        "redaction of labelled secrets ({}: {} texts, {} secrets): removed {:.1}% [{:.1}, {:.1}], span precision {:.1}% [{:.1}, {:.1}] of {} spans, hard negatives redacted {} of {}",
        r.corpus,
        r.records,
        r.secrets,
        100.0 * r.removed.rate,
        100.0 * r.removed.ci95[0],
        100.0 * r.removed.ci95[1],
        100.0 * r.precision.rate,
        100.0 * r.precision.ci95[0],
        100.0 * r.precision.ci95[1],
        r.precision.n,
        r.hard_negatives_redacted.hits,
        r.hard_negatives_redacted.n
    );
    for t in &r.by_type {
        println!(
            "  {:<12} {:>3} secrets: removed {:.1}% [{:.1}, {:.1}], found as its type {:.1}%, precision {:.1}% of {} spans",
            t.kind,
            t.removed.n,
            100.0 * t.removed.rate,
            100.0 * t.removed.ci95[0],
            100.0 * t.removed.ci95[1],
            100.0 * t.typed.rate,
            100.0 * t.precision.rate,
            t.precision.n
        );
    }
}

/// The combined policy's numbers from the guard crate's report.
pub fn catch_report(r: &GuardEvalReport) -> Option<GuardCatchReport> {
    let d = r
        .detectors
        .iter()
        .find(|d| d.detector == "combined")
        .or_else(|| r.detectors.first())?;
    let map = |m: &std::collections::BTreeMap<String, hindsight_guard::Rate>| {
        m.iter().map(|(k, v)| (k.clone(), rate(v))).collect()
    };
    Some(GuardCatchReport {
        split: r.split.clone(),
        detector: d.detector.clone(),
        records: r.records,
        embedding_model: r.embedding_model.clone(),
        // The threshold of the head the guard decides with when given an embedding.
        threshold: r
            .thresholds
            .get(HeadKind::FullNgram.as_str())
            .or_else(|| r.thresholds.values().next())
            .map(|t| f64::from(*t)),
        tpr: rate(&d.catch_rate),
        tpr_by_category: map(&d.catch_by_category),
        tpr_by_language: map(&d.catch_by_language),
        tpr_by_style: map(&d.catch_by_style),
        fpr_benign: rate(&d.fpr_benign),
        fpr_hard_negatives: rate(&d.fpr_hard_negative),
        balanced_accuracy: d.balanced_accuracy,
        balanced_accuracy_ci95: None,
        // Only the combined policy has them.
        template_ci: r
            .template_ci
            .as_ref()
            .filter(|_| d.detector == "combined")
            .map(|t| TemplateInterval {
                attack_templates: t.attack_templates,
                benign_templates: t.benign_templates,
                tpr: t.tpr,
                fpr: t.fpr,
            }),
    })
}

async fn embed_all(embedder: &Arc<dyn Embedder>, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
    let embedder = Arc::clone(embedder);
    tokio::task::spawn_blocking(move || {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(64) {
            let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
            out.extend(embedder.embed(&refs)?);
        }
        Ok::<_, hindsight_embed::EmbedError>(out)
    })
    .await
    .context("embedding task failed")?
    .context("embedding the injection corpus")
}

/// Catch rate on the test split of `corpus_dir/corpus.jsonl` (the generated corpus, seed 42, when
/// the file is absent), with the real embeddings.
pub async fn catch_rate(
    guard: &Guard,
    embedder: &Arc<dyn Embedder>,
    corpus_dir: &Path,
    split: Split,
) -> Result<GuardCatchReport> {
    let file = corpus_dir.join(CORPUS_FILE);
    let records = if file.is_file() {
        let (records, issues) =
            load_corpus(&file).with_context(|| format!("loading {}", file.display()))?;
        for i in &issues {
            eprintln!("skipped {}:{}: {}", file.display(), i.line, i.message);
        }
        records
    } else {
        eprintln!(
            "{} not found: scoring the generated corpus (seed 42)",
            file.display()
        );
        generate_corpus(42)
    };
    let test: Vec<_> = records.into_iter().filter(|r| r.split == split).collect();
    let embeddings = embed_all(embedder, test.iter().map(|r| r.text.clone()).collect()).await?;
    let report =
        evaluate(guard, &test, Some(embeddings.as_slice())).context("scoring the guard")?;
    catch_report(&report).context("the guard evaluation reported no detector")
}

async fn fresh_engine(embedders: &Embedders, queries: usize) -> Result<EngineBuilder> {
    let store = open_store(
        &BackendUrl::SqliteMemory,
        embedders.docs.space(),
        AnnConfig::default(),
    )
    .await?;
    Ok(super::engine_over(embedders, store).query_cache(queries.max(1024)))
}

/// End-to-end poisoning with the guard off vs on (guard + read-time consensus check), each on a
/// fresh in-memory store.
pub async fn poisoning(
    dataset: &Dataset,
    guard: Arc<Guard>,
    embedders: &Embedders,
    quick: bool,
) -> Result<GuardE2eReport> {
    let off = fresh_engine(embedders, dataset.queries.len())
        .await?
        .build()?;
    let on = fresh_engine(embedders, dataset.queries.len())
        .await?
        .guard(guard)
        .consensus(Arc::new(RuleConsensus))
        .build()?;
    let opts = PoisonOptions {
        quick,
        ..PoisonOptions::default()
    };
    let bar = std::sync::Mutex::new(None::<(String, indicatif::ProgressBar)>);
    let progress = |stage: &str, done: usize, total: usize| {
        let mut b = bar.lock().unwrap_or_else(|p| p.into_inner());
        if b.as_ref().is_none_or(|(s, _)| s != stage) {
            if let Some((_, pb)) = b.take() {
                pb.finish_and_clear();
            }
            *b = Some((
                stage.to_owned(),
                crate::progress::bar(total as u64, &format!("poisoning {stage}")),
            ));
        }
        if let Some((_, pb)) = b.as_ref() {
            pb.set_position(done as u64);
        }
    };
    let report = evaluate_poisoning(dataset, &off, &on, GUARD_ARM, &opts, &progress).await?;
    if let Some((_, pb)) = bar.lock().unwrap_or_else(|p| p.into_inner()).take() {
        pb.finish_and_clear();
    }
    Ok(report)
}

/// Every part; a failing part is reported on stderr and left out rather than failing the eval.
pub async fn guard_section(
    cli: &crate::Cli,
    dataset: &Dataset,
    embedders: &Embedders,
    corpus_dir: &Path,
    quick: bool,
    model: Option<&Path>,
) -> Result<GuardSection> {
    let guard = Arc::new(super::guard_over(
        cli,
        model,
        GuardConfig::default(),
        super::classifier(model)?,
    )?);
    let embedder = &embedders.docs;
    let catch = reported(
        "guard catch-rate evaluation",
        catch_rate(&guard, embedder, corpus_dir, Split::Test).await,
    );
    // The held-out sets beside the corpus, when present: the hand-written challenge set, a
    // second author's probe and the fresh set of three more authors (how far the catch rate
    // carries beyond the generator's templates and beyond one writer), and code-heavy benign
    // memories (false positives only).
    // The selection set (independent authors, never trained on, used to choose the policy of the
    // precision-oriented model) is all `validation`.
    let sibling = async |name: &str, what: &str, split: Split| {
        let dir = corpus_dir.with_file_name(name);
        if dir.join(CORPUS_FILE).is_file() {
            reported(what, catch_rate(&guard, embedder, &dir, split).await)
        } else {
            None
        }
    };
    let challenge = sibling(
        "injection-challenge",
        "guard challenge-set evaluation",
        Split::Test,
    )
    .await;
    let probe = sibling("injection-probe", "guard probe-set evaluation", Split::Test).await;
    let fresh = sibling("injection-fresh", "guard fresh-set evaluation", Split::Test).await;
    let select = sibling(
        "injection-select",
        "guard selection-set evaluation",
        Split::Validation,
    )
    .await;
    let codes = sibling(
        "injection-codes",
        "guard code-heavy benign evaluation",
        Split::Test,
    )
    .await;
    let e2e = reported(
        "poisoning evaluation",
        poisoning(dataset, guard, embedders, quick).await,
    );
    let secrets_set = |name: &str| {
        let dir = corpus_dir.with_file_name(name);
        if dir.join(CORPUS_FILE).is_file() {
            reported(
                &format!("redaction evaluation ({name})"),
                redaction_report(&dir),
            )
        } else {
            None
        }
    };
    let redaction = secrets_set("secrets");
    let redaction_fresh = secrets_set("secrets-fresh");
    Ok(GuardSection {
        catch,
        e2e,
        challenge,
        probe,
        select,
        codes,
        fresh,
        redaction,
        redaction_fresh,
    })
}

/// The value, or `None` after saying on stderr what failed.
fn reported<T>(what: &str, result: Result<T>) -> Option<T> {
    result.map_err(|e| eprintln!("{what} failed: {e:#}")).ok()
}

/// Console lines for the guard section.
pub fn print_section(s: &GuardSection) {
    for (what, c) in [
        ("guard catch rate", &s.catch),
        ("guard challenge set (hand-written, held out)", &s.challenge),
        ("guard probe set (second author, held out)", &s.probe),
        ("guard fresh set (three more authors, held out)", &s.fresh),
        (
            "guard selection set (independent authors, never trained on)",
            &s.select,
        ),
        (
            "guard code-heavy benign set (false positives only)",
            &s.codes,
        ),
    ] {
        let Some(c) = c else { continue };
        println!(
            "{what} ({}, {} split, {} records): TPR {:.1}% [{:.1}, {:.1}], FPR benign {:.2}% [{:.2}, {:.2}], FPR hard negatives {:.2}%, balanced accuracy {:.3}",
            c.detector,
            c.split,
            c.records,
            100.0 * c.tpr.rate,
            100.0 * c.tpr.ci95[0],
            100.0 * c.tpr.ci95[1],
            100.0 * c.fpr_benign.rate,
            100.0 * c.fpr_benign.ci95[0],
            100.0 * c.fpr_benign.ci95[1],
            100.0 * c.fpr_hard_negatives.rate,
            c.balanced_accuracy
        );
    }
    for r in [&s.redaction, &s.redaction_fresh].into_iter().flatten() {
        print_redaction(r);
    }
    if let Some(e) = &s.e2e {
        for (label, a) in [("off", &e.off), ("on", &e.on)] {
            println!(
                "poisoning guard {label} ({}): attack success (own query's top {}) {:.1}% [Wilson {:.1}, {:.1}] ({} of {}), unflagged {:.1}%; in any query's top {} {} of {}; queries showing another query's attack {}; attacks quarantined {} rejected {}; benign at ingest quarantined {} redacted {} rejected {}; ndcg@10 clean {:.4} attacked {:.4}",
                a.guard,
                e.top_k,
                100.0 * a.attack_success_rate,
                100.0 * a.ci95[0],
                100.0 * a.ci95[1],
                a.successes,
                e.attacks,
                100.0 * a.attack_success_rate_unflagged,
                e.top_k,
                a.attacks_reaching_any_query,
                e.attacks,
                a.cross_query_hits,
                a.attacks_quarantined,
                a.attacks_rejected,
                a.ingest.quarantined,
                a.ingest.redacted,
                a.ingest.rejected,
                a.ndcg10_clean,
                a.ndcg10_attacked
            );
        }
        if let Some(r) = e.reduction {
            let ci = e.reduction_ci95.map_or_else(String::new, |c| {
                format!(
                    " [{:.1}, {:.1}] (bootstrap over {} payloads)",
                    100.0 * c[0],
                    100.0 * c[1],
                    e.payloads
                )
            });
            println!("poisoning: attack success reduced by {:.1}%{ci}", 100.0 * r);
        }
    }
}
