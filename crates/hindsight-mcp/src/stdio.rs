//! stdio transport: one MCP connection on stdin/stdout with a fixed [`Access`].

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hindsight_core::Error;
use rmcp::ServiceExt;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
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
    let closing = Arc::new(AtomicBool::new(false));
    let (rx, tx, writer) =
        screen_json_lines(tokio::io::stdin(), tokio::io::stdout(), closing.clone());
    let running = handler
        .serve((rx, tx))
        .await
        .map_err(|e| Error::backend(format!("MCP stdio handshake failed: {e}")))?;
    info!("MCP server running over stdio");
    let ct = running.cancellation_token();
    let stop = tokio::select! {
        r = running.waiting() => {
            info!(reason = ?r, "stdio client disconnected");
            false
        }
        () = shutdown => {
            info!("shutdown requested: no new calls; draining in-flight calls");
            closing.store(true, Ordering::Release);
            true
        }
    };
    state.drain_and_flush(DRAIN_TIMEOUT).await?;
    if stop {
        ct.cancel();
    }
    // Answers rmcp has written are still on their way to stdout: let the writer finish them.
    if tokio::time::timeout(DRAIN_TIMEOUT, writer).await.is_err() {
        warn!("stdout writer still busy after the drain timeout");
    }
    Ok(())
}

/// Room for one message in flight between the screen and rmcp.
const PIPE_BYTES: usize = 1 << 20;

/// Longest line accepted from the client (rmcp's own limit for one message).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Reads one line (through its `\n`) into `line`, keeping at most `max` bytes: the rest of a
/// longer line is read and dropped. Returns the bytes read (0 at the end of input) and whether
/// the line was cut. `hindsight ingest` reads its JSONL with it too, so one huge line costs at
/// most `max` bytes of memory.
pub async fn read_capped_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<(usize, bool)> {
    let (mut total, mut cut) = (0usize, false);
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok((total, cut));
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let n = chunk.len();
        let room = max.saturating_sub(line.len());
        if chunk.len() > room {
            cut = true;
        }
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        reader.consume(n);
        total += n;
        if done {
            return Ok((total, cut));
        }
    }
}

/// Puts a screen between the client's byte streams and rmcp: a line that is not JSON (or not
/// UTF-8, or holds a lone surrogate escape) is answered here with JSON-RPC's -32700 parse error,
/// carrying the request's id when one can be read from the raw text, instead of being dropped
/// by rmcp, which would leave a client waiting for that id forever. Every other line goes to
/// rmcp unchanged, and one writer task owns `output`, so answers never interleave. Returns the
/// streams rmcp reads and writes.
/// The third value is the writer task: await it after rmcp stops so its last answers reach
/// `output`. Once `closing` is set (shutdown), a request is answered with -32000 ("shutting
/// down") instead of reaching rmcp; notifications and responses still pass, and calls already
/// running finish.
pub fn screen_json_lines<R, W>(
    input: R,
    output: W,
    closing: Arc<AtomicBool>,
) -> (DuplexStream, DuplexStream, tokio::task::JoinHandle<()>)
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
            match read_capped_line(&mut reader, &mut line, MAX_LINE_BYTES).await {
                Ok((0, _)) => break,
                Ok((_, false)) => {}
                Ok((n, true)) => {
                    warn!(bytes = n, "stdio client sent a line over the size limit");
                    let _ = errors_tx.send(error_line(
                        &line,
                        -32600,
                        &format!("request of {n} bytes is over the limit of {MAX_LINE_BYTES}"),
                    ));
                    continue;
                }
                Err(e) => {
                    warn!(error = %e, "reading the stdio client failed");
                    break;
                }
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<serde_json::Value>(&line) {
                Ok(v)
                    if closing.load(Ordering::Acquire)
                        && v.get("method").is_some()
                        && v.get("id").is_some() =>
                {
                    let _ = errors_tx.send(error_line(
                        &line,
                        -32000,
                        "the server is shutting down and takes no new calls",
                    ));
                }
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
                    let _ = errors_tx.send(error_line(&line, -32700, &format!("Parse error: {e}")));
                }
            }
        }
        // Dropping `feed` ends rmcp's input: the client is gone.
    });
    let writer = tokio::spawn(async move {
        let mut output = output;
        let mut answers = BufReader::new(answers);
        let mut line = Vec::new();
        let (mut answers_open, mut errors_open) = (true, true);
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
                error = errors_rx.recv(), if errors_open => {
                    match error {
                        Some(error) => {
                            if output.write_all(&error).await.is_err() || output.flush().await.is_err() {
                                break;
                            }
                        }
                        None => errors_open = false,
                    }
                }
                else => break,
            }
            if !answers_open {
                // rmcp has stopped (the reader may still sit in a read of stdin): write the
                // parse errors already queued, then stop.
                while let Ok(error) = errors_rx.try_recv() {
                    if output.write_all(&error).await.is_err() {
                        break;
                    }
                }
                let _ = output.flush().await;
                break;
            }
        }
    });
    (rmcp_in, rmcp_out, writer)
}

