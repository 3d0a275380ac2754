//! Rule-based query understanding: identifiers, relative time expressions and kind hints.

use std::collections::HashSet;

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use hindsight_core::{MemoryKind, StructuredQuery, TimeRange};
use serde::{Deserialize, Serialize};

/// What the rules extracted from a query.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryUnderstanding {
    pub structured: StructuredQuery,
    /// The relative-time phrase that produced `structured.time_range`, if any.
    pub time_phrase: Option<String>,
    /// The query asks what to do: a rule, a policy, a procedure, whether something is allowed
    /// ("how should I handle refunds?", "退款怎么处理"). An injected instruction does its harm in
    /// the answer to such a query, so the ranking weighs memories the guard suspects down there
    /// ([`crate::RankingFactors::suspect_weight`]).
    #[serde(default)]
    pub directive: bool,
    /// The query asks about the past: an event, a date, what was said or done ("When did Alice
    /// start going to the climbing gym?", "what did I tell you on May 4th", "我曾经推荐过"). Time
    /// decay, which exists so stale facts lose to current ones, must not bury the past event
    /// asked about ([`crate::RankingFactors::past_decay_weight`]).
    #[serde(default)]
    pub past_reference: bool,
}

/// Extracts structured signals from `text`, resolving relative times against `now` (UTC days).
pub fn understand(text: &str, now: DateTime<Utc>) -> QueryUnderstanding {
    let identifiers = extract_identifiers(text);
    let (time_range, time_phrase) = match parse_time_range(text, now) {
        Some((r, p)) => (Some(r), Some(p)),
        None => (None, None),
    };
    let kinds = kind_hints(text);
    QueryUnderstanding {
        structured: StructuredQuery {
            identifiers,
            time_range,
            kinds,
            ..StructuredQuery::default()
        },
        past_reference: refers_to_past(text) || time_phrase.is_some(),
        time_phrase,
        directive: asks_what_to_do(text),
    }
}

/// Whether a query refers to the past (see [`QueryUnderstanding::past_reference`]): in English a
/// past auxiliary or a past-tense verb ("did", "was", "went", "recommended"), a past time word
/// ("ago", "yesterday", "before", "last", "once", "ever") or a calendar date; in Chinese
/// 曾经/之前/以前/上次/那天/当时/去年/昨天/前天/过去/原来/当初, a verb with 过 or 了 before the
/// question word, or a date (5月4日).
pub fn refers_to_past(text: &str) -> bool {
    const ZH: &[&str] = &[
        "曾经",
        "之前",
        "以前",
        "上次",
        "那天",
        "当时",
        "去年",
        "昨天",
        "前天",
        "过去",
        "原来",
        "当初",
        "那次",
        "上个月",
        "上周",
        "上星期",
    ];
    if ZH.iter().any(|c| text.contains(c)) || zh_date(text) || zh_completed(text) {
        return true;
    }
    const WORDS: &[&str] = &[
        "did",
        "was",
        "were",
        "had",
        "ago",
        "yesterday",
        "before",
        "earlier",
        "previously",
        "once",
        "ever",
        "last",
        "first",
        "originally",
        "used",
        "went",
        "saw",
        "got",
        "made",
        "took",
        "came",
        "gave",
        "told",
        "bought",
        "met",
        "ran",
        "began",
        "wrote",
        "said",
        "found",
        "felt",
        "left",
        "kept",
        "thought",
        "brought",
        "paid",
        "sent",
        "spent",
        "won",
        "lost",
        "heard",
        "ate",
        "drove",
        "flew",
        "wore",
        "read",
        "did",
        "became",
        "chose",
        "taught",
        "caught",
        "fell",
        "held",
        "built",
        "sold",
        "sang",
        "swam",
        "knew",
        "grew",
        "drew",
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
    ];
    const NOT_PAST: &[&str] = &[
        "need", "needed", "speed", "feed", "seed", "weed", "bed", "red", "shed", "breed", "indeed",
        "embed", "proceed", "exceed", "succeed", "bleed",
    ];
    words(text).iter().any(|w| {
        WORDS.contains(&w.as_str())
            || (w.len() > 4 && w.ends_with("ed") && !NOT_PAST.contains(&w.as_str()))
            || (w.len() == 4 && w.chars().all(|c| c.is_ascii_digit()) && w.starts_with("20"))
    })
}

