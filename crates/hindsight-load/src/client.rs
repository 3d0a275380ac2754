//! A minimal MCP client over streamable HTTP: JSON-RPC `tools/call` POSTs to `/mcp`.
//!
//! It sends `initialize` once (plus `notifications/initialized`), keeps an `Mcp-Session-Id` if
//! the server hands one out, and reads either an `application/json` body or a
//! `text/event-stream` body (the `data:` line carrying the response to our request id).
//! Only loopback hosts are accepted, and redirects are not followed (one could leave loopback).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hindsight_report::{LoadLevel, ServerProfile, StageStats};
use serde_json::{Value, json};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("refusing to load-test {0}: only 127.0.0.0/8, localhost and [::1] are allowed")]
    NotLoopback(String),
    #[error("bad URL {url}: {message}")]
    BadUrl { url: String, message: String },
    #[error("transport: {0}")]
    Transport(String),
    #[error("HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("JSON-RPC error {code}: {message}")]
    Rpc { code: i64, message: String },
    #[error("tool error: {0}")]
    Tool(String),
    #[error("malformed response: {0}")]
    Malformed(String),
}

impl CallError {
    /// A short stable label for error counting ("http-503", "rpc--32602", "transport", ...).
    pub fn label(&self) -> String {
        match self {
            CallError::NotLoopback(_) | CallError::BadUrl { .. } => "config".into(),
            CallError::Transport(_) => "transport".into(),
            CallError::Http { status, .. } => format!("http-{status}"),
            CallError::Rpc { code, .. } => format!("rpc-{code}"),
            CallError::Tool(_) => "tool".into(),
            CallError::Malformed(_) => "malformed".into(),
        }
    }
}

/// Checks that `url` points at a loopback address.
pub fn check_loopback(url: &str) -> Result<reqwest::Url, CallError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| CallError::BadUrl {
        url: url.to_owned(),
        message: e.to_string(),
    })?;
    let host = parsed.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let ok = host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if ok {
        Ok(parsed)
    } else {
        Err(CallError::NotLoopback(url.to_owned()))
    }
}

/// One MCP session over streamable HTTP (cheap to share: the HTTP client pools connections).
#[derive(Debug)]
pub struct McpClient {
    http: reqwest::Client,
    url: reqwest::Url,
    token: Option<String>,
    session: Option<String>,
    next_id: AtomicU64,
}

