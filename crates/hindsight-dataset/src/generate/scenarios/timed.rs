//! `time-scoped` queries over topic pools (deploys, migrations, releases, escalations, expenses).
//! Relevance is a predicate over every memory of the pool: created inside the window the query
//! names, relative to its `now`. Pool members just outside the window are judged 0.

use chrono::{DateTime, Datelike, Duration, Utc};
use hindsight_core::{MemoryKind, Outcome, Source, TaskType};

use super::super::pools::{self, Pair};
use super::super::{
    Gen, Lang, MemSpec, NS_CODE, NS_CS, NS_OPS, NS_PA, cutoff, day, period_start, week_start,
};
use super::one;

/// A calendar window relative to the query time (UTC, weeks start on Monday).
#[derive(Clone, Copy, Debug)]
enum Window {
    Yesterday,
    DayBefore,
    Past3Days,
    LastWeek,
    WeekBeforeLast,
    ThisMonth,
    LastMonth,
    Month(u32),
    Date(u32, u32),
}

impl Window {
    fn range(self, now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
        let today = day(now.year(), now.month(), now.day());
        let month_start = day(now.year(), now.month(), 1);
        let prev_month = if now.month() == 1 {
            day(now.year() - 1, 12, 1)
        } else {
            day(now.year(), now.month() - 1, 1)
        };
        match self {
            Window::Yesterday => (today - Duration::days(1), today),
            Window::DayBefore => (today - Duration::days(2), today - Duration::days(1)),
            Window::Past3Days => (today - Duration::days(3), now),
            Window::LastWeek => (week_start(now) - Duration::days(7), week_start(now)),
            Window::WeekBeforeLast => (
                week_start(now) - Duration::days(14),
                week_start(now) - Duration::days(7),
            ),
            Window::ThisMonth => (month_start, now),
            Window::LastMonth => (prev_month, month_start),
            Window::Month(m) => {
                let y = if m <= now.month() {
                    now.year()
                } else {
                    now.year() - 1
                };
                let end = if m == 12 {
                    day(y + 1, 1, 1)
                } else {
                    day(y, m + 1, 1)
                };
                (day(y, m, 1), end)
            }
            Window::Date(m, d) => {
                let start = day(2025, m, d);
                (start, start + Duration::days(1))
            }
        }
    }