/// A Chinese calendar date: a number followed by 月, or by 号/日 ("5月4日", "4月27号", "27号").
fn zh_date(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    chars.windows(2).any(|w| {
        (w[0].is_ascii_digit() || "一二三四五六七八九十".contains(w[0])) && "月号日".contains(w[1])
    })
}

/// A Chinese verb marked as done before the question ends: 过 or 了 followed later by a question
/// word or particle ("我提到过…吗", "我跑了多久").
fn zh_completed(text: &str) -> bool {
    ["过", "了"].iter().any(|m| {
        text.find(m).is_some_and(|i| {
            let rest = &text[i..];
            ["吗", "什么", "哪", "多久", "谁", "几", "怎么"]
                .iter()
                .any(|q| rest.contains(q))
        })
    })
}

/// Lower-case words of `text` (letters and digits; apostrophes dropped: "what's" -> "whats").
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace(['\'', '\u{2019}'], "")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Whether a query asks what to do (see [`QueryUnderstanding::directive`]): in English a
/// question about how to act or what is allowed ("how should", "what should", "do we need",
/// "am I allowed", "can I") or about a rule, policy, procedure, step or instruction; in Chinese
/// 怎么办/如何/应该/要不要/能不能/规则/规定/流程/政策/步骤/允许.
pub fn asks_what_to_do(text: &str) -> bool {
    const ZH: &[&str] = &[
        "怎么办",
        "怎么处理",
        "怎么做",
        "如何",
        "应该",
        "要不要",
        "能不能",
        "可不可以",
        "需不需要",
        "是否需要",
        "该不该",
        "规则",
        "规定",
        "流程",
        "政策",
        "步骤",
        "允许",
    ];
    if ZH.iter().any(|c| text.contains(c)) {
        return true;
    }
    const NOUNS: &[&str] = &[
        "rule",
        "rules",
        "policy",
        "policies",
        "procedure",
        "procedures",
        "process",
        "steps",
        "instruction",
        "instructions",
        "guideline",
        "guidelines",
        "protocol",
        "allowed",
        "permitted",
        "permission",
        "approval",
        "approve",
        "confirmation",
    ];
    let w = words(text);
    let pair = |a: &str, b: &[&str]| {
        w.windows(2)
            .any(|p| p[0] == a && b.contains(&p[1].as_str()))
    };
    let has = |x: &str| w.iter().any(|y| y == x);
    w.iter().any(|x| NOUNS.contains(&x.as_str()))
        || pair("how", &["do", "does", "should", "can", "to", "must"])
        || pair("what", &["should", "must", "to"])
        || pair("should", &["i", "we", "you", "the", "it", "they"])
        || (pair("do", &["i", "we"]) && (has("need") || has("have")))
        || pair("can", &["i", "we"])
        || (pair("am", &["i"]) && has("allowed"))
}

/// Most identifiers taken from one query.
pub const MAX_IDENTIFIERS: usize = 32;

/// Longest look-back a counted phrase may name ("N days ago", "最近N天"), in days: about a
/// thousand years, past anything stored (1677-2262). A longer count is not read as a time.
const MAX_LOOKBACK_DAYS: i64 = 366_000;

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '#')
}

