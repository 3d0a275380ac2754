//! Connection settings, the `qdrant://` URL form and the collection name of an embedding space.

use std::time::Duration;

use hindsight_core::{EmbeddingSpace, Error, Result};

use crate::sparse::term_dim;

/// Collection prefix when none is given.
pub const DEFAULT_PREFIX: &str = "hindsight";

/// How to reach Qdrant and which collections are ours.
#[derive(Clone, PartialEq, Eq)]
pub struct QdrantConfig {
    /// gRPC endpoint, `http://HOST:6334` or `https://HOST:6334`.
    pub url: String,
    pub api_key: Option<String>,
    /// Collections of this store are named `{prefix}_{model}_{dim}_{hash}` (see
    /// [`collection_name`]). Distinct prefixes give independent stores on one server.
    pub prefix: String,
    /// Per-request timeout.
    pub timeout: Duration,
}

impl std::fmt::Debug for QdrantConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantConfig")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl QdrantConfig {
    pub fn new(url: impl Into<String>) -> Self {
        QdrantConfig {
            url: url.into(),
            api_key: None,
            prefix: DEFAULT_PREFIX.to_owned(),
            timeout: Duration::from_secs(30),
        }
    }

    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Parses a backend URL:
    ///
    /// - `qdrant://HOST:PORT` and `qdrant+http://HOST:PORT`: plain gRPC (`http://HOST:PORT`);
    /// - `qdrant+https://HOST:PORT`: gRPC over TLS;
    /// - `http://…` / `https://…` are taken as the gRPC endpoint itself.
    ///
    /// The port defaults to 6334 (Qdrant's gRPC port). Query parameters: `prefix=NAME` (collection
    /// prefix, `[A-Za-z0-9_-]`), `api_key=KEY`. Unknown parameters are errors naming them.
    pub fn from_url(url: &str) -> Result<Self> {
        let shown = hindsight_core::url_without_secrets(url);
        let bad = |what: &str| Error::invalid("backend", format!("{what} in Qdrant URL {shown:?}"));
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("no scheme (expected qdrant://HOST:PORT)"))?;
        let tls = match scheme {
            "qdrant" | "qdrant+http" | "http" => false,
            "qdrant+https" | "https" => true,
            other => return Err(bad(&format!("unknown scheme {other:?}"))),
        };
        let (authority, query) = match rest.split_once('?') {
            Some((a, q)) => (a, Some(q)),
            None => (rest, None),
        };
        let authority = authority.trim_end_matches('/');
        if authority.is_empty() || authority.contains('/') || authority.contains('@') {
            return Err(bad("expected HOST or HOST:PORT (no path, no user info)"));
        }
        let has_port = match authority.rsplit_once(':') {
            // `[::1]` alone has colons but no port.
            Some((host, port)) if !port.contains(']') => {
                if host.is_empty() {
                    return Err(bad("empty host"));
                }
                port.parse::<u16>()
                    .map_err(|_| bad(&format!("bad port {port:?}")))?;
                true
            }
            _ => false,
        };
        let endpoint = format!(
            "{}://{authority}{}",
            if tls { "https" } else { "http" },
            if has_port { "" } else { ":6334" }
        );
        let mut cfg = QdrantConfig::new(endpoint);
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "prefix" => {
                    validate_prefix(v)?;
                    cfg.prefix = v.to_owned();
                }
                "api_key" if !v.is_empty() => cfg.api_key = Some(v.to_owned()),
                other => {
                    return Err(bad(&format!(
                        "unknown or empty parameter {other:?} (known: prefix, api_key)"
                    )));
                }
            }
        }
        Ok(cfg)
    }
}

/// A prefix is non-empty `[A-Za-z0-9_-]`, at most 64 characters.
pub fn validate_prefix(prefix: &str) -> Result<()> {
    if prefix.is_empty()
        || prefix.len() > 64
        || !prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(Error::invalid(
            "prefix",
            format!("{prefix:?} must be 1-64 characters of [A-Za-z0-9_-]"),
        ));
    }
    Ok(())
}

fn slug(model: &str) -> String {
    let mut s: String = model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    s.truncate(48);
    s
}

/// The collection holding one embedding space: `{prefix}_{slug(model)}_{dim}_{fnv32(model):08x}`,
/// e.g. `hindsight_all-minilm-l6-v2_384_1c9d0e2a`. The slug keeps the name readable; the hash of the
/// exact model id keeps two models whose slugs agree apart.
pub fn collection_name(prefix: &str, space: &EmbeddingSpace) -> String {
    format!(
        "{prefix}_{}_{}_{:08x}",
        slug(&space.model),
        space.dim,
        term_dim(&space.model)
    )
}

