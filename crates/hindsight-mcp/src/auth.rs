//! Who may touch which namespace: [`Access`] per connection (stdio) or per bearer token (HTTP),
//! loaded from a TOML [`AuthConfig`].
//!
//! ```toml
//! [[token]]
//! name = "agent-a"          # label for logs (optional)
//! token = "secret-a"        # or token_sha256 = "<hex sha256 of the token>"
//! namespaces = ["a"]        # "*" = every namespace; the first is the default
//! write = true              # default false: read-only
//! max_source = "agent"      # most trusted `source` its writes may claim (default "user")
//! ```
//!
//! `max_source` caps what a client's `memory_store` calls may claim: a token capped at `agent`
//! that sends `source: "user"` stores the memory as `agent`, so a client cannot make its text
//! rank as the user's word, nor lower the guard's sensitivity, by saying so. The same cap holds
//! for new text a `memory_update` writes into a more trusted memory (it is stored at the cap)
//! and for the episodes of `reflect_and_store`.

use std::path::Path;

use hindsight_core::{Error, ErrorKind, Namespace, Source};
use serde::Deserialize;
use sha2::{Digest, Sha256};

pub use hindsight_core::{MAX_NAMESPACE_CHARS, validate_namespace};

/// Namespaces a caller may use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceGrant {
    /// Every namespace; `default` is the one a call that names none uses (the first listed name,
    /// or `default` when `*` comes first).
    All { default: String },
    /// Non-empty; the first is the default.
    Only(Vec<String>),
}

/// What one caller (a stdio connection or an HTTP bearer token) may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// Label for logs and error messages.
    pub name: String,
    pub namespaces: NamespaceGrant,
    pub write: bool,
    /// The most trusted source its writes may claim (see the module docs).
    pub max_source: Source,
}

impl Access {
    /// Every namespace, read and write (an HTTP server without an auth config).
    pub fn unrestricted() -> Self {
        Access {
            name: "anonymous".into(),
            namespaces: NamespaceGrant::All {
                default: Namespace::DEFAULT.to_owned(),
            },
            write: true,
            max_source: Source::User,
        }
    }

    /// Nothing at all: what a request without credentials gets.
    pub fn none() -> Self {
        Access {
            name: "unauthenticated".into(),
            namespaces: NamespaceGrant::Only(Vec::new()),
            write: false,
            max_source: Source::External,
        }
    }

    /// Read/write on the given namespaces (stdio `--namespace`); the first is the default.
    pub fn namespaces(list: Vec<String>) -> Result<Self, Error> {
        if list.is_empty() {
            return Err(Error::invalid(
                "namespace",
                "at least one namespace is required",
            ));
        }
        for ns in &list {
            if ns != "*" {
                validate_namespace(ns)?;
            }
        }
        let namespaces = if list.iter().any(|n| n == "*") {
            NamespaceGrant::All {
                default: match list[0].as_str() {
                    "*" => Namespace::DEFAULT.to_owned(),
                    first => first.to_owned(),
                },
            }
        } else {
            NamespaceGrant::Only(list)
        };
        Ok(Access {
            name: "stdio".into(),
            namespaces,
            write: true,
            max_source: Source::User,
        })
    }

    /// The namespace used when a call names none.
    pub fn default_namespace(&self) -> Option<&str> {
        match &self.namespaces {
            NamespaceGrant::All { default } => Some(default),
            NamespaceGrant::Only(list) => list.first().map(String::as_str),
        }
    }