/// Identifier-like tokens: runs of ASCII letters/digits/`-_./#` that contain a digit and at least
/// four alphanumerics (order numbers, `PAY-1432`, `ORD-58213`, `db-prod-3`). Dates and times
/// (`2024-05-01`, `12:30`) and bare years are not identifiers. For a mixed token the digit run is
/// emitted too (`ORD-58213` -> `ORD-58213`, `58213`), since stores often keep only the number.
/// Order of first appearance, no duplicates, at most [`MAX_IDENTIFIERS`] (a pasted log full of
/// order numbers keeps its first ones: each identifier is a term of the structured path's query).
pub fn extract_identifiers(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut push = |s: &str, out: &mut Vec<String>| {
        if !s.is_empty() && out.len() < MAX_IDENTIFIERS && seen.insert(s.to_ascii_lowercase()) {
            out.push(s.to_owned());
        }
    };
    for raw in text.split(|c: char| !is_ident_char(c)) {
        if out.len() >= MAX_IDENTIFIERS {
            break;
        }
        let tok = raw.trim_matches(|c: char| matches!(c, '-' | '_' | '.' | '/' | '#'));
        let alnum = tok.chars().filter(char::is_ascii_alphanumeric).count();
        let digits = tok.chars().filter(char::is_ascii_digit).count();
        if digits == 0 || alnum < 4 || looks_like_date(tok) {
            continue;
        }
        let all_digits = digits == tok.len();
        if all_digits && tok.len() == 4 && matches!(tok.parse::<u32>(), Ok(1900..=2100)) {
            continue; // a year
        }
        push(tok, &mut out);
        if !all_digits {
            // the longest digit run, when it is itself id-like (>= 4 digits)
            if let Some(run) = tok
                .split(|c: char| !c.is_ascii_digit())
                .filter(|r| r.len() >= 4)
                .max_by_key(|r| r.len())
            {
                push(run, &mut out);
            }
        }
    }
    out
}

fn looks_like_date(tok: &str) -> bool {
    let parts: Vec<&str> = tok.split(['-', '/', '.']).collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        && (parts[0].len() == 4 || parts[2].len() == 4)
}

fn kind_hints(text: &str) -> Vec<MemoryKind> {
    let lower = text.to_lowercase();
    const FAILURE_CUES: &[&str] = &[
        "fail",
        "went wrong",
        "mistake",
        "broke",
        "error last time",
        "pitfall",
        "lesson",
        "warning",
        "失败",
        "出错",
        "教训",
        "踩坑",
        "翻车",
        "报错",
    ];
    if FAILURE_CUES.iter().any(|c| lower.contains(c)) {
        vec![MemoryKind::Warning]
    } else {
        Vec::new()
    }
}

fn day_start(d: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).unwrap_or_default())
}

fn month_start(year: i32, month: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(year, month, 1).unwrap_or(NaiveDate::MIN)
}

fn add_months(d: NaiveDate, delta: i32) -> NaiveDate {
    let total = d.year() * 12 + d.month0() as i32 + delta;
    month_start(total.div_euclid(12), total.rem_euclid(12) as u32 + 1)
}

/// Parses a number written in ASCII digits or simple Chinese numerals (一..十, 两, 十二, 二十).
fn parse_number(s: &str) -> Option<i64> {
    if let Ok(n) = s.parse::<i64>() {
        return Some(n);
    }
    let digit = |c: char| {
        "零一二三四五六七八九"
            .chars()
            .position(|d| d == c)
            .map(|p| p as i64)
            .or(if c == '两' { Some(2) } else { None })
    };
    let chars: Vec<char> = s.chars().collect();
    match chars.as_slice() {
        [c] if *c == '十' => Some(10),
        [c] => digit(*c),
        ['十', u] => digit(*u).map(|u| 10 + u),
        [t, '十'] => digit(*t).map(|t| t * 10),
        [t, '十', u] => Some(digit(*t)? * 10 + digit(*u)?),
        _ => None,
    }
}

const EN_NUMBERS: &[(&str, i64)] = &[
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("a", 1),
    ("an", 1),
];

/// Number phrases of several words, longest first: "a couple of weeks ago", "past few days".
const EN_NUMBER_PHRASES: &[(&[&str], i64)] = &[
    (&["a", "couple", "of"], 2),
    (&["couple", "of"], 2),
    (&["a", "few"], 3),
    (&["few"], 3),
];

