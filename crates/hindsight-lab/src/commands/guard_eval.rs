//! The write-guard part of `hindsight-lab eval` and `hindsight-lab guard eval`: every labelled set
//! the manifest reports, scored with the guard and turned into the report's tables
//! ([`GuardSection`]), the redaction sets, and the end-to-end poisoning evaluation of a dataset.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use hindsight_cli::Globals;
use hindsight_cli::backend::BackendUrl;
use hindsight_cli::commands::guard::{cached_embedder, embed_all};
use hindsight_dataset::Dataset;
use hindsight_embed::Embedders;
use hindsight_engine::RuleConsensus;
use hindsight_guard::{Guard, HeadKind};
use hindsight_guard_lab::corpus::{GuardManifest, SetFormat};
use hindsight_guard_lab::sets::{benign_rows, score, set_report};
use hindsight_harness::{PoisonOptions, evaluate_poisoning};
use hindsight_report::{
    GuardE2eReport, GuardModelInfo, GuardSection, RedactionReport, RedactionTypeRow,
};

/// Name of the guarded arm in the report.
pub const GUARD_ARM: &str = "hindsight-guard+consensus";

/// Writes [`hindsight_guard_lab::redaction_mistakes`] of the secrets set `dir` to `path` as JSONL.
pub fn write_redaction_mistakes(dir: &Path, path: &Path) -> Result<()> {
    let (records, _) = hindsight_guard_lab::load_secrets(dir)
        .with_context(|| format!("loading the secrets set {}", dir.display()))?;
    let mut out = String::new();
    let mistakes = hindsight_guard_lab::redaction_mistakes(&records);
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

/// The redaction evaluation of the secrets set at `dir`, as the report's wire struct. Lines
/// that fail to load are named on stderr and left out.
pub fn redaction_report(dir: &Path) -> Result<RedactionReport> {
    let (records, issues) = hindsight_guard_lab::load_secrets(dir)
        .with_context(|| format!("loading the secrets set {}", dir.display()))?;
    for i in &issues {
        eprintln!("skipped {}: line {}: {}", dir.display(), i.line, i.message);
    }
    if records.is_empty() {
        anyhow::bail!("the secrets set {} has no usable record", dir.display());
    }
    let e = hindsight_guard_lab::evaluate_redaction(&records);
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
                removed: t.removed.clone(),
                typed: t.typed.clone(),
                precision: t.precision.clone(),
            })
            .collect(),
        removed: e.removed,
        precision: e.precision,
        hard_negatives_redacted: e.hard_negatives_redacted,
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

/// Every set the manifest at `path` reports, scored with `guard` (with embeddings unless
/// `embed` is false), plus its secrets sets' redaction. Sets outside the repository that are
/// absent are skipped with a loud notice.
pub fn manifest_section(
    cli: &Globals,
    guard: &Guard,
    path: &Path,
    embed: bool,
) -> Result<GuardSection> {
    let manifest =
        GuardManifest::load(path).with_context(|| format!("loading {}", path.display()))?;
    let sets = manifest.load_sets(|s| !s.report.is_empty() && s.format != SetFormat::Secrets)?;
    let embedder = if embed {
        Some(cached_embedder(cli)?)
    } else {
        None
    };
    let mut section = GuardSection {
        model: GuardModelInfo {
            head: if embed {
                HeadKind::FullNgram
            } else {
                HeadKind::LexicalNgram
            }
            .as_str()
            .to_owned(),
            embedding_model: embedder
                .as_ref()
                .map(|e| e.space().model)
                .unwrap_or_default(),
            quarantine_threshold: f64::from(guard.base_threshold(HeadKind::FullNgram)),
            suspect_threshold: guard
                .classifier()
                .suspect
                .as_ref()
                .map(|s| f64::from(s.full_ngram.threshold)),
        },
        ..GuardSection::default()
    };
    for set in &sets {
        for (line, message) in &set.issues {
            eprintln!("skipped {}: line {line}: {message}", set.set.name);
        }
        let embeddings = match &embedder {
            Some(e) => {
                let texts: Vec<&str> = set.records.iter().map(|r| r.text.as_str()).collect();
                Some(embed_all(e, &texts)?)
            }
            None => None,
        };
        let verdicts = score(guard, &set.records, embeddings.as_deref());
        section.sets.push(set_report(set, &verdicts));
        section.benign_sources.extend(benign_rows(set, &verdicts));
    }
    for set in manifest
        .sets
        .iter()
        .filter(|s| s.format == SetFormat::Secrets && !s.report.is_empty())
    {
        match redaction_report(&manifest.path_of(set)) {
            Ok(r) => section.redaction.push(r),
            Err(e) => eprintln!("redaction evaluation ({}) failed: {e:#}", set.name),
        }
    }
    Ok(section)
}

