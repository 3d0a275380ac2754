//! `hindsight-lab guard corpus | train | eval | features | redaction`: building and measuring
//! the write guard.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use hindsight_cli::Globals;
use hindsight_cli::commands::guard::{cached_embedder, embed_all, load_guard};
use hindsight_guard_lab::corpus::{
    CorpusRecord, DEFAULT_CORPUS_SEED, DEFAULT_MANIFEST, GuardManifest, Split, corpus_summary,
    generate_corpus, load_corpus, write_corpus,
};
use hindsight_guard_lab::{FprBudget, TrainOptions, evaluate, train_on_corpus};

#[derive(Debug, clap::Subcommand)]
pub enum GuardCommand {
    /// Write the generated injection corpus (deterministic for a seed).
    Corpus {
        #[arg(long, default_value_t = DEFAULT_CORPUS_SEED)]
        seed: u64,
        #[arg(long, default_value = "datasets/guard/generated")]
        out: PathBuf,
    },
    /// Train the classifier on the manifest's training splits; its thresholds are chosen on the
    /// validation splits under false-positive budgets (or train on one corpus with `--corpus`).
    Train {
        /// The dataset manifest (every set's train and validation splits).
        #[arg(long, default_value = DEFAULT_MANIFEST)]
        manifest: PathBuf,
        /// One corpus instead of the manifest (its train and validation splits).
        #[arg(long)]
        corpus: Option<PathBuf>,
        #[arg(long, default_value = "crates/hindsight-guard/model/classifier.json")]
        out: PathBuf,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// The single heads' validation false-positive target (the ensembles the guard decides
        /// with are chosen under their budgets instead).
        #[arg(long, default_value_t = 0.01)]
        target_fpr: f64,
        /// L2 strength of the dense heads.
        #[arg(long, default_value_t = TrainOptions::default().l2)]
        l2: f32,
        /// L2 strength of the n-gram head.
        #[arg(long, default_value_t = TrainOptions::default().ngram_l2)]
        ngram_l2: f32,
        /// The quarantine threshold's budget on written (non-conversation) benign validation
        /// texts.
        #[arg(long, default_value_t = FprBudget::QUARANTINE.written)]
        quarantine_written_fpr: f64,
        /// The suspect threshold's budget on written benign validation texts.
        #[arg(long, default_value_t = FprBudget::SUSPECT.written)]
        suspect_written_fpr: f64,
    },
    /// Catch rates and false positives: every set the manifest reports (the eval report's guard
    /// tables), or one corpus split with `--corpus`.
    Eval {
        #[arg(long, default_value = DEFAULT_MANIFEST)]
        manifest: PathBuf,
        /// One corpus instead of the manifest, with the detectors side by side.
        #[arg(long)]
        corpus: Option<PathBuf>,
        /// The split of `--corpus` to score.
        #[arg(long, default_value = "test")]
        split: String,
        /// Skip embeddings (lexical fallback only).
        #[arg(long)]
        no_embed: bool,
        /// With `--corpus`: also write every record the combined policy got wrong to this
        /// JSONL file.
        #[arg(long)]
        mistakes: Option<PathBuf>,
        /// With `--corpus`: also write every record's scores (classifier probability,
        /// threshold, rule hits, verdict) to this JSONL file.
        #[arg(long)]
        scores: Option<PathBuf>,
        /// A classifier JSON other than the committed one.
        #[arg(long)]
        model: Option<PathBuf>,
    },
    /// Write every record's classifier inputs (embedding, lexical features, n-gram counts, rule
    /// hits) as JSONL, for studying models offline.
    Features {
        #[arg(long)]
        corpus: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Redaction of labelled secrets (per type: removed from the stored text, found as its own
    /// type, span precision).
    Redaction {
        #[arg(long, default_value = "datasets/guard/redaction-heldout")]
        corpus: PathBuf,
        /// Also write every record with a leaked secret or a span on no labelled secret to this
        /// JSONL file. For the development set (`datasets/guard/redaction-dev`): studying an
        /// evaluation set's mistakes would spend it.
        #[arg(long)]
        mistakes: Option<PathBuf>,
    },
}

fn load(corpus: &Path) -> Result<Vec<CorpusRecord>> {
    let (records, issues) =
        load_corpus(corpus).with_context(|| format!("loading corpus {}", corpus.display()))?;
    for i in &issues {
        eprintln!(
            "skipped {}: line {}: {}",
            corpus.display(),
            i.line,
            i.message
        );
    }
    Ok(records)
}

pub fn run(cli: &Globals, cmd: &GuardCommand) -> Result<ExitCode> {
    match cmd {
        GuardCommand::Corpus { seed, out } => {
            let records = generate_corpus(*seed);
            write_corpus(out, &records).with_context(|| format!("writing {}", out.display()))?;
            println!(
                "{}: {} records {:?}",
                out.display(),
                records.len(),
                corpus_summary(&records)
            );
        }
        GuardCommand::Train {
            manifest,
            corpus,
            out,
            seed,
            target_fpr,
            l2,
            ngram_l2,
            quarantine_written_fpr,
            suspect_written_fpr,
        } => {
            let opts = TrainOptions {
                seed: *seed,
                target_fpr: *target_fpr,
                l2: *l2,
                ngram_l2: *ngram_l2,
                quarantine_budget: FprBudget {
                    written: *quarantine_written_fpr,
                    ..FprBudget::QUARANTINE
                },
                suspect_budget: FprBudget {
                    written: *suspect_written_fpr,
                    ..FprBudget::SUSPECT
                },
                ..TrainOptions::default()
            };
            train(cli, manifest, corpus.as_deref(), out, opts)?
        }
        GuardCommand::Features { corpus, out } => features(cli, corpus, out)?,
        GuardCommand::Redaction { corpus, mistakes } => {
            let r = super::guard_eval::redaction_report(corpus)?;
            if let Some(path) = mistakes {
                super::guard_eval::write_redaction_mistakes(corpus, path)?;
            }
            if cli.json {
                hindsight_cli::commands::print_json(&r)?;
            } else {
                super::guard_eval::print_redaction(&r);
            }
        }
        GuardCommand::Eval {
            manifest: _,
            corpus: Some(corpus),
            split,
            no_embed,
            mistakes,
            scores,
            model,
        } => {
            let Some(split) = Split::parse(split) else {
                bail!("--split {split:?}: expected train, validation or test");
            };
            let guard = load_guard(cli, model.as_ref())?;
            let records: Vec<_> = load(corpus)?
                .into_iter()
                .filter(|r| r.split == split)
                .collect();
            let embeddings = if *no_embed {
                None
            } else {
                let e = cached_embedder(cli)?;
                let texts: Vec<&str> = records.iter().map(|r| r.text.as_str()).collect();
                Some(embed_all(&e, &texts)?)
            };
            let report = evaluate(&guard, &records, embeddings.as_deref())?;
            if let Some(path) = mistakes {
                write_jsonl(path, &report.mistakes)?;
                eprintln!(
                    "{} mistakes written to {}",
                    report.mistakes.len(),
                    path.display()
                );
            }
            if let Some(path) = scores {
                write_jsonl(path, &report.scores)?;
                eprintln!(
                    "{} scores written to {}",
                    report.scores.len(),
                    path.display()
                );
            }
            if cli.json {
                hindsight_cli::commands::print_json(&report)?;
            } else {
                println!("{}", report.to_markdown());
            }
        }
        GuardCommand::Eval {
            manifest,
            corpus: None,
            no_embed,
            model,
            ..
        } => {
            let guard = load_guard(cli, model.as_ref())?;
            let section = super::guard_eval::manifest_section(cli, &guard, manifest, !*no_embed)?;
            if cli.json {
                hindsight_cli::commands::print_json(&section)?;
            } else {
                super::guard_eval::print_section(&section);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn train(
    cli: &Globals,
    manifest: &Path,
    corpus: Option<&Path>,
    out: &Path,
    opts: TrainOptions,
) -> Result<()> {
    let records: Vec<CorpusRecord> = match corpus {
        Some(c) => load(c)?,
        None => GuardManifest::load(manifest)
            .and_then(|m| m.training_records())
            .with_context(|| format!("loading {}", manifest.display()))?,
    }
    .into_iter()
    .filter(|r| r.split != Split::Test)
    .collect();
    let e = cached_embedder(cli)?;
    let texts: Vec<&str> = records.iter().map(|r| r.text.as_str()).collect();
    eprintln!("embedding {} train+validation texts", texts.len());
    let emb = embed_all(&e, &texts)?;
    let opts = TrainOptions {
        embedding_model: e.space().model,
        ..opts
    };
    let mut model = train_on_corpus(&records, &emb, &opts)?;
    model.training.note = format!(
        "{}; trained on {}",
        model.training.note,
        corpus.map_or_else(
            || manifest.display().to_string(),
            |c| c.display().to_string()
        )
    );
    std::fs::write(out, model.to_json()?).with_context(|| format!("writing {}", out.display()))?;
    println!("{}: validated thresholds", out.display());
    for kind in model.heads() {
        let v = model.validated(kind);
        println!(
            "  {:<22} {:.4} (validation TPR {:.3}, FPR {:.4})",
            kind.as_str(),
            v.threshold,
            v.validation_tpr,
            v.validation_fpr
        );
    }
    if let Some(s) = &model.suspect {
        for (name, v) in [
            ("suspect full+ngram", &s.full_ngram),
            ("suspect lexical+ngram", &s.lexical_ngram),
        ] {
            println!(
                "  {:<22} {:.4} (validation TPR {:.3}, FPR {:.4})",
                name, v.threshold, v.validation_tpr, v.validation_fpr
            );
        }
    }
    Ok(())
}

fn features(cli: &Globals, corpus: &Path, out: &Path) -> Result<()> {
    let records = load(corpus)?;
    let e = cached_embedder(cli)?;
    let texts: Vec<&str> = records.iter().map(|r| r.text.as_str()).collect();
    let emb = embed_all(&e, &texts)?;
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(out).with_context(|| format!("creating {}", out.display()))?,
    );
    for (r, v) in records.iter().zip(&emb) {
        let a = hindsight_guard::Analysis::of(&r.text);
        let rules: Vec<(String, String)> = a
            .hits
            .iter()
            .map(|h| (h.rule.to_owned(), format!("{:?}", h.severity)))
            .collect();
        let row = serde_json::json!({
            "id": r.id, "label": r.label, "split": r.split, "source": r.source,
            "language": r.language, "template": r.template, "style": r.style,
            "hard_negative": r.hard_negative, "category": r.category,
            "emb": v, "lex": a.lexical, "ngrams": a.ngrams, "rules": rules,
        });
        writeln!(w, "{row}")?;
    }
    w.flush()?;
    Ok(())
}

/// Writes `rows` to `path`, one JSON object a line.
fn write_jsonl<T: serde::Serialize>(path: &Path, rows: &[T]) -> Result<()> {
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    for row in rows {
        writeln!(w, "{}", serde_json::to_string(row)?)?;
    }
    w.flush()?;
    Ok(())
}