/// Finds a relative time expression and resolves it to a half-open UTC window relative to `now`.
/// Weeks start on Monday. Returns the window and the phrase that produced it.
pub fn parse_time_range(text: &str, now: DateTime<Utc>) -> Option<(TimeRange, String)> {
    let today = now.date_naive();
    // At chrono's outermost dates "last year" has no window (the fixed phrases below step back a
    // year and forward a day without checks).
    today.checked_sub_signed(Duration::days(400))?;
    today.checked_add_signed(Duration::days(2))?;
    let lower = text.to_lowercase();
    let week_start = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
    let this_month = month_start(today.year(), today.month());
    let range = |a: NaiveDate, b: NaiveDate| TimeRange {
        start: day_start(a),
        end: day_start(b),
    };
    let up_to_now = |a: NaiveDate| TimeRange {
        start: day_start(a),
        end: now,
    };

    // Fixed phrases, longest/most specific first.
    let fixed: &[(&str, TimeRange)] = &[
        (
            "day before yesterday",
            range(today - Duration::days(2), today - Duration::days(1)),
        ),
        (
            "前天",
            range(today - Duration::days(2), today - Duration::days(1)),
        ),
        ("yesterday", range(today - Duration::days(1), today)),
        ("昨天", range(today - Duration::days(1), today)),
        ("昨日", range(today - Duration::days(1), today)),
        ("today", up_to_now(today)),
        ("今天", up_to_now(today)),
        ("this morning", up_to_now(today)),
        (
            "last week",
            range(week_start - Duration::days(7), week_start),
        ),
        (
            "previous week",
            range(week_start - Duration::days(7), week_start),
        ),
        ("上周", range(week_start - Duration::days(7), week_start)),
        ("上星期", range(week_start - Duration::days(7), week_start)),
        (
            "上个星期",
            range(week_start - Duration::days(7), week_start),
        ),
        (
            "上个礼拜",
            range(week_start - Duration::days(7), week_start),
        ),
        ("this week", up_to_now(week_start)),
        ("本周", up_to_now(week_start)),
        ("这周", up_to_now(week_start)),
        ("这个星期", up_to_now(week_start)),
        ("last month", range(add_months(this_month, -1), this_month)),
        (
            "previous month",
            range(add_months(this_month, -1), this_month),
        ),
        ("上个月", range(add_months(this_month, -1), this_month)),
        ("上月", range(add_months(this_month, -1), this_month)),
        ("this month", up_to_now(this_month)),
        ("本月", up_to_now(this_month)),
        ("这个月", up_to_now(this_month)),
        (
            "last year",
            range(
                NaiveDate::from_ymd_opt(today.year() - 1, 1, 1)?,
                NaiveDate::from_ymd_opt(today.year(), 1, 1)?,
            ),
        ),
        (
            "去年",
            range(
                NaiveDate::from_ymd_opt(today.year() - 1, 1, 1)?,
                NaiveDate::from_ymd_opt(today.year(), 1, 1)?,
            ),
        ),
    ];

    // Counted phrases: "N days ago", "past N days", "三天前", "最近三天", ...
    if let Some(r) = counted_en(&lower, today, now).or_else(|| counted_zh(text, today, now)) {
        return Some(r);
    }
    fixed
        .iter()
        .find(|(p, _)| lower.contains(p))
        .map(|(p, r)| (*r, (*p).to_owned()))
}

fn unit_days(unit: &str) -> Option<i64> {
    match unit.trim_end_matches('s') {
        "day" => Some(1),
        "week" => Some(7),
        "month" => Some(30),
        _ => None,
    }
}

fn counted_en(lower: &str, today: NaiveDate, now: DateTime<Utc>) -> Option<(TimeRange, String)> {
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    // The number at word `i`: its value and how many words it takes.
    let num = |i: usize| -> Option<(i64, usize)> {
        let rest = &words[i..];
        EN_NUMBER_PHRASES
            .iter()
            .find(|(p, _)| rest.starts_with(p))
            .map(|(p, v)| (*v, p.len()))
            .or_else(|| {
                let w = rest.first()?;
                w.parse::<i64>()
                    .ok()
                    .or_else(|| EN_NUMBERS.iter().find(|(n, _)| n == w).map(|(_, v)| *v))
                    .map(|v| (v, 1))
            })
    };
    let phrase = |from: usize, to: usize| words[from..to].join(" ");
    for i in 0..words.len() {
        // "<n> <unit> ago"
        if let Some((n, len)) = num(i)
            && i + len + 1 < words.len()
            && words[i + len + 1] == "ago"
            && let Some(u) = unit_days(words[i + len])
            && let Some(r) = ago_window(today, n, u)
        {
            return Some((r, phrase(i, i + len + 2)));
        }
        // "past|last <n> <unit>"
        if (words[i] == "past" || words[i] == "last")
            && i + 1 < words.len()
            && let Some((n, len)) = num(i + 1)
            && i + 1 + len < words.len()
            && let Some(u) = unit_days(words[i + 1 + len])
            && let Some(r) = since_window(today, now, n, u)
        {
            return Some((r, phrase(i, i + len + 2)));
        }
    }
    None
}

