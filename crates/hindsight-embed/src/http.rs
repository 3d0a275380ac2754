//! A client for OpenAI-compatible `/v1/embeddings` servers (OpenAI, TEI, ollama, vLLM, ...).

use std::fmt;
use std::thread;
use std::time::Duration;

use hindsight_core::{EmbeddingSpace, l2_normalize};
use reqwest::StatusCode;
use reqwest::blocking::{Client, Response};
use serde::{Deserialize, Serialize};

use crate::{EmbedError, Embedder};

/// How to reach an embedding server.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// Base URL such as `http://127.0.0.1:8080/v1`; requests go to `{base_url}/embeddings`. A URL
    /// that already ends in `/embeddings` is used as is.
    pub base_url: String,
    /// The `model` field sent to the server; also the model id of the embedding space.
    pub model: String,
    /// Name of the environment variable holding the API key (sent as a bearer token). `None`
    /// sends no key. The key itself never lives in the config.
    pub api_key_env: Option<String>,
    /// Expected dimension. `None`: learned from one probe request when the embedder is built.
    pub dim: Option<usize>,
    /// Texts per request.
    pub batch_size: usize,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Retries after the first attempt on 429, 5xx, timeouts and connection errors.
    pub max_retries: u32,
    /// First backoff; doubled on every retry up to `max_backoff`. A `Retry-After` header (in
    /// seconds) is honoured up to `max_backoff`.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl HttpConfig {
    /// Defaults: no key, dimension probed, 64 texts per request, 30 s timeout, 4 retries from
    /// 250 ms up to 8 s.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        HttpConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            dim: None,
            batch_size: 64,
            timeout: Duration::from_secs(30),
            max_retries: 4,
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(8),
        }
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        if base.ends_with("/embeddings") {
            base.to_string()
        } else {
            format!("{base}/embeddings")
        }
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .field("dim", &self.dim)
            .field("batch_size", &self.batch_size)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

/// Installs ring as the process's rustls crypto provider, once; a provider the application
/// installed first is kept. reqwest is built without one of its own (the workspace's
/// `rustls-no-provider`, so aws-lc is not compiled beside ring) and panics when it builds a
/// client with none: call this before every `Client::builder()`.
pub fn tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| drop(rustls::crypto::ring::default_provider().install_default()));
}

/// Embeds through an OpenAI-compatible HTTP server. Blocking (reqwest's blocking client): call it
/// from `spawn_blocking`, like every [`Embedder`].
///
/// Every response is checked: one vector per input, each `index` present once (results are put
/// back in input order by `index`, not by position), every vector of the configured dimension.
/// Vectors are re-normalised, since not every server normalises.
pub struct HttpEmbedder {
    config: HttpConfig,
    endpoint: String,
    api_key: Option<String>,
    dim: usize,
    client: Client,
}

impl fmt::Debug for HttpEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEmbedder")
            .field("endpoint", &self.endpoint)
            .field("model", &self.config.model)
            .field("dim", &self.dim)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [&'a str],
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    index: usize,
}

/// Why one attempt failed, and whether another attempt may help.
enum Attempt {
    Retry {
        message: String,
        retry_after: Option<Duration>,
    },
    Fatal(EmbedError),
}