    fn phrase(self, lang: Lang) -> String {
        const MONTHS: [&str; 12] = [
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
        match (self, lang) {
            (Window::Yesterday, Lang::En) => "yesterday".into(),
            (Window::Yesterday, Lang::Zh) => "昨天".into(),
            (Window::DayBefore, Lang::En) => "the day before yesterday".into(),
            (Window::DayBefore, Lang::Zh) => "前天".into(),
            (Window::Past3Days, Lang::En) => "in the past 3 days".into(),
            (Window::Past3Days, Lang::Zh) => "最近三天".into(),
            (Window::LastWeek, Lang::En) => "last week".into(),
            (Window::LastWeek, Lang::Zh) => "上周".into(),
            (Window::WeekBeforeLast, Lang::En) => "the week before last".into(),
            (Window::WeekBeforeLast, Lang::Zh) => "上上周".into(),
            (Window::ThisMonth, Lang::En) => "this month".into(),
            (Window::ThisMonth, Lang::Zh) => "这个月".into(),
            (Window::LastMonth, Lang::En) => "last month".into(),
            (Window::LastMonth, Lang::Zh) => "上个月".into(),
            (Window::Month(m), Lang::En) => format!("in {}", MONTHS[(m as usize).clamp(1, 12) - 1]),
            (Window::Month(m), Lang::Zh) => format!("{m}月份"),
            (Window::Date(m, d), Lang::En) => {
                format!("on {} {d}", MONTHS[(m as usize).clamp(1, 12) - 1])
            }
            (Window::Date(m, d), Lang::Zh) => format!("{m}月{d}日"),
        }
    }
}

/// One topic pool: how dense it is and how its members and queries read.
struct Pool {
    ns: &'static str,
    topic: &'static str,
    /// Expected members per day before / during the last five weeks.
    rate_early: f64,
    rate_recent: f64,
    member: fn(&mut Gen, Lang) -> (String, MemSpecExtras),
    query: fn(&mut Gen, Lang, &str) -> String,
    windows: &'static [Window],
    /// Windows asked a second time in the other language.
    twice: &'static [usize],
}

#[derive(Default)]
struct MemSpecExtras {
    kind: Option<MemoryKind>,
    tags: Vec<&'static str>,
    entities: Vec<(&'static str, String)>,
    task: Option<(TaskType, Outcome)>,
}

const MIGRATIONS: &[Pair] = &[
    (
        "added an index on orders(created_at)",
        "给 orders(created_at) 加索引",
    ),
    (
        "added the refund_reason column to refunds",
        "refunds 表新增 refund_reason 字段",
    ),
    (
        "backfilled user_region for 2.1M users",
        "为 210 万用户回填 user_region",
    ),
    (
        "dropped the unused legacy_coupons table",
        "删除了无用的 legacy_coupons 表",
    ),
    ("partitioned the events table by month", "events 表按月分区"),
    ("widened sku to varchar(64)", "sku 字段扩到 varchar(64)"),
    (
        "added a unique constraint on (merchant_id, external_ref)",
        "加了 (merchant_id, external_ref) 唯一约束",
    ),
    (
        "split address into province/city/district columns",
        "地址拆成省/市/区三列",
    ),
    (
        "converted amount columns from float to decimal(12,2)",
        "金额字段从 float 改为 decimal(12,2)",
    ),
    ("created the audit_log table", "新建 audit_log 表"),
];

fn migration(g: &mut Gen, lang: Lang) -> (String, MemSpecExtras) {
    let cluster = *g.pick(&[
        "orders-pg",
        "ledger-pg",
        "users-mysql",
        "catalog-pg",
        "billing-pg",
        "audit-pg",
    ]);
    let change = *g.pick(MIGRATIONS);
    let id = format!("V{}", g.range(100, 999));
    let m = g.range(1, 45);
    let text = match (lang, g.below(2)) {
        (Lang::En, 0) => format!(
            "Ran database migration {id} on {cluster}: {}. Took {m} min, no errors.",
            change.0
        ),
        (Lang::En, _) => format!(
            "DB migration on {cluster} done ({id}): {}; replication lag peaked at {}s.",
            change.0,
            g.range(1, 30)
        ),
        (Lang::Zh, 0) => format!(
            "数据库迁移 {id} 已在 {cluster} 执行：{}，耗时 {m} 分钟，无报错。",
            change.1
        ),
        (Lang::Zh, _) => format!(
            "{cluster} 完成数据库迁移（{id}）：{}，主从延迟最高 {} 秒。",
            change.1,
            g.range(1, 30)
        ),
    };
    (
        text,
        MemSpecExtras {
            tags: vec!["database", "migration"],
            entities: vec![("cluster", cluster.to_owned()), ("migration", id)],
            task: Some((TaskType::Modify, Outcome::Success)),
            ..Default::default()
        },
    )
}

fn migration_q(g: &mut Gen, lang: Lang, w: &str) -> String {
    match lang {
        Lang::En => one(
            g,
            vec![
                format!("What database migrations ran {w}?"),
                format!("list the DB migrations from {w}"),
                format!("{w}: which schema migrations did we run?"),
            ],
        ),
        Lang::Zh => one(
            g,
            vec![
                format!("{w}做了哪些数据库迁移？"),
                format!("{w}的数据库迁移"),
                format!("查一下{w}执行过的数据库迁移"),
            ],
        ),
    }
}

fn deploy(g: &mut Gen, lang: Lang) -> (String, MemSpecExtras) {
    let svc = *g.pick(pools::SERVICES);
    let v = pools::version(g);
    let pct = *g.pick(&[5u32, 10, 20]);
    let rolled_back = g.chance(0.12);
    let text = match (lang, rolled_back) {
        (Lang::En, false) => {
            format!("Deployed {svc} {v} to production ({pct}% canary, then 100%).")
        }
        (Lang::En, true) => format!(
            "Deployed {svc} {v} to production; rolled back after the error rate doubled in the {pct}% canary."
        ),
        (Lang::Zh, false) => format!("{svc} {v} 已部署到生产环境（先灰度 {pct}%，后全量）。"),
        (Lang::Zh, true) => format!("{svc} {v} 部署到生产环境，灰度 {pct}% 时错误率翻倍，已回滚。"),
    };
    let outcome = if rolled_back {
        Outcome::Failure
    } else {
        Outcome::Success
    };
    (
        text,
        MemSpecExtras {
            tags: vec!["deploy"],
            entities: vec![("service", svc.to_owned()), ("version", v)],
            task: Some((TaskType::Modify, outcome)),
            ..Default::default()
        },
    )
}

fn deploy_q(g: &mut Gen, lang: Lang, w: &str) -> String {
    match lang {
        Lang::En => one(
            g,
            vec![
                format!("what got deployed {w}?"),
                format!("Which services did we deploy to prod {w}?"),
                format!("deploys {w}"),
            ],
        ),
        Lang::Zh => one(
            g,
            vec![
                format!("{w}都部署了哪些服务？"),
                format!("{w}生产环境的部署记录"),
                format!("{w}上线了什么"),
            ],
        ),
    }
}

fn release(g: &mut Gen, lang: Lang) -> (String, MemSpecExtras) {
    let app = *g.pick(&[
        ("iOS app", "iOS 客户端"),
        ("Android app", "安卓客户端"),
        ("mini-program", "小程序"),
        ("merchant portal", "商家后台"),
    ]);
    let v = pools::version(g);
    let note = *g.pick(&[
        ("a redesigned cart", "购物车改版"),
        ("faster image loading", "图片加载提速"),
        ("Apple Pay support", "支持 Apple Pay"),
        ("bug fixes only", "只有问题修复"),
        ("a new coupon center", "新增领券中心"),
        ("accessibility fixes", "无障碍优化"),
    ]);
    let text = match lang {
        Lang::En => format!("Shipped {} version {v} to users with {}.", app.0, note.0),
        Lang::Zh => format!("{} {v} 版本已发布给用户，内容：{}。", app.1, note.1),
    };
    (
        text,
        MemSpecExtras {
            tags: vec!["app-release"],
            entities: vec![("app", app.0.to_owned()), ("version", v)],
            task: Some((TaskType::Create, Outcome::Success)),
            ..Default::default()
        },
    )
}

fn release_q(g: &mut Gen, lang: Lang, w: &str) -> String {
    match lang {
        Lang::En => one(
            g,
            vec![
                format!("which app versions did we ship {w}?"),
                format!("App releases {w}?"),
            ],
        ),
        Lang::Zh => one(
            g,
            vec![
                format!("{w}发了哪些 App 版本？"),
                format!("{w}的客户端版本发布"),
            ],
        ),
    }
}

fn escalation(g: &mut Gen, lang: Lang) -> (String, MemSpecExtras) {
    let name = pools::person(g, lang);
    let oid = pools::order_id(g);
    let reason = *g.pick(&[
        (
            "the customer threatened to file a complaint with the consumer association",
            "客户扬言要向消协投诉",
        ),
        (
            "the refund exceeded the agent's approval limit",
            "退款金额超出客服审批权限",
        ),
        (
            "the customer asked for compensation beyond policy",
            "客户要求超出政策的赔偿",
        ),
        ("a suspected fraud pattern on the account", "账户疑似欺诈"),
        (
            "a media inquiry about the product recall",
            "媒体询问产品召回",
        ),
    ]);
    let text = match lang {
        Lang::En => format!(
            "Escalated {name}'s case (order {oid}) to a supervisor: {}.",
            reason.0
        ),
        Lang::Zh => format!("已将{name}的工单（订单{oid}）升级给主管：{}。", reason.1),
    };
    (
        text,
        MemSpecExtras {
            tags: vec!["escalation"],
            entities: vec![("order_id", oid)],
            task: Some((TaskType::Other, Outcome::Partial)),
            ..Default::default()
        },
    )
}

fn escalation_q(g: &mut Gen, lang: Lang, w: &str) -> String {
    match lang {
        Lang::En => one(
            g,
            vec![
                format!("which cases were escalated to a supervisor {w}?"),
                format!("escalations {w}"),
            ],
        ),
        Lang::Zh => one(
            g,
            vec![
                format!("{w}有哪些升级给主管的工单？"),
                format!("{w}升级处理的投诉有哪些"),
            ],
        ),
    }
}

fn expense(g: &mut Gen, lang: Lang) -> (String, MemSpecExtras) {
    let item = *g.pick(&[
        ("groceries", "买菜"),
        ("dinner with friends", "和朋友吃饭"),
        ("a taxi to the airport", "打车去机场"),
        ("movie tickets", "电影票"),
        ("a haircut", "理发"),
        ("the electricity bill", "电费"),
        ("a new phone charger", "新的手机充电器"),
        ("cat food", "猫粮"),
        ("a birthday cake", "生日蛋糕"),
        ("books", "买书"),
    ]);
    let shop = *g.pick(&[
        ("Hema", "盒马"),
        ("Meituan", "美团"),
        ("Didi", "滴滴"),
        ("Taobao", "淘宝"),
        ("the corner shop", "楼下小卖部"),
        ("JD.com", "京东"),
    ]);
    let amt = g.range(15, 680);
    let text = match lang {
        Lang::En => format!("Paid ¥{amt} for {} via {}.", item.0, shop.0),
        Lang::Zh => format!("在{}花了 {amt} 元：{}。", shop.1, item.1),
    };
    (
        text,
        MemSpecExtras {
            kind: Some(MemoryKind::Episodic),
            tags: vec!["expense"],
            entities: vec![("amount", amt.to_string())],
            ..Default::default()
        },
    )
}

fn expense_q(g: &mut Gen, lang: Lang, w: &str) -> String {
    match lang {
        Lang::En => one(
            g,
            vec![
                format!("what did I spend money on {w}?"),
                format!("my expenses {w}"),
            ],
        ),
        Lang::Zh => one(
            g,
            vec![format!("{w}我都花钱买了什么？"), format!("{w}的开销")],
        ),
    }
}

const POOLS: &[Pool] = &[
    Pool {
        ns: NS_OPS,
        topic: "db-migration",
        rate_early: 0.25,
        rate_recent: 0.3,
        member: migration,
        query: migration_q,
        windows: &[
            Window::LastWeek,
            Window::WeekBeforeLast,
            Window::ThisMonth,
            Window::LastMonth,
            Window::Month(10),
            Window::Month(9),
            Window::Month(8),
            Window::Date(12, 3),
            Window::Date(11, 18),
        ],
        twice: &[0, 1, 3],
    },
    Pool {
        ns: NS_OPS,
        topic: "deploy",
        rate_early: 0.4,
        rate_recent: 1.4,
        member: deploy,
        query: deploy_q,
        windows: &[
            Window::Yesterday,
            Window::DayBefore,
            Window::Past3Days,
            Window::LastWeek,
            Window::Date(12, 10),
            Window::Date(12, 4),
            Window::Date(11, 27),
        ],
        twice: &[0, 3],
    },
    Pool {
        ns: NS_CODE,
        topic: "app-release",
        rate_early: 0.18,
        rate_recent: 0.25,
        member: release,
        query: release_q,
        windows: &[
            Window::LastMonth,
            Window::ThisMonth,
            Window::Month(10),
            Window::Month(9),
            Window::WeekBeforeLast,
            Window::Month(7),
        ],
        twice: &[0, 1],
    },
    Pool {
        ns: NS_CS,
        topic: "escalation",
        rate_early: 0.25,
        rate_recent: 0.35,
        member: escalation,
        query: escalation_q,
        windows: &[
            Window::LastWeek,
            Window::WeekBeforeLast,
            Window::Past3Days,
            Window::Yesterday,
            Window::LastMonth,
            Window::Month(10),
        ],
        twice: &[0, 2],
    },
    Pool {
        ns: NS_PA,
        topic: "expense",
        rate_early: 0.4,
        rate_recent: 0.6,
        member: expense,
        query: expense_q,
        windows: &[
            Window::Yesterday,
            Window::LastWeek,
            Window::Past3Days,
            Window::WeekBeforeLast,
            Window::Date(12, 13),
            Window::Date(12, 6),
        ],
        twice: &[1],
    },
];

pub(crate) fn all(g: &mut Gen) {
    for pool in POOLS {
        run_pool(g, pool);
    }
}

fn add_member(g: &mut Gen, pool: &Pool, at: DateTime<Utc>) -> usize {
    let lang = g.lang(0.5);
    let (text, extra) = (pool.member)(g, lang);
    let imp = g.importance(3, 6);
    let src = if pool.ns == NS_PA {
        Source::User
    } else {
        Source::Agent
    };
    let mut spec = MemSpec::new(
        pool.ns,
        lang,
        extra.kind.unwrap_or(MemoryKind::Episodic),
        text,
    )
    .tags(&extra.tags)
    .importance(imp)
    .source(src)
    .at(at)
    .topic(pool.topic);
    for (k, v) in extra.entities {
        spec = spec.entity(k, v);
    }
    if let Some((tt, o)) = extra.task {
        spec = spec.task(tt, o);
    }
    g.push(spec)
}

fn run_pool(g: &mut Gen, pool: &Pool) {
    // Members, day by day.
    let recent_from = cutoff() - Duration::days(35);
    let mut d = period_start();
    while d < cutoff() {
        let rate = if d >= recent_from {
            pool.rate_recent
        } else {
            pool.rate_early
        };
        let mut n = rate.floor() as u32;
        if g.chance(rate - rate.floor()) {
            n += 1;
        }
        for _ in 0..n {
            let at = g.time_between(d, d + Duration::days(1));
            add_member(g, pool, at);
        }
        d += Duration::days(1);
    }
    // Every time-scoped query is asked on Tuesday 2025-12-23 (the day after the last memory).
    let nows: Vec<DateTime<Utc>> = pool
        .windows
        .iter()
        .map(|_| cutoff() + Duration::minutes(g.range(8 * 60, 20 * 60) as i64))
        .collect();
    // No empty windows: plant one member where needed (before any query is judged).
    for (w, now) in pool.windows.iter().zip(&nows) {
        let (a, b) = w.range(*now);
        let b = b.min(cutoff());
        if !members(g, pool).iter().any(|&i| in_range(g, i, a, b)) {
            let at = g.time_between(a, b);
            add_member(g, pool, at);
        }
    }
    let pool_members = members(g, pool);
    for (wi, (w, now)) in pool.windows.iter().zip(&nows).enumerate() {
        let (a, b) = w.range(*now);
        let mut judged: Vec<(usize, i32)> = pool_members
            .iter()
            .filter(|&&i| in_range(g, i, a, b))
            .map(|&i| (i, 3))
            .collect();
        // Judged distractors: the pool members closest to the window on either side.
        let mut outside: Vec<(i64, usize)> = pool_members
            .iter()
            .filter(|&&i| !in_range(g, i, a, b))
            .map(|&i| {
                let t = g.mems[i].rec.created_at;
                let dist = if t < a {
                    (a - t).num_minutes()
                } else {
                    (t - b).num_minutes()
                };
                (dist, i)
            })
            .collect();
        outside.sort_unstable();
        judged.extend(outside.iter().take(6).map(|&(_, i)| (i, 0)));
        let langs: Vec<Lang> = if pool.twice.contains(&wi) {
            vec![Lang::En, Lang::Zh]
        } else {
            vec![g.lang(0.5)]
        };
        for ql in langs {
            let phrase = w.phrase(ql);
            let text = (pool.query)(g, ql, &phrase);
            let text = capitalize_first(&text);
            let now = if ql == Lang::Zh {
                *now + Duration::minutes(g.range(1, 90) as i64)
            } else {
                *now
            };
            g.query_at(pool.ns, ql, text, &["time-scoped"], judged.clone(), now);
        }
    }
}

fn members(g: &Gen, pool: &Pool) -> Vec<usize> {
    (0..g.mems.len())
        .filter(|&i| g.mems[i].topic == pool.topic && g.mems[i].rec.namespace == pool.ns)
        .collect()
}

fn in_range(g: &Gen, i: usize, a: DateTime<Utc>, b: DateTime<Utc>) -> bool {
    let t = g.mems[i].rec.created_at;
    a <= t && t < b
}

fn capitalize_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) if f.is_ascii_lowercase() => f.to_uppercase().chain(c).collect(),
        Some(f) => std::iter::once(f).chain(c).collect(),
        None => String::new(),
    }
}
