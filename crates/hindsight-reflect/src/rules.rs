//! Rule-based reflection: no model, deterministic, English and Chinese cue words.
//!
//! - [`classify_task`]: keyword votes per [`TaskType`]; goal words count three times as much as
//!   step words; no vote gives [`TaskType::Other`]; ties go to the earlier type in
//!   `Modify, Create, Analyze, Query` (a "find and fix" task is a modification).
//! - [`key_decisions`]: the steps that carry decision cues ("decided", "instead", "switched to",
//!   "改用", ...), strongest first, at most three, returned in trace order.
//! - [`failing_step`]: the last step with a failure cue ("error", "timed out", "失败", ...).
//! - [`lesson`]: one sentence from the outcome, the goal and the failing (or deciding) step,
//!   in Chinese when the goal is Chinese.

use hindsight_core::{Outcome, TaskType};

use crate::episode::{Episode, MAX_DECISIONS, TaskTrace, clip};

const QUERY: &[&str] = &[
    "find", "search", "look up", "lookup", "query", "check", "list", "get", "fetch", "retrieve",
    "show", "what", "which", "where", "who", "lookup", "查询", "查找", "搜索", "查看", "检索",
    "找出", "列出", "获取",
];
const MODIFY: &[&str] = &[
    "update", "change", "modify", "edit", "fix", "rename", "refactor", "migrate", "upgrade",
    "delete", "remove", "patch", "replace", "adjust", "correct", "修改", "更新", "更改", "修复",
    "删除", "调整", "迁移", "重构", "替换", "升级",
];
const CREATE: &[&str] = &[
    "create",
    "add",
    "write",
    "build",
    "generate",
    "implement",
    "make",
    "draft",
    "set up",
    "setup",
    "new",
    "compose",
    "创建",
    "新建",
    "添加",
    "编写",
    "生成",
    "实现",
    "搭建",
    "撰写",
];
const ANALYZE: &[&str] = &[
    "analyze",
    "analyse",
    "investigate",
    "compare",
    "evaluate",
    "debug",
    "diagnose",
    "why",
    "review",
    "assess",
    "measure",
    "profile",
    "explain",
    "summarize",
    "summarise",
    "分析",
    "调查",
    "比较",
    "评估",
    "诊断",
    "排查",
    "为什么",
    "审查",
    "总结",
    "对比",
];

const DECISION_CUES: &[&str] = &[
    "decided",
    "decide",
    "chose",
    "choose",
    "chosen",
    "instead",
    "switched",
    "switch to",
    "opted",
    "picked",
    "selected",
    "rather than",
    "prefer",
    "preferred",
    "fell back",
    "fallback",
    "fall back",
    "retried",
    "retry",
    "rolled back",
    "roll back",
    "because",
    "so that",
    "went with",
    "决定",
    "选择",
    "改用",
    "换成",
    "采用",
    "而不是",
    "回退",
    "放弃",
    "因为",
    "改为",
    "重试",
];

const FAILURE_CUES: &[&str] = &[
    "fail",
    "failed",
    "fails",
    "failure",
    "error",
    "errors",
    "exception",
    "timeout",
    "timed out",
    "denied",
    "refused",
    "crash",
    "crashed",
    "not found",
    "invalid",
    "rejected",
    "broken",
    "panic",
    "cannot",
    "can't",
    "unable",
    "失败",
    "错误",
    "异常",
    "超时",
    "拒绝",
    "崩溃",
    "无法",
    "找不到",
    "报错",
    "不存在",
];

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}')
}

/// True when the text is mostly Chinese (more CJK characters than ASCII letters).
pub fn is_chinese(text: &str) -> bool {
    let cjk = text.chars().filter(|c| is_cjk(*c)).count();
    let latin = text.chars().filter(char::is_ascii_alphabetic).count();
    cjk > 0 && cjk * 2 >= latin
}

/// Lowercase words of the text (ASCII-alphanumeric runs plus apostrophes).
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// How many times the cue occurs: Chinese cues as substrings, English cues as whole words or
/// word sequences.
fn count_cue(text_lower: &str, text_words: &[String], cue: &str) -> usize {
    if cue.chars().any(is_cjk) {
        return text_lower.matches(cue).count();
    }
    let cue_words: Vec<&str> = cue.split(' ').collect();
    if cue_words.len() == 1 {
        return text_words.iter().filter(|w| w.as_str() == cue).count();
    }
    text_words
        .windows(cue_words.len())
        .filter(|win| win.iter().zip(&cue_words).all(|(a, b)| a == b))
        .count()
}

fn cue_score(text: &str, cues: &[&str]) -> usize {
    let lower = text.to_lowercase();
    let ws = words(text);
    cues.iter().map(|c| count_cue(&lower, &ws, c)).sum()
}

