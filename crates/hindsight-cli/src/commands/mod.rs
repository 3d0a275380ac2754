//! One module per subcommand, plus the shared set-up (embedder, store, engine).

pub mod forget;
pub mod guard;
pub mod ingest;
pub mod model;
pub mod quarantine;
pub mod search;
pub mod serve;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use hindsight_embed::{
    Embedder, EmbedderSpec, Embedders, default_home, ensure_model, load_embedders,
};
use hindsight_engine::{Engine, EngineBuilder, RuleConsensus};
use hindsight_guard::{Classifier, Guard, GuardConfig};

use crate::backend::{BackendUrl, open_store};
use crate::{Cli, Command, Globals};

pub async fn run(cli: Cli) -> Result<ExitCode> {
    let Cli { globals, command } = cli;
    let cli = &globals;
    match &command {
        Command::Ingest(a) => ingest::run(cli, a).await,
        Command::Search(a) => search::run(cli, a).await,
        Command::Serve(a) => serve::run(cli, a).await,
        Command::Forget(a) => forget::forget(cli, a).await,
        Command::Revert(a) => forget::revert(cli, a).await,
        Command::Purge(a) => forget::purge(cli, a).await,
        Command::Model(c) => model::run(cli, c).await,
        Command::Reembed(a) => model::reembed(cli, a).await,
        Command::Quarantine(c) => quarantine::run(cli, c).await,
        Command::Guard(c) => guard::run(cli, c),
    }
}

/// The backend URL from `--backend`, else `--data`, else `$HINDSIGHT_HOME/data`.
pub fn backend_url(cli: &Globals) -> Result<BackendUrl> {
    if let Some(url) = &cli.backend {
        return BackendUrl::parse(url);
    }
    let dir = cli
        .data
        .clone()
        .unwrap_or_else(|| default_home().join("data"));
    Ok(BackendUrl::Sqlite(dir))
}

/// An engine builder over `store` that embeds documents and queries with `embedders`.
pub fn engine_over(embedders: &Embedders, store: Arc<dyn hindsight_core::Store>) -> EngineBuilder {
    let b = Engine::builder(store, Arc::clone(&embedders.docs));
    match &embedders.queries {
        Some(q) => b.query_embedder(Arc::clone(q)),
        None => b,
    }
}

/// Where the on-disk embedding cache lives: `$HINDSIGHT_HOME/cache/embeddings`.
pub fn embedding_cache_dir() -> std::path::PathBuf {
    default_home().join("cache").join("embeddings")
}

/// `embedder` behind the on-disk embedding cache, saying on stderr which file.
pub fn disk_cache(embedder: Arc<dyn Embedder>) -> Result<Arc<dyn Embedder>> {
    let cached = hindsight_embed::DiskCachedEmbedder::open(embedder, &embedding_cache_dir())
        .context("opening the embedding cache")?;
    eprintln!(
        "embedding cache: {} ({} vectors)",
        cached.path().display(),
        cached.stats().len
    );
    Ok(Arc::new(cached))
}

/// Both embedders behind the on-disk embedding cache (a query variant gets its own file).
pub fn disk_cached(embedders: Embedders) -> Result<Embedders> {
    Ok(Embedders {
        docs: disk_cache(embedders.docs)?,
        queries: embedders.queries.map(disk_cache).transpose()?,
    })
}

/// Builds the embedders named by `--embedder` and `--query-precision`, fetching the default
/// model when it is missing.
pub fn embedders(cli: &Globals) -> Result<Embedders> {
    let spec: EmbedderSpec = cli
        .embedder
        .parse()
        .with_context(|| format!("--embedder {:?}", cli.embedder))?;
    if spec == (EmbedderSpec::MiniLm { dir: None }) {
        minilm_dir()?;
    }
    let embedders = load_embedders(
        &spec,
        cli.document_precision.resolve(),
        cli.query_precision.resolve(),
    )
    .with_context(|| format!("loading embedder {spec}"))?;
    let e = &embedders.docs;
    if e.is_test_only() {
        eprintln!(
            "warning: embedder {} is a TEST-ONLY hashing embedder; its results say nothing about retrieval quality",
            e.space().model
        );
    }
    Ok(embedders)
}

/// The document embedder named by `--embedder` (commands that embed no queries).
pub fn embedder(cli: &Globals) -> Result<Arc<dyn Embedder>> {
    Ok(embedders(cli)?.docs)
}

/// Embedder + store + engine for the commands that work on a store.
pub async fn engine(cli: &Globals) -> Result<Engine> {
    Ok(engine_builder(cli).await?.build()?)
}

