//! `hindsight guard scan`: the write guard's verdict on each line of a JSONL file.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use hindsight_core::Source;
use hindsight_embed::Embedder;
use hindsight_guard::{Guard, GuardConfig};

use crate::Globals;

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
}

/// The embedder `--embedder` names, behind the on-disk embedding cache.
pub fn cached_embedder(cli: &Globals) -> Result<Arc<dyn Embedder>> {
    let inner = super::embedder(cli)?;
    let cached = hindsight_embed::DiskCachedEmbedder::open(inner, &super::embedding_cache_dir())
        .context("opening the embedding cache")?;
    Ok(Arc::new(cached))
}

/// Lines `guard scan` reads, embeds and scans at a time.
const SCAN_CHUNK: usize = 1024;

pub fn embed_all(e: &Arc<dyn Embedder>, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(64) {
        out.extend(e.embed(chunk).context("embedding texts")?);
    }
    Ok(out)
}

/// The guard with the model `--model` names, else the global `--guard-model`, else the committed
/// default.
pub fn load_guard(cli: &Globals, model: Option<&PathBuf>) -> Result<Guard> {
    let path = model.or(cli.guard_model.as_ref()).map(PathBuf::as_path);
    Ok(Guard::new(GuardConfig::default(), super::classifier(path)?))
}

#[derive(serde::Deserialize)]
struct ScanLine {
    id: serde_json::Value,
    text: String,
}

pub fn run(cli: &Globals, cmd: &GuardCommand) -> Result<ExitCode> {
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
    }
    Ok(ExitCode::SUCCESS)
}