/// Where the poisoning arms run: the eval's backend, embedders and write settings.
pub struct PoisonArms<'a> {
    pub cli: &'a Globals,
    pub embedders: &'a Embedders,
    pub backend: &'a BackendUrl,
    pub conversation_window: usize,
}

/// End-to-end poisoning with the guard off vs on (guard + read-time consensus check), each on a
/// fresh store of the eval's backend.
pub async fn poisoning(
    dataset: &Dataset,
    guard: Arc<Guard>,
    arms: &PoisonArms<'_>,
    quick: bool,
) -> Result<GuardE2eReport> {
    let (off_name, on_name) = (
        format!("{}-poison-off", dataset.meta.name),
        format!("{}-poison-on", dataset.meta.name),
    );
    let arm = async |name: &str| {
        super::eval::fresh_engine_builder(
            arms.cli,
            arms.embedders,
            arms.backend,
            name,
            arms.conversation_window,
            dataset.queries.len(),
        )
        .await
    };
    let off = arm(&off_name).await?.0.build()?;
    let on = arm(&on_name)
        .await?
        .0
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
                hindsight_cli::progress::bar(total as u64, &format!("poisoning {stage}")),
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

/// Console lines for the guard section.
pub fn print_section(s: &GuardSection) {
    let pct = |r: &hindsight_eval::Rate| {
        format!(
            "{:.1}% [{:.1}, {:.1}] ({}/{})",
            100.0 * r.rate,
            100.0 * r.ci95[0],
            100.0 * r.ci95[1],
            r.hits,
            r.n
        )
    };
    for set in &s.sets {
        println!(
            "guard {} ({}): attacks caught {} (as external {}; with suspect {}), benign quarantined {}, suspect {}",
            set.name,
            if set.held_out {
                "held out"
            } else {
                "seen in development"
            },
            pct(&set.caught.rate),
            pct(&set.caught_as_external),
            pct(&set.caught_or_suspect),
            pct(&set.false_positives.rate),
            pct(&set.suspect),
        );
    }
    for b in &s.benign_sources {
        println!(
            "guard benign {} / {} / {}: quarantined as user {}, as agent {}, as external {}",
            b.set,
            b.source,
            b.language,
            pct(&b.as_user.rate),
            pct(&b.as_agent.rate),
            pct(&b.as_external.rate),
        );
    }
    for r in &s.redaction {
        print_redaction(r);
    }
    for e in &s.e2e {
        for (label, a) in [("off", &e.off), ("on", &e.on)] {
            println!(
                "poisoning {} guard {label} ({}): attack success (own query's top {}) {:.1}% [Wilson {:.1}, {:.1}] ({} of {}), unflagged {:.1}%; in any query's top {} {} of {}; attacks quarantined {} rejected {}; benign at ingest quarantined {} redacted {} rejected {}; ndcg@10 clean {:.4} attacked {:.4}",
                e.dataset,
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
                a.attacks_quarantined,
                a.attacks_rejected,
                a.ingest.quarantined,
                a.ingest.redacted,
                a.ingest.rejected,
                a.ndcg10_clean,
                a.ndcg10_attacked
            );
        }
    }
}
