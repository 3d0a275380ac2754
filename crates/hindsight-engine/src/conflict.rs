//! Conflict judgement for similar memories: whether two are about different subjects at all
//! ([`distinct_subjects`]), and if not, whether the new one adds to the old or contradicts it
//! ([`ConflictJudge`]).

use std::collections::BTreeSet;
use std::fmt;

use hindsight_core::{Memory, NewMemory};
use serde::{Deserialize, Serialize};

/// Whether a new memory adds to an existing one or contradicts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConflictDecision {
    /// Keep both (the new one adds detail).
    Supplement,
    /// The new one replaces the old one: the old is marked `superseded` (kept, linked, revertible).
    Contradict,
}

/// Whether `new` (with its stored `content`) is about another subject than `old`, however
/// similar the two read: then it is neither a duplicate to merge nor a contradiction. That is
/// the case when they give one entity different values (`order_id` 3333 vs 4444), carry
/// different identifiers in the text (`ORD-3333` vs `ORD-4444`, `web-01` vs `web-02`: tokens
/// mixing letters and digits), or record different outcomes or tasks (an aborted attempt is not
/// the failed one). A changed plain value ("limit 60/min" vs "100/min", another phone number)
/// is not a new subject: that is for the judge.
pub fn distinct_subjects(old: &Memory, new: &NewMemory, content: &str) -> bool {
    // The same words are the same memory whatever the labels say (stores that refuse an exact
    // duplicate text, such as PostgreSQL's unique content hash, agree).
    if same_words(&old.content, content) && old.context == new.context {
        return false;
    }
    let entity_clash = new
        .entities
        .iter()
        .any(|(k, v)| old.entities.get(k).is_some_and(|o| o != v));
    let outcome_differs = matches!((old.outcome, new.outcome), (Some(a), Some(b)) if a != b);
    let task_differs = matches!((&old.task_id, &new.task_id), (Some(a), Some(b)) if a != b);
    entity_clash
        || outcome_differs
        || task_differs
        || identifiers(&old.content) != identifiers(content)
        || (other_named_values(&old.content, content) && !has_change_cue(content))
}

/// Whether the two texts name different weekdays or months, or (in Chinese) different numeral
/// runs: "closed on Sunday" / "closed on Saturday", "周二" / "周四", "张三" / "李四". Without a
/// change cue that is not evidence of a change ("Alice's birthday is in March" vs "Alice's
/// anniversary is in June"), and it is not a duplicate either: both are kept, related.
fn other_named_values(old: &str, new: &str) -> bool {
    let named = |t: &str| -> BTreeSet<String> {
        let mut v: BTreeSet<String> = words(t)
            .into_iter()
            .map(|w| w.trim_end_matches('s').to_owned())
            .filter(|w| VALUE_WORDS.contains(&w.as_str()))
            .collect();
        if t.chars().any(is_cjk) {
            v.extend(cjk_values(t));
        }
        v
    };
    let (a, b) = (named(old), named(new));
    !a.is_empty() && !b.is_empty() && a != b
}

fn has_change_cue(content: &str) -> bool {
    let lower = content.to_lowercase();
    CHANGE_CUES.iter().any(|c| lower.contains(c))
}

