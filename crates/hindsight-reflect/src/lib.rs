//! Reflection and summarisation for hindsight: turning a finished task's trace into a structured
//! episode, and recalled memories into one short "experience hint".
//!
//! - [`TaskTrace`] is what an agent hands in (goal, steps, outcome, entities); [`Episode`] is the
//!   structured result (task type from the fixed [`hindsight_core::TaskType`] enum, outcome, up to
//!   three key decisions, one lesson, entities) and renders the text that is stored.
//! - [`rules`] is the default, LLM-free reflection: keyword task classification (English and
//!   Chinese), key decisions picked by cue words, a lesson sentence from the outcome and the last
//!   failing step. [`summarize_extractive`] is the LLM-free summariser.
//! - [`ChatClient`] is an optional OpenAI-compatible `/chat/completions` client (temperature 0.1,
//!   timeouts); [`extract_json`] parses fenced or chatty model output tolerantly.
//! - [`Reflector`] ties them together: rules by default, the model when configured, and on any
//!   model failure a [`Reflection`] marked `reflection_failed` that still carries the raw trace —
//!   a trace is never dropped.
//!
//! The crate knows no wire protocol, store or engine: callers convert to `NewMemory` themselves.

mod episode;
mod error;
mod json;
mod llm;
mod reflector;
pub mod rules;
mod summarize;

pub use episode::{Episode, TaskTrace};
pub use error::ReflectError;
pub use json::extract_json;
pub use llm::{ChatClient, LlmConfig};
pub use reflector::{Method, Reflection, Reflector, Summary};
pub use summarize::{Recalled, summarize_extractive};