    /// The namespace a call works on: the requested one if granted, else the default. `write`
    /// says whether the call modifies anything.
    pub fn resolve(&self, requested: Option<&str>, write: bool) -> Result<Namespace, Error> {
        let op = if write { "write" } else { "read" };
        let ns = match requested {
            Some(ns) => {
                validate_namespace(ns)?;
                ns
            }
            None => self.default_namespace().ok_or_else(|| {
                Error::new(
                    ErrorKind::Unauthorized,
                    format!("unauthorized: {} may not access any namespace", self.name),
                )
            })?,
        };
        let granted = match &self.namespaces {
            NamespaceGrant::All { .. } => true,
            NamespaceGrant::Only(list) => list.iter().any(|n| n == ns),
        };
        if !granted {
            return Err(Error::new(
                ErrorKind::Unauthorized,
                format!("unauthorized: {} may not {op} namespace {ns:?}", self.name),
            ));
        }
        if write && !self.write {
            return Err(Error::new(
                ErrorKind::Unauthorized,
                format!(
                    "unauthorized: {} is read-only and may not write namespace {ns:?}",
                    self.name
                ),
            ));
        }
        Ok(Namespace::new(ns))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthFile {
    #[serde(default, rename = "token")]
    tokens: Vec<TokenEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenEntry {
    name: Option<String>,
    token: Option<String>,
    token_sha256: Option<String>,
    namespaces: Vec<String>,
    #[serde(default)]
    write: bool,
    max_source: Option<String>,
}

/// Bearer tokens and their grants. Tokens are kept only as sha256 digests.
#[derive(Clone, Debug)]
pub struct AuthConfig {
    tokens: Vec<([u8; 32], Access)>,
}

fn sha256(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

fn parse_hex32(field: &str, s: &str) -> Result<[u8; 32], Error> {
    let s = s.trim();
    if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::invalid(field, "must be 64 hex digits (a sha256)"));
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte =
            u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|e| Error::invalid(field, e))?;
    }
    Ok(out)
}

impl AuthConfig {
    /// Parses the TOML text (errors name the entry and field).
    pub fn parse(text: &str) -> Result<Self, Error> {
        let file: AuthFile = toml::from_str(text)
            .map_err(|e| Error::invalid("auth config", e.to_string().trim().to_owned()))?;
        let mut tokens = Vec::with_capacity(file.tokens.len());
        for (i, t) in file.tokens.into_iter().enumerate() {
            let entry = format!("token[{i}]");
            let digest = match (&t.token, &t.token_sha256) {
                (Some(plain), None) if !plain.trim().is_empty() => sha256(plain),
                (None, Some(hex)) => parse_hex32(&format!("{entry}.token_sha256"), hex)?,
                (Some(_), Some(_)) => {
                    return Err(Error::invalid(
                        &entry,
                        "give either `token` or `token_sha256`, not both",
                    ));
                }
                _ => {
                    return Err(Error::invalid(
                        &entry,
                        "needs a non-empty `token` or `token_sha256`",
                    ));
                }
            };
            let mut access = Access::namespaces(t.namespaces)
                .map_err(|e| Error::invalid(&format!("{entry}.namespaces"), e.message))?;
            access.write = t.write;
            if let Some(m) = &t.max_source {
                access.max_source = m.parse().map_err(|e: Error| {
                    Error::invalid(&format!("{entry}.max_source"), e.message)
                })?;
            }
            access.name = format!("token {:?}", t.name.unwrap_or_else(|| entry.clone()));
            if tokens.iter().any(|(d, _)| *d == digest) {
                return Err(Error::invalid(&entry, "duplicate token"));
            }
            tokens.push((digest, access));
        }
        if tokens.is_empty() {
            return Err(Error::invalid(
                "auth config",
                "no [[token]] entries: every request would be refused",
            ));
        }
        Ok(AuthConfig { tokens })
    }

