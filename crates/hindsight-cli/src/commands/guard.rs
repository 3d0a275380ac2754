//! `hindsight guard scan | corpus | finetune | train | eval`: the write guard from the command line.

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
    /// Train the classifier on the manifest's training splits; thresholds from its validation
    /// splits (or on one corpus with `--corpus`).
    Train {
        /// The dataset manifest (every set's train and validation splits).
        #[arg(long, default_value = hindsight_guard::corpus::DEFAULT_MANIFEST)]
        manifest: PathBuf,
        /// One corpus instead of the manifest (its train and validation splits).
        #[arg(long)]
        corpus: Option<PathBuf>,
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
        /// L2 strength of the dense heads.
        #[arg(long, default_value_t = TrainOptions::default().l2)]
        l2: f32,
        /// L2 strength of the n-gram head.
        #[arg(long, default_value_t = TrainOptions::default().ngram_l2)]
        ngram_l2: f32,
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
        /// Add the fine-tuned intent head (an adapter from `guard finetune`, in the same
        /// directory as `--out`): its blend weight and threshold are chosen on the validation
        /// split, and the model records the adapter's name and SHA-256.
        #[arg(long)]
        intent_adapter: Option<PathBuf>,
    },
    /// Fine-tune MiniLM for the guard: train a low-rank adapter (LoRA) and a linear head on the
    /// corpora's train splits (class-balanced; `--extra` records weighted `--extra-weight`), score
    /// their validation splits after every epoch, and write the epoch with the highest validation
    /// catch rate at `--target-fpr` (the intent head the guard's classifier can add with
    /// `guard train --intent-adapter`).
    Finetune {
        #[arg(long, default_value = "datasets/injection")]
        corpus: PathBuf,
        /// More labelled corpora (see `guard train --extra`); never a held-out or selection set.
        #[arg(long)]
        extra: Vec<PathBuf>,
        /// Weight of the `--extra` corpora's records relative to the main corpus's.
        #[arg(long, default_value_t = 3.0)]
        extra_weight: f32,
        #[arg(
            long,
            default_value = "crates/hindsight-guard/model/intent-adapter.json"
        )]
        out: PathBuf,
        /// Epochs (the committed adapter: 3).
        #[arg(long, default_value_t = 3)]
        epochs: usize,
        #[arg(long, default_value_t = 8)]
        rank: usize,
        #[arg(long, default_value_t = 5e-4)]
        learning_rate: f64,
        #[arg(long, default_value_t = 7)]
        seed: u64,
        #[arg(long, default_value_t = 0.01)]
        target_fpr: f64,
    },
    /// Redaction of labelled secrets (per type: removed from the stored text, found as its own
    /// type, span precision), on `datasets/secrets` or another set in its format.
    Redaction {
        #[arg(long, default_value = "datasets/secrets")]
        corpus: PathBuf,
        /// Also write every record with a leaked secret or a span on no labelled secret to this
        /// JSONL file. For a development set (`datasets/secrets-dev`): studying the held-out
        /// set's mistakes would spend it.
        #[arg(long)]
        mistakes: Option<PathBuf>,
    },
    /// Write every record's classifier inputs (embedding, lexical features, n-gram counts, rule
    /// hits) as JSONL, for studying models offline.
    Features {
        #[arg(long)]
        corpus: PathBuf,
        #[arg(long)]
        out: PathBuf,
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

/// Lines `guard scan` reads, embeds and scans at a time.
const SCAN_CHUNK: usize = 1024;

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
    let path = model.or(cli.guard_model.as_ref()).map(PathBuf::as_path);
    super::guard_over(cli, path, GuardConfig::default(), super::classifier(path)?)
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
            let embedder = if *lexical_only {
                None
            } else {
                Some(cached_embedder(cli)?)
            };
            let mut w: Box<dyn Write> = match out {
                Some(p) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(p)
                        .with_context(|| format!("creating {}", p.display()))?,
                )),
                None => Box::new(std::io::stdout().lock()),
            };
            // The file is scanned SCAN_CHUNK lines at a time (one batch for the guard's heads
            // each), and each chunk's verdicts are written before the next is read: memory
            // stays bounded whatever the file's size.
            let scan_chunk = |chunk: &mut Vec<ScanLine>, w: &mut dyn Write| -> Result<()> {
                let texts: Vec<&str> = chunk.iter().map(|l| l.text.as_str()).collect();
                let embeddings = embedder
                    .as_ref()
                    .map(|e| embed_all(e, &texts))
                    .transpose()?;
                let verdicts = guard.scan_many(&texts, source, embeddings.as_deref());
                for (l, v) in chunk.iter().zip(verdicts) {
                    let row = serde_json::json!({
                        "id": l.id, "verdict": v.verdict, "categories": v.categories, "score": v.score,
                    });
                    writeln!(w, "{row}")?;
                }
                chunk.clear();
                Ok(())
            };
            let mut chunk = Vec::with_capacity(SCAN_CHUNK);
            let (mut scanned, mut bad) = (0usize, 0usize);
            // Lines are read as bytes: one that is not UTF-8 is reported and skipped like any
            // other malformed line, and the rest are still scanned.
            for (i, line) in BufReader::new(f).split(b'\n').enumerate() {
                let line = line.with_context(|| format!("reading {}", file.display()))?;
                let line = match super::jsonl_text(&line) {
                    Ok(l) => l,
                    Err(e) => {
                        bad += 1;
                        eprintln!("{}:{}: skipped: {e}", file.display(), i + 1);
                        continue;
                    }
                };
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<ScanLine>(line) {
                    // As for a write: empty content is not a memory.
                    Ok(l) if l.text.trim().is_empty() => {
                        bad += 1;
                        eprintln!("{}:{}: skipped: empty text", file.display(), i + 1);
                    }
                    Ok(l) => {
                        chunk.push(l);
                        scanned += 1;
                        if chunk.len() == SCAN_CHUNK {
                            scan_chunk(&mut chunk, &mut *w)?;
                        }
                    }
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
            scan_chunk(&mut chunk, &mut *w)?;
            w.flush()?;
            eprintln!("scanned {scanned} lines, {bad} malformed");
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
            manifest,
            corpus,
            extra,
            extra_weight,
            out,
            seed,
            target_fpr,
            l2,
            ngram_l2,
            rules_as_features,
            demote_noisy_rules,
            intent_adapter,
        } => {
            if *extra_weight == 0 {
                bail!("--extra-weight must be at least 1");
            }
            let mut records = match corpus {
                Some(c) => load(c)?,
                None => hindsight_guard::corpus::GuardManifest::load(manifest)
                    .and_then(|m| m.training_records())
                    .with_context(|| format!("loading {}", manifest.display()))?,
            };
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
                l2: *l2,
                ngram_l2: *ngram_l2,
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
            if let Some(adapter) = intent_adapter {
                model.intent = Some(intent_ensemble(
                    &model,
                    adapter,
                    out,
                    &used,
                    &emb,
                    *target_fpr,
                )?);
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
            for kind in model.heads() {
                let v = model.validated(kind);
                println!(
                    "  {:<14} {:.4} (validation TPR {:.3}, FPR {:.4})",
                    kind.as_str(),
                    v.threshold,
                    v.validation_tpr,
                    v.validation_fpr
                );
            }
            if let Some(s) = &model.suspect {
                for (name, v) in [
                    ("full+ngram", &s.full_ngram),
                    ("lexical+ngram", &s.lexical_ngram),
                ] {
                    println!(
                        "  suspect {:<14} {:.4} (validation TPR {:.3}, FPR {:.4})",
                        name, v.threshold, v.validation_tpr, v.validation_fpr
                    );
                }
            }
        }
        GuardCommand::Finetune {
            corpus,
            extra,
            extra_weight,
            out,
            epochs,
            rank,
            learning_rate,
            seed,
            target_fpr,
        } => finetune(
            corpus,
            extra,
            *extra_weight,
            out,
            &hindsight_embed::TuneOptions {
                epochs: *epochs,
                rank: *rank,
                alpha: 2.0 * *rank as f32,
                learning_rate: *learning_rate,
                seed: *seed,
                ..hindsight_embed::TuneOptions::default()
            },
            *target_fpr,
        )?,
        GuardCommand::Features { corpus, out } => {
            let records = load(corpus)?;
            let e = cached_embedder(cli)?;
            let texts: Vec<&str> = records.iter().map(|r| r.text.as_str()).collect();
            let emb = embed_all(&e, &texts)?;
            let mut w = std::io::BufWriter::new(
                std::fs::File::create(out)
                    .with_context(|| format!("creating {}", out.display()))?,
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
        }
        GuardCommand::Redaction { corpus, mistakes } => {
            let r = super::guard_eval::redaction_report(corpus)?;
            if let Some(path) = mistakes {
                super::guard_eval::write_redaction_mistakes(corpus, path)?;
            }
            if cli.json {
                super::print_json(&r)?;
            } else {
                super::guard_eval::print_redaction(&r);
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

/// Catch rate of `logits` at the highest threshold-free cut whose false-positive rate on the
/// benign records is at most `target_fpr` (trust-scaled as the guard scales thresholds).
fn catch_at_fpr(logits: &[f32], attack: &[bool], trust: &[f32], target_fpr: f64) -> (f64, f64) {
    let probs: Vec<f32> = logits
        .iter()
        .copied()
        .map(hindsight_guard::sigmoid)
        .collect();
    let forced = vec![false; logits.len()];
    let (_, tpr, fpr) =
        hindsight_guard::choose_threshold(&probs, attack, trust, &forced, target_fpr);
    (tpr, fpr)
}

fn finetune(
    corpus: &std::path::Path,
    extra: &[PathBuf],
    extra_weight: f32,
    out: &std::path::Path,
    opts: &hindsight_embed::TuneOptions,
    target_fpr: f64,
) -> Result<()> {
    if !(extra_weight.is_finite() && extra_weight > 0.0) {
        bail!("--extra-weight must be positive");
    }
    let mut weighted: Vec<(hindsight_guard::corpus::CorpusRecord, f32)> =
        load(corpus)?.into_iter().map(|r| (r, 1.0)).collect();
    for dir in extra {
        let more = load(dir)?;
        eprintln!(
            "adding {} records from {} (weight {extra_weight})",
            more.len(),
            dir.display()
        );
        weighted.extend(more.into_iter().map(|r| (r, extra_weight)));
    }
    let train: Vec<hindsight_embed::TuneExample> = weighted
        .iter()
        .filter(|(r, _)| r.split == Split::Train)
        .map(|(r, w)| hindsight_embed::TuneExample {
            text: r.text.clone(),
            label: r.is_attack(),
            weight: *w,
        })
        .collect();
    let validation: Vec<&hindsight_guard::corpus::CorpusRecord> = weighted
        .iter()
        .filter(|(r, _)| r.split == Split::Validation)
        .map(|(r, _)| r)
        .collect();
    let trust_weights = hindsight_core::TrustWeights::default();
    let v_attack: Vec<bool> = validation.iter().map(|r| r.is_attack()).collect();
    let v_trust: Vec<f32> = validation
        .iter()
        .map(|r| trust_weights.weight(r.source))
        .collect();
    let v_texts: Vec<&str> = validation.iter().map(|r| r.text.as_str()).collect();
    let dir = super::minilm_dir()?;
    eprintln!(
        "fine-tuning on {} train texts ({} attacks), validating on {}; rank {}, {} epochs",
        train.len(),
        train.iter().filter(|e| e.label).count(),
        validation.len(),
        opts.rank,
        opts.epochs
    );
    let started = std::time::Instant::now();
    let mut best: Option<(f64, usize, hindsight_embed::LoraAdapter)> = None;
    let mut failure = None;
    let last = hindsight_embed::finetune(
        &dir,
        &train,
        opts,
        |e| match e {
            hindsight_embed::TuneEvent::Step {
                epoch,
                step,
                steps,
                loss,
            } if step % 20 == 0 || step == steps => eprintln!(
                "  epoch {epoch} step {step}/{steps} loss {loss:.4} ({:.0} s)",
                started.elapsed().as_secs_f64()
            ),
            hindsight_embed::TuneEvent::Epoch { epoch, loss } => eprintln!(
                "epoch {epoch}: train loss {loss:.4} ({:.0} s)",
                started.elapsed().as_secs_f64()
            ),
            _ => {}
        },
        |epoch, adapter| {
            if validation.is_empty() || failure.is_some() {
                return;
            }
            let scored =
                hindsight_embed::IntentModel::load(&dir, adapter, hindsight_embed::Precision::F32)
                    .and_then(|m| m.logits(&v_texts));
            match scored {
                Ok(z) => {
                    let (tpr, fpr) = catch_at_fpr(&z, &v_attack, &v_trust, target_fpr);
                    eprintln!(
                        "epoch {epoch}: validation catch {:.1} % at {:.2} % FPR (intent head alone)",
                        tpr * 100.0,
                        fpr * 100.0
                    );
                    if best.as_ref().is_none_or(|(b, _, _)| tpr >= *b) {
                        best = Some((tpr, epoch, adapter.clone()));
                    }
                }
                Err(e) => failure = Some(e),
            }
        },
    )?;
    if let Some(e) = failure {
        return Err(e).context("scoring the validation split");
    }
    let (mut adapter, chosen) = match best {
        Some((_, epoch, a)) => (a, epoch),
        None => (last, opts.epochs),
    };
    if let serde_json::Value::Object(m) = &mut adapter.training {
        m.insert("chosen_epoch".into(), chosen.into());
        m.insert(
            "corpora".into(),
            std::iter::once(corpus)
                .chain(extra.iter().map(PathBuf::as_path))
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .into(),
        );
        m.insert("extra_weight".into(), extra_weight.into());
        m.insert(
            "note".into(),
            "LoRA on every dense layer of MiniLM-L6 + linear head over the normalised mean-pooled vector; class-balanced weighted logistic loss; AdamW, warm-up half an epoch then cosine; the epoch with the best validation catch rate at the target FPR is kept".into(),
        );
    }
    adapter.write(out)?;
    println!(
        "{}: epoch {chosen} of {} (rank {}, {:.0} s)",
        out.display(),
        opts.epochs,
        opts.rank,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Scores the validation records of `used` with the intent adapter and chooses its blend with
/// `model`'s `full+ngram` ensemble (see `hindsight_guard::IntentEnsemble`).
fn intent_ensemble(
    model: &hindsight_guard::Classifier,
    adapter_path: &std::path::Path,
    out: &std::path::Path,
    used: &[hindsight_guard::corpus::CorpusRecord],
    emb: &[Vec<f32>],
    target_fpr: f64,
) -> Result<hindsight_guard::IntentEnsemble> {
    // The directory a path names a file in ("." for a bare file name), resolved.
    let dir_of = |p: &std::path::Path| {
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
        std::fs::canonicalize(dir.unwrap_or(std::path::Path::new("."))).ok()
    };
    let same_dir = dir_of(out) == dir_of(adapter_path);
    let Some(name) = adapter_path.file_name().and_then(|n| n.to_str()) else {
        bail!(
            "--intent-adapter {}: not a file name",
            adapter_path.display()
        );
    };
    if !same_dir {
        bail!(
            "--intent-adapter {} must be in the directory of --out {} (the model names it relative to itself)",
            adapter_path.display(),
            out.display()
        );
    }
    let sha = hindsight_embed::sha256_file(adapter_path)?;
    let adapter = hindsight_embed::LoraAdapter::read(adapter_path)?;
    let intent = hindsight_embed::IntentModel::load(
        super::minilm_dir()?,
        &adapter,
        hindsight_embed::Precision::F32,
    )?;
    let val: Vec<usize> = (0..used.len())
        .filter(|&i| used[i].split == Split::Validation)
        .collect();
    // Repeated records (`--extra-weight`) are scored once.
    let mut unique: Vec<&str> = val.iter().map(|&i| used[i].text.as_str()).collect();
    unique.sort_unstable();
    unique.dedup();
    eprintln!(
        "scoring {} validation texts with the intent head",
        unique.len()
    );
    let logits: std::collections::HashMap<&str, f32> = unique
        .iter()
        .copied()
        .zip(intent.logits(&unique)?)
        .collect();
    let trust = hindsight_core::TrustWeights::default();
    let examples: Vec<hindsight_guard::IntentExample> = val
        .iter()
        .map(|&i| {
            let r = &used[i];
            let a = hindsight_guard::Analysis::of(&r.text);
            let (p, _) =
                model.probability(HeadKind::FullNgram, Some(&emb[i]), &a.lexical, &a.ngrams);
            hindsight_guard::IntentExample {
                p_full_ngram: p,
                z_intent: logits[r.text.as_str()],
                attack: r.is_attack(),
                trust: trust.weight(r.source),
                // `rule_flags` is the model's policy: Reject hits always, Rule hits unless demoted.
                rule_forced: a.hits.iter().any(|h| model.rule_flags(h)),
                reject_forced: a.reject_hit(),
            }
        })
        .collect();
    Ok(hindsight_guard::choose_intent_ensemble(
        model,
        &examples,
        target_fpr,
        name.to_owned(),
        sha,
    )?)
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
