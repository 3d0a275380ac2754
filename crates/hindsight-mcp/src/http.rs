//! Streamable HTTP transport: `POST /mcp` (stateless, JSON responses) behind bearer-token auth,
//! plus an unauthenticated `GET /healthz` and the auth-protected search and store profile at `/debug/profile`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Extension, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hindsight_core::Error;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;
use tracing::{info, warn};

use crate::auth::{Access, AuthConfig};
use crate::server::{HindsightMcp, ServerState};
use crate::stdio::MAX_LINE_BYTES;

/// How the HTTP server authenticates.
#[derive(Clone, Debug)]
pub enum HttpAuth {
    /// Bearer tokens from an [`AuthConfig`]; anything else gets 401.
    Tokens(Arc<AuthConfig>),
    /// No authentication: every request may use every namespace (tests, local benchmarks).
    Disabled,
}

/// Which `Host` headers `/mcp` answers (rmcp's DNS-rebinding protection): a browser page that
/// rebinds its own name to 127.0.0.1 must not reach a loopback server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllowedHosts {
    /// `localhost`, `127.0.0.1` and `::1` only (rmcp's default).
    Loopback,
    /// Any `Host`: a server bound to a routable address is reached by names this process cannot
    /// know (`http://hindsight:8080` in docker-compose); its bearer tokens guard it.
    Any,
    /// Exactly these (`host` or `host:port`).
    Only(Vec<String>),
}

impl AllowedHosts {
    /// `listed` when given, else [`AllowedHosts::Loopback`] for a loopback `bind` address and
    /// [`AllowedHosts::Any`] for any other.
    pub fn for_bind(bind: &SocketAddr, listed: &[String]) -> Self {
        if !listed.is_empty() {
            AllowedHosts::Only(listed.to_vec())
        } else if bind.ip().is_loopback() {
            AllowedHosts::Loopback
        } else {
            AllowedHosts::Any
        }
    }
}

/// How long shutdown waits for in-flight requests before giving up on them.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The axum router: `/mcp` (auth-protected MCP endpoint), `/healthz`, and `/debug/profile`
/// (auth-protected: `GET` the per-stage search and store profile, `DELETE` to reset it, which needs a token
/// with write access).
pub fn router(state: Arc<ServerState>, auth: HttpAuth, hosts: &AllowedHosts) -> Router {
    let prototype = HindsightMcp::new(state.clone(), Access::none());
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    let config = match hosts {
        AllowedHosts::Loopback => config,
        AllowedHosts::Any => config.disable_allowed_hosts(),
        AllowedHosts::Only(hosts) => config.with_allowed_hosts(hosts.iter().cloned()),
    };
    let mcp = StreamableHttpService::new(
        move || Ok(prototype.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let protected = Router::new()
        .route("/debug/profile", get(profile).delete(reset_profile))
        .with_state(state.clone())
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn(parse_errors))
        .layer(middleware::from_fn_with_state(Arc::new(auth), authenticate));
    Router::new()
        .route("/healthz", get(healthz))
        .with_state(state)
        .merge(protected)
}

/// rmcp answers a POST whose body is not a JSON-RPC message with 415 and a plain-text reason;
/// JSON-RPC over HTTP expects 400 with the error stdio gives for the same text: -32700 (parse
/// error) when the body is not JSON, -32600 (invalid request) when it is JSON but not a request,
/// each with the request's id when one can be read. A body over [`MAX_LINE_BYTES`] (stdio's
/// line limit) gets 413 with -32600 and is not read further. Other responses pass unchanged.
async fn parse_errors(req: Request, next: Next) -> Response {
    if req.method() != axum::http::Method::POST {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_LINE_BYTES).await else {
        let body = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": -32600, "message": format!("request body over the limit of {MAX_LINE_BYTES} bytes")},
        });
        return (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(body)).into_response();
    };
    let resp = next
        .run(Request::from_parts(
            parts,
            axum::body::Body::from(bytes.clone()),
        ))
        .await;
    if resp.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return resp;
    }
    let (parts, reason_body) = resp.into_parts();
    let reason = axum::body::to_bytes(reason_body, 64 * 1024)
        .await
        .unwrap_or_default();
    let reason = String::from_utf8_lossy(&reason).into_owned();
    if !reason.starts_with("fail to deserialize request body") {
        return Response::from_parts(parts, axum::body::Body::from(reason));
    }
    let text = String::from_utf8_lossy(&bytes);
    let (code, message) = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(_) => (-32600, format!("Invalid request: {reason}")),
        Err(_) => (-32700, format!("Parse error: {reason}")),
    };
    let body = json!({
        "jsonrpc": "2.0",
        "id": crate::stdio::request_id(&text),
        "error": {"code": code, "message": message},
    });
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

