//! An OpenAI-compatible chat client (`POST {base_url}/chat/completions`), blocking.
//!
//! Async callers run it on a blocking thread. Temperature defaults to 0.1 so reflection is close
//! to deterministic; every request has a timeout.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::ReflectError;

/// Where the model lives. The API key is a value, not an environment variable name: the binary
/// decides where secrets come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// e.g. `http://127.0.0.1:8000/v1` (the client appends `/chat/completions`).
    pub base_url: String,
    pub model: String,
    #[serde(skip_serializing)]
    pub api_key: Option<String>,
    pub temperature: f32,
    pub timeout_secs: u64,
    pub max_tokens: u32,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            base_url: String::new(),
            model: String::new(),
            api_key: None,
            temperature: 0.1,
            timeout_secs: 30,
            max_tokens: 512,
        }
    }
}

/// Installs ring as the process's rustls crypto provider, once; a provider the application
/// installed first is kept. reqwest is built without one of its own (the workspace's
/// `rustls-no-provider`, so aws-lc is not compiled beside ring) and panics when it builds a
/// client with none: call this before every `Client::builder()` (the twin of
/// `hindsight_embed::tls_provider`; this crate does not depend on that one).
fn tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| drop(rustls::crypto::ring::default_provider().install_default()));
}

/// A blocking chat-completions client.
#[derive(Debug, Clone)]
pub struct ChatClient {
    config: LlmConfig,
    url: String,
    http: reqwest::blocking::Client,
}

impl ChatClient {
    pub fn new(config: LlmConfig) -> Result<Self, ReflectError> {
        if config.base_url.trim().is_empty() {
            return Err(ReflectError::Config("`base_url` must not be empty".into()));
        }
        if config.model.trim().is_empty() {
            return Err(ReflectError::Config("`model` must not be empty".into()));
        }
        let timeout = Duration::from_secs(config.timeout_secs.max(1));
        tls_provider();
        let http = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| ReflectError::Config(format!("building the HTTP client: {e}")))?;
        let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        Ok(ChatClient { config, url, http })
    }

    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// One system + user exchange; returns the assistant's text.
    pub fn chat(&self, system: &str, user: &str) -> Result<String, ReflectError> {
        let body = json!({
            "model": self.config.model,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
        });
        let mut req = self.http.post(&self.url).json(&body);
        if let Some(key) = &self.config.api_key {
            req = req.bearer_auth(key);
        }
        let http_err = |e: reqwest::Error| ReflectError::Http {
            url: self.url.clone(),
            message: e.to_string(),
        };
        let resp = req.send().map_err(http_err)?;
        let status = resp.status();
        let text = resp.text().map_err(http_err)?;
        if !status.is_success() {
            return Err(ReflectError::Status {
                url: self.url.clone(),
                status: status.as_u16(),
                body: text.chars().take(300).collect(),
            });
        }
        let v: Value = serde_json::from_str(&text).map_err(|e| {
            ReflectError::BadOutput(format!("response is not JSON ({e}): {}", head(&text)))
        })?;
        v.pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                ReflectError::BadOutput(format!(
                    "no choices[0].message.content in response: {}",
                    head(&text)
                ))
            })
    }
}

fn head(s: &str) -> String {
    s.chars().take(200).collect()
}