fn counted_zh(text: &str, today: NaiveDate, now: DateTime<Utc>) -> Option<(TimeRange, String)> {
    const UNITS: &[(&str, i64)] = &[
        ("个月", 30),
        ("个星期", 7),
        ("个礼拜", 7),
        ("星期", 7),
        ("周", 7),
        ("天", 1),
        ("日", 1),
    ];
    let is_num = |c: char| c.is_ascii_digit() || "零一二三四五六七八九十两".contains(c);
    // Byte offsets into `text`: each run of numerals is looked at once, with no copies of the
    // text around it (a query of many numbers stays linear).
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if !is_num(c) {
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(i, c)) = chars.peek()
            && is_num(c)
        {
            end = i + c.len_utf8();
            chars.next();
        }
        let num_str = &text[start..end];
        let rest = &text[end..];
        let Some(n) = parse_number(num_str) else {
            continue;
        };
        let Some((unit, u)) = UNITS.iter().find(|(u, _)| rest.starts_with(u)) else {
            continue;
        };
        let after = &rest[unit.len()..];
        let before = &text[..start];
        if after.starts_with("前") || after.starts_with("以前") {
            if let Some(r) = ago_window(today, n, *u) {
                return Some((r, format!("{num_str}{unit}前")));
            }
            continue;
        }
        if (before.ends_with("最近") || before.ends_with("过去") || before.ends_with("近"))
            && let Some(r) = since_window(today, now, n, *u)
        {
            return Some((r, format!("最近{num_str}{unit}")));
        }
    }
    None
}

/// The day `n` units of `unit_days` before `today`, if that is at most [`MAX_LOOKBACK_DAYS`]
/// back and chrono can hold it.
fn days_back(today: NaiveDate, n: i64, unit_days: i64) -> Option<NaiveDate> {
    let days = n
        .checked_mul(unit_days)
        .filter(|d| (0..=MAX_LOOKBACK_DAYS).contains(d))?;
    today.checked_sub_signed(Duration::try_days(days)?)
}

/// "N units ago": the day N days back for days, N units back ± half a unit otherwise.
fn ago_window(today: NaiveDate, n: i64, unit_days: i64) -> Option<TimeRange> {
    let centre = days_back(today, n, unit_days)?;
    let half = Duration::try_days(if unit_days == 1 { 0 } else { unit_days / 2 })?;
    Some(TimeRange {
        start: day_start(centre.checked_sub_signed(half)?),
        end: day_start(centre.checked_add_signed(half + Duration::days(1))?),
    })
}