impl HttpEmbedder {
    /// Builds the client. Reads the API key from the named variable (an unset variable is an
    /// error: a configured key is meant to be sent). When `config.dim` is `None`, embeds one probe
    /// text to learn the dimension.
    pub fn new(config: HttpConfig) -> Result<Self, EmbedError> {
        let endpoint = config.endpoint();
        let err = |message: String| EmbedError::Http {
            url: endpoint.clone(),
            message,
        };
        if config.model.trim().is_empty() {
            return Err(err("`model` is empty".into()));
        }
        if config.batch_size == 0 {
            return Err(err("`batch_size` must be at least 1".into()));
        }
        let api_key = match &config.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(k) if !k.is_empty() => Some(k),
                _ => return Err(err(format!("API key variable `{var}` is not set"))),
            },
        };
        tls_provider();
        let client = Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| err(format!("building the HTTP client: {e}")))?;
        let mut embedder = HttpEmbedder {
            dim: config.dim.unwrap_or(0),
            config,
            endpoint: endpoint.clone(),
            api_key,
            client,
        };
        if embedder.config.dim.is_none() {
            let probe = embedder.request_with_retries(&["dimension probe"], None)?;
            embedder.dim = probe.first().map_or(0, Vec::len);
            if embedder.dim == 0 {
                return Err(err("the probe request returned an empty vector".into()));
            }
        }
        Ok(embedder)
    }

    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    fn request_with_retries(
        &self,
        texts: &[&str],
        dim: Option<usize>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut backoff = self.config.initial_backoff;
        let mut attempt = 0u32;
        loop {
            match self.request_once(texts, dim) {
                Ok(v) => return Ok(v),
                Err(Attempt::Fatal(e)) => return Err(e),
                Err(Attempt::Retry {
                    message,
                    retry_after,
                }) => {
                    if attempt >= self.config.max_retries {
                        return Err(EmbedError::Http {
                            url: self.endpoint.clone(),
                            message: format!("{message} (gave up after {} attempts)", attempt + 1),
                        });
                    }
                    let wait = retry_after.unwrap_or(backoff).min(self.config.max_backoff);
                    tracing::warn!(url = %self.endpoint, attempt = attempt + 1, ?wait, "embedding request failed, retrying: {message}");
                    thread::sleep(wait);
                    backoff = (backoff * 2).min(self.config.max_backoff);
                    attempt += 1;
                }
            }
        }
    }

    fn request_once(&self, texts: &[&str], dim: Option<usize>) -> Result<Vec<Vec<f32>>, Attempt> {
        let fatal = |message: String| {
            Attempt::Fatal(EmbedError::Http {
                url: self.endpoint.clone(),
                message,
            })
        };
        let mut req = self.client.post(&self.endpoint).json(&EmbeddingsRequest {
            model: &self.config.model,
            input: texts,
        });
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = match req.send() {
            Ok(r) => r,
            Err(e) if e.is_timeout() || e.is_connect() || e.is_request() => {
                return Err(Attempt::Retry {
                    message: format!("request failed: {e}"),
                    retry_after: None,
                });
            }
            Err(e) => return Err(fatal(format!("request failed: {e}"))),
        };
        let status = resp.status();
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            let retry_after = retry_after(&resp);
            let body = body_snippet(resp);
            return Err(Attempt::Retry {
                message: format!("server answered {status}: {body}"),
                retry_after,
            });
        }
        if !status.is_success() {
            return Err(fatal(format!(
                "server answered {status}: {}",
                body_snippet(resp)
            )));
        }
        let body = match resp.text() {
            Ok(b) => b,
            Err(e) if e.is_timeout() => {
                return Err(Attempt::Retry {
                    message: format!("reading the response: {e}"),
                    retry_after: None,
                });
            }
            Err(e) => return Err(fatal(format!("reading the response: {e}"))),
        };
        let parsed: EmbeddingsResponse = serde_json::from_str(&body).map_err(|e| {
            fatal(format!(
                "response is not an embeddings object ({e}): {}",
                snippet(&body)
            ))
        })?;
        self.check(texts.len(), parsed, dim).map_err(Attempt::Fatal)
    }

    /// Orders the vectors by `index`, checks count and dimensions, re-normalises.
    fn check(
        &self,
        n: usize,
        resp: EmbeddingsResponse,
        dim: Option<usize>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let err = |message: String| EmbedError::Http {
            url: self.endpoint.clone(),
            message,
        };
        if resp.data.len() != n {
            return Err(err(format!(
                "sent {n} texts, got {} embeddings",
                resp.data.len()
            )));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
        for item in resp.data {
            let slot = out.get_mut(item.index).ok_or_else(|| {
                err(format!(
                    "embedding index {} out of range for {n} texts",
                    item.index
                ))
            })?;
            if slot.is_some() {
                return Err(err(format!("embedding index {} appears twice", item.index)));
            }
            if let Some(d) = dim
                && item.embedding.len() != d
            {
                return Err(EmbedError::Dimension {
                    expected: d,
                    got: item.embedding.len(),
                    context: format!(
                        "{} model `{}` (index {})",
                        self.endpoint, self.config.model, item.index
                    ),
                });
            }
            if item.embedding.iter().any(|x| !x.is_finite()) {
                return Err(err(format!(
                    "embedding {} has non-finite values",
                    item.index
                )));
            }
            let mut v = item.embedding;
            l2_normalize(&mut v);
            *slot = Some(v);
        }
        // n items, n distinct in-range indices: every slot is filled.
        Ok(out.into_iter().flatten().collect())
    }
}

fn retry_after(resp: &Response) -> Option<Duration> {
    let v = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?;
    v.trim().parse::<u64>().ok().map(Duration::from_secs)
}

fn body_snippet(resp: Response) -> String {
    snippet(&resp.text().unwrap_or_default())
}

fn snippet(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

impl Embedder for HttpEmbedder {
    fn space(&self) -> EmbeddingSpace {
        EmbeddingSpace {
            model: self.config.model.clone(),
            dim: self.dim,
        }
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.config.batch_size) {
            out.extend(self.request_with_retries(chunk, Some(self.dim))?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_provider_installs_ring_once_so_reqwest_can_build_an_https_client() {
        tls_provider();
        tls_provider();
        let provider = rustls::crypto::CryptoProvider::get_default().expect("a provider");
        let ring = rustls::crypto::ring::default_provider();
        assert_eq!(
            provider.cipher_suites.len(),
            ring.cipher_suites.len(),
            "the installed provider is ring's"
        );
        Client::builder()
            .https_only(true)
            .build()
            .expect("a TLS client builds");
    }
}