/// The task type of a trace from keyword votes (see the module docs).
pub fn classify_task(goal: &str, steps: &[String]) -> TaskType {
    let table = [
        (TaskType::Modify, MODIFY),
        (TaskType::Create, CREATE),
        (TaskType::Analyze, ANALYZE),
        (TaskType::Query, QUERY),
    ];
    let mut best = (0usize, TaskType::Other);
    for (tt, cues) in table {
        let score =
            3 * cue_score(goal, cues) + steps.iter().map(|s| cue_score(s, cues)).sum::<usize>();
        if score > best.0 {
            best = (score, tt);
        }
    }
    best.1
}

/// Up to three steps that record a decision, in trace order (see the module docs).
pub fn key_decisions(steps: &[String]) -> Vec<String> {
    let mut scored: Vec<(usize, usize)> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| (cue_score(s, DECISION_CUES), i))
        .filter(|(score, _)| *score > 0)
        .collect();
    // strongest first, earlier step on ties; then keep the top three in trace order
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut keep: Vec<usize> = scored.iter().take(MAX_DECISIONS).map(|(_, i)| *i).collect();
    keep.sort_unstable();
    keep.into_iter().map(|i| clip(&steps[i], 200)).collect()
}

/// The last step with a failure cue.
pub fn failing_step(steps: &[String]) -> Option<&str> {
    steps
        .iter()
        .rev()
        .find(|s| cue_score(s, FAILURE_CUES) > 0)
        .map(String::as_str)
}

/// One lesson sentence (see the module docs).
pub fn lesson(trace: &TaskTrace, decisions: &[String]) -> String {
    let goal = clip(&trace.goal, 160);
    let last = trace.steps.last().map(|s| clip(s, 160));
    let failing = failing_step(&trace.steps).map(|s| clip(s, 160));
    let zh = is_chinese(&trace.goal);
    // What worked: the first key decision, else the last step that reports no failure (a
    // success can end on a logged error that was worked around).
    let last_ok = trace
        .steps
        .iter()
        .rev()
        .find(|s| cue_score(s, FAILURE_CUES) == 0)
        .map(|s| clip(s, 160));
    let what_worked = decisions.first().cloned().or(last_ok);
    match (trace.outcome, zh) {
        (Outcome::Success, false) => match what_worked {
            Some(w) => format!("To {goal}, this worked: {w}. Reuse the approach."),
            None => format!("{goal} succeeded; reuse the same approach."),
        },
        (Outcome::Success, true) => match what_worked {
            Some(w) => format!("完成「{goal}」的有效做法：{w}。可复用此方法。"),
            None => format!("「{goal}」已成功完成，可复用同样的方法。"),
        },
        (Outcome::Partial, false) => {
            let at = failing
                .or(last)
                .unwrap_or_else(|| "an unrecorded step".into());
            format!(
                "{goal} was only partly done; it stopped at: {at}. Finish or verify that step next time."
            )
        }
        (Outcome::Partial, true) => {
            let at = failing.or(last).unwrap_or_else(|| "未记录的步骤".into());
            format!("「{goal}」只完成了一部分，停在：{at}。下次先完成或核实这一步。")
        }
        (Outcome::Failure, false) => match failing.or(last) {
            Some(at) => format!(
                "{goal} failed at: {at}. Do not repeat this approach without fixing that cause first."
            ),
            None => {
                format!("{goal} failed with no recorded steps; find the cause before retrying.")
            }
        },
        (Outcome::Failure, true) => match failing.or(last) {
            Some(at) => {
                format!("「{goal}」失败，出错步骤：{at}。先排除该原因，不要重复同样的做法。")
            }
            None => format!("「{goal}」失败且没有记录步骤，重试前先查明原因。"),
        },
        (Outcome::Aborted, false) => {
            let n = trace.steps.len();
            match last {
                Some(at) => format!(
                    "{goal} was aborted after {n} step(s), last: {at}. Check the preconditions before starting again."
                ),
                None => format!(
                    "{goal} was aborted before any step; check the preconditions before starting again."
                ),
            }
        }
        (Outcome::Aborted, true) => {
            let n = trace.steps.len();
            match last {
                Some(at) => format!(
                    "「{goal}」在第 {n} 步后中止，最后一步：{at}。重新开始前先检查前提条件。"
                ),
                None => format!("「{goal}」在开始前就中止了，重新开始前先检查前提条件。"),
            }
        }
    }
}

