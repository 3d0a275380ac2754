//! Rules by default, a chat model when configured, and a fallback that never drops a trace.

use std::str::FromStr;

use hindsight_core::TaskType;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::{debug, warn};

use crate::episode::{Episode, MAX_DECISIONS, TaskTrace, clip};
use crate::json::extract_json;
use crate::llm::ChatClient;
use crate::rules;
use crate::summarize::{Recalled, summarize_extractive};

/// Which engine produced a reflection or summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Rules,
    Llm,
    Extractive,
}

/// The outcome of reflecting on a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reflection {
    pub episode: Episode,
    /// The text to store: the rendered episode, or the raw trace when reflection failed.
    pub content: String,
    pub method: Method,
    /// The model failed (transport, timeout, unusable output). The episode fields then come from
    /// the rules and `content` is the raw trace, so nothing the agent reported is lost.
    pub reflection_failed: bool,
    pub error: Option<String>,
}

/// A summary of recalled memories.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub hint: String,
    /// Ids of the memories the hint draws on.
    pub sources: Vec<String>,
    pub truncated: bool,
    pub method: Method,
    /// Set when the model failed and the extractive summary was used instead.
    pub error: Option<String>,
}

/// Reflection and summarisation, optionally backed by a chat model. Blocking when a model is
/// configured: async callers use `spawn_blocking`.
#[derive(Clone, Debug, Default)]
pub struct Reflector {
    llm: Option<ChatClient>,
}

const REFLECT_SYSTEM: &str = "You turn an AI agent's task trace into a reusable lesson. Reply with ONE JSON object and nothing else: {\"task_type\": one of \"query\"|\"modify\"|\"create\"|\"analyze\"|\"other\", \"key_decisions\": [at most 3 short strings: the choices that mattered], \"lesson\": \"one sentence the agent should remember next time\"}. Write the lesson in the language of the goal.";

const SUMMARY_SYSTEM: &str = "You compress an AI agent's recalled memories into ONE short experience hint it can act on. Put warnings (things that failed) first. Reply with the hint text only, no preamble.";

impl Reflector {
    /// Rule-based only.
    pub fn rules() -> Self {
        Reflector { llm: None }
    }

    pub fn with_llm(client: ChatClient) -> Self {
        Reflector { llm: Some(client) }
    }

    pub fn uses_llm(&self) -> bool {
        self.llm.is_some()
    }

    /// Reflects on a trace (see [`Reflection`]).
    pub fn reflect(&self, trace: &TaskTrace) -> Reflection {
        let ruled = rules::reflect(trace);
        let Some(llm) = &self.llm else {
            return Reflection {
                content: ruled.content(&trace.goal),
                episode: ruled,
                method: Method::Rules,
                reflection_failed: false,
                error: None,
            };
        };
        match reflect_llm(llm, trace, &ruled) {
            Ok(episode) => Reflection {
                content: episode.content(&trace.goal),
                episode,
                method: Method::Llm,
                reflection_failed: false,
                error: None,
            },
            Err(e) => {
                warn!(error = %e, goal = %trace.goal, "LLM reflection failed; storing the raw trace");
                Reflection {
                    content: trace.raw_text(),
                    episode: ruled,
                    method: Method::Llm,
                    reflection_failed: true,
                    error: Some(e),
                }
            }
        }
    }

    /// Summarises recalled memories into one hint of at most `max_chars` characters. With a model,
    /// falls back to the extractive summary when the model fails.
    pub fn summarize(&self, items: &[Recalled], max_chars: usize) -> Summary {
        let (hint, sources, truncated) = summarize_extractive(items, max_chars);
        let extractive = |error| Summary {
            hint: hint.clone(),
            sources: sources.clone(),
            truncated,
            method: Method::Extractive,
            error,
        };
        let Some(llm) = &self.llm else {
            return extractive(None);
        };
        if items.is_empty() {
            return extractive(None);
        }
        let mut user = format!("Limit: {max_chars} characters.\nMemories (best first):\n");
        for (i, r) in items.iter().enumerate() {
            let flag = if r.failure { " [FAILED BEFORE]" } else { "" };
            user.push_str(&format!("{}.{flag} {}\n", i + 1, clip(&r.content, 600)));
        }
        match llm.chat(SUMMARY_SYSTEM, &user) {
            Ok(text) => {
                let text = match extract_json(&text) {
                    Some(obj) => obj
                        .get("hint")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .unwrap_or(text),
                    None => strip_fences(&text),
                };
                let text = text.trim();
                if text.is_empty() {
                    return extractive(Some("model returned an empty summary".into()));
                }
                let cut = text.chars().count() > max_chars;
                Summary {
                    hint: clip(text, max_chars),
                    sources: items.iter().map(|r| r.id.clone()).collect(),
                    truncated: cut,
                    method: Method::Llm,
                    error: None,
                }
            }
            Err(e) => {
                warn!(error = %e, "LLM summary failed; using the extractive summary");
                extractive(Some(e.to_string()))
            }
        }
    }
}

fn strip_fences(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asks the model; the outcome and entities stay the caller's (the model cannot change facts).
fn reflect_llm(llm: &ChatClient, trace: &TaskTrace, ruled: &Episode) -> Result<Episode, String> {
    let mut user = format!(
        "Goal: {}\nOutcome: {}\nSteps:\n",
        clip(&trace.goal, 500),
        trace.outcome
    );
    for (i, s) in trace.steps.iter().enumerate().take(50) {
        user.push_str(&format!("{}. {}\n", i + 1, clip(s, 400)));
    }
    let text = llm.chat(REFLECT_SYSTEM, &user).map_err(|e| e.to_string())?;
    debug!(answer = %text, "LLM reflection answer");
    let obj = extract_json(&text)
        .ok_or_else(|| format!("no JSON object in the model's answer: {}", clip(&text, 200)))?;
    let lesson = obj
        .get("lesson")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| "the model's JSON has no non-empty `lesson`".to_owned())?;
    let task_type = obj
        .get("task_type")
        .and_then(Value::as_str)
        .and_then(|s| TaskType::from_str(s).ok())
        .unwrap_or(ruled.task_type);
    let key_decisions = match obj.get("key_decisions") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .take(MAX_DECISIONS)
            .map(|s| clip(s, 200))
            .collect(),
        _ => ruled.key_decisions.clone(),
    };
    Ok(Episode {
        task_type,
        outcome: trace.outcome,
        key_decisions,
        lesson: clip(lesson, 400),
        entities: trace.entities.clone(),
    })
}
