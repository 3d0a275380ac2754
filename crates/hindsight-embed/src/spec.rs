//! Choosing an embedder from a short string (`minilm`, `hash:384`, `http://...`).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::{
    EmbedError, Embedder, HashEmbedder, HttpConfig, HttpEmbedder, MiniLmEmbedder, Precision,
    default_home, model_dir,
};

/// Largest dimension of the test-only hash embedder: a vector of it per text is 256 KiB, and
/// a larger one is a typo, not a test.
pub const MAX_HASH_DIM: usize = 65_536;

/// Which embedder to build.
///
/// String forms (see [`FromStr`]):
/// - `minilm` — all-MiniLM-L6-v2 from the default home ([`default_home`]);
///   `minilm:/path/to/dir` — from that directory;
/// - `hash` or `hash:<dim>` — the test-only hash embedder (default 384 dimensions);
/// - `http://host:port/v1?model=bge-m3` (or `https://`) — an OpenAI-compatible server, with
///   optional query parameters `dim`, `key_env` (name of the API key variable), `batch`,
///   `timeout_secs` and `retries`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmbedderSpec {
    MiniLm { dir: Option<PathBuf> },
    Http(HttpConfig),
    Hash { dim: usize },
}

impl Default for EmbedderSpec {
    fn default() -> Self {
        EmbedderSpec::MiniLm { dir: None }
    }
}

impl FromStr for EmbedderSpec {
    type Err = EmbedError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let spec = s.trim();
        let lower = spec.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            return parse_http(spec);
        }
        let (kind, arg) = match spec.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (spec, None),
        };
        match (kind.to_ascii_lowercase().as_str(), arg) {
            ("minilm", None) => Ok(EmbedderSpec::MiniLm { dir: None }),
            ("minilm", Some(dir)) if !dir.is_empty() => Ok(EmbedderSpec::MiniLm {
                dir: Some(PathBuf::from(dir)),
            }),
            ("minilm", Some(_)) => Err(EmbedError::spec(spec, "empty directory after `minilm:`")),
            ("hash", None) => Ok(EmbedderSpec::Hash { dim: 384 }),
            ("hash", Some(d)) => match d.parse::<usize>() {
                Ok(dim) if (1..=MAX_HASH_DIM).contains(&dim) => Ok(EmbedderSpec::Hash { dim }),
                _ => Err(EmbedError::spec(
                    spec,
                    format!("`{d}` is not a positive dimension of at most {MAX_HASH_DIM}"),
                )),
            },
            _ => Err(EmbedError::spec(
                spec,
                "expected `minilm`, `minilm:DIR`, `hash`, `hash:DIM` or an http(s):// URL",
            )),
        }
    }
}

fn parse_http(spec: &str) -> Result<EmbedderSpec, EmbedError> {
    let url =
        reqwest::Url::parse(spec).map_err(|e| EmbedError::spec(spec, format!("bad URL: {e}")))?;
    let mut model = None;
    let mut config = HttpConfig::new(String::new(), String::new());
    for (key, value) in url.query_pairs() {
        let bad = |what: &str| EmbedError::spec(spec, format!("query parameter `{key}`: {what}"));
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| bad(&format!("`{value}` is not a number")))
        };
        match key.as_ref() {
            "model" => model = Some(value.to_string()),
            "dim" => config.dim = Some(usize::try_from(number()?).map_err(|_| bad("too large"))?),
            "key_env" | "api_key_env" => config.api_key_env = Some(value.to_string()),
            "batch" => {
                config.batch_size = usize::try_from(number()?).map_err(|_| bad("too large"))?
            }
            "timeout_secs" => config.timeout = Duration::from_secs(number()?),
            "retries" => {
                config.max_retries = u32::try_from(number()?).map_err(|_| bad("too large"))?
            }
            _ => {
                return Err(bad(
                    "unknown (expected model, dim, key_env, batch, timeout_secs, retries)",
                ));
            }
        }
    }
    config.model = model
        .filter(|m| !m.is_empty())
        .ok_or_else(|| EmbedError::spec(spec, "missing `?model=NAME` query parameter"))?;
    if config.batch_size == 0 {
        return Err(EmbedError::spec(spec, "`batch` must be at least 1"));
    }
    if config.dim == Some(0) {
        return Err(EmbedError::spec(spec, "`dim` must be at least 1"));
    }
    let mut base = url.clone();
    base.set_query(None);
    base.set_fragment(None);
    config.base_url = base.as_str().trim_end_matches('/').to_string();
    Ok(EmbedderSpec::Http(config))
}

impl fmt::Display for EmbedderSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmbedderSpec::MiniLm { dir: None } => f.write_str("minilm"),
            EmbedderSpec::MiniLm { dir: Some(d) } => write!(f, "minilm:{}", d.display()),
            EmbedderSpec::Hash { dim } => write!(f, "hash:{dim}"),
            EmbedderSpec::Http(c) => {
                write!(f, "{}?model={}", c.base_url, c.model)?;
                if let Some(d) = c.dim {
                    write!(f, "&dim={d}")?;
                }
                if let Some(k) = &c.api_key_env {
                    write!(f, "&key_env={k}")?;
                }
                // Only settings that differ from the defaults, so the common form stays short.
                let defaults = HttpConfig::new("", "");
                if c.batch_size != defaults.batch_size {
                    write!(f, "&batch={}", c.batch_size)?;
                }
                if c.timeout != defaults.timeout {
                    write!(f, "&timeout_secs={}", c.timeout.as_secs())?;
                }
                if c.max_retries != defaults.max_retries {
                    write!(f, "&retries={}", c.max_retries)?;
                }
                Ok(())
            }
        }
    }
}