async fn authenticate(State(auth): State<Arc<HttpAuth>>, mut req: Request, next: Next) -> Response {
    let access = match auth.as_ref() {
        HttpAuth::Disabled => Access::unrestricted(),
        HttpAuth::Tokens(cfg) => {
            let presented = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| {
                    let (scheme, token) = v.trim().split_once(' ')?;
                    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
                });
            match presented.and_then(|t| cfg.authenticate(t)) {
                Some(a) => a.clone(),
                None => {
                    let why = if presented.is_some() {
                        "unknown bearer token"
                    } else {
                        "missing bearer token"
                    };
                    warn!(why, path = %req.uri().path(), "rejected HTTP request");
                    return unauthorized(why);
                }
            }
        }
    };
    req.extensions_mut().insert(access);
    next.run(req).await
}

/// `{"error": error, "message": message}` with `status`.
fn json_error(status: StatusCode, error: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({ "error": error, "message": message })),
    )
        .into_response()
}

/// A 401 with `WWW-Authenticate`, and `Connection: close`: the request's body was never read, so
/// the server drops the connection after the response, and a client told so does not send its next
/// request down it (the official Python SDK's client did, and got "server disconnected" now and then).
fn unauthorized(why: &str) -> Response {
    let mut resp = json_error(StatusCode::UNAUTHORIZED, "unauthorized", why);
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"hindsight\""),
    );
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

async fn profile(State(state): State<Arc<ServerState>>) -> Response {
    axum::Json(state.profile().to_json()).into_response()
}

/// Resetting is a write: a read-only token gets 403 (any valid token may read the profile; it
/// holds timings only, no memory content).
async fn reset_profile(
    State(state): State<Arc<ServerState>>,
    Extension(access): Extension<Access>,
) -> Response {
    if !access.write {
        warn!(token = %access.name, "refused to reset the search and store profile: read-only token");
        return json_error(
            StatusCode::FORBIDDEN,
            "forbidden",
            "resetting the search and store profile needs a token with write access",
        );
    }
    state.profile().reset();
    StatusCode::NO_CONTENT.into_response()
}

async fn healthz(State(state): State<Arc<ServerState>>) -> Response {
    match state.store().stats().await {
        Ok(s) => axum::Json(json!({
            "status": "ok",
            "backend": state.store().backend_name(),
            "embedder": state.engine().embedder().space().to_string(),
            "query_variant": state.engine().query_variant(),
            "document_variant": state.engine().embedder().variant(),
            "tiles": state.engine().tiles(),
            "memories": s.memories,
            "active": s.active,
            "namespaces": s.namespaces,
            "in_flight": state.in_flight(),
            "version": env!("CARGO_PKG_VERSION"),
            "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        }))
        .into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({ "status": "error", "message": e.message })),
        )
            .into_response(),
    }
}

/// Serves until `shutdown` resolves, then stops accepting, lets in-flight requests finish
/// (at most [`DRAIN_TIMEOUT`]) and flushes the store. `/mcp` answers the `Host` headers of
/// [`AllowedHosts::for_bind`] (`allowed_hosts`, else loopback names on a loopback address and
/// any host on another).
pub async fn serve_http(
    state: Arc<ServerState>,
    listener: TcpListener,
    auth: HttpAuth,
    allowed_hosts: &[String],
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let addr: SocketAddr = listener
        .local_addr()
        .map_err(|e| Error::backend(format!("listener address: {e}")))?;
    let hosts = AllowedHosts::for_bind(&addr, allowed_hosts);
    let app = router(state.clone(), auth, &hosts);
    info!(%addr, ?hosts, "MCP server listening over streamable HTTP");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stop_rx.await;
            })
            .await
    });
    shutdown.await;
    info!("shutdown requested: no new connections; draining in-flight requests");
    let _ = stop_tx.send(());
    match tokio::time::timeout(DRAIN_TIMEOUT, server).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => warn!(error = %e, "HTTP server ended with an error"),
        Ok(Err(e)) => warn!(error = %e, "HTTP server task failed"),
        Err(_) => warn!("HTTP connections still open after the drain timeout"),
    }
    state.drain_and_flush(DRAIN_TIMEOUT).await?;
    Ok(())
}
