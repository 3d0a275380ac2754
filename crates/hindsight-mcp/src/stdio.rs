//! stdio transport: one MCP connection on stdin/stdout with a fixed [`Access`].

use std::future::Future;
use std::sync::Arc;

use hindsight_core::Error;
use rmcp::ServiceExt;
use tracing::info;

use crate::auth::Access;
use crate::http::DRAIN_TIMEOUT;
use crate::server::{HindsightMcp, ServerState};

/// Serves one client on stdin/stdout until it disconnects or `shutdown` resolves; then waits for
/// running calls and flushes the store.
pub async fn serve_stdio(
    state: Arc<ServerState>,
    access: Access,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let handler = HindsightMcp::new(state.clone(), access);
    let running = handler
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Error::backend(format!("MCP stdio handshake failed: {e}")))?;
    info!("MCP server running over stdio");
    let ct = running.cancellation_token();
    tokio::select! {
        r = running.waiting() => {
            info!(reason = ?r, "stdio client disconnected");
        }
        () = shutdown => {
            info!("shutdown requested: draining in-flight calls");
            state.drain_and_flush(DRAIN_TIMEOUT).await?;
            ct.cancel();
            return Ok(());
        }
    }
    state.drain_and_flush(DRAIN_TIMEOUT).await?;
    Ok(())
}
