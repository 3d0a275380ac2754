//! The reference MCP server of hindsight, built on `rmcp`.
//!
//! This is the only crate that knows JSON-RPC. It exposes the engine as MCP tools:
//! `memory_store`, `memory_search`, `memory_update`, `memory_forget`, `memory_feedback`,
//! `memory_summarize`, `reflect_and_store` and `working_memory_set/get/clear`.
//!
//! - [`ServerState`] is shared by every connection: the [`hindsight_engine::Engine`], an
//!   `Arc<dyn WorkingMemory>`, the [`hindsight_reflect::Reflector`] and [`ServerOptions`]. It counts
//!   in-flight calls so shutdown can drain them before flushing the store.
//! - [`HindsightMcp`] is the rmcp `ServerHandler` with the tool router. Tool arguments and results
//!   are the schema-carrying wire types of the private `wire` module, converted explicitly to and
//!   from core and engine types; hindsight errors map to JSON-RPC errors (see `error`).
//! - [`Access`] says which namespaces a caller may read or write. Over stdio it is fixed by the
//!   command line; over HTTP an [`AuthConfig`] maps bearer tokens to grants and the auth layer
//!   answers 401 before any MCP processing.
//! - [`serve_stdio`] and [`serve_http`] run the two transports with graceful shutdown;
//!   [`router`] is the axum app (`POST /mcp`, `GET /healthz`, and `GET`/`DELETE /debug/profile`
//!   behind the same auth as `/mcp`; resetting needs write access) for embedding and tests.
//! - [`Profile`] keeps per-stage latency histograms of every `memory_search` and `memory_store`
//!   (from the engine's `SearchTimings` and `StoreTimings`), which the load harness reads to split
//!   server time by stage.

mod auth;
mod error;
mod http;
mod profile;
mod server;
mod stdio;
mod wire;

pub use auth::{Access, AuthConfig, MAX_NAMESPACE_CHARS, NamespaceGrant, validate_namespace};
pub use error::{REJECTED, UNAUTHORIZED, to_mcp};
pub use http::{AllowedHosts, DRAIN_TIMEOUT, HttpAuth, router, serve_http};
pub use profile::Profile;
pub use server::{
    HindsightMcp, MAX_STEPS, MAX_TOP_K, MAX_WORKING_VALUE_CHARS, ServerOptions, ServerState,
};
pub use stdio::{MAX_LINE_BYTES, read_capped_line, serve_stdio};
