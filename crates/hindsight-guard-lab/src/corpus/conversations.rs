//! Benign conversation turns from outside the project (real chat logs), split by dialogue.
//!
//! The input is JSONL with one turn per line: `{"id", "text", "lang", "source", "dialogue"}`
//! (other fields are ignored), the format of `../shared/realdata/benign.jsonl`. Every turn becomes
//! a benign [`CorpusRecord`] of style [`super::CONVERSATION_STYLE`], so a threshold's
//! false-positive budget counts it under its conversation limits.
//!
//! An agent stores conversation in more than one shape, so every turn is also given in the two
//! shapes memory importers write: the turn under its speaker's label (`Maya: text`, `AI: text`)
//! and, for a user turn answered by the next assistant turn of its dialogue, the exchange
//! (`Maya: question\nAI: answer`). Labels are common first names for the user side and
//! assistant names for the other side, chosen by a fixed hash of the dialogue group; a shape is a
//! source of its own in the report (`memorybank+labelled`, `memorybank+exchange`) and shares its
//! turn's split.
//!
//! Turns of one dialogue share names, topics and style, so a split by line would leak; the split
//! is by dialogue *group*: the `dialogue` id with a trailing `-YYYY-MM-DD` removed (the daily
//! sessions of one person stay together). Within each (source, language) stratum the groups are
//! ordered by a fixed hash of their name and the first 60 % go to train, the next 20 % to
//! validation, the rest to test, so every stratum is in every split and the assignment never
//! depends on file order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use hindsight_core::Source;
use serde::Deserialize;

use super::{CorpusIssue, CorpusRecord, Label, Split};
use hindsight_guard::GuardError;

#[derive(Deserialize)]
struct Turn {
    id: serde_json::Value,
    text: String,
    #[serde(default)]
    lang: String,
    #[serde(default)]
    source: String,
    #[serde(default)]
    dialogue: String,
    /// `user`/`usr` for the user's side; anything else is the assistant's.
    #[serde(default)]
    speaker: String,
}

impl Turn {
    fn is_user(&self) -> bool {
        matches!(self.speaker.as_str(), "user" | "usr" | "customer" | "")
    }
}

const USER_LABELS_EN: [&str; 12] = [
    "Maya", "Daniel", "Priya", "Marcus", "Hannah", "Diego", "Aisha", "Olivia", "Kenji", "Lena",
    "Omar", "Grace",
];
const USER_LABELS_ZH: [&str; 8] = [
    "小王", "李明", "张伟", "王芳", "刘洋", "陈静", "小李", "赵磊",
];
const ASSISTANT_LABELS_EN: [&str; 3] = ["AI", "Assistant", "Agent"];
const ASSISTANT_LABELS_ZH: [&str; 3] = ["AI", "助手", "客服"];

/// The speaker label of `turn`'s side in its dialogue group (see the module docs).
fn speaker_label(turn: &Turn, group: &str) -> &'static str {
    let h = fnv1a(group) as usize;
    let zh = turn.lang == "zh";
    match (turn.is_user(), zh) {
        (true, false) => USER_LABELS_EN[h % USER_LABELS_EN.len()],
        (true, true) => USER_LABELS_ZH[h % USER_LABELS_ZH.len()],
        (false, false) => ASSISTANT_LABELS_EN[(h / 7) % ASSISTANT_LABELS_EN.len()],
        (false, true) => ASSISTANT_LABELS_ZH[(h / 7) % ASSISTANT_LABELS_ZH.len()],
    }
}

/// The dialogue group of a turn: its dialogue id without a trailing `-YYYY-MM-DD` date.
pub fn dialogue_group(dialogue: &str) -> &str {
    let b = dialogue.as_bytes();
    let n = b.len();
    let is_date = n > 11
        && b[n - 11] == b'-'
        && b[n - 6] == b'-'
        && b[n - 3] == b'-'
        && [1, 2, 3, 4, 6, 7, 9, 10]
            .iter()
            .all(|&i| b[n - 11 + i].is_ascii_digit());
    if is_date {
        &dialogue[..n - 11]
    } else {
        dialogue
    }
}

/// 64-bit FNV-1a: the same order of groups on every platform and build.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Train / validation / test by dialogue group (see the module docs).
fn assign(strata: &BTreeMap<(String, String), BTreeSet<String>>) -> BTreeMap<String, Split> {
    let mut out = BTreeMap::new();
    for groups in strata.values() {
        let mut g: Vec<&String> = groups.iter().collect();
        g.sort_by_key(|name| (fnv1a(name), (*name).clone()));
        let n = g.len() as f64;
        let (train, validation) = ((0.6 * n).round() as usize, (0.8 * n).round() as usize);
        for (i, name) in g.into_iter().enumerate() {
            let split = if i < train {
                Split::Train
            } else if i < validation {
                Split::Validation
            } else {
                Split::Test
            };
            out.insert(name.clone(), split);
        }
    }
    out
}