/// Whether two texts are the same words, up to case and surrounding space.
pub(crate) fn same_words(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

/// The identifier-like tokens of `text`, lower-cased: runs of letters, digits, `-` and `_` that
/// mix letters and digits (`ORD-3333`, `web-01`, a commit `3f9a2c1`, a UUID), except a number
/// with a unit (`30s`, `10MB`, `5th`: digits, then up to four letters) and a version (`v18`):
/// those are values, which the judge compares, not names of other subjects.
fn identifiers(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .map(|t| {
            t.trim_matches(|c| c == '-' || c == '_')
                .to_ascii_lowercase()
        })
        .filter(|t| {
            let digits = t.chars().take_while(char::is_ascii_digit).count();
            let unit = digits > 0
                && t.len() - digits <= 4
                && t[digits..].chars().all(|c| c.is_ascii_alphabetic());
            let version =
                t.len() > 1 && t.starts_with('v') && t[1..].chars().all(|c| c.is_ascii_digit());
            t.chars().any(|c| c.is_ascii_alphabetic())
                && t.chars().any(|c| c.is_ascii_digit())
                && !unit
                && !version
        })
        .collect()
}

/// Decides supplement vs contradict for a similar pair. Pluggable: rule-based by default, an LLM
/// judge can implement the same trait.
pub trait ConflictJudge: Send + Sync + fmt::Debug {
    fn judge(&self, existing: &Memory, new_content: &str, similarity: f32) -> ConflictDecision;
}

/// Rule-based judge using change, negation, antonym and changed-value cues in English and Chinese.
///
/// It answers `Contradict` when the new text
/// - carries an explicit change cue ("switched to", "no longer", "now prefers", "改喝", "不再",
///   "换成", "改为"), or
/// - flips polarity against the old text (negation present in exactly one of the two, e.g.
///   "likes coffee" vs "doesn't like coffee"; "喜欢" vs "不喜欢"), or
/// - uses the antonym of a word in the old text (enable/disable, increase/decrease, high/low,
///   allow/deny, 开启/关闭, 增加/减少, 高/低), or
/// - states a different value for the same numeric slot (both texts share their wording except for
///   numbers, and a number differs: "limit is 60/min" vs "limit is 100/min").
///
/// Otherwise `Supplement`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RuleJudge;

const CHANGE_CUES: &[&str] = &[
    "switched to",
    "switch to",
    "changed to",
    "change to",
    "no longer",
    "not anymore",
    "any more",
    "anymore",
    "now prefers",
    "now prefer",
    "instead of",
    "moved to",
    "replaced",
    "from now on",
    "stopped",
    "quit ",
    "gave up",
    "updated to",
    "is now",
    "are now",
    "now uses",
    "now use",
    "改喝",
    "改用",
    "改成",
    "改为",
    "换成",
    "换了",
    "不再",
    "已经不",
    "现在改",
    "现在喜欢",
    "戒了",
    "更新为",
    "调整为",
    "改到",
    "改在",
    "推迟到",
    "提前到",
    "调到",
    "挪到",
];

/// Words that name a value in a slot the way numbers do ("every Monday" vs "every Wednesday").
/// Not "may" (a modal verb far more often than the month) nor "am"/"pm" ("I am", a PM).
const VALUE_WORDS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "weekday",
    "weekend",
    "daily",
    "weekly",
    "monthly",
    "yearly",
];

const CJK_NUMERALS: &str = "零〇一二三四五六七八九十百千两";

const NEGATIONS_EN: &[&str] = &[
    "not ", "n't ", "never ", "no ", "without ", "dislike", "hate",
];
const NEGATIONS_ZH: &[&str] = &["不", "没", "别", "勿", "无需", "讨厌"];

const ANTONYMS: &[(&str, &str)] = &[
    ("enable", "disable"),
    ("enabled", "disabled"),
    ("increase", "decrease"),
    ("high", "low"),
    ("higher", "lower"),
    ("allow", "deny"),
    ("allowed", "denied"),
    ("on", "off"),
    ("open", "close"),
    ("accept", "reject"),
    ("like", "dislike"),
    ("start", "stop"),
    ("add", "remove"),
    ("up", "down"),
    ("before", "after"),
    ("morning", "evening"),
    ("true", "false"),
    ("yes", "no"),
    ("开启", "关闭"),
    ("打开", "关闭"),
    ("增加", "减少"),
    ("提高", "降低"),
    ("高", "低"),
    ("允许", "禁止"),
    ("喜欢", "讨厌"),
    ("上调", "下调"),
    ("启用", "停用"),
    ("早上", "晚上"),
];

fn words(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

fn has_negation(s: &str) -> bool {
    let lower = format!("{} ", s.to_lowercase());
    NEGATIONS_EN.iter().any(|n| lower.contains(n)) || NEGATIONS_ZH.iter().any(|n| s.contains(n))
}

fn contains_term(text: &str, words: &[String], term: &str) -> bool {
    if term.is_ascii() {
        words.iter().any(|w| w == term)
    } else {
        text.contains(term)
    }
}

/// Words with digits removed, for "same sentence, different number" detection.
fn skeleton(s: &str) -> (Vec<String>, Vec<String>) {
    let mut text = Vec::new();
    let mut nums = Vec::new();
    for w in words(s) {
        if w.chars().any(|c| c.is_ascii_digit()) {
            nums.push(w.chars().filter(char::is_ascii_digit).collect());
        } else {
            text.push(w);
        }
    }
    (text, nums)
}

fn is_cjk(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c)
}

