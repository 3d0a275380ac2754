//! stdio transport: one MCP connection on stdin/stdout with a fixed [`Access`].

use std::future::Future;
use std::sync::Arc;

use hindsight_core::Error;
use rmcp::ServiceExt;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tracing::{info, warn};

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
    let (rx, tx) = screen_json_lines(tokio::io::stdin(), tokio::io::stdout());
    let running = handler
        .serve((rx, tx))
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

/// Room for one message in flight between the screen and rmcp.
const PIPE_BYTES: usize = 1 << 20;

/// Puts a screen between the client's byte streams and rmcp: a line that is not JSON (or not
/// UTF-8, or holds a lone surrogate escape) is answered here with JSON-RPC's -32700 parse error,
/// carrying the request's id when one can be read from the raw text, instead of being dropped
/// by rmcp, which would leave a client waiting for that id forever. Every other line goes to
/// rmcp unchanged, and one writer task owns `output`, so answers never interleave. Returns the
/// streams rmcp reads and writes.
pub fn screen_json_lines<R, W>(input: R, output: W) -> (DuplexStream, DuplexStream)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (rmcp_in, mut feed) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_out, answers) = tokio::io::duplex(PIPE_BYTES);
    let (errors_tx, mut errors_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        let mut reader = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    warn!(error = %e, "reading the stdio client failed");
                    break;
                }
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<serde_json::Value>(&line) {
                Ok(_) => {
                    if !line.ends_with(b"\n") {
                        line.push(b'\n');
                    }
                    if feed.write_all(&line).await.is_err() {
                        break; // rmcp has stopped
                    }
                }
                Err(e) => {
                    warn!(error = %e, "stdio client sent a line that is not JSON");
                    let _ = errors_tx.send(parse_error(&line, &e));
                }
            }
        }
        // Dropping `feed` ends rmcp's input: the client is gone.
    });
    tokio::spawn(async move {
        let mut output = output;
        let mut answers = BufReader::new(answers);
        let mut line = Vec::new();
        let mut answers_open = true;
        loop {
            tokio::select! {
                read = answers.read_until(b'\n', &mut line), if answers_open => {
                    match read {
                        Ok(0) | Err(_) => answers_open = false,
                        Ok(_) => {
                            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                                break;
                            }
                            line.clear();
                        }
                    }
                }
                error = errors_rx.recv() => {
                    let Some(error) = error else {
                        if answers_open { continue } else { break }
                    };
                    if output.write_all(&error).await.is_err() || output.flush().await.is_err() {
                        break;
                    }
                }
                else => break,
            }
        }
    });
    (rmcp_in, rmcp_out)
}

/// A JSON-RPC parse-error response (one line) for `raw`, with its id when one is readable.
fn parse_error(raw: &[u8], e: &serde_json::Error) -> Vec<u8> {
    let text = String::from_utf8_lossy(raw);
    let response = serde_json::json!({
        "jsonrpc": "2.0",
        "id": request_id(&text),
        "error": {"code": -32700, "message": format!("Parse error: {e}")},
    });
    let mut out = response.to_string().into_bytes();
    out.push(b'\n');
    out
}

/// The `"id"` of a request that did not parse, read leniently: a number or a plain string.
fn request_id(text: &str) -> serde_json::Value {
    let Some(at) = text.find("\"id\"") else {
        return serde_json::Value::Null;
    };
    let rest = text[at + 4..].trim_start();
    let Some(rest) = rest.strip_prefix(':') else {
        return serde_json::Value::Null;
    };
    let rest = rest.trim_start();
    if let Some(s) = rest.strip_prefix('"') {
        return s
            .split_once('"')
            .filter(|(v, _)| !v.contains('\\'))
            .map_or(serde_json::Value::Null, |(v, _)| v.into());
    }
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits
        .parse::<i64>()
        .map_or(serde_json::Value::Null, serde_json::Value::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[test]
    fn ids_are_read_from_broken_requests() {
        assert_eq!(request_id(r#"{"jsonrpc":"2.0","id":2,"x":"\ud800"}"#), 2);
        assert_eq!(request_id(r#"{"id": "a-1", "method": }"#), "a-1");
        assert_eq!(request_id("not json at all"), serde_json::Value::Null);
    }

    #[tokio::test]
    async fn broken_lines_are_answered_and_good_ones_pass_through() {
        let (client_in, mut client_feed) = tokio::io::duplex(4096);
        let (client_out, mut client_read) = tokio::io::duplex(4096);
        let (mut rmcp_in, mut rmcp_out) = screen_json_lines(client_in, client_out);
        client_feed
            .write_all(b"not json\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\",\"params\":{\"s\":\"\\ud800\"}}\n\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n")
            .await
            .expect("write");
        // The good line reaches rmcp's side unchanged.
        let mut buf = vec![0u8; 256];
        let n = rmcp_in.read(&mut buf).await.expect("read");
        assert_eq!(
            &buf[..n],
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n"
        );
        // rmcp's answers and the two parse errors reach the client as whole lines.
        rmcp_out
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n")
            .await
            .expect("write");
        drop(client_feed);
        drop(rmcp_out);
        let mut all = String::new();
        client_read.read_to_string(&mut all).await.expect("read");
        let lines: Vec<serde_json::Value> = all
            .lines()
            .map(|l| serde_json::from_str(l).expect("each answer is one JSON line"))
            .collect();
        assert_eq!(lines.len(), 3, "{all}");
        let errors: Vec<&serde_json::Value> = lines
            .iter()
            .filter(|v| v["error"]["code"] == -32700)
            .collect();
        assert_eq!(errors.len(), 2, "{all}");
        assert!(errors.iter().any(|v| v["id"] == 2));
        assert!(errors.iter().any(|v| v["id"].is_null()));
        assert!(
            lines
                .iter()
                .any(|v| v["id"] == 3 && v["result"].is_object())
        );
    }
}
