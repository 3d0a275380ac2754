//! Errors of the optional model client.

/// Why a model call did not produce a usable answer. Reflection never fails because of these:
/// the [`crate::Reflector`] falls back and records the message.
#[derive(Debug, thiserror::Error)]
pub enum ReflectError {
    /// Bad client configuration (empty base URL or model).
    #[error("invalid model configuration: {0}")]
    Config(String),
    /// Transport failure or timeout.
    #[error("model request to {url} failed: {message}")]
    Http { url: String, message: String },
    /// Non-success HTTP status.
    #[error("model endpoint {url} returned HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    /// The answer was not what was asked for (no JSON object, missing field, ...).
    #[error("unusable model output: {0}")]
    BadOutput(String),
}
