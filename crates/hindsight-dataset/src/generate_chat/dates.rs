//! Relative and absolute date phrases ("last weekend", "上周六", "on March 3rd") and the calendar
//! day each one resolves to, given the day it is said on.
//!
//! Conventions (the same ones `datasets/FORMAT.md` uses for queries): days are UTC calendar days,
//! weeks run Monday to Sunday, "last <weekday>" / "上周X" is that weekday in the previous
//! calendar week, "last weekend" / "上周末" is the previous week's Saturday (and Sunday),
//! "next <weekday>" / "下周X" that weekday in the following week.

use chrono::{Datelike, Duration, NaiveDate, Weekday};

use super::Gen;
use super::lex::Lang;

const WEEKDAYS_EN: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const WEEKDAYS_ZH: [&str; 7] = ["一", "二", "三", "四", "五", "六", "日"];
const MONTHS_EN: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, x) if x != 11 => "st",
        (2, x) if x != 12 => "nd",
        (3, x) if x != 13 => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn monday(day: NaiveDate) -> NaiveDate {
    day - Duration::days(day.weekday().num_days_from_monday() as i64)
}

fn month_start(day: NaiveDate) -> NaiveDate {
    day.with_day(1).unwrap_or(day)
}

fn explicit(lang: Lang, d: NaiveDate) -> String {
    match lang {
        Lang::Zh => format!("{}月{}号", d.month(), d.day()),
        Lang::En => format!("on {} {}", MONTHS_EN[d.month0() as usize], ordinal(d.day())),
    }
}

/// A phrase for a day at least `min_back` days before `day` (a trip must be over before it is
/// told), strictly after `after` when given (the previous session, so news since the last chat
/// did happen since then).
pub(crate) fn past(
    lang: Lang,
    g: &mut Gen,
    day: NaiveDate,
    after: Option<NaiveDate>,
    min_back: i64,
) -> (String, NaiveDate) {
    let zh = lang == Lang::Zh;
    let latest = day - Duration::days(min_back.max(1));
    let mut cands: Vec<(u32, String, NaiveDate)> = Vec::new();
    let mut add = |w: u32, en: String, zh_text: String, d: NaiveDate| {
        if d <= latest && after.is_none_or(|a| d > a) {
            cands.push((w, if zh { zh_text } else { en }, d));
        }
    };
    add(
        3,
        "yesterday".into(),
        "昨天".into(),
        day - Duration::days(1),
    );
    add(
        2,
        "the day before yesterday".into(),
        "前天".into(),
        day - Duration::days(2),
    );
    add(
        1,
        "three days ago".into(),
        "大前天".into(),
        day - Duration::days(3),
    );
    let wd = g.below(7);
    let last_week = monday(day) - Duration::days(7);
    add(
        2,
        format!("last {}", WEEKDAYS_EN[wd]),
        format!("上周{}", WEEKDAYS_ZH[wd]),
        last_week + Duration::days(wd as i64),
    );
    add(
        2,
        "last weekend".into(),
        "上周末".into(),
        last_week + Duration::days(5),
    );
    add(
        1,
        "two weeks ago".into(),
        "两周前".into(),
        day - Duration::days(14),
    );
    if day.day() > 4 {
        let n = day.day() - 1 - g.below((day.day() - 2).min(12) as usize) as u32;
        if let Some(d) = day.with_day(n) {
            add(1, format!("on the {}", ordinal(n)), format!("{n}号"), d);
        }
    }
    let back = 4 + g.below(24) as i64;
    let d = day - Duration::days(back);
    add(2, explicit(Lang::En, d), explicit(Lang::Zh, d), d);
    let prev_month_end = month_start(day) - Duration::days(1);
    let prev_month = month_start(prev_month_end);
    let span = (prev_month_end - prev_month).num_days() as usize + 1;
    let d = prev_month + Duration::days(g.below(span) as i64);
    add(1, "last month".into(), "上个月".into(), d);

    let total: u32 = cands.iter().map(|c| c.0).sum();
    let mut r = g.below(total.max(1) as usize) as u32;
    for (w, text, d) in cands {
        if r < w {
            return (text, d);
        }
        r -= w;
    }
    (explicit(lang, latest), latest)
}

/// A phrase for a day after `day`, strictly before `before` (the next session). `None` when
/// there is no room.
pub(crate) fn future(
    lang: Lang,
    g: &mut Gen,
    day: NaiveDate,
    before: Option<NaiveDate>,
) -> Option<(String, NaiveDate)> {
    let before = before?;
    let zh = lang == Lang::Zh;
    let mut cands: Vec<(u32, String, NaiveDate)> = Vec::new();
    let mut add = |w: u32, en: String, zh_text: String, d: NaiveDate| {
        if d > day && d < before {
            cands.push((w, if zh { zh_text } else { en }, d));
        }
    };
    add(2, "tomorrow".into(), "明天".into(), day + Duration::days(1));
    add(
        1,
        "the day after tomorrow".into(),
        "后天".into(),
        day + Duration::days(2),
    );
    let wd = g.below(7);
    let next_week = monday(day) + Duration::days(7);
    add(
        3,
        format!("next {}", WEEKDAYS_EN[wd]),
        format!("下周{}", WEEKDAYS_ZH[wd]),
        next_week + Duration::days(wd as i64),
    );
    if day.weekday().num_days_from_monday() < Weekday::Fri.num_days_from_monday() {
        add(
            1,
            "this Saturday".into(),
            "这周六".into(),
            monday(day) + Duration::days(5),
        );
    }
    let n = day.day() + 3 + g.below(10) as u32;
    if let Some(d) = day.with_day(n) {
        add(1, format!("on the {}", ordinal(n)), format!("{n}号"), d);
    }
    let total: u32 = cands.iter().map(|c| c.0).sum();
    if total == 0 {
        return None;
    }
    let mut r = g.below(total as usize) as u32;
    for (w, text, d) in cands {
        if r < w {
            return Some((text, d));
        }
        r -= w;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 31]
            .iter()
            .map(|n| ordinal(*n))
            .collect();
        assert_eq!(
            got,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "31st"
            ]
        );
    }

    #[test]
    fn phrases_resolve_against_the_day_said() {
        let mut g = Gen::new(1);
        // Wednesday 2024-05-15.
        let day = NaiveDate::from_ymd_opt(2024, 5, 15).expect("date");
        for _ in 0..200 {
            let (p, d) = past(Lang::En, &mut g, day, None, 1);
            assert!(d < day, "{p} -> {d}");
            match p.as_str() {
                "yesterday" => assert_eq!(d.day(), 14),
                "last weekend" => assert_eq!(d, NaiveDate::from_ymd_opt(2024, 5, 11).expect("d")),
                "two weeks ago" => assert_eq!(d.day(), 1),
                "last month" => assert_eq!(d.month(), 4),
                _ => {}
            }
            let next = NaiveDate::from_ymd_opt(2024, 6, 1).expect("date");
            if let Some((p, d)) = future(Lang::Zh, &mut g, day, Some(next)) {
                assert!(d > day && d < next, "{p} -> {d}");
                if p == "这周六" {
                    assert_eq!(d.day(), 18);
                }
            }
        }
    }
}
