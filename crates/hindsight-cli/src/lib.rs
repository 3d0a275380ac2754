//! The `hindsight` command line, as a library so the binary stays a few lines.
//!
//! [`Cli`] is the clap definition; [`main`] parses it, sets up logging and dispatches to one
//! module of `commands` per subcommand. Backends are chosen by URL ([`backend::open_store`]) and
//! embedders by spec string ([`hindsight_embed::EmbedderSpec`]). Output is human-readable by
//! default and JSON with `--json`. Errors are reported through `anyhow` with their context chain
//! and a non-zero exit code.

pub mod backend;
pub mod commands;
pub mod progress;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use backend::{BackendUrl, open_store, open_working_memory};

/// hindsight: an agent-memory server (the evaluation harness is `hindsight-lab`).
#[derive(Debug, Parser)]
#[command(name = "hindsight", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub globals: Globals,
    #[command(subcommand)]
    pub command: Command,
}

/// The options every command of `hindsight` and `hindsight-lab` takes: where the memories are,
/// how text is embedded, the guard, output and logging.
#[derive(Debug, clap::Args)]
pub struct Globals {
    /// Data directory of the embedded store (default: $HINDSIGHT_HOME/data).
    #[arg(long, global = true, env = "HINDSIGHT_DATA")]
    pub data: Option<PathBuf>,
    /// Backend URL: `sqlite://DIR` (or `sqlite://:memory:`), `postgres://USER:PASSWORD@HOST/DB[?schema=NAME]`,
    /// or `qdrant://HOST:PORT[?prefix=NAME&api_key=KEY]` (`qdrant+https://` for TLS); overrides --data.
    #[arg(long, global = true, env = "HINDSIGHT_BACKEND")]
    pub backend: Option<String>,
    /// Embedder: `minilm` (default; fetched on first use), `minilm:DIR`, `http://HOST/v1?model=NAME`,
    /// or `hash:DIM` (test-only).
    #[arg(
        long,
        global = true,
        env = "HINDSIGHT_EMBEDDER",
        default_value = "minilm"
    )]
    pub embedder: String,
    /// Arithmetic of MiniLM's query embeddings: `auto` (default: `int8` where the CPU has
    /// AVX-512 VNNI, about 3x faster than f32 for a query, cosine 0.989-0.998 to f32 vectors
    /// and retrieval NDCG within 0.003 of f32; `f32` elsewhere), `int8`, `bf16` (cosine >= 0.9999)
    /// or `f32`. Stored memories follow `--document-precision`.
    #[arg(
        long,
        global = true,
        env = "HINDSIGHT_QUERY_PRECISION",
        default_value = "auto"
    )]
    pub query_precision: QueryPrecision,
    /// Arithmetic of MiniLM's document embeddings (the stored vectors): `auto` (default: `bf16`
    /// where Intel AMX runs it on tiles, about 1.8x faster than f32 per document there, cosine
    /// 0.9999 or more to the f32 vector; `f32` elsewhere), `f32` (the reference model's
    /// arithmetic) or `bf16`. Never int8.
    #[arg(
        long,
        global = true,
        env = "HINDSIGHT_DOCUMENT_PRECISION",
        default_value = "auto"
    )]
    pub document_precision: DocumentPrecision,
    /// Embedded store's vector search: a namespace with at least this many vectors leaves the
    /// exact scan for an int8 scan with exact re-ranking (behind a sign-bit prefilter once that
    /// keeps fewer rows than there are). Other backends index their own way.
    #[arg(long, global = true, env = "HINDSIGHT_ANN_THRESHOLD", value_name = "N",
          default_value_t = hindsight_index::AnnConfig::default().threshold)]
    pub ann_threshold: usize,
    /// Embedded store's vector search: a namespace with at least this many vectors is searched
    /// through an HNSW graph (usearch), built from the stored vectors and updated on every write.
    #[arg(long, global = true, env = "HINDSIGHT_GRAPH_THRESHOLD", value_name = "N",
          default_value_t = hindsight_index::AnnConfig::default().graph_threshold)]
    pub graph_threshold: usize,
    /// Working memory for `serve`: `redis://HOST:PORT[/DB]`, or `memory://` (in-process, default).
    #[arg(long, global = true, env = "HINDSIGHT_WORKING_MEMORY")]
    pub working_memory: Option<String>,
    /// Turn the write guard (injection detection, redaction, quarantine) and the read-time
    /// consensus check OFF for this command. Both are on by default wherever memories are written
    /// or searched (`serve`, `ingest`, `search`, ...); switch them off only for trusted bulk data.
    #[arg(long, global = true, env = "HINDSIGHT_NO_GUARD")]
    pub no_guard: bool,
    /// The write guard's classifier: a model JSON written by `hindsight-lab guard train`.
    /// Default: the committed `classifier.json`, built into the binary.
    #[arg(long, global = true, env = "HINDSIGHT_GUARD_MODEL")]
    pub guard_model: Option<PathBuf>,
    /// Retrieval configuration for searches: a TOML file of changes to the default (paths,
    /// `[fusion]`, `[factors]`; see `default-retrieval.toml` in hindsight-engine for every key).
    #[arg(
        long,
        global = true,
        env = "HINDSIGHT_RETRIEVAL_CONFIG",
        value_name = "FILE"
    )]
    pub retrieval_config: Option<PathBuf>,
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// More logging (-v info, -vv debug: per-path hits of every search).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Store memories from a JSONL file through the write pipeline (guard, dedup, conflicts).
    Ingest(commands::ingest::Args),
    /// Search memories (vector + BM25 + structured paths, fused and ranked).
    Search(commands::search::Args),
    /// Run the MCP server (memory tools) over stdio or streamable HTTP.
    Serve(commands::serve::Args),
    /// Soft-delete a memory (status `forgotten`, with a reason).
    Forget(commands::forget::ForgetArgs),
    /// Restore a superseded / deprecated / forgotten memory to active.
    Revert(commands::forget::RevertArgs),
    /// Hard-delete memories that are already forgotten (logged).
    Purge(commands::forget::PurgeArgs),
    /// Manage the embedding model.
    #[command(subcommand)]
    Model(commands::model::ModelCommand),
    /// Re-embed every stored memory with the current embedder (after changing models).
    Reembed(commands::model::ReembedArgs),
    /// List, release or discard memories the write guard quarantined.
    #[command(subcommand)]
    Quarantine(commands::quarantine::QuarantineCommand),
    /// The write guard: scan texts (training and evaluation are `hindsight-lab guard`).
    #[command(subcommand)]
    Guard(commands::guard::GuardCommand),
}

