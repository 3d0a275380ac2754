//! `hindsight guard scan | corpus | train | eval`: the write guard from the command line.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use hindsight_core::Source;
use hindsight_embed::Embedder;
use hindsight_guard::corpus::{Split, corpus_summary, generate_corpus, load_corpus, write_corpus};
use hindsight_guard::{Guard, GuardConfig, HeadKind, TrainOptions, evaluate, train_on_corpus};

use crate::Cli;

#[derive(Debug, clap::Subcommand)]
pub enum GuardCommand {
    /// Scan JSONL lines `{"id","text"}`; print `{"id","verdict","categories","score"}` per line.
    Scan {
        file: PathBuf,
        #[arg(long)]
        out: Option<PathBuf>,
        /// Source of the texts: user, agent or external (sets the trust-scaled threshold).
        #[arg(long, default_value = "external")]
        source: String,
        /// Score without embeddings (the classifier's lexical head only): faster, but not the
        /// head the write pipeline uses, so verdicts can differ from what a write would get.
        /// By default texts are embedded with --embedder, as writes are.
        #[arg(long)]
        lexical_only: bool,
        /// A classifier JSON other than the committed one.
        #[arg(long)]
        model: Option<PathBuf>,
    },
    /// Write the labelled injection corpus (deterministic for a seed).
    Corpus {
        #[arg(long, default_value_t = hindsight_guard::corpus::DEFAULT_CORPUS_SEED)]
        seed: u64,
        #[arg(long, default_value = "datasets/injection")]
        out: PathBuf,
    },
    /// Train the classifier on the corpus train split; thresholds from the validation split.
    Train {
        #[arg(long, default_value = "datasets/injection")]
        corpus: PathBuf,
        /// More labelled corpora (same format) whose train and validation records join the
        /// corpus's (their test records, if any, are ignored), e.g. `datasets/injection-dev`.
        /// Never pass a held-out set: the challenge, probe, fresh and code-heavy sets label every
        /// record `test` and would add nothing; the selection set's records are all `validation`
        /// and would leak into the thresholds.
        #[arg(long)]
        extra: Vec<PathBuf>,
        /// How many times the `--extra` corpora's records count (each record is repeated), in
        /// training and in the validation that picks the thresholds. Hand-written sets are small
        /// beside the generated corpus, and they are the phrasing the generator's templates lack.
        #[arg(long, default_value_t = 1)]
        extra_weight: usize,
        #[arg(long, default_value = "crates/hindsight-guard/model/classifier.json")]
        out: PathBuf,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        #[arg(long, default_value_t = 0.01)]
        target_fpr: f64,
        /// Validate the thresholds with rule hits as classifier features only (Reject-severity
        /// hits still flag); the model records the policy and the guard follows it. By default
        /// every Rule-severity hit flags a write.
        #[arg(long)]
        rules_as_features: bool,
        /// Make every Rule-severity rule that matches a benign train or validation text of the
        /// `--extra` corpora a feature only (recorded in the model); the other rules still flag
        /// on their own.
        #[arg(long)]
        demote_noisy_rules: bool,
    },
    /// Catch rate / false positives on a corpus split (default: test).
    Eval {
        #[arg(long, default_value = "datasets/injection")]
        corpus: PathBuf,
        #[arg(long, default_value = "test")]
        split: String,
        /// Skip embeddings (lexical fallback only).
        #[arg(long)]
        no_embed: bool,
        /// Also write every record the combined policy got wrong to this JSONL file.
        #[arg(long)]
        mistakes: Option<PathBuf>,
        /// Also write every record's scores (classifier probability, threshold, rule hits,
        /// verdict) to this JSONL file, for choosing a threshold or policy offline.
        #[arg(long)]
        scores: Option<PathBuf>,
        #[arg(long)]
        model: Option<PathBuf>,
    },
}

fn cached_embedder(cli: &Cli) -> Result<Arc<dyn Embedder>> {
    let inner = super::embedder(cli)?;
    let cached = hindsight_embed::DiskCachedEmbedder::open(inner, &super::embedding_cache_dir())
        .context("opening the embedding cache")?;
    Ok(Arc::new(cached))
}

fn embed_all(e: &Arc<dyn Embedder>, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(64) {
        out.extend(e.embed(chunk).context("embedding texts")?);
    }
    Ok(out)
}

/// The guard with the model `--model` names, else the global `--guard-model`, else the committed
/// default.
fn load_guard(cli: &Cli, model: Option<&PathBuf>) -> Result<Guard> {
    let path = model.or(cli.guard_model.as_ref());
    Ok(Guard::new(
        GuardConfig::default(),
        super::classifier(path.map(PathBuf::as_path))?,
    ))
}