/// The engine over the configured store and embedder, before options are set: with the write
/// guard (the committed classifier) and the read-time consensus check, unless `--no-guard`.
pub async fn engine_builder(cli: &Globals) -> Result<EngineBuilder> {
    let embedders = embedders(cli)?;
    let url = backend_url(cli)?;
    let store = open_store(&url, embedders.docs.space(), cli.ann_config()).await?;
    let model = embedders.docs.space().model;
    let builder = engine_over(&embedders, store).retrieval_config(retrieval_config(cli)?);
    guarded(cli, builder, &model)
}

/// The retrieval configuration `--retrieval-config` gives (changes to the default), or the
/// default.
pub fn retrieval_config(cli: &Globals) -> Result<hindsight_engine::RetrievalConfig> {
    let Some(path) = &cli.retrieval_config else {
        return Ok(hindsight_engine::RetrievalConfig::default());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--retrieval-config: reading {}", path.display()))?;
    hindsight_engine::RetrievalConfig::from_toml_overrides(&text)
        .map_err(|e| anyhow::anyhow!("--retrieval-config {}: {e}", path.display()))
}

/// `builder` with the write guard and the consensus check, or, with `--no-guard`, without them
/// and a warning on stderr. `model` is the engine's document embedder: the classifier uses the
/// writes' vectors only when they come from the model it was trained on.
pub fn guarded(cli: &Globals, builder: EngineBuilder, model: &str) -> Result<EngineBuilder> {
    if cli.no_guard {
        eprintln!(
            "warning: --no-guard: writes are NOT screened for injections or secrets, and searches run no consensus check"
        );
        return Ok(builder);
    }
    let classifier = classifier(cli.guard_model.as_deref())?;
    let config = GuardConfig {
        use_embeddings: classifier.embedding_model == model,
        ..GuardConfig::default()
    };
    if !config.use_embeddings {
        eprintln!(
            "note: the guard's classifier was trained on {} vectors, the engine embeds with {model}: it uses its lexical head",
            classifier.embedding_model
        );
    }
    let guard = Guard::new(config, classifier);
    Ok(builder
        .guard(Arc::new(guard))
        .consensus(Arc::new(RuleConsensus)))
}

/// The default MiniLM directory, fetched when missing.
pub fn minilm_dir() -> Result<std::path::PathBuf> {
    let home = default_home();
    ensure_model(&home)
        .context("fetching the embedding model (run `hindsight model fetch` to retry)")?;
    Ok(hindsight_embed::model_dir(&home))
}

/// The guard's classifier: the model JSON at `path`, or the committed default.
pub fn classifier(path: Option<&std::path::Path>) -> Result<Classifier> {
    match path {
        Some(p) => Classifier::from_json(
            &std::fs::read_to_string(p)
                .with_context(|| format!("reading the guard model {}", p.display()))?,
        )
        .with_context(|| format!("loading the guard model {}", p.display())),
        None => Classifier::default_model().context("loading the write guard's classifier"),
    }
}

/// `--now`: the wall clock when absent, else an RFC 3339 time within the stores' range
/// (1677-2262), so every command refuses the same instants before doing any work.
pub fn parse_now(s: Option<&str>) -> Result<DateTime<Utc>> {
    let Some(s) = s else {
        return Ok(Utc::now());
    };
    let t = DateTime::parse_from_rfc3339(s)
        .with_context(|| format!("--now {s:?} is not an RFC 3339 time"))?
        .to_utc();
    hindsight_core::storable_nanos("--now", t)?;
    Ok(t)
}

/// One line of a JSONL input read as bytes (`split(b'\n')`): its text without a byte-order mark
/// or a trailing `\r`, or why it is not text. A line that is not UTF-8 is reported and skipped
/// like any other malformed line; it does not end the read.
pub fn jsonl_text(raw: &[u8]) -> std::result::Result<&str, String> {
    let line = std::str::from_utf8(raw).map_err(|e| format!("not UTF-8 ({e})"))?;
    let line = line.strip_prefix('\u{feff}').unwrap_or(line);
    Ok(line.strip_suffix('\r').unwrap_or(line))
}

pub fn print_json(value: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_refused_outside_the_stores_range_by_every_command() {
        assert!(parse_now(Some("2025-12-01T10:00:00+02:00")).is_ok());
        for s in ["3000-01-01T00:00:00Z", "1000-01-01T00:00:00Z", "yesterday"] {
            let err = format!("{:#}", parse_now(Some(s)).expect_err(s));
            assert!(err.contains("--now"), "{s}: {err}");
        }
    }
}