/// The document embedder and, when queries use other arithmetic, the query embedder: two
/// handles on one model.
#[derive(Clone, Debug)]
pub struct Embedders {
    pub docs: Arc<dyn Embedder>,
    /// `None`: queries use `docs`.
    pub queries: Option<Arc<dyn Embedder>>,
}

/// Builds the embedder a spec names. `minilm` without a directory loads from
/// [`model_dir`]`(`[`default_home`]`())` and fails with [`EmbedError::ModelMissing`] when the
/// model was not fetched (call [`crate::ensure_model`] first to fetch it).
pub fn load_embedder(spec: &EmbedderSpec) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(load_embedders(spec, Precision::F32, Precision::F32)?.docs)
}

/// [`load_embedder`] with MiniLM's arithmetic for `documents` (stored vectors) and `queries`:
/// one set of weights, a handle per precision ([`MiniLmEmbedder::with_precision`]); queries get
/// their own handle only when their precision differs. Other embedders ignore both.
pub fn load_embedders(
    spec: &EmbedderSpec,
    documents: Precision,
    queries: Precision,
) -> Result<Embedders, EmbedError> {
    let docs: Arc<dyn Embedder> = match spec {
        EmbedderSpec::MiniLm { dir } => {
            let dir = dir.clone().unwrap_or_else(|| model_dir(&default_home()));
            let model = MiniLmEmbedder::load(dir)?;
            let queries = (queries != documents).then(|| {
                let q: Arc<dyn Embedder> = Arc::new(model.with_precision(queries));
                q
            });
            return Ok(Embedders {
                docs: Arc::new(model.with_precision(documents)),
                queries,
            });
        }
        EmbedderSpec::Http(config) => Arc::new(HttpEmbedder::new(config.clone())?),
        EmbedderSpec::Hash { dim } => Arc::new(HashEmbedder::new(*dim)?),
    };
    Ok(Embedders {
        docs,
        queries: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> EmbedderSpec {
        s.parse()
            .unwrap_or_else(|e| panic!("`{s}` should parse: {e}"))
    }

    fn parse_err(s: &str) -> String {
        match s.parse::<EmbedderSpec>() {
            Ok(spec) => panic!("`{s}` should not parse, got {spec:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn minilm_and_hash() {
        assert_eq!(parse("minilm"), EmbedderSpec::MiniLm { dir: None });
        assert_eq!(parse(" MiniLM "), EmbedderSpec::MiniLm { dir: None });
        assert_eq!(
            parse("minilm:/opt/m"),
            EmbedderSpec::MiniLm {
                dir: Some("/opt/m".into())
            }
        );
        assert_eq!(parse("hash"), EmbedderSpec::Hash { dim: 384 });
        assert_eq!(parse("hash:64"), EmbedderSpec::Hash { dim: 64 });
        assert!(parse_err("hash:0").contains("positive dimension"));
        assert_eq!(parse("hash:65536"), EmbedderSpec::Hash { dim: 65_536 });
        assert!(parse_err("hash:65537").contains("at most 65536"));
        assert!(parse_err("hash:99999999999").contains("at most"));
        assert!(parse_err("hash:x").contains("`x`"));
        assert!(parse_err("minilm:").contains("empty directory"));
        assert!(parse_err("bert").contains("expected `minilm`"));
    }

    #[test]
    fn http_urls() {
        let EmbedderSpec::Http(c) = parse(
            "http://127.0.0.1:8080/v1?model=bge-m3&dim=1024&key_env=MY_KEY&batch=16&retries=2&timeout_secs=5",
        ) else {
            panic!("expected http");
        };
        assert_eq!(c.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(c.endpoint(), "http://127.0.0.1:8080/v1/embeddings");
        assert_eq!(c.model, "bge-m3");
        assert_eq!(c.dim, Some(1024));
        assert_eq!(c.api_key_env.as_deref(), Some("MY_KEY"));
        assert_eq!(c.batch_size, 16);
        assert_eq!(c.max_retries, 2);
        assert_eq!(c.timeout, Duration::from_secs(5));

        let EmbedderSpec::Http(c) =
            parse("https://api.example.com/v1/embeddings/?model=text-embedding-3-small")
        else {
            panic!("expected http");
        };
        assert_eq!(c.endpoint(), "https://api.example.com/v1/embeddings");
        assert_eq!(c.dim, None);

        assert!(parse_err("http://localhost:1/v1").contains("missing `?model=NAME`"));
        assert!(parse_err("http://localhost:1/v1?model=m&dim=abc").contains("`dim`"));
        assert!(parse_err("http://localhost:1/v1?model=m&colour=red").contains("`colour`"));
        assert!(parse_err("http://localhost:1/v1?model=m&batch=0").contains("`batch`"));
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "http://h:1/v1?model=m&batch=8&timeout_secs=3&retries=0",
            "minilm",
            "minilm:/opt/m",
            "hash:64",
            "http://127.0.0.1:8080/v1?model=bge-m3&dim=1024&key_env=K",
        ] {
            assert_eq!(parse(s).to_string(), s);
            assert_eq!(parse(&parse(s).to_string()), parse(s));
        }
    }

    #[test]
    fn load_hash_and_missing_minilm() {
        let e = load_embedder(&parse("hash:32")).expect("hash loads");
        assert_eq!(e.space().dim, 32);
        assert!(e.is_test_only());
        let tmp = tempfile::tempdir().expect("tempdir");
        let err = load_embedder(&EmbedderSpec::MiniLm {
            dir: Some(tmp.path().to_path_buf()),
        })
        .expect_err("empty dir has no model");
        assert!(matches!(err, EmbedError::ModelMissing { .. }), "{err}");
        assert!(err.to_string().contains("model.safetensors"), "{err}");
    }
}