impl McpClient {
    /// Connects and initialises. `timeout` bounds every request.
    pub async fn connect(
        url: &str,
        token: Option<String>,
        timeout: Duration,
    ) -> Result<Self, CallError> {
        let url = check_loopback(url)?;
        hindsight_embed::tls_provider();
        // No redirects: a server's `Location` could send the load (and the token) off loopback.
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(256)
            .build()
            .map_err(|e| CallError::Transport(e.to_string()))?;
        let mut client = McpClient {
            http,
            url,
            token,
            session: None,
            next_id: AtomicU64::new(1),
        };
        let init = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "hindsight-load", "version": env!("CARGO_PKG_VERSION")},
        });
        let (result, session) = client.rpc("initialize", init).await?;
        if result.get("serverInfo").is_none() && result.get("protocolVersion").is_none() {
            return Err(CallError::Malformed(format!(
                "initialize result without serverInfo: {result}"
            )));
        }
        client.session = session;
        client.notify("notifications/initialized").await?;
        Ok(client)
    }

    /// `req` with the bearer token, when there is one.
    fn authed(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    fn request(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .post(self.url.clone())
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .json(body);
        req = self.authed(req);
        if let Some(s) = &self.session {
            req = req.header("Mcp-Session-Id", s);
        }
        req
    }

    async fn notify(&self, method: &str) -> Result<(), CallError> {
        let body = json!({"jsonrpc": "2.0", "method": method});
        let resp = self
            .request(&body)
            .send()
            .await
            .map_err(|e| CallError::Transport(e.to_string()))?;
        let status = resp.status();
        if !status.is_success() {
            let body = resp.text().await.unwrap_or_default();
            return Err(CallError::Http {
                status: status.as_u16(),
                body,
            });
        }
        Ok(())
    }

    /// One JSON-RPC request; returns its `result` and any session id the server set.
    async fn rpc(&self, method: &str, params: Value) -> Result<(Value, Option<String>), CallError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let resp = self
            .request(&body)
            .send()
            .await
            .map_err(|e| CallError::Transport(e.to_string()))?;
        let status = resp.status();
        let session = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        let text = resp
            .text()
            .await
            .map_err(|e| CallError::Transport(e.to_string()))?;
        if !status.is_success() {
            return Err(CallError::Http {
                status: status.as_u16(),
                body: text.chars().take(300).collect(),
            });
        }
        let message = if is_sse {
            sse_response(&text, id)?
        } else {
            serde_json::from_str::<Value>(&text)
                .map_err(|e| CallError::Malformed(format!("{e}: {}", truncate(&text))))?
        };
        if let Some(err) = message.get("error") {
            return Err(CallError::Rpc {
                code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
        let result = message
            .get("result")
            .cloned()
            .ok_or_else(|| CallError::Malformed(format!("no result: {}", truncate(&text))))?;
        Ok((result, session))
    }

    /// Calls a tool and returns its structured result (or the JSON in its first text block).
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, CallError> {
        let (result, _) = self
            .rpc("tools/call", json!({"name": name, "arguments": arguments}))
            .await?;
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return Err(CallError::Tool(truncate(&result.to_string())));
        }
        if let Some(s) = result.get("structuredContent") {
            return Ok(s.clone());
        }
        let text = result
            .pointer("/content/0/text")
            .and_then(Value::as_str)
            .unwrap_or("null");
        Ok(serde_json::from_str(text).unwrap_or(Value::String(text.to_owned())))
    }
}

impl McpClient {
    /// `/debug/profile` next to the MCP endpoint.
    fn profile_url(&self) -> Option<reqwest::Url> {
        self.url.join("/debug/profile").ok()
    }

    /// Resets the server's search profile; false when the server has none (or refused).
    pub async fn reset_server_profile(&self) -> bool {
        let Some(url) = self.profile_url() else {
            return false;
        };
        self.authed(self.http.delete(url))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    }

    /// Runs one load level with the server's search profile reset before it and attached after
    /// (left out when the server has no profile endpoint or refused the reset).
    pub async fn profiled(&self, level: impl Future<Output = LoadLevel>) -> LoadLevel {
        let reset = self.reset_server_profile().await;
        let mut level = level.await;
        if reset {
            level.server = self.server_profile().await;
        }
        level
    }

    /// The server's search profile since the last reset (`None` when it offers none).
    pub async fn server_profile(&self) -> Option<ServerProfile> {
        let resp = self
            .authed(self.http.get(self.profile_url()?))
            .send()
            .await
            .ok()?;
        if !resp.status().is_success() {
            return None;
        }
        parse_profile(&resp.json::<Value>().await.ok()?)
    }
}

/// Converts the server's profile JSON (its wire format) into the report type.
fn parse_profile(v: &Value) -> Option<ServerProfile> {
    let stores = v.get("stores");
    Some(ServerProfile {
        searches: v.get("searches")?.as_u64()?,
        cached_embeddings: v
            .get("cached_embeddings")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        stages: parse_stages(v.get("stages")?)?,
        // Servers from before store profiling send no `stores`.
        stores: stores
            .and_then(|s| s.get("count"))
            .and_then(Value::as_u64)
            .unwrap_or(0),
        store_stages: stores
            .and_then(|s| s.get("stages"))
            .and_then(parse_stages)
            .unwrap_or_default(),
    })
}

/// A profile's stage list; stages without a name are dropped.
fn parse_stages(v: &Value) -> Option<Vec<StageStats>> {
    let num = |s: &Value, key: &str| s.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    Some(
        v.as_array()?
            .iter()
            .filter_map(|s| {
                Some(StageStats {
                    stage: s.get("stage")?.as_str()?.to_owned(),
                    count: s.get("count").and_then(Value::as_u64).unwrap_or(0),
                    mean_ms: num(s, "mean_ms"),
                    p50_ms: num(s, "p50_ms"),
                    p95_ms: num(s, "p95_ms"),
                    p99_ms: num(s, "p99_ms"),
                    max_ms: num(s, "max_ms"),
                })
            })
            .collect(),
    )
}

fn truncate(s: &str) -> String {
    s.chars().take(300).collect()
}

/// The JSON-RPC message with `id` among the `data:` events of an SSE body.
fn sse_response(body: &str, id: u64) -> Result<Value, CallError> {
    let mut data = String::new();
    let mut found = None;
    let mut flush = |data: &mut String| {
        if !data.is_empty() {
            if let Ok(v) = serde_json::from_str::<Value>(data)
                && v.get("id").and_then(Value::as_u64) == Some(id)
            {
                found = Some(v);
            }
            data.clear();
        }
    };
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        } else if line.is_empty() {
            flush(&mut data);
        }
    }
    flush(&mut data);
    found.ok_or_else(|| {
        CallError::Malformed(format!("no SSE event for id {id}: {}", truncate(body)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_json_converts_to_the_report_type() {
        let v = json!({"searches": 3, "cached_embeddings": 1, "stages": [
            {"stage": "embedding", "count": 3, "mean_ms": 5.5, "p50_ms": 5.0, "p95_ms": 7.0, "p99_ms": 8.0, "max_ms": 9.0},
            {"stage": "broken"},
            {"mean_ms": 1.0}
        ]});
        let p = parse_profile(&v).expect("profile");
        assert_eq!((p.searches, p.cached_embeddings), (3, 1));
        assert_eq!(p.stages.len(), 2, "a stage without a name is dropped");
        assert_eq!(p.stages[0].stage, "embedding");
        assert_eq!(p.stages[0].p95_ms, 7.0);
        assert_eq!(p.stages[0].count, 3);
        assert_eq!(p.stages[1].p50_ms, 0.0);
        assert_eq!((p.stores, p.store_stages.len()), (0, 0), "no stores sent");
        let with_stores = json!({"searches": 0, "stages": [], "stores": {"count": 4, "stages": [
            {"stage": "publish", "count": 4, "mean_ms": 9.0, "p50_ms": 8.0, "p95_ms": 12.0, "p99_ms": 13.0, "max_ms": 14.0},
        ]}});
        let p = parse_profile(&with_stores).expect("profile");
        assert_eq!(p.stores, 4);
        assert_eq!(p.store_stages[0].stage, "publish");
        assert_eq!(p.store_stages[0].p50_ms, 8.0);
        assert!(parse_profile(&json!({"error": "unauthorized"})).is_none());
    }

    #[test]
    fn only_loopback_is_accepted() {
        for ok in [
            "http://127.0.0.1:8080/mcp",
            "http://127.1.2.3/mcp",
            "http://localhost:1/mcp",
            "http://[::1]:9/mcp",
        ] {
            assert!(check_loopback(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://10.0.0.1/mcp",
            "http://192.168.1.2:80/mcp",
            "http://example.com/mcp",
            "http://8.8.8.8/mcp",
        ] {
            assert!(
                matches!(check_loopback(bad), Err(CallError::NotLoopback(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            check_loopback("not a url"),
            Err(CallError::BadUrl { .. })
        ));
    }

    #[test]
    fn sse_body_yields_the_matching_response() {
        let body = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                    event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\n\n";
        let v = sse_response(body, 7).expect("found");
        assert_eq!(v["result"]["ok"], json!(true));
        assert!(sse_response(body, 8).is_err());
    }

    /// A redirect is not followed: the client gets the 307 as an HTTP error and the redirect's
    /// target sees no request (with reqwest's default policy it got the POST, token and all).
    /// Both servers are on 127.0.0.1; the target stands for any host off loopback.
    #[tokio::test]
    async fn redirects_are_not_followed() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicUsize;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let target = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let target_addr = target.local_addr().expect("addr");
        let reached = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&reached);
        let target_task = tokio::spawn(async move {
            while let Ok((_sock, _)) = target.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        });
        let redirector = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/mcp", redirector.local_addr().expect("addr"));
        let redirect_task = tokio::spawn(async move {
            while let Ok((mut sock, _)) = redirector.accept().await {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let answer = format!(
                    "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://{target_addr}/mcp\r\n\
                     Content-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = sock.write_all(answer.as_bytes()).await;
            }
        });
        let result = McpClient::connect(&url, Some("secret".into()), Duration::from_secs(5)).await;
        assert!(
            matches!(result, Err(CallError::Http { status: 307, .. })),
            "{result:?}"
        );
        assert_eq!(
            crate::health(&url).await,
            None,
            "healthz redirected: not followed"
        );
        assert_eq!(
            reached.load(Ordering::SeqCst),
            0,
            "the redirect was followed"
        );
        target_task.abort();
        redirect_task.abort();
    }
}