/// If `name` is a collection of this prefix, its `(model slug, dim)`.
pub fn parse_collection_name<'a>(prefix: &str, name: &'a str) -> Option<(&'a str, usize)> {
    let rest = name.strip_prefix(prefix)?.strip_prefix('_')?;
    let mut parts = rest.rsplitn(3, '_');
    let hash = parts.next()?;
    let dim = parts.next()?;
    let model = parts.next()?;
    // A slug never contains '_', so `{prefix}_x_{..}` of a longer prefix `{prefix}_x` is not ours.
    if hash.len() != 8
        || !hash.chars().all(|c| c.is_ascii_hexdigit())
        || model.is_empty()
        || model.contains('_')
    {
        return None;
    }
    Some((model, dim.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(model: &str, dim: usize) -> EmbeddingSpace {
        EmbeddingSpace {
            model: model.into(),
            dim,
        }
    }

    #[test]
    fn url_forms() {
        let c = QdrantConfig::from_url("qdrant://localhost:6334").expect("plain");
        assert_eq!(
            (c.url.as_str(), c.prefix.as_str()),
            ("http://localhost:6334", "hindsight")
        );
        assert_eq!(
            QdrantConfig::from_url("qdrant+http://127.0.0.1")
                .expect("default port")
                .url,
            "http://127.0.0.1:6334"
        );
        assert_eq!(
            QdrantConfig::from_url("qdrant+https://q.example:443/")
                .expect("tls")
                .url,
            "https://q.example:443"
        );
        assert_eq!(
            QdrantConfig::from_url("http://[::1]:7000")
                .expect("ipv6")
                .url,
            "http://[::1]:7000"
        );
        assert_eq!(
            QdrantConfig::from_url("qdrant://[::1]")
                .expect("ipv6 no port")
                .url,
            "http://[::1]:6334"
        );
        let c = QdrantConfig::from_url("qdrant://h:1?prefix=t_1&api_key=s3cret").expect("params");
        assert_eq!(c.prefix, "t_1");
        assert_eq!(c.api_key.as_deref(), Some("s3cret"));
        assert!(
            !format!("{c:?}").contains("s3cret"),
            "Debug redacts the key"
        );
    }

    #[test]
    fn bad_urls_name_the_problem() {
        for (url, needle) in [
            ("localhost:6334", "no scheme"),
            ("postgres://h:1", "unknown scheme"),
            ("qdrant://h:port", "bad port"),
            ("qdrant://h:1/path", "no path"),
            ("qdrant://", "HOST"),
            (
                "qdrant://h:1?colection=x",
                "unknown or empty parameter \"colection\"",
            ),
            ("qdrant://h:1?prefix=a/b", "prefix"),
        ] {
            let e = QdrantConfig::from_url(url).expect_err(url);
            assert!(e.message.contains(needle), "{url}: {}", e.message);
        }
        // An error names the URL without its key.
        for url in [
            "qdrant://h:port?api_key=s3cret",
            "ftp://h:1?api_key=s3cret&prefix=a",
            "qdrant://h:1?colection=x&api_key=s3cret",
        ] {
            let e = QdrantConfig::from_url(url).expect_err(url);
            assert!(
                !e.message.contains("s3cret") && e.message.contains("api_key=***"),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn collection_names_encode_the_space() {
        let a = collection_name("hindsight", &space("all-MiniLM-L6-v2", 384));
        assert!(a.starts_with("hindsight_all-minilm-l6-v2_384_"), "{a}");
        assert_eq!(
            parse_collection_name("hindsight", &a),
            Some(("all-minilm-l6-v2", 384))
        );
        let b = collection_name("hindsight", &space("all/MiniLM-L6-v2", 384));
        assert_ne!(a, b, "same slug, different model");
        assert_ne!(
            a,
            collection_name("hindsight", &space("all-MiniLM-L6-v2", 768))
        );
        assert_eq!(parse_collection_name("other", &a), None);
        assert_eq!(parse_collection_name("hindsight", "hindsight_docs"), None);
        assert_eq!(
            parse_collection_name("hind", &a),
            None,
            "prefix must end at '_'"
        );
        let longer = collection_name("hindsight_test", &space("m", 8));
        assert_eq!(
            parse_collection_name("hindsight", &longer),
            None,
            "{longer}"
        );
        let odd = collection_name("p", &space("hash:64_x", 64));
        assert_eq!(parse_collection_name("p", &odd), Some(("hash-64-x", 64)));
    }
}