/// Loads conversation turns as benign corpus records split by dialogue group. Malformed lines are
/// returned as issues and skipped.
pub fn load_conversations(
    path: &Path,
) -> Result<(Vec<CorpusRecord>, Vec<CorpusIssue>), GuardError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| GuardError::io(format!("reading {}", path.display()), e))?;
    let mut turns = Vec::new();
    let mut issues = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Turn>(line) {
            Ok(t) if t.text.trim().is_empty() => issues.push(CorpusIssue {
                line: i + 1,
                message: "empty text".into(),
            }),
            Ok(t) => turns.push(t),
            Err(e) => issues.push(CorpusIssue {
                line: i + 1,
                message: e.to_string(),
            }),
        }
    }
    let mut strata: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for t in &turns {
        strata
            .entry((t.source.clone(), t.lang.clone()))
            .or_default()
            .insert(dialogue_group(&t.dialogue).to_owned());
    }
    let splits = assign(&strata);
    let record = |t: &Turn, shape: &str, text: String| {
        let group = dialogue_group(&t.dialogue).to_owned();
        let id = match &t.id {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        CorpusRecord {
            id: if shape.is_empty() {
                id
            } else {
                format!("{id}{shape}")
            },
            text,
            label: Label::Benign,
            category: "benign".into(),
            language: t.lang.clone(),
            style: super::CONVERSATION_STYLE.into(),
            hard_negative: false,
            // A turn counts both as the user's and as external text under the conversation
            // budget; its own source is only a default for other uses.
            source: Source::User,
            split: splits.get(&group).copied().unwrap_or(Split::Test),
            template: format!("conversation/{}{shape}/{group}", t.source),
            sensitive: Vec::new(),
            secrets: Vec::new(),
        }
    };
    let mut records = Vec::with_capacity(turns.len() * 3);
    for (i, t) in turns.iter().enumerate() {
        let group = dialogue_group(&t.dialogue);
        let label = speaker_label(t, group);
        records.push(record(t, "", t.text.clone()));
        records.push(record(t, "+labelled", format!("{label}: {}", t.text)));
        // The exchange: a user turn and the next turn of its dialogue when the assistant said it.
        if t.is_user()
            && let Some(answer) = turns.get(i + 1)
            && answer.dialogue == t.dialogue
            && !answer.is_user()
        {
            let text = format!(
                "{label}: {}\n{}: {}",
                t.text,
                speaker_label(answer, group),
                answer.text
            );
            records.push(record(t, "+exchange", text));
        }
    }
    Ok((records, issues))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailing_date_is_not_part_of_the_group() {
        assert_eq!(dialogue_group("mb-en-Emily-2023-04-27"), "mb-en-Emily");
        assert_eq!(dialogue_group("dlg-1234"), "dlg-1234");
        assert_eq!(dialogue_group("2023-04-27"), "2023-04-27");
        assert_eq!(dialogue_group("x-2023-0a-27"), "x-2023-0a-27");
    }

    #[test]
    fn dialogues_never_straddle_splits_and_every_stratum_is_split() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("turns.jsonl");
        let mut lines = String::new();
        for d in 0..20 {
            for day in ["2023-04-27", "2023-04-28"] {
                for t in 0..3 {
                    lines.push_str(&format!(
                        "{{\"id\":\"{d}-{day}-{t}\",\"text\":\"turn {t}\",\"lang\":\"en\",\"source\":\"s\",\"dialogue\":\"user{d}-{day}\"}}\n"
                    ));
                }
            }
        }
        lines.push_str("not json\n");
        std::fs::write(&path, lines).expect("write");
        let (records, issues) = load_conversations(&path).expect("loads");
        assert_eq!(issues.len(), 1);
        // Every turn as said and under its speaker's label (no assistant turns: no exchanges).
        assert_eq!(records.len(), 240);
        let mut by_group: BTreeMap<String, BTreeSet<Split>> = BTreeMap::new();
        for r in &records {
            assert!(r.is_conversational());
            let group = r.template.rsplit('/').next().expect("group").to_owned();
            by_group.entry(group).or_default().insert(r.split);
        }
        assert_eq!(by_group.len(), 20, "one group per user, both days together");
        assert!(by_group.values().all(|s| s.len() == 1));
        let count = |s: Split| by_group.values().filter(|v| v.contains(&s)).count();
        assert_eq!(
            (
                count(Split::Train),
                count(Split::Validation),
                count(Split::Test)
            ),
            (12, 4, 4)
        );
    }

    #[test]
    fn turns_come_also_labelled_and_as_exchanges_in_their_dialogue_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("turns.jsonl");
        let line = |id: &str, text: &str, speaker: &str, dialogue: &str| {
            format!(
                "{{\"id\":\"{id}\",\"text\":\"{text}\",\"lang\":\"en\",\"source\":\"s\",\"speaker\":\"{speaker}\",\"dialogue\":\"{dialogue}\"}}\n"
            )
        };
        let text = [
            line("1", "Can I get a latte?", "user", "d1"),
            line("2", "Sure, what size?", "assistant", "d1"),
            line("3", "Large, please.", "user", "d1"),
            line("4", "Hello there.", "assistant", "d2"),
        ]
        .concat();
        std::fs::write(&path, text).expect("write");
        let (records, _) = load_conversations(&path).expect("loads");
        let by_id: BTreeMap<&str, &CorpusRecord> =
            records.iter().map(|r| (r.id.as_str(), r)).collect();
        assert_eq!(records.len(), 9, "{:?}", by_id.keys());
        let labelled = by_id["1+labelled"].text.as_str();
        let (user, rest) = labelled.split_once(": ").expect("a label");
        assert_eq!(rest, "Can I get a latte?");
        assert!(USER_LABELS_EN.contains(&user));
        let assistant = by_id["2+labelled"].text.split_once(": ").expect("label").0;
        assert!(ASSISTANT_LABELS_EN.contains(&assistant));
        assert_eq!(
            by_id["1+exchange"].text,
            format!("{user}: Can I get a latte?\n{assistant}: Sure, what size?")
        );
        // The last user turn of d1 is followed by another dialogue's turn: no exchange.
        assert!(!by_id.contains_key("3+exchange"));
        assert_eq!(by_id["1+exchange"].template, "conversation/s+exchange/d1");
        assert_eq!(by_id["1+exchange"].split, by_id["1"].split);
    }
}