/// "The past N units": from the day N units back up to `now`.
fn since_window(today: NaiveDate, now: DateTime<Utc>, n: i64, unit_days: i64) -> Option<TimeRange> {
    Some(TimeRange {
        start: day_start(days_back(today, n, unit_days)?),
        end: now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        // Wednesday 2026-03-18 15:00 UTC
        DateTime::parse_from_rfc3339("2026-03-18T15:00:00Z")
            .expect("valid")
            .to_utc()
    }

    fn d(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("valid").to_utc()
    }

    fn check_range(q: &str, start: &str, end: &str) {
        let (r, _) = parse_time_range(q, now()).unwrap_or_else(|| panic!("no range for {q:?}"));
        assert_eq!((r.start, r.end), (d(start), d(end)), "{q}");
    }

    #[test]
    fn directive_queries_ask_what_to_do() {
        for q in [
            "How should I handle a refund over 500?",
            "what's the policy on deleting customer data",
            "Do we need approval before a deploy?",
            "can I skip the confirmation step",
            "退款怎么处理",
            "删除数据需要审批吗？流程是什么",
        ] {
            assert!(asks_what_to_do(q), "{q}");
        }
        for q in [
            "When did Alice start going to the climbing gym?",
            "what happened to order 12345",
            "Who did Caroline meet at the support group?",
            "上周的迁移做了什么",
        ] {
            assert!(!asks_what_to_do(q), "{q}");
        }
    }

    #[test]
    fn past_references_in_both_languages() {
        for q in [
            "When did Caroline go to the LGBTQ support group?",
            "What book was Melanie reading?",
            "I recommended a science fiction movie before, what was it?",
            "What did I tell you on May 4th?",
            "我曾经和你推荐过一部科幻电影，它的名字是？",
            "在4月27号这天，我在公园跑了多久？",
            "上次部署出了什么问题",
        ] {
            assert!(refers_to_past(q), "{q}");
        }
        for q in [
            "What is Alice's favourite colour?",
            "Where does Jordan work now?",
            "How should I handle refunds?",
            "用户喜欢什么颜色",
            "order 12345 status",
        ] {
            assert!(!refers_to_past(q), "{q}");
        }
    }

    #[test]
    fn relative_times_en() {
        check_range(
            "what did we migrate last week?",
            "2026-03-09T00:00:00Z",
            "2026-03-16T00:00:00Z",
        );
        check_range(
            "yesterday's deploy",
            "2026-03-17T00:00:00Z",
            "2026-03-18T00:00:00Z",
        );
        check_range(
            "the incident 3 days ago",
            "2026-03-15T00:00:00Z",
            "2026-03-16T00:00:00Z",
        );
        check_range(
            "errors in the past two weeks",
            "2026-03-04T00:00:00Z",
            "2026-03-18T15:00:00Z",
        );
        check_range(
            "last month's invoices",
            "2026-02-01T00:00:00Z",
            "2026-03-01T00:00:00Z",
        );
    }

    #[test]
    fn number_phrases_of_several_words_count() {
        let now = d("2026-03-18T15:00:00Z");
        for (q, same_as, phrase) in [
            ("what broke a few days ago", "3 days ago", "a few days ago"),
            (
                "the outage a couple of weeks ago",
                "2 weeks ago",
                "a couple of weeks ago",
            ),
            (
                "errors in the past few days",
                "past 3 days",
                "past few days",
            ),
            (
                "deploys over the last couple of weeks",
                "last 2 weeks",
                "last couple of weeks",
            ),
            ("few weeks ago we moved", "3 weeks ago", "few weeks ago"),
        ] {
            let (got, said) = parse_time_range(q, now).unwrap_or_else(|| panic!("{q}: no window"));
            let (want, _) = parse_time_range(same_as, now).expect(same_as);
            assert_eq!((got.start, got.end), (want.start, want.end), "{q}");
            assert_eq!(said, phrase, "{q}");
        }
        // "a" alone still counts one.
        let (one, _) = parse_time_range("a week ago", now).expect("a week ago");
        let (want, _) = parse_time_range("1 week ago", now).expect("1 week ago");
        assert_eq!((one.start, one.end), (want.start, want.end));
    }

    #[test]
    fn relative_times_zh() {
        check_range(
            "上周的数据库迁移",
            "2026-03-09T00:00:00Z",
            "2026-03-16T00:00:00Z",
        );
        check_range("昨天的发布", "2026-03-17T00:00:00Z", "2026-03-18T00:00:00Z");
        check_range(
            "三天前的报错",
            "2026-03-15T00:00:00Z",
            "2026-03-16T00:00:00Z",
        );
        check_range(
            "最近7天的告警",
            "2026-03-11T00:00:00Z",
            "2026-03-18T15:00:00Z",
        );
        // three months ago: centre 2025-12-18 +- 15 days
        check_range(
            "三个月前的配置变更",
            "2025-12-03T00:00:00Z",
            "2026-01-03T00:00:00Z",
        );
        check_range(
            "上个月的退款",
            "2026-02-01T00:00:00Z",
            "2026-03-01T00:00:00Z",
        );
        assert!(parse_time_range("how do I reset a password", now()).is_none());
        assert!(parse_time_range("用户喜欢喝什么", now()).is_none());
    }

    #[test]
    fn identifiers() {
        assert_eq!(
            extract_identifiers("what happened with order #58213?"),
            ["58213"]
        );
        assert_eq!(
            extract_identifiers("status of ORD-58213 and PAY-1432"),
            ["ORD-58213", "58213", "PAY-1432", "1432"]
        );
        assert_eq!(extract_identifiers("订单58213的物流"), ["58213"]);
        assert!(extract_identifiers("in 2024 on 2024-05-01 at 12:30, top 10").is_empty());
        assert_eq!(extract_identifiers("restart db-prod-3 now"), ["db-prod-3"]);
    }

    #[test]
    fn failure_hint() {
        assert_eq!(
            understand("what went wrong when we upgraded postgres", now())
                .structured
                .kinds,
            [MemoryKind::Warning]
        );
        assert_eq!(
            understand("上次部署失败的原因", now()).structured.kinds,
            [MemoryKind::Warning]
        );
        assert!(
            understand("user's favourite drink", now())
                .structured
                .kinds
                .is_empty()
        );
    }

    #[test]
    fn counts_past_any_stored_time_are_not_times_and_do_not_panic() {
        for q in [
            "the incident 100000000 days ago",
            "errors in the past 99999999999 months",
            "9223372036854775807 weeks ago",
            "最近9999999999天的告警",
            "9223372036854775807个月前",
            "366001 days ago",
        ] {
            assert_eq!(parse_time_range(q, now()), None, "{q}");
        }
        // Far back, but a window all the same (nothing stored falls in it). Dates from Python's
        // proleptic Gregorian `date - timedelta`.
        check_range(
            "5000 months ago",
            "1615-06-26T00:00:00Z",
            "1615-07-27T00:00:00Z",
        );
        check_range(
            "最近366000天",
            "1024-02-20T00:00:00Z",
            "2026-03-18T15:00:00Z",
        );
    }

    #[test]
    fn relative_times_at_chronos_outermost_dates_do_not_panic() {
        for now in [DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC] {
            for q in [
                "yesterday",
                "3 days ago",
                "last year",
                "past 2 weeks",
                "三天前",
                "上个月",
            ] {
                assert_eq!(parse_time_range(q, now), None, "{q} at {now}");
            }
        }
    }

    #[test]
    fn identifiers_are_capped_and_deduplicated_case_insensitively() {
        let q: String = (0..100)
            .map(|i| format!("ORD-{:05} ", 10_000 + i))
            .collect();
        let ids = extract_identifiers(&q);
        assert_eq!(ids.len(), MAX_IDENTIFIERS);
        assert_eq!(ids[..4], ["ORD-10000", "10000", "ORD-10001", "10001"]);
        assert_eq!(
            extract_identifiers("ord-58213 ORD-58213 Ord-58213"),
            ["ord-58213", "58213"]
        );
    }

    proptest::proptest! {
        /// Any text of numerals, units and time words resolves to an ordered window or none,
        /// at any `now` chrono can hold.
        #[test]
        fn understanding_never_panics_and_windows_are_ordered(
            text in "([0-9]{1,25}|[一二三十两百]{1,4}|days?|weeks?|months?|ago|past|last|个月|星期|周|天|前|以前|最近|过去|ORD-[0-9]{1,8}| |年){0,12}",
            secs in i64::MIN / 2..i64::MAX / 2,
        ) {
            let now = DateTime::<Utc>::from_timestamp(secs / 1_000_000, 0)
                .unwrap_or(DateTime::<Utc>::MIN_UTC);
            let u = understand(&text, now);
            if let Some(r) = u.structured.time_range {
                proptest::prop_assert!(r.start <= r.end, "{text:?} at {now}: {r:?}");
            }
            proptest::prop_assert!(u.structured.identifiers.len() <= MAX_IDENTIFIERS);
        }
    }

    #[test]
    fn chinese_numbers() {
        assert_eq!(parse_number("十二"), Some(12));
        assert_eq!(parse_number("两"), Some(2));
        assert_eq!(parse_number("二十"), Some(20));
        assert_eq!(parse_number("三十一"), Some(31));
    }
}