fn load(corpus: &std::path::Path) -> Result<Vec<hindsight_guard::corpus::CorpusRecord>> {
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

#[derive(serde::Deserialize)]
struct ScanLine {
    id: serde_json::Value,
    text: String,
}

pub fn run(cli: &Cli, cmd: &GuardCommand) -> Result<ExitCode> {
    match cmd {
        GuardCommand::Scan {
            file,
            out,
            source,
            lexical_only,
            model,
        } => {
            let source: Source = source.parse().context("--source")?;
            let guard = load_guard(cli, model.as_ref())?;
            let f =
                std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
            let mut lines = Vec::new();
            let mut bad = 0usize;
            // Lines are read as bytes: one that is not UTF-8 is reported and skipped like any
            // other malformed line, and the rest are still scanned.
            for (i, line) in BufReader::new(f).split(b'\n').enumerate() {
                let line = line.with_context(|| format!("reading {}", file.display()))?;
                let line = match std::str::from_utf8(&line) {
                    Ok(l) => l,
                    Err(e) => {
                        bad += 1;
                        eprintln!("{}:{}: skipped: not UTF-8 ({e})", file.display(), i + 1);
                        continue;
                    }
                };
                let line = line.strip_prefix('\u{feff}').unwrap_or(line);
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<ScanLine>(line) {
                    // As for a write: empty content is not a memory.
                    Ok(l) if l.text.trim().is_empty() => {
                        bad += 1;
                        eprintln!("{}:{}: skipped: empty text", file.display(), i + 1);
                    }
                    Ok(l) => lines.push(l),
                    Err(e) => {
                        bad += 1;
                        eprintln!(
                            "{}:{}: skipped: expected an object {{\"id\", \"text\"}}: {e}",
                            file.display(),
                            i + 1
                        );
                    }
                }
            }
            let embeddings = if !*lexical_only {
                let e = cached_embedder(cli)?;
                let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
                Some(embed_all(&e, &texts)?)
            } else {
                None
            };
            let mut w: Box<dyn Write> = match out {
                Some(p) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(p)
                        .with_context(|| format!("creating {}", p.display()))?,
                )),
                None => Box::new(std::io::stdout().lock()),
            };
            for (i, l) in lines.iter().enumerate() {
                let emb = embeddings.as_ref().map(|e| e[i].as_slice());
                let v = guard.scan(&l.text, source, emb);
                let row = serde_json::json!({
                    "id": l.id, "verdict": v.verdict, "categories": v.categories, "score": v.score,
                });
                writeln!(w, "{row}")?;
            }
            w.flush()?;
            eprintln!("scanned {} lines, {bad} malformed", lines.len());
            if bad > 0 {
                return Ok(ExitCode::from(2));
            }
        }
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
            corpus,
            extra,
            extra_weight,
            out,
            seed,
            target_fpr,
            rules_as_features,
            demote_noisy_rules,
        } => {
            if *extra_weight == 0 {
                bail!("--extra-weight must be at least 1");
            }
            let mut records = load(corpus)?;
            let mut added = Vec::new();
            for dir in extra {
                let more = load(dir)?;
                eprintln!(
                    "adding {} records from {} (x{extra_weight})",
                    more.len(),
                    dir.display()
                );
                added.extend(more);
            }
            let feature_only_rules = if *demote_noisy_rules {
                noisy_rules(&added)
            } else {
                Vec::new()
            };
            for _ in 0..*extra_weight {
                records.extend(added.iter().cloned());
            }
            let used: Vec<_> = records
                .into_iter()
                .filter(|r| r.split != Split::Test)
                .collect();
            let e = cached_embedder(cli)?;
            let texts: Vec<&str> = used.iter().map(|r| r.text.as_str()).collect();
            eprintln!("embedding {} train+validation texts", texts.len());
            let emb = embed_all(&e, &texts)?;
            let opts = TrainOptions {
                seed: *seed,
                target_fpr: *target_fpr,
                embedding_model: e.space().model,
                rule_hits_flag: !*rules_as_features,
                feature_only_rules,
                ..TrainOptions::default()
            };
            let mut model = train_on_corpus(&used, &emb, &opts)?;
            if !extra.is_empty() {
                let dirs: Vec<String> = extra.iter().map(|d| d.display().to_string()).collect();
                model.training.note = format!(
                    "{}; train/validation records also from {} (each counted {extra_weight}x)",
                    model.training.note,
                    dirs.join(", ")
                );
            }
            std::fs::write(out, model.to_json()?)
                .with_context(|| format!("writing {}", out.display()))?;
            println!(
                "{}: validated thresholds ({})",
                out.display(),
                if !model.rule_hits_flag {
                    "rule hits are features; reject hits flag".to_owned()
                } else if model.feature_only_rules.is_empty() {
                    "every rule hit flags".to_owned()
                } else {
                    format!(
                        "rule hits flag, but for {} rules that are features only: {}",
                        model.feature_only_rules.len(),
                        model.feature_only_rules.join(", ")
                    )
                }
            );
            for kind in HeadKind::ALL {
                let v = model.validated(kind);
                println!(
                    "  {:<14} {:.4} (validation TPR {:.3}, FPR {:.4})",
                    kind.as_str(),
                    v.threshold,
                    v.validation_tpr,
                    v.validation_fpr
                );
            }
        }
        GuardCommand::Eval {
            corpus,
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
                super::print_json(&report)?;
            } else {
                println!("{}", report.to_markdown());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Rule-severity rules that match at least one benign train or validation record of `records`.
fn noisy_rules(records: &[hindsight_guard::corpus::CorpusRecord]) -> Vec<String> {
    let mut noisy: Vec<String> = records
        .iter()
        .filter(|r| r.split != Split::Test && !r.is_attack())
        .flat_map(|r| hindsight_guard::Analysis::of(&r.text).hits)
        .filter(|h| h.severity == hindsight_guard::Severity::Rule)
        .map(|h| h.rule.to_owned())
        .collect();
    noisy.sort();
    noisy.dedup();
    noisy
}

/// Writes `rows` to `path`, one JSON object a line.
fn write_jsonl<T: serde::Serialize>(path: &std::path::Path, rows: &[T]) -> Result<()> {
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    for row in rows {
        writeln!(w, "{}", serde_json::to_string(row)?)?;
    }
    w.flush()?;
    Ok(())
}