impl Globals {
    /// The embedded store's vector tiers as `--ann-threshold` / `--graph-threshold` set them.
    pub fn ann_config(&self) -> hindsight_index::AnnConfig {
        hindsight_index::AnnConfig {
            threshold: self.ann_threshold,
            graph_threshold: self.graph_threshold,
            ..hindsight_index::AnnConfig::default()
        }
    }
}

/// `--query-precision`: a fixed [`hindsight_embed::Precision`] or the CPU's fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryPrecision {
    Auto,
    Fixed(hindsight_embed::Precision),
}

impl QueryPrecision {
    pub fn resolve(self) -> hindsight_embed::Precision {
        match self {
            QueryPrecision::Auto => hindsight_embed::Precision::fastest_for_queries(),
            QueryPrecision::Fixed(p) => p,
        }
    }
}

/// `--document-precision`: f32, bf16, or the CPU's fastest of the two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocumentPrecision {
    Auto,
    Fixed(hindsight_embed::Precision),
}

impl DocumentPrecision {
    pub fn resolve(self) -> hindsight_embed::Precision {
        match self {
            DocumentPrecision::Auto => hindsight_embed::Precision::fastest_for_documents(),
            DocumentPrecision::Fixed(p) => p,
        }
    }
}

impl std::str::FromStr for DocumentPrecision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.parse::<QueryPrecision>()? {
            QueryPrecision::Auto => Ok(DocumentPrecision::Auto),
            QueryPrecision::Fixed(hindsight_embed::Precision::Int8) => Err(
                "stored vectors are never int8 (lossy, cosine 0.99 to f32): use f32, bf16 or auto"
                    .to_owned(),
            ),
            QueryPrecision::Fixed(p) => Ok(DocumentPrecision::Fixed(p)),
        }
    }
}