/// A JSON-RPC error response (one line) to the request `raw`, with its id when one is readable.
fn error_line(raw: &[u8], code: i64, message: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(raw);
    let response = serde_json::json!({
        "jsonrpc": "2.0",
        "id": request_id(&text),
        "error": {"code": code, "message": message},
    });
    let mut out = response.to_string().into_bytes();
    out.push(b'\n');
    out
}

/// The `"id"` of a request that did not parse, read leniently: a number or a plain string.
pub(crate) fn request_id(text: &str) -> serde_json::Value {
    // Most broken requests are whole JSON but for a surrogate escape serde_json refuses: with
    // those replaced the request parses, and its own top-level id is known for sure.
    if let Ok(serde_json::Value::Object(v)) = serde_json::from_str(&without_surrogates(text)) {
        return v.get("id").cloned().unwrap_or(serde_json::Value::Null);
    }
    // Otherwise the first `"id"` in the text, read leniently.
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

/// `text` with every `\\uD800`-`\\uDFFF` escape replaced by `\\uFFFD`.
fn without_surrogates(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let surrogate = bytes[i] == b'\\'
            && bytes.get(i + 1) == Some(&b'u')
            && bytes
                .get(i + 2)
                .is_some_and(|b| b.eq_ignore_ascii_case(&b'd'))
            && bytes
                .get(i + 3)
                .is_some_and(|b| matches!(b.to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'f'))
            && bytes.get(i + 4).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 5).is_some_and(u8::is_ascii_hexdigit);
        if surrogate {
            out.push_str("\\ufffd");
            i += 6;
        } else {
            let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
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
        // The request's own id, not one inside its params.
        assert_eq!(
            request_id(r#"{"jsonrpc":"2.0","params":{"id":9,"s":"\ud800"},"id":4}"#),
            4
        );
    }

    #[tokio::test]
    async fn an_overlong_line_is_cut_and_the_next_is_read_whole() {
        let data = b"aaaaaaaaaaaaaaaaaaaa\nbb\n".to_vec();
        let mut reader = BufReader::with_capacity(4, &data[..]);
        let mut line = Vec::new();
        let (n, cut) = read_capped_line(&mut reader, &mut line, 8)
            .await
            .expect("read");
        assert_eq!((n, cut, line.len()), (21, true, 8));
        line.clear();
        let (n, cut) = read_capped_line(&mut reader, &mut line, 8)
            .await
            .expect("read");
        assert_eq!((n, cut, line.as_slice()), (3, false, &b"bb\n"[..]));
        line.clear();
        assert_eq!(
            read_capped_line(&mut reader, &mut line, 8)
                .await
                .expect("eof"),
            (0, false)
        );
    }

    #[tokio::test]
    async fn broken_lines_are_answered_and_good_ones_pass_through() {
        let (client_in, mut client_feed) = tokio::io::duplex(4096);
        let (client_out, mut client_read) = tokio::io::duplex(4096);
        let (mut rmcp_in, mut rmcp_out, _writer) =
            screen_json_lines(client_in, client_out, Arc::default());
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

    #[tokio::test]
    async fn once_closing_requests_are_refused_and_the_rest_pass() {
        let (client_in, mut client_feed) = tokio::io::duplex(4096);
        let (client_out, mut client_read) = tokio::io::duplex(4096);
        let closing = Arc::new(AtomicBool::new(false));
        let (mut rmcp_in, rmcp_out, _writer) =
            screen_json_lines(client_in, client_out, closing.clone());
        closing.store(true, Ordering::Release);
        client_feed
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n")
            .await
            .expect("write");
        // The notification reaches rmcp; the request does not.
        let mut buf = vec![0u8; 256];
        let n = rmcp_in.read(&mut buf).await.expect("read");
        let forwarded = String::from_utf8_lossy(&buf[..n]).into_owned();
        assert!(forwarded.contains("notifications/cancelled"), "{forwarded}");
        assert!(!forwarded.contains("tools/list"), "{forwarded}");
        drop(client_feed);
        drop(rmcp_out);
        let mut all = String::new();
        client_read.read_to_string(&mut all).await.expect("read");
        let v: serde_json::Value = serde_json::from_str(all.trim()).expect("one answer");
        assert_eq!(
            (&v["id"], &v["error"]["code"]),
            (&serde_json::json!(7), &serde_json::json!(-32000)),
            "{all}"
        );
    }
}