/// The rule-based reflection of a trace.
pub fn reflect(trace: &TaskTrace) -> Episode {
    let key_decisions = key_decisions(&trace.steps);
    let lesson = lesson(trace, &key_decisions);
    Episode {
        task_type: classify_task(&trace.goal, &trace.steps),
        outcome: trace.outcome,
        key_decisions,
        lesson,
        entities: trace.entities.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn steps(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| (*x).to_owned()).collect()
    }

    fn check_type(goal: &str, st: &[&str], expect: TaskType) {
        assert_eq!(classify_task(goal, &steps(st)), expect, "goal {goal:?}");
    }

    #[test]
    fn classifies_english_and_chinese_goals() {
        check_type(
            "Find the refund policy for order ORD-1",
            &[],
            TaskType::Query,
        );
        check_type(
            "Fix the failing CI job",
            &["looked at logs"],
            TaskType::Modify,
        );
        check_type("Write a release note for v2", &[], TaskType::Create);
        check_type("Investigate why latency doubled", &[], TaskType::Analyze);
        check_type("查询订单 12345 的物流状态", &[], TaskType::Query);
        check_type("修改数据库连接池配置", &[], TaskType::Modify);
        check_type("新建一个用户报表", &[], TaskType::Create);
        check_type("分析上周的错误日志", &[], TaskType::Analyze);
        check_type("hello there", &["ok"], TaskType::Other);
        // "lookup" inside "lookups" is not a whole word; "setup" as a word is
        check_type("prepare lookups", &[], TaskType::Other);
    }

    #[test]
    fn a_success_lesson_does_not_recommend_a_failed_step() {
        let trace = TaskTrace {
            goal: "Pay the supplier invoice".into(),
            steps: steps(&[
                "opened the invoice",
                "paid through the backup gateway",
                "Error: 502 Bad Gateway from payments-gw (logged, retried elsewhere)",
            ]),
            outcome: Outcome::Success,
            entities: BTreeMap::new(),
        };
        let l = lesson(&trace, &[]);
        assert!(l.contains("backup gateway"), "{l}");
        assert!(!l.contains("502"), "{l}");
    }

    #[test]
    fn goal_outweighs_steps_and_ties_prefer_modify() {
        // goal says create (3 votes) vs two query steps (2 votes)
        check_type(
            "Create a dashboard",
            &["search docs", "list widgets"],
            TaskType::Create,
        );
        check_type("find and fix the typo", &[], TaskType::Modify);
    }

    #[test]
    fn picks_at_most_three_decisions_in_trace_order() {
        let st = steps(&[
            "read the config",
            "decided to use the replica because the primary was overloaded",
            "ran the query",
            "switched to batch mode instead of streaming",
            "chose UTC timestamps",
            "retried once",
            "done",
        ]);
        let d = key_decisions(&st);
        assert_eq!(d.len(), 3, "{d:?}");
        // the two strongest (2 cues each) plus the earliest 1-cue step, in trace order
        assert_eq!(
            d,
            steps(&[
                "decided to use the replica because the primary was overloaded",
                "switched to batch mode instead of streaming",
                "chose UTC timestamps",
            ])
        );
        assert!(key_decisions(&steps(&["ran it", "looked"])).is_empty());
        assert_eq!(
            key_decisions(&steps(&["先查日志", "改用备用接口"])),
            steps(&["改用备用接口"])
        );
    }

    #[test]
    fn lesson_names_the_last_failing_step() {
        let trace = TaskTrace {
            goal: "Migrate the orders table".into(),
            steps: steps(&[
                "dumped the table",
                "migration failed: lock timeout",
                "retried with smaller batches",
                "ALTER TABLE error: column exists",
                "gave up",
            ]),
            outcome: Outcome::Failure,
            entities: BTreeMap::new(),
        };
        let e = reflect(&trace);
        assert_eq!(e.task_type, TaskType::Modify);
        assert_eq!(e.outcome, Outcome::Failure);
        assert!(
            e.lesson.contains("ALTER TABLE error: column exists") && e.lesson.contains("failed at"),
            "{}",
            e.lesson
        );
        assert_eq!(e.key_decisions, steps(&["retried with smaller batches"]));
    }

    #[test]
    fn chinese_goal_gets_chinese_lesson() {
        let trace = TaskTrace {
            goal: "修复支付回调".into(),
            steps: steps(&["检查日志", "回调接口超时"]),
            outcome: Outcome::Failure,
            entities: BTreeMap::new(),
        };
        let l = reflect(&trace).lesson;
        assert!(l.contains("失败") && l.contains("回调接口超时"), "{l}");
    }

    #[test]
    fn success_lesson_reuses_the_decision() {
        let trace = TaskTrace {
            goal: "Speed up the nightly export".into(),
            steps: steps(&["profiled", "switched to parallel uploads", "verified"]),
            outcome: Outcome::Success,
            entities: BTreeMap::new(),
        };
        let l = reflect(&trace).lesson;
        assert!(
            l.contains("switched to parallel uploads") && l.contains("worked"),
            "{l}"
        );
        let aborted = TaskTrace {
            outcome: Outcome::Aborted,
            steps: vec![],
            ..trace
        };
        assert!(reflect(&aborted).lesson.contains("aborted before any step"));
    }
}
