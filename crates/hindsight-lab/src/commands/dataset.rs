//! `hindsight-lab dataset generate | import-beir | import-locomo | import-memorybank | check`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use hindsight_dataset::{
    BeirOptions, generate, generate_chat, import_beir, import_locomo, import_memorybank,
    load_dataset, write_dataset,
};

use hindsight_cli::Globals;

#[derive(Debug, clap::Subcommand)]
pub enum DatasetCommand {
    /// Generate the bilingual agent-memory query log (deterministic for a seed).
    Generate {
        #[arg(long, default_value_t = 42)]
        seed: u64,
        #[arg(long, default_value = "datasets/retrieval/agent-memory-bilingual")]
        out: PathBuf,
    },
    /// Generate the bilingual multi-session chat logs (deterministic for a seed).
    GenerateChat {
        #[arg(long, default_value_t = 42)]
        seed: u64,
        #[arg(long, default_value = "datasets/retrieval/conversations-bilingual")]
        out: PathBuf,
    },
    /// Convert a BEIR directory (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv).
    ImportBeir {
        dir: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value = "test")]
        split: String,
    },
    /// Convert a LoCoMo JSON file (conversations + QA with evidence dialog ids).
    ImportLocomo {
        file: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Convert the MemoryBank-SiliconFriend evaluation data (memory_bank_{en,cn}.json,
    /// probing_questions_{en,cn}.jsonl), judged with a qrels file.
    ImportMemorybank {
        dir: PathBuf,
        /// TREC qrels (`qid 0 memory_id grade`), e.g. `datasets/retrieval/memorybank/qrels.tsv`.
        #[arg(long)]
        qrels: Option<PathBuf>,
        #[arg(long)]
        out: PathBuf,
    },
    /// Load a dataset directory and report counts and malformed lines.
    Check { dir: PathBuf },
}

pub fn run(_cli: &Globals, cmd: &DatasetCommand) -> Result<ExitCode> {
    match cmd {
        DatasetCommand::Generate { seed, out } => {
            let ds = generate(*seed);
            write_dataset(out, &ds).with_context(|| format!("writing {}", out.display()))?;
            println!("{}: {}", out.display(), ds.summary());
        }
        DatasetCommand::GenerateChat { seed, out } => {
            let ds = generate_chat(*seed);
            write_dataset(out, &ds).with_context(|| format!("writing {}", out.display()))?;
            println!("{}: {}", out.display(), ds.summary());
        }
        DatasetCommand::ImportBeir { dir, out, split } => {
            let opts = BeirOptions {
                split: split.clone(),
                ..BeirOptions::default()
            };
            let ds = import_beir(dir, &opts)
                .with_context(|| format!("importing BEIR from {}", dir.display()))?;
            return write_import(out, &ds);
        }
        DatasetCommand::ImportLocomo { file, out } => {
            let ds = import_locomo(file, None)
                .with_context(|| format!("importing LoCoMo from {}", file.display()))?;
            return write_import(out, &ds);
        }
        DatasetCommand::ImportMemorybank { dir, qrels, out } => {
            let ds = import_memorybank(dir, qrels.as_deref())
                .with_context(|| format!("importing MemoryBank from {}", dir.display()))?;
            return write_import(out, &ds);
        }
        DatasetCommand::Check { dir } => {
            let ds = load_dataset(dir).with_context(|| format!("loading {}", dir.display()))?;
            report_issues(&ds.issues);
            println!("{}: {}", dir.display(), ds.summary());
            if !ds.issues.is_empty() {
                return Ok(ExitCode::from(2));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes an imported dataset. An import that yields no memories or no queries is an error and
/// writes nothing; one that skipped records is written and exits 2, as `dataset check` does.
fn write_import(out: &std::path::Path, ds: &hindsight_dataset::Dataset) -> Result<ExitCode> {
    report_issues(&ds.issues);
    anyhow::ensure!(
        !ds.memories.is_empty() && !ds.queries.is_empty(),
        "the import yielded {} memories and {} queries ({} records skipped); nothing written to {}",
        ds.memories.len(),
        ds.queries.len(),
        ds.issues.len(),
        out.display()
    );
    write_dataset(out, ds).with_context(|| format!("writing {}", out.display()))?;
    println!("{}: {}", out.display(), ds.summary());
    Ok(if ds.issues.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

fn report_issues(issues: &[hindsight_dataset::LoadIssue]) {
    for i in issues {
        eprintln!("skipped {i}");
    }
}
