//! The input (a task trace) and output (a structured episode) of reflection.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hindsight_core::{Outcome, TaskType};
use serde::{Deserialize, Serialize};

/// A finished task as the agent reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskTrace {
    pub goal: String,
    pub steps: Vec<String>,
    pub outcome: Outcome,
    pub entities: BTreeMap<String, String>,
}

impl TaskTrace {
    /// The raw trace as text: what is stored when reflection fails.
    pub fn raw_text(&self) -> String {
        let mut s = format!("Task ({}): {}\n", self.outcome, self.goal.trim());
        for (i, step) in self.steps.iter().enumerate() {
            let _ = writeln!(s, "{}. {}", i + 1, step.trim());
        }
        s.trim_end().to_owned()
    }
}

/// A reflected episode: the structured lesson of one task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    pub task_type: TaskType,
    pub outcome: Outcome,
    /// At most three.
    pub key_decisions: Vec<String>,
    pub lesson: String,
    pub entities: BTreeMap<String, String>,
}

/// Most key decisions an episode keeps.
pub const MAX_DECISIONS: usize = 3;

impl Episode {
    /// The text stored (and embedded) for this episode: the lesson first (so an extractive
    /// summary leads with it), then the task, outcome and type, then the decisions.
    pub fn content(&self, goal: &str) -> String {
        let mut s = format!(
            "{}\nTask: {} (outcome: {}, type: {})",
            self.lesson.trim(),
            goal.trim(),
            self.outcome,
            self.task_type
        );
        if !self.key_decisions.is_empty() {
            let _ = write!(s, "\nKey decisions: {}", self.key_decisions.join("; "));
        }
        s
    }
}

/// Cuts `s` to at most `max` characters on a char boundary, marking the cut with `…`.
pub(crate) fn clip(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out = out.trim_end().to_owned();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_respects_char_boundaries() {
        assert_eq!(clip("abc", 5), "abc");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("数据库迁移失败", 4), "数据库…");
        assert_eq!(clip("数据库迁移失败", 4).chars().count(), 4);
    }

    #[test]
    fn content_leads_with_the_lesson() {
        let e = Episode {
            task_type: TaskType::Modify,
            outcome: Outcome::Failure,
            key_decisions: vec!["a".into(), "b".into()],
            lesson: "Do X.".into(),
            entities: BTreeMap::new(),
        };
        assert_eq!(
            e.content("goal"),
            "Do X.\nTask: goal (outcome: failure, type: modify)\nKey decisions: a; b"
        );
    }

    #[test]
    fn raw_text_numbers_steps() {
        let t = TaskTrace {
            goal: "ship".into(),
            steps: vec!["build".into(), "deploy".into()],
            outcome: Outcome::Failure,
            entities: BTreeMap::new(),
        };
        assert_eq!(t.raw_text(), "Task (failure): ship\n1. build\n2. deploy");
    }
}
