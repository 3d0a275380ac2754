//! One error type with a kind, shared by libraries that implement core traits.

use std::fmt;

/// What went wrong, coarsely: callers branch on this, humans read the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The caller's input is malformed (empty content, bad range, unknown enum value...).
    InvalidInput,
    /// The referenced memory (or namespace) does not exist.
    NotFound,
    /// Vectors from a different embedding model or dimension than the store holds.
    EmbeddingMismatch,
    /// A state transition that is not allowed (purging an active memory, ...).
    Conflict,
    /// The backend failed (IO, database, index).
    Backend,
    /// The caller lacks permission for the namespace.
    Unauthorized,
    /// The write guard refused the content.
    Rejected,
    /// The embedder failed (model missing, HTTP error, ...).
    Embedding,
}

/// Error with a kind and a human-readable message naming the offending field or object.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }
    /// Invalid input in a named field.
    pub fn invalid(field: &str, what: impl fmt::Display) -> Self {
        Error::new(
            ErrorKind::InvalidInput,
            format!("invalid `{field}`: {what}"),
        )
    }
    pub fn not_found(what: impl fmt::Display) -> Self {
        Error::new(ErrorKind::NotFound, format!("not found: {what}"))
    }
    pub fn backend(what: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Backend, what.to_string())
    }
    pub fn conflict(what: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Conflict, what.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `url` without what must not reach a log, a terminal or an error message: the password of
/// `user:password@` and the values of `api_key` and `password` query parameters become `***`.
/// Every backend URL is shown through this.
pub fn url_without_secrets(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    // User info starts after the scheme, or at the start of a URL that lacks one.
    let start = base.find("://").map_or(0, |s| s + 3);
    let base = match base.rfind('@') {
        Some(at) if at > start => match base[start..at].split_once(':') {
            Some((user, _)) => format!("{}{user}:***{}", &base[..start], &base[at..]),
            None => base.to_owned(),
        },
        _ => base.to_owned(),
    };
    match query {
        None => base,
        Some(q) => {
            let params: Vec<String> = q
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k @ ("api_key" | "password"), _)) => format!("{k}=***"),
                    _ => p.to_owned(),
                })
                .collect();
            format!("{base}?{}", params.join("&"))
        }
    }
}

#[cfg(test)]
mod url_tests {
    use super::url_without_secrets;

    #[test]
    fn urls_lose_their_secrets() {
        assert_eq!(
            url_without_secrets("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(
            url_without_secrets("postgres://u@h/db"),
            "postgres://u@h/db"
        );
        assert_eq!(
            url_without_secrets("postgres://u:pw@h:5432/db?schema=s&password=x"),
            "postgres://u:***@h:5432/db?schema=s&password=***"
        );
        assert_eq!(
            url_without_secrets("qdrant://h:1?prefix=t&api_key=k"),
            "qdrant://h:1?prefix=t&api_key=***"
        );
        assert_eq!(url_without_secrets("root:pw@db"), "root:***@db");
        assert_eq!(url_without_secrets("sqlite:///tmp/x"), "sqlite:///tmp/x");
    }
}