    pub fn load(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::invalid(
                "auth config",
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        Self::parse(&text)
            .map_err(|e| Error::new(e.kind, format!("{}: {}", path.display(), e.message)))
    }

    /// The grant of a presented bearer token, if it is known.
    pub fn authenticate(&self, token: &str) -> Option<&Access> {
        let digest = sha256(token);
        self.tokens
            .iter()
            .find(|(d, _)| constant_time_eq(d, &digest))
            .map(|(_, a)| a)
    }
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
[[token]]
name = "a"
token = "secret-a"
namespaces = ["a"]
write = true

[[token]]
token_sha256 = "9c56cc51b374c3ba189210d5b6d4bf57790d351c96c47c02190ecf1e430635ab"
namespaces = ["a", "b"]
"#;

    #[test]
    fn tokens_map_to_grants() {
        let cfg = AuthConfig::parse(CONFIG).expect("valid config");
        let a = cfg.authenticate("secret-a").expect("known token");
        assert_eq!(a.resolve(None, true).expect("default ns").as_str(), "a");
        let err = a.resolve(Some("b"), false).expect_err("other namespace");
        assert_eq!(err.kind, ErrorKind::Unauthorized);
        assert!(err.message.contains("\"b\""), "{err}");
        assert!(cfg.authenticate("wrong").is_none());
        assert!(cfg.authenticate("").is_none());
    }

    #[test]
    fn hashed_tokens_and_read_only() {
        let digest: String = sha256("reader")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let cfg = AuthConfig::parse(&format!(
            "[[token]]\ntoken_sha256 = \"{digest}\"\nnamespaces = [\"x\", \"y\"]\n"
        ))
        .expect("valid");
        let r = cfg.authenticate("reader").expect("known");
        assert_eq!(r.resolve(Some("y"), false).expect("read ok").as_str(), "y");
        let err = r.resolve(Some("y"), true).expect_err("read-only");
        assert!(err.message.contains("read-only"), "{err}");
    }

    #[test]
    fn the_shipped_example_config_parses() {
        let cfg = AuthConfig::parse(include_str!("../../../config/tokens.example.toml"))
            .expect("config/tokens.example.toml is valid");
        let agent = cfg
            .authenticate("replace-with-a-long-random-token")
            .expect("known");
        assert_eq!(agent.max_source, Source::Agent);
    }

    #[test]
    fn max_source_defaults_to_user_and_is_read_per_token() {
        let cfg = AuthConfig::parse(
            "[[token]]\ntoken = \"a\"\nnamespaces = [\"x\"]\n\
             [[token]]\ntoken = \"b\"\nnamespaces = [\"x\"]\nmax_source = \"External\"\n",
        )
        .expect("valid");
        assert_eq!(
            cfg.authenticate("a").expect("known").max_source,
            Source::User
        );
        assert_eq!(
            cfg.authenticate("b").expect("known").max_source,
            Source::External
        );
    }

    #[test]
    fn bad_configs_name_the_entry() {
        let check = |text: &str, want: &str| {
            let e = AuthConfig::parse(text).expect_err("invalid");
            assert!(e.message.contains(want), "{e} should mention {want}");
        };
        check("", "no [[token]]");
        check("[[token]]\nnamespaces = [\"a\"]\n", "token[0]");
        check(
            "[[token]]\ntoken_sha256 = \"abc\"\nnamespaces = [\"a\"]\n",
            "token[0].token_sha256",
        );
        check(
            "[[token]]\ntoken = \"t\"\nnamespaces = []\n",
            "token[0].namespaces",
        );
        check(
            "[[token]]\ntoken = \"t\"\nnamespaces = [\"a\"]\nwrites = true\n",
            "writes",
        );
        check(
            "[[token]]\ntoken = \"t\"\nnamespaces = [\"a\"]\nmax_source = \"admin\"\n",
            "token[0].max_source",
        );
        check(
            "[[token]]\ntoken = \"t\"\nnamespaces = [\"a\"]\n[[token]]\ntoken = \"t\"\nnamespaces = [\"b\"]\n",
            "duplicate",
        );
    }

    #[test]
    fn stdio_and_wildcard_access() {
        let all = Access::namespaces(vec!["*".into()]).expect("wildcard");
        assert_eq!(
            all.resolve(None, true).expect("default").as_str(),
            "default"
        );
        assert_eq!(all.resolve(Some("z"), true).expect("any").as_str(), "z");
        assert!(Access::none().resolve(None, false).is_err());
        assert!(Access::namespaces(vec![]).is_err());
        assert!(all.resolve(Some(" "), false).is_err());
        // With a wildcard the first listed name stays the default.
        let team = Access::namespaces(vec!["team-a".into(), "*".into()]).expect("wildcard");
        assert_eq!(
            team.resolve(None, true).expect("default").as_str(),
            "team-a"
        );
        assert_eq!(team.resolve(Some("z"), true).expect("any").as_str(), "z");
    }
}