impl std::str::FromStr for QueryPrecision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(QueryPrecision::Auto);
        }
        s.parse()
            .map(QueryPrecision::Fixed)
            .map_err(|e| format!("{e}, or auto"))
    }
}

/// The error and its causes, joined by ": " as `{:#}` does, without a cause whose text the
/// message before it already ends with (the libraries' errors print their source in their own
/// message and also return it from `source()`, which `{:#}` would print twice).
/// An error and its causes, each once.
pub fn render_error(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.globals.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", render_error(&e));
            ExitCode::FAILURE
        }
    };
    // Every command has flushed what it wrote before returning. A runtime dropped normally would
    // wait for blocking threads, one of which may sit in a read of stdin forever (`serve --stdio`
    // told to stop by SIGTERM while its client is idle): give them a moment, then exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    code
}

/// Logging to stderr at the level `-v` asks for (`HINDSIGHT_LOG` overrides it).
pub fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("HINDSIGHT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_embed::Precision;

    #[test]
    fn an_error_prints_each_cause_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        // A library error that prints its source and also returns it from `source()`.
        let e = anyhow::Error::new(hindsight_embed::EmbedError::Io {
            context: "/nonexistent".into(),
            source: io(),
        });
        assert_eq!(render_error(&e), "/nonexistent: No such file");
        // A context above it still shows, and a cause it does not repeat is kept.
        let e = e.context("gate --baseline");
        assert_eq!(
            render_error(&e),
            "gate --baseline: /nonexistent: No such file"
        );
        let e = anyhow::Error::new(io()).context("reading in.jsonl");
        assert_eq!(render_error(&e), "reading in.jsonl: No such file");
    }

    #[test]
    fn query_precision_parses_auto_and_fixed() {
        let parse = |s: &str| s.parse::<QueryPrecision>();
        assert_eq!(parse("auto"), Ok(QueryPrecision::Auto));
        assert_eq!(parse(" BF16 "), Ok(QueryPrecision::Fixed(Precision::Bf16)));
        assert_eq!(parse("f32"), Ok(QueryPrecision::Fixed(Precision::F32)));
        assert_eq!(parse("int8"), Ok(QueryPrecision::Fixed(Precision::Int8)));
        let err = parse("fp8").unwrap_err();
        assert!(err.contains("fp8") && err.contains("auto"), "{err}");
        assert_eq!(
            QueryPrecision::Auto.resolve(),
            Precision::fastest_for_queries()
        );
        assert_eq!(
            QueryPrecision::Fixed(Precision::F32).resolve(),
            Precision::F32
        );
    }

    #[test]
    fn vector_tier_thresholds_reach_the_store_config() {
        let default = Cli::parse_from(["hindsight", "search", "x"])
            .globals
            .ann_config();
        assert_eq!(default, hindsight_index::AnnConfig::default());
        let cli = Cli::parse_from([
            "hindsight",
            "--ann-threshold",
            "5000",
            "serve",
            "--stdio",
            "--graph-threshold",
            "90000",
        ]);
        let c = cli.globals.ann_config();
        assert_eq!((c.threshold, c.graph_threshold), (5000, 90_000));
        assert_eq!(c.int8_rerank, default.int8_rerank);
        assert!(
            Cli::try_parse_from(["hindsight", "--ann-threshold", "-1", "search", "x"]).is_err()
        );
    }

    #[test]
    fn document_precision_refuses_int8() {
        let parse = |s: &str| s.parse::<DocumentPrecision>();
        assert_eq!(parse("auto"), Ok(DocumentPrecision::Auto));
        assert_eq!(parse("bf16"), Ok(DocumentPrecision::Fixed(Precision::Bf16)));
        assert_eq!(parse("F32"), Ok(DocumentPrecision::Fixed(Precision::F32)));
        let err = parse("int8").unwrap_err();
        assert!(err.contains("never int8"), "{err}");
        assert!(parse("fp8").unwrap_err().contains("fp8"));
        assert_eq!(
            DocumentPrecision::Auto.resolve(),
            Precision::fastest_for_documents()
        );
    }
}
