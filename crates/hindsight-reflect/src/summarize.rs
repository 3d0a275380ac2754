//! Extractive summarisation: recalled memories -> one short experience hint, no model.

use serde::{Deserialize, Serialize};

use crate::episode::clip;

/// One recalled memory, in rank order, as the summariser sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recalled {
    pub id: String,
    pub content: String,
    /// A warning or failed task: phrased as something to avoid.
    pub failure: bool,
}

/// The leading sentence of a memory (up to `.`, `!`, `?`, `。`, `！`, `？` or a line break).
fn lead_sentence(text: &str) -> &str {
    let text = text.trim();
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if matches!(c, '\n' | '。' | '！' | '？') {
            end = i;
            break;
        }
        if matches!(c, '.' | '!' | '?') {
            // a sentence end is followed by whitespace or the end of the text ("v1.2" is not)
            let next = text[i + c.len_utf8()..].chars().next();
            if next.is_none_or(char::is_whitespace) {
                end = i;
                break;
            }
        }
    }
    text[..end].trim()
}

/// Compresses recalled memories into one hint of at most `max_chars` characters: warnings first
/// ("Avoid: ..."), then the rest, one leading sentence per memory, duplicates dropped. Returns the
/// hint, the ids whose text made it in, and whether anything was cut.
pub fn summarize_extractive(items: &[Recalled], max_chars: usize) -> (String, Vec<String>, bool) {
    let max_chars = max_chars.max(16);
    let mut ordered: Vec<&Recalled> = items.iter().filter(|r| r.failure).collect();
    ordered.extend(items.iter().filter(|r| !r.failure));
    let mut seen: Vec<String> = Vec::new();
    let mut hint = String::new();
    let mut used = Vec::new();
    let mut truncated = false;
    for r in ordered {
        let sentence = lead_sentence(&r.content);
        if sentence.is_empty() {
            continue;
        }
        let key = sentence.to_lowercase();
        if seen.contains(&key) {
            used.push(r.id.clone());
            continue;
        }
        seen.push(key);
        let piece = if r.failure {
            format!("Avoid: {sentence}.")
        } else {
            format!("{sentence}.")
        };
        let sep = if hint.is_empty() { "" } else { " " };
        let len = hint.chars().count() + sep.chars().count() + piece.chars().count();
        if len <= max_chars {
            hint.push_str(sep);
            hint.push_str(&piece);
            used.push(r.id.clone());
        } else {
            truncated = true;
            if hint.is_empty() {
                hint = clip(&piece, max_chars);
                used.push(r.id.clone());
            }
            break;
        }
    }
    (hint, used, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, content: &str, failure: bool) -> Recalled {
        Recalled {
            id: id.into(),
            content: content.into(),
            failure,
        }
    }

    #[test]
    fn warnings_first_one_sentence_each() {
        let items = [
            rec(
                "a",
                "Refunds take 5 days. Ask for the order id first.",
                false,
            ),
            rec("b", "Calling the v1.2 API timed out twice\nsteps...", true),
            rec("c", "Refunds take 5 days! (dup)", false),
        ];
        let (hint, used, truncated) = summarize_extractive(&items, 400);
        assert_eq!(
            hint,
            "Avoid: Calling the v1.2 API timed out twice. Refunds take 5 days."
        );
        assert_eq!(used, ["b", "a", "c"]);
        assert!(!truncated);
    }

    #[test]
    fn respects_max_chars() {
        let items = [
            rec("a", "First fact is fairly long text here.", false),
            rec("b", "Second fact.", false),
        ];
        let (hint, used, truncated) = summarize_extractive(&items, 40);
        assert_eq!(hint, "First fact is fairly long text here.");
        assert_eq!(used, ["a"]);
        assert!(truncated);
        let (hint, _, truncated) = summarize_extractive(&items, 20);
        assert!(hint.chars().count() <= 20 && hint.ends_with('…'), "{hint}");
        assert!(truncated);
        assert_eq!(summarize_extractive(&[], 100).0, "");
        let zh = [rec("z", "支付接口超时。改用备用接口", true)];
        assert_eq!(summarize_extractive(&zh, 100).0, "Avoid: 支付接口超时.");
    }
}