/// For text with Chinese in it, where words are not separated: its values, runs of digits or
/// Chinese numerals, a weekday's 周/星期/礼拜 kept with its numeral ("周二", "三").
fn cjk_values(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    let numeral = |c: char| c.is_ascii_digit() || CJK_NUMERALS.contains(c);
    let mut values = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let weekday = |j: usize| {
            chars
                .get(j)
                .is_some_and(|&c| numeral(c) || c == '日' || c == '天' || c == '末')
        };
        let prefix = match (chars[i], chars.get(i + 1)) {
            ('周', _) if weekday(i + 1) => 1,
            ('星', Some('期')) | ('礼', Some('拜')) if weekday(i + 2) => 2,
            _ => 0,
        };
        if prefix > 0 || numeral(chars[i]) {
            let start = i;
            i += prefix.max(1);
            while i < chars.len() && (numeral(chars[i]) || (prefix > 0 && i == start + prefix)) {
                i += 1;
            }
            values.push(chars[start..i].iter().collect());
        } else {
            i += 1;
        }
    }
    values
}

impl ConflictJudge for RuleJudge {
    fn judge(&self, existing: &Memory, new_content: &str, _similarity: f32) -> ConflictDecision {
        let old = existing.content.as_str();
        if has_change_cue(new_content) {
            return ConflictDecision::Contradict;
        }
        if has_negation(old) != has_negation(new_content) {
            return ConflictDecision::Contradict;
        }
        let (ow, nw) = (words(old), words(new_content));
        for (a, b) in ANTONYMS {
            let (oa, ob) = (contains_term(old, &ow, a), contains_term(old, &ow, b));
            let (na, nb) = (
                contains_term(new_content, &nw, a),
                contains_term(new_content, &nw, b),
            );
            if (oa && !ob && nb && !na) || (ob && !oa && na && !nb) {
                return ConflictDecision::Contradict;
            }
        }
        let (ot, on) = skeleton(old);
        let (nt, nn) = skeleton(new_content);
        if !on.is_empty() && !nn.is_empty() && on != nn {
            let shared = ot.iter().filter(|w| nt.contains(w)).count();
            let overlap = shared as f64 / ot.len().max(nt.len()).max(1) as f64;
            if overlap >= 0.6 {
                return ConflictDecision::Contradict;
            }
        }
        ConflictDecision::Supplement
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::{MemoryId, MemoryKind, Namespace, Source, Status};

    fn mem(content: &str) -> Memory {
        Memory {
            id: MemoryId::from("old"),
            namespace: Namespace::default(),
            kind: MemoryKind::Semantic,
            content: content.into(),
            tags: vec![],
            context: String::new(),
            entities: Default::default(),
            importance: 0.5,
            source: Source::User,
            created_at: chrono::DateTime::UNIX_EPOCH,
            last_accessed_at: chrono::DateTime::UNIX_EPOCH,
            access_count: 0,
            usefulness: 0.0,
            status: Status::Active,
            status_reason: None,
            superseded_by: None,
            task_id: None,
            task_type: None,
            outcome: None,
            embedding_model: "t".into(),
            neighbourhood: String::new(),
        }
    }

    #[test]
    fn distinct_subjects_by_entity_identifier_outcome_or_task() {
        let new = |content: &str| NewMemory::new("ns", MemoryKind::Semantic, content);
        let distinct = |old: &Memory, n: &NewMemory| distinct_subjects(old, n, &n.content);
        // Identifiers in the text.
        let old = mem("Order ORD-3333 was refunded");
        assert!(distinct(&old, &new("Order ORD-4444 was refunded")));
        assert!(distinct(
            &mem("web-01 is the primary"),
            &new("web-02 is the primary")
        ));
        assert!(!distinct(&old, &new("Order ord-3333 was refunded in full")));
        // Other weekdays, months or Chinese numerals, without a change cue: kept apart (neither
        // merged as a duplicate nor superseding); with a cue, the judge decides.
        assert!(distinct(
            &mem("The on-call rotation switches every Monday at 10:00."),
            &new("The on-call rotation switches every Wednesday at 10:00.")
        ));
        assert!(distinct(
            &mem("Alice's birthday is in March."),
            &new("Alice's anniversary is in June.")
        ));
        assert!(distinct(
            &mem("张三的生日是五月三日"),
            &new("李四的生日是八月十日")
        ));
        assert!(!distinct(
            &mem("周会在周二下午三点开始。"),
            &new("周会改到周四下午三点开始。")
        ));
        assert!(!distinct(
            &mem("Payroll runs on the last Friday"),
            &new("Payroll runs on the last Friday, HR reminds")
        ));
        // A plain value is not an identifier: a changed limit is for the judge.
        assert!(!distinct(
            &mem("The rate limit is 100/min"),
            &new("The rate limit is 500/min")
        ));
        assert!(distinct(
            &mem("Build 3f9a2c1 failed at the migration step"),
            &new("Build 7be41d0 failed at the migration step")
        ));
        for (a, b) in [
            ("The request timeout is 30s", "The request timeout is 60s"),
            ("Max upload size is 10MB", "Max upload size is 25MB"),
            ("The CI uses Node v18", "The CI uses Node v20"),
            ("Standup at 9:30am", "Standup at 9:30 am"),
        ] {
            assert!(!distinct(&mem(a), &new(b)), "{a} / {b}");
        }
        // Entities with different values.
        let mut o = mem("Refund issued for the order");
        o.entities.insert("order_id".into(), "3333".into());
        let mut n = new("Refund issued for this order");
        n.entities.insert("order_id".into(), "4444".into());
        assert!(distinct(&o, &n));
        n.entities.insert("order_id".into(), "3333".into());
        assert!(!distinct(&o, &n));
        // The same words stay one memory whatever the labels say.
        let mut same = new("Refund issued for the order");
        same.entities.insert("order_id".into(), "4444".into());
        assert!(!distinct(&o, &same));
        // Outcomes and tasks.
        let mut o = mem("Deploy of billing failed at the migration step");
        o.outcome = Some(hindsight_core::Outcome::Failure);
        let mut n = new("Deploy of billing stopped at the migration step");
        n.outcome = Some(hindsight_core::Outcome::Aborted);
        assert!(distinct(&o, &n));
        n.outcome = Some(hindsight_core::Outcome::Failure);
        assert!(!distinct(&o, &n));
        o.task_id = Some("t1".into());
        n.task_id = Some("t2".into());
        assert!(distinct(&o, &n));
    }

    fn check(old: &str, new: &str, expect: ConflictDecision) {
        assert_eq!(
            RuleJudge.judge(&mem(old), new, 0.8),
            expect,
            "{old:?} -> {new:?}"
        );
    }

    #[test]
    fn contradictions() {
        use ConflictDecision::Contradict;
        check(
            "The user likes coffee in the morning",
            "The user switched to tea in the morning",
            Contradict,
        );
        check("用户喜欢喝咖啡", "用户最近改喝茶了", Contradict);
        check(
            "User likes spicy food",
            "User doesn't like spicy food",
            Contradict,
        );
        check("用户喜欢辣的", "用户不喜欢辣的", Contradict);
        check(
            "Enable retries on the payment client",
            "Disable retries on the payment client",
            Contradict,
        );
        check(
            "The API limit is 60 calls per minute",
            "The API limit is 100 calls per minute",
            Contradict,
        );
        check("把超时时间增加到30秒", "把超时时间减少到10秒", Contradict);
        // A change cue with another weekday is a change.
        check(
            "周会在周二下午三点开始。",
            "周会改到周四下午三点开始。",
            Contradict,
        );
        check(
            "The standup is at 9:30 on Tuesdays.",
            "The standup moved to Thursdays at 9:30.",
            Contradict,
        );
    }

    #[test]
    fn chinese_values_are_read_in_place() {
        assert_eq!(
            cjk_values("周会在星期二下午3点，周末不开"),
            ["星期二", "3", "周末"]
        );
        assert!(cjk_values("周会不变").is_empty());
    }

    #[test]
    fn supplements() {
        use ConflictDecision::Supplement;
        check(
            "The user likes coffee",
            "The user likes coffee with oat milk",
            Supplement,
        );
        check(
            "Deploys go through the staging cluster first",
            "Deploys to staging need a green CI run",
            Supplement,
        );
        check("用户喜欢喝咖啡", "用户喜欢喝咖啡，尤其是拿铁", Supplement);
        check(
            "周会在周二下午三点开始。",
            "周二的周会记得带上季度报表。",
            Supplement,
        );
        check(
            "Payroll runs on the last Friday of the month",
            "Payroll runs on the last Friday of the month; HR sends the reminder",
            Supplement,
        );
        check(
            "Order 5512 shipped via SF Express",
            "Customer asked about delivery time for order 5512",
            Supplement,
        );
    }
}
