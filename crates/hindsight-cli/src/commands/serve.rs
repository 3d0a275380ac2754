//! `hindsight serve --stdio | --http ADDR`: the MCP server (crate `hindsight-mcp`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use hindsight_engine::WriteConfig;
use hindsight_mcp::{Access, AuthConfig, HttpAuth, ServerOptions, ServerState};
use hindsight_reflect::{ChatClient, LlmConfig, Reflector};

use crate::Globals;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("transport").required(true).args(["stdio", "http"])))]
pub struct Args {
    /// Serve one MCP client on stdin/stdout (logs go to stderr).
    #[arg(long)]
    pub stdio: bool,
    /// Serve MCP over streamable HTTP on ADDR (e.g. 127.0.0.1:8765; port 0 picks a free port).
    /// The endpoint is http://ADDR/mcp; GET /healthz reports status.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// TOML file mapping bearer tokens to namespaces (`[[token]] token|token_sha256, namespaces,
    /// write`). Required with --http unless --no-auth.
    #[arg(long, value_name = "FILE")]
    pub auth_config: Option<PathBuf>,
    /// Serve HTTP without authentication (every namespace open). Only allowed on a loopback
    /// address.
    #[arg(long, conflicts_with = "auth_config")]
    pub no_auth: bool,
    /// HTTP: a `Host` header value /mcp answers (`host` or `host:port`; repeat or comma-separate).
    /// Default: on a loopback address only localhost, 127.0.0.1 and ::1 (so a web page cannot
    /// reach the server by rebinding its name); on any other address every host, since clients
    /// use names this process cannot know and the bearer tokens guard it.
    #[arg(long, value_delimiter = ',', value_name = "HOST", requires = "http")]
    pub allowed_host: Vec<String>,
    /// stdio: the namespace(s) this connection may use (comma-separated; the first is the
    /// default; `*` = all).
    #[arg(long, value_delimiter = ',', default_value = "default")]
    pub namespace: Vec<String>,
    /// Longest memory content (and context) a write may carry, in characters; longer writes are
    /// refused with an invalid-params error naming the limit, and nothing is stored.
    #[arg(long, env = "HINDSIGHT_MAX_CONTENT_CHARS", value_name = "N",
          default_value_t = WriteConfig::default().max_content_chars)]
    pub max_content_chars: usize,
    /// Do not count search hits as accessed (skips one store write per search).
    #[arg(long)]
    pub no_record_access: bool,
    /// OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1) for LLM reflection and
    /// summaries; rule-based when absent.
    #[arg(long, env = "HINDSIGHT_LLM_URL")]
    pub llm_url: Option<String>,
    /// Model name for --llm-url.
    #[arg(long, env = "HINDSIGHT_LLM_MODEL", requires = "llm_url")]
    pub llm_model: Option<String>,
    /// API key for --llm-url.
    #[arg(long, env = "HINDSIGHT_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,
    /// Timeout of one model call, in seconds.
    #[arg(long, default_value_t = 30)]
    pub llm_timeout: u64,
}

fn reflector(args: &Args) -> Result<Reflector> {
    let Some(url) = &args.llm_url else {
        return Ok(Reflector::rules());
    };
    let model = args
        .llm_model
        .clone()
        .context("--llm-url needs --llm-model (or HINDSIGHT_LLM_MODEL)")?;
    let client = ChatClient::new(LlmConfig {
        base_url: url.clone(),
        model,
        api_key: args.llm_api_key.clone(),
        timeout_secs: args.llm_timeout,
        ..LlmConfig::default()
    })
    .context("--llm-url")?;
    Ok(Reflector::with_llm(client))
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

pub async fn run(cli: &Globals, args: &Args) -> Result<ExitCode> {
    // validate the transport options before the (slow) engine start
    let http_auth = match args.http {
        Some(addr) => Some(match (&args.auth_config, args.no_auth) {
            (Some(path), _) => HttpAuth::Tokens(Arc::new(
                AuthConfig::load(path)
                    .with_context(|| format!("--auth-config {}", path.display()))?,
            )),
            (None, true) if addr.ip().is_loopback() => HttpAuth::Disabled,
            (None, true) => bail!("--no-auth is only allowed on a loopback address, not {addr}"),
            (None, false) => bail!("--http needs --auth-config FILE (or --no-auth on 127.0.0.1)"),
        }),
        None => None,
    };
    if args.max_content_chars == 0 {
        bail!("--max-content-chars must be at least 1");
    }
    let stdio_access = Access::namespaces(args.namespace.clone()).context("--namespace")?;
    let reflector = reflector(args)?;
    // Searches record access in the background: concurrent searches share a few writes.
    let engine = Arc::new(
        super::engine_builder(cli)
            .await?
            .write_config(WriteConfig {
                max_content_chars: args.max_content_chars,
                ..WriteConfig::default()
            })
            .defer_access(true)
            .build()?,
    );
    let working = crate::backend::open_working_memory(cli.working_memory.as_deref()).await?;
    let state = Arc::new(ServerState::new(
        engine,
        working,
        reflector,
        ServerOptions {
            record_access: !args.no_record_access,
        },
    ));
    match (args.http, http_auth) {
        (Some(addr), Some(auth)) => {
            if matches!(auth, HttpAuth::Disabled) {
                eprintln!(
                    "warning: serving HTTP WITHOUT authentication (--no-auth): every namespace is open"
                );
            }
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding {addr}"))?;
            let bound = listener.local_addr().context("reading the bound address")?;
            eprintln!("hindsight-mcp listening on http://{bound}/mcp");
            hindsight_mcp::serve_http(state, listener, auth, &args.allowed_host, shutdown_signal())
                .await?;
        }
        _ => {
            hindsight_mcp::serve_stdio(state, stdio_access, shutdown_signal()).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
