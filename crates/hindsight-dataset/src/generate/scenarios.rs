//! Scenario instances: each plants the memories a query needs (relevant ones and judged hard
//! distractors) around a subject no other memory talks about, then adds the query.

use chrono::Duration;
use hindsight_core::{MemoryKind, Outcome, Source, TaskType};

use super::pools::{self, Pair, t};
use super::{Gen, Lang, MemSpec, NS_CODE, NS_CS, NS_OPS, NS_PA};

pub(crate) mod families;
mod timed;

pub(crate) use families::order_episode;

/// Picks one of several phrasings.
pub(crate) fn one(g: &mut Gen, options: Vec<String>) -> String {
    let i = g.below(options.len());
    options.into_iter().nth(i).unwrap_or_default()
}

/// Picks the query language: mostly the memory's language, sometimes the other one.
pub(crate) fn query_lang(g: &mut Gen, mem: Lang, p_cross: f64) -> Lang {
    if g.chance(p_cross) {
        match mem {
            Lang::En => Lang::Zh,
            Lang::Zh => Lang::En,
        }
    } else {
        mem
    }
}

pub(crate) fn all(g: &mut Gen) {
    for _ in 0..36 {
        exact_id_order(g);
    }
    for _ in 0..22 {
        exact_id_ticket(g);
    }
    for i in 0..18 {
        antonym_setting(g, if i % 2 == 0 { NS_OPS } else { NS_CODE });
    }
    for _ in 0..10 {
        antonym_flag(g);
    }
    antonym_personal(g);
    for i in 0..8 {
        antonym_customer(g, i % 2 == 0);
    }
    for _ in 0..34 {
        keyword_qualifier_code(g);
    }
    for _ in 0..14 {
        keyword_qualifier_cs(g);
    }
    timed::all(g);
    families::all(g);
}

// ---------------------------------------------------------------------------------------------
// exact-id

fn exact_id_order(g: &mut Gen) {
    let lang = g.lang(0.5);
    let issue = g.below(families::ORDER_ISSUES);
    let (prod, code) = *g.pick(pools::PRODUCTS);
    let oid = pools::order_id(g);
    let main = order_episode(g, lang, issue, &oid, prod, code);
    let main_idx = g.push(main);
    let mut judged = vec![(main_idx, 3)];
    let when = g.mems[main_idx].rec.created_at;
    if g.chance(0.6) {
        let name = g.mems[main_idx]
            .rec
            .entities
            .get("customer_name")
            .cloned()
            .unwrap_or_default();
        let content = match (lang, g.below(2)) {
            (Lang::En, 0) => format!(
                "Follow-up on order {oid}: {name} confirmed the problem is sorted and rated the support 5 stars."
            ),
            (Lang::En, _) => format!(
                "Called {name} back about order {oid}; they had not seen our update, so the confirmation SMS was re-sent."
            ),
            (Lang::Zh, 0) => format!("订单{oid}回访：{name}确认问题已解决，给了五星好评。"),
            (Lang::Zh, _) => {
                format!("回电{name}跟进订单{oid}，客户说没看到处理结果，已重新发送确认短信。")
            }
        };
        let ctx = match lang {
            Lang::En => format!("When order {oid} comes up again"),
            Lang::Zh => format!("再次涉及订单{oid}时"),
        };
        let at = when + Duration::hours(g.range(20, 120) as i64);
        let src = g.source();
        let idx = g.push(
            MemSpec::new(NS_CS, lang, MemoryKind::Episodic, content)
                .context(ctx)
                .tags(&["order", "follow-up"])
                .entity("order_id", oid.clone())
                .importance(0.4)
                .source(src)
                .at(at)
                .task(TaskType::Query, Outcome::Success),
        );
        judged.push((idx, 2));
    }
    // Near-identical orders with near-miss numbers: same issue, same product.
    let k = 3 + g.below(3);
    for near in pools::near_ids(g, &oid, k) {
        let l = if g.chance(0.7) { lang } else { g.lang(0.5) };
        let spec = order_episode(g, l, issue, &near, prod, code);
        let idx = g.push(spec);
        judged.push((idx, 0));
    }
    let ql = query_lang(g, lang, 0.15);
    let text = match ql {
        Lang::En => one(
            g,
            vec![
                format!("what happened with order {oid}?"),
                format!("Customer is asking about order #{oid} again, what did we do last time?"),
                format!("status of order {oid}"),
                format!("Did we ever resolve order no. {oid}?"),
                format!("pull up the history for order {oid}"),
            ],
        ),
        Lang::Zh => one(
            g,
            vec![
                format!("订单{oid}后来怎么处理的？"),
                format!("{oid}这个单子之前是什么情况"),
                format!("客户又来问订单号{oid}了，上次怎么解决的？"),
                format!("查一下订单 {oid} 的处理记录"),
            ],
        ),
    };
    g.query(NS_CS, ql, text, &["exact-id"], judged);
}

fn exact_id_ticket(g: &mut Gen) {
    let lang = g.lang(0.45);
    let bug = g.below(families::BUGS.len());
    let id = pools::ticket(g);
    let main = families::ticket_memory(g, lang, bug, &id);
    let main_idx = g.push(main);
    let mut judged = vec![(main_idx, 3)];
    if g.chance(0.4) {
        let content = match lang {
            Lang::En => format!(
                "Added a regression test for {id} so the same failure is caught in CI; backported the fix to the release branch."
            ),
            Lang::Zh => {
                format!("为{id}补了回归测试，CI 里能拦住同样的问题；修复已回合到发布分支。")
            }
        };
        let at = g.mems[main_idx].rec.created_at + Duration::days(g.range(1, 6) as i64);
        let idx = g.push(
            MemSpec::new(NS_CODE, lang, MemoryKind::Episodic, content)
                .tags(&["ticket", "testing"])
                .entity("ticket", id.clone())
                .importance(0.4)
                .source(Source::Agent)
                .at(at)
                .task(TaskType::Create, Outcome::Success),
        );
        judged.push((idx, 2));
    }
    // Near misses: transposed / off-by-one numbers in the same project, and the same number in
    // another project, all about the same component.
    let k = 2 + g.below(2);
    let mut nears = pools::near_ids(g, &id, k);
    if let Some((_, num)) = id.split_once('-') {
        let num = num.to_owned();
        let other = g.fresh(|g| format!("{}-{}", g.pick(pools::JIRA), num));
        nears.push(other);
    }
    for near in nears {
        let l = g.lang(0.45);
        let spec = families::ticket_memory(g, l, bug, &near);
        let idx = g.push(spec);
        judged.push((idx, 0));
    }
    let ql = query_lang(g, lang, 0.15);
    let text = match ql {
        Lang::En => one(
            g,
            vec![
                format!("what was the fix for {id}?"),
                format!("{id} root cause?"),
                format!("remind me what we did in {id}"),
                format!(
                    "Someone reopened {id}. What was the original problem and how was it fixed?"
                ),
            ],
        ),
        Lang::Zh => one(
            g,
            vec![
                format!("{id}最后是怎么修的？"),
                format!("{id} 的根因是什么"),
                format!("帮我找一下{id}的处理记录"),
            ],
        ),
    };
    g.query(NS_CODE, ql, text, &["exact-id"], judged);
}

// ---------------------------------------------------------------------------------------------
// near-antonym

/// (name en, name zh, unit, low, high, reason to raise en/zh, reason to lower en/zh)
type Setting = (
    &'static str,
    &'static str,
    &'static str,
    u32,
    u32,
    Pair,
    Pair,
);

const SETTINGS: &[Setting] = &[
    (
        "upstream timeout",
        "上游超时",
        "s",
        5,
        30,
        (
            "requests to the bank API were timing out during the nightly settlement batch",
            "夜间结算批处理时调用银行接口频繁超时",
        ),
        (
            "slow requests were piling up and holding worker threads for too long",
            "慢请求堆积，长时间占着工作线程",
        ),
    ),
    (
        "connection pool size",
        "连接池大小",
        "",
        20,
        80,
        (
            "requests queued waiting for a connection at peak traffic",
            "高峰期请求排队等连接",
        ),
        (
            "idle connections were exhausting max_connections on the database",
            "空闲连接把数据库的 max_connections 占满了",
        ),
    ),
    (
        "rate limit",
        "限流阈值",
        " req/s",
        200,
        800,
        (
            "legitimate traffic from the flash sale was being rejected with 429",
            "大促的正常流量被 429 拒绝",
        ),
        (
            "a scraper was hammering the endpoint",
            "有爬虫在狂刷这个接口",
        ),
    ),
    (
        "cache TTL",
        "缓存 TTL",
        " min",
        5,
        60,
        (
            "the cache hit rate was too low and the database was overloaded",
            "缓存命中率太低，数据库压力过大",
        ),
        (
            "users were seeing stale prices after updates",
            "改价后用户看到的还是旧价格",
        ),
    ),
    (
        "replica count",
        "副本数",
        "",
        3,
        8,
        (
            "CPU stayed above 85% on every pod during the campaign",
            "活动期间每个 pod 的 CPU 都在 85% 以上",
        ),
        (
            "traffic dropped after the campaign and the pods were mostly idle",
            "活动结束流量回落，pod 大多空闲",
        ),
    ),
    (
        "JVM heap",
        "JVM 堆内存",
        " GB",
        4,
        12,
        (
            "frequent full GCs and OutOfMemoryError during report exports",
            "导出报表时频繁 Full GC 并出现 OOM",
        ),
        (
            "the node was overcommitted and other pods got evicted",
            "节点内存超卖，其他 pod 被驱逐",
        ),
    ),
    (
        "batch size",
        "批处理大小",
        "",
        100,
        1000,
        (
            "the backlog was growing faster than the job could drain it",
            "积压增长比任务消化得还快",
        ),
        (
            "large batches caused lock contention and long transactions",
            "批次太大导致锁竞争和长事务",
        ),
    ),
    (
        "worker threads",
        "工作线程数",
        "",
        8,
        32,
        (
            "the queue consumer could not keep up with incoming messages",
            "消费者跟不上消息进入速度",
        ),
        (
            "context switching overhead was eating CPU on a 4-core box",
            "4 核机器上线程切换开销太大",
        ),
    ),
];

const RAISE_EN: &[&str] = &["increased", "raised", "bumped up"];
const LOWER_EN: &[&str] = &["decreased", "lowered", "reduced"];
const RAISE_ZH: &[&str] = &["调大", "调高", "增加"];
const LOWER_ZH: &[&str] = &["调小", "调低", "减少"];

fn antonym_setting(g: &mut Gen, ns: &'static str) {
    let si = g.below(SETTINGS.len());
    let svc = g.fresh(|g| format!("{}|{}", g.pick(pools::SERVICES), si));
    let svc = svc.split('|').next().unwrap_or_default().to_owned();
    let (name_en, name_zh, unit, low, high, why_up, why_down) = SETTINGS[si];
    let mut idx = [0usize; 2];
    let mut langs = [Lang::En; 2];
    let up_first = g.chance(0.5);
    let t1 = g.days_ago(60, 170);
    let t2 = g.days_ago(3, 55);
    for (slot, raise) in [(0usize, true), (1usize, false)] {
        let lang = g.lang(0.5);
        langs[slot] = lang;
        let at = if raise == up_first { t1 } else { t2 };
        let content = match (lang, raise) {
            (Lang::En, true) => format!(
                "{} the {name_en} of {svc} from {low}{unit} to {high}{unit} because {}.",
                cap(RAISE_EN[g.below(RAISE_EN.len())]),
                why_up.0
            ),
            (Lang::En, false) => format!(
                "{} the {name_en} of {svc} from {high}{unit} to {low}{unit} because {}.",
                cap(LOWER_EN[g.below(LOWER_EN.len())]),
                why_down.0
            ),
            (Lang::Zh, true) => format!(
                "把 {svc} 的{name_zh}从 {low}{unit} {}到 {high}{unit}，原因是{}。",
                RAISE_ZH[g.below(RAISE_ZH.len())],
                why_up.1
            ),
            (Lang::Zh, false) => format!(
                "把 {svc} 的{name_zh}从 {high}{unit} {}到 {low}{unit}，原因是{}。",
                LOWER_ZH[g.below(LOWER_ZH.len())],
                why_down.1
            ),
        };
        let ctx = match lang {
            Lang::En => format!("When tuning {svc} or investigating its {name_en}"),
            Lang::Zh => format!("调整 {svc} 参数或排查{name_zh}相关问题时"),
        };
        let imp = g.importance(5, 8);
        idx[slot] = g.push(
            MemSpec::new(ns, lang, MemoryKind::Episodic, content)
                .context(ctx)
                .tags(&["config-change", if raise { "increase" } else { "decrease" }])
                .entity("service", svc.clone())
                .entity("setting", name_en)
                .importance(imp)
                .source(Source::Agent)
                .at(at)
                .task(TaskType::Modify, Outcome::Success),
        );
    }
    let ask_raise = g.chance(0.5);
    let (rel, other) = if ask_raise {
        (idx[0], idx[1])
    } else {
        (idx[1], idx[0])
    };
    let ql = query_lang(g, langs[if ask_raise { 0 } else { 1 }], 0.15);
    let text = match (ql, ask_raise) {
        (Lang::En, true) => one(
            g,
            vec![
                format!("Why did we increase the {name_en} on {svc}?"),
                format!("when was the {svc} {name_en} raised and why"),
                format!("{svc}: reason for the higher {name_en}?"),
            ],
        ),
        (Lang::En, false) => one(
            g,
            vec![
                format!("Why did we decrease the {name_en} on {svc}?"),
                format!("when was the {svc} {name_en} lowered and why"),
                format!("{svc}: reason for cutting the {name_en}?"),
            ],
        ),
        (Lang::Zh, true) => one(
            g,
            vec![
                format!("{svc} 的{name_zh}为什么调大了？"),
                format!("之前为啥要提高 {svc} 的{name_zh}"),
            ],
        ),
        (Lang::Zh, false) => one(
            g,
            vec![
                format!("{svc} 的{name_zh}为什么调小了？"),
                format!("之前为啥要降低 {svc} 的{name_zh}"),
            ],
        ),
    };
    g.query(ns, ql, text, &["near-antonym"], vec![(rel, 3), (other, 0)]);
}

fn cap(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

const FLAGS: &[&str] = &[
    "new_checkout_flow",
    "one_click_pay",
    "smart_search_v2",
    "bulk_export",
    "guest_checkout",
    "ai_order_summaries",
    "live_chat_widget",
    "coupon_stacking",
    "address_autocomplete",
    "split_payment",
    "wishlist_sharing",
    "instant_refunds",
    "dark_mode_beta",
    "price_alerts",
    "video_reviews",
];

fn antonym_flag(g: &mut Gen) {
    let flag = g.fresh(|g| g.pick(FLAGS).to_string());
    let segment = *g.pick(&[
        ("iOS", "iOS"),
        ("Android", "安卓"),
        ("web", "网页端"),
        ("enterprise", "企业版"),
    ]);
    let pct = *g.pick(&[5u32, 10, 20, 50, 100]);
    let problem = *g.pick(&[
        (
            "it doubled the error rate on payment callbacks",
            "支付回调错误率翻倍",
        ),
        (
            "support got a spike of complaints about missing orders",
            "客服收到大量订单丢失的投诉",
        ),
        (
            "it broke the order confirmation emails",
            "订单确认邮件发不出去",
        ),
        (
            "p95 latency went from 300ms to 2s",
            "p95 延迟从 300ms 涨到 2s",
        ),
        (
            "legal asked us to pause it pending a review",
            "法务要求暂停，等待评审",
        ),
    ]);
    let (t_on, t_off) = (g.days_ago(40, 150), g.days_ago(2, 38));
    let l_on = g.lang(0.5);
    let on_text = match l_on {
        Lang::En => format!(
            "Enabled the `{flag}` feature flag for {pct}% of {} users; dashboards looked healthy after an hour.",
            segment.0
        ),
        Lang::Zh => format!(
            "给{}{pct}% 的用户开启了 `{flag}` 开关，观察一小时指标正常。",
            segment.1
        ),
    };
    let l_off = g.lang(0.5);
    let off_text = match l_off {
        Lang::En => format!(
            "Disabled the `{flag}` feature flag for all {} users because {}.",
            segment.0, problem.0
        ),
        Lang::Zh => format!(
            "把{}全部用户的 `{flag}` 开关关掉了，因为{}。",
            segment.1, problem.1
        ),
    };
    let on = g.push(
        MemSpec::new(NS_CODE, l_on, MemoryKind::Episodic, on_text)
            .context(format!("Rollout history of {flag}"))
            .tags(&["feature-flag", "rollout"])
            .entity("flag", flag.clone())
            .importance(0.5)
            .source(Source::Agent)
            .at(t_on)
            .task(TaskType::Modify, Outcome::Success),
    );
    let off = g.push(
        MemSpec::new(NS_CODE, l_off, MemoryKind::Episodic, off_text)
            .context(format!("Rollout history of {flag}"))
            .tags(&["feature-flag", "rollback"])
            .entity("flag", flag.clone())
            .importance(0.7)
            .source(Source::Agent)
            .at(t_off)
            .task(TaskType::Modify, Outcome::Partial),
    );
    let ask_on = g.chance(0.5);
    let ql = query_lang(g, if ask_on { l_on } else { l_off }, 0.15);
    let text = match (ql, ask_on) {
        (Lang::En, true) => one(
            g,
            vec![
                format!("when did we turn on {flag}?"),
                format!("Who was {flag} enabled for?"),
            ],
        ),
        (Lang::En, false) => one(
            g,
            vec![
                format!("why was {flag} turned off?"),
                format!("What made us disable {flag}?"),
            ],
        ),
        (Lang::Zh, true) => one(
            g,
            vec![
                format!("{flag} 是什么时候开启的？"),
                format!("{flag} 开关当时给哪些用户打开了"),
            ],
        ),
        (Lang::Zh, false) => one(
            g,
            vec![
                format!("{flag} 为什么被关掉了？"),
                format!("当初为什么关闭 {flag}"),
            ],
        ),
    };
    let judged = if ask_on {
        vec![(on, 3), (off, 0)]
    } else {
        vec![(off, 3), (on, 0)]
    };
    g.query(NS_CODE, ql, text, &["near-antonym"], judged);
}

/// (memory A en/zh, memory B en/zh, query for B en/zh): two people, opposite conditions.
/// `{a}` / `{b}` stand for the two names.
type Polar = (Pair, Pair, Pair);

const POLAR: &[Polar] = &[
    (
        (
            "{a} has high blood pressure; the doctor told them to cut down on salt.",
            "{a}血压偏高，医生让少吃盐。",
        ),
        (
            "{b} has low blood pressure and gets dizzy when standing up too fast.",
            "{b}血压偏低，站起来太快会头晕。",
        ),
        ("who has low blood pressure?", "谁的血压偏低来着？"),
    ),
    (
        (
            "{a}'s blood sugar runs high, so no desserts when we host them.",
            "{a}血糖偏高，请客时别准备甜点。",
        ),
        (
            "{b} tends to have low blood sugar; keep some candy around on long hikes.",
            "{b}容易低血糖，长途徒步时要备点糖。",
        ),
        (
            "which friend gets low blood sugar on hikes?",
            "谁容易低血糖？",
        ),
    ),
    (
        (
            "{a} loves very spicy food, the hotter the better.",
            "{a}特别能吃辣，越辣越好。",
        ),
        (
            "{b} can't handle spicy food at all, even mild chili upsets their stomach.",
            "{b}完全不能吃辣，一点辣椒都会胃疼。",
        ),
        ("who can't eat spicy food?", "谁完全不能吃辣？"),
    ),
    (
        (
            "{a} always wants a window seat on flights.",
            "{a}坐飞机一定要靠窗。",
        ),
        (
            "{b} insists on an aisle seat because of long legs.",
            "{b}腿长，坐飞机坚持要过道座位。",
        ),
        (
            "who prefers the aisle seat when I book flights?",
            "订机票时谁要过道座？",
        ),
    ),
    (
        (
            "{a} likes the bedroom warm, around 26°C.",
            "{a}睡觉喜欢屋里暖和，26 度左右。",
        ),
        (
            "{b} sleeps badly unless the room is cold, 18°C at most.",
            "{b}屋里不冷就睡不好，最多 18 度。",
        ),
        ("who likes a cold bedroom?", "谁睡觉要屋里冷一点？"),
    ),
    (
        (
            "{a} is an early riser and prefers meetings before 9 am.",
            "{a}是早起型，喜欢 9 点前开会。",
        ),
        (
            "{b} is a night owl; never schedule anything with them before 11 am.",
            "{b}是夜猫子，11 点前别给他约任何事。",
        ),
        (
            "who should I not book early meetings with?",
            "谁不能约早上的会？",
        ),
    ),
    (
        (
            "{a} wants more reminders, even for small errands.",
            "{a}希望多提醒，小事也要提醒。",
        ),
        (
            "{b} asked for fewer notifications, only urgent ones.",
            "{b}要求少发通知，只提醒紧急的。",
        ),
        ("who wants fewer notifications?", "谁说通知要少一点？"),
    ),
    (
        (
            "{a} loves crowded night markets and street food.",
            "{a}很喜欢热闹的夜市和小吃。",
        ),
        (
            "{b} avoids crowded places since the panic attack last year.",
            "{b}去年惊恐发作后就避开人多的地方。",
        ),
        ("who avoids crowds?", "谁不喜欢人多的地方？"),
    ),
];

fn antonym_personal(g: &mut Gen) {
    for (i, (ma, mb, q)) in POLAR.iter().enumerate() {
        let lang = if i % 2 == 0 { Lang::En } else { Lang::Zh };
        let (a, b) = (pools::person(g, lang), pools::person(g, lang));
        let mk = |tpl: &Pair, who: &str| t(tpl, lang).replace("{a}", who).replace("{b}", who);
        let ia = {
            let at = g.days_ago(20, 170);
            g.push(
                MemSpec::new(NS_PA, lang, MemoryKind::Semantic, mk(ma, &a))
                    .tags(&["people", "health"])
                    .entity("person", a.clone())
                    .importance(0.7)
                    .at(at),
            )
        };
        let ib = {
            let at = g.days_ago(20, 170);
            g.push(
                MemSpec::new(NS_PA, lang, MemoryKind::Semantic, mk(mb, &b))
                    .tags(&["people", "health"])
                    .entity("person", b.clone())
                    .importance(0.7)
                    .at(at),
            )
        };
        let ql = query_lang(g, lang, 0.25);
        g.query(
            NS_PA,
            ql,
            t(q, ql).to_owned(),
            &["near-antonym"],
            vec![(ib, 3), (ia, 0)],
        );
    }
}

fn antonym_customer(g: &mut Gen, plan: bool) {
    let lang = g.lang(0.5);
    let name = pools::person(g, lang);
    let cid = pools::customer_id(g);
    let (t1, t2) = (g.days_ago(60, 160), g.days_ago(3, 50));
    let (up, down) = if plan {
        match lang {
            Lang::En => (
                format!(
                    "{name} ({cid}) upgraded from the Basic to the Plus membership to get free shipping."
                ),
                format!(
                    "{name} ({cid}) downgraded from Plus back to Basic; said they order less often now."
                ),
            ),
            Lang::Zh => (
                format!("{name}（{cid}）把会员从基础版升级到 Plus，为了免运费。"),
                format!("{name}（{cid}）把会员从 Plus 降级回基础版，说现在买得少了。"),
            ),
        }
    } else {
        match lang {
            Lang::En => (
                format!("{name} ({cid}) opted in to promotional SMS during the 11.11 sale."),
                format!(
                    "{name} ({cid}) opted out of all promotional SMS and asked us to stop marketing calls."
                ),
            ),
            Lang::Zh => (
                format!("{name}（{cid}）双十一期间订阅了促销短信。"),
                format!("{name}（{cid}）退订了所有促销短信，并要求不要再打营销电话。"),
            ),
        }
    };
    let iu = g.push(
        MemSpec::new(NS_CS, lang, MemoryKind::Episodic, up)
            .tags(&["account"])
            .entity("customer_id", cid.clone())
            .importance(0.5)
            .at(t1)
            .task(TaskType::Modify, Outcome::Success),
    );
    let id = g.push(
        MemSpec::new(NS_CS, lang, MemoryKind::Episodic, down)
            .tags(&["account"])
            .entity("customer_id", cid.clone())
            .importance(0.6)
            .at(t2)
            .task(TaskType::Modify, Outcome::Success),
    );
    let ask_up = g.chance(0.5);
    let ql = query_lang(g, lang, 0.12);
    let text = match (ql, plan, ask_up) {
        (Lang::En, true, true) => format!("when did {name} upgrade their membership?"),
        (Lang::En, true, false) => format!("why did {name} downgrade the membership?"),
        (Lang::En, false, true) => format!("did {name} ever subscribe to our promo texts?"),
        (Lang::En, false, false) => format!("has {name} unsubscribed from marketing messages?"),
        (Lang::Zh, true, true) => format!("{name}是什么时候升级会员的？"),
        (Lang::Zh, true, false) => format!("{name}为什么降级会员？"),
        (Lang::Zh, false, true) => format!("{name}订阅过促销短信吗？"),
        (Lang::Zh, false, false) => format!("{name}是不是退订营销短信了？"),
    };
    let judged = if ask_up {
        vec![(iu, 3), (id, 0)]
    } else {
        vec![(id, 3), (iu, 0)]
    };
    g.query(NS_CS, ql, text, &["near-antonym"], judged);
}

// ---------------------------------------------------------------------------------------------
// keyword-qualifier

/// (area en, area zh, colloquial verb phrase en, zh, symptom en, zh, cause en, zh)
type Area = (&'static str, &'static str, Pair, Pair, Pair);

const AREAS: &[Area] = &[
    (
        "login",
        "登录",
        ("sign in", "登不上"),
        (
            "login returned HTTP 500 for accounts with a '+' in the email",
            "邮箱里带 + 号的账号登录返回 500",
        ),
        (
            "the email was not URL-encoded before the SSO redirect",
            "跳转 SSO 前邮箱没有做 URL 编码",
        ),
    ),
    (
        "checkout",
        "结算",
        ("pay", "付不了款"),
        (
            "checkout hung on the spinner after choosing Alipay",
            "选择支付宝后结算页一直转圈",
        ),
        (
            "the payment callback URL still pointed at the old domain",
            "支付回调地址还指向旧域名",
        ),
    ),
    (
        "search",
        "搜索",
        ("find products", "搜不到东西"),
        (
            "search returned nothing for queries with a trailing space",
            "搜索词末尾带空格时返回空结果",
        ),
        (
            "the analyzer did not trim input before tokenizing",
            "分词前没有 trim 输入",
        ),
    ),
    (
        "signup",
        "注册",
        ("create an account", "注册不了"),
        (
            "signup rejected valid phone numbers starting with 19",
            "注册时以 19 开头的手机号被判为无效",
        ),
        (
            "the phone regex was copied from a 2016 list of prefixes",
            "手机号正则还是 2016 年的号段",
        ),
    ),
    (
        "password reset",
        "重置密码",
        ("reset their password", "重置不了密码"),
        (
            "password reset links expired immediately",
            "重置密码链接一打开就过期",
        ),
        (
            "the token expiry was compared in local time instead of UTC",
            "token 过期时间用本地时间而不是 UTC 比较",
        ),
    ),
    (
        "order history",
        "订单历史",
        ("see past orders", "看不到以前的订单"),
        (
            "order history showed only the first 20 orders",
            "订单历史只显示前 20 条",
        ),
        (
            "pagination ignored the cursor after the API change",
            "接口改版后分页忽略了 cursor",
        ),
    ),
    (
        "profile settings",
        "个人设置",
        ("save their profile", "个人资料保存不了"),
        (
            "saving the profile silently dropped the birthday field",
            "保存个人资料时生日字段被悄悄丢掉",
        ),
        (
            "the form serializer skipped null dates",
            "表单序列化跳过了空日期",
        ),
    ),
    (
        "notifications",
        "消息通知",
        ("get alerts", "收不到通知"),
        (
            "push notifications stopped for users who reinstalled the app",
            "重装 App 的用户收不到推送",
        ),
        (
            "stale device tokens were never refreshed",
            "旧的设备 token 从不刷新",
        ),
    ),
];

const APPS: &[Pair] = &[
    ("merchant portal", "商家后台"),
    ("iOS app", "iOS 客户端"),
    ("Android app", "安卓客户端"),
    ("admin console", "管理后台"),
    ("mini-program", "小程序"),
    ("web store", "官网商城"),
];

/// Cosmetic notes about an area: share its keyword, not its bug.
const STYLE_NOTES: &[Pair] = &[
    (
        "{app} {area} page: switched the primary button to brand blue #1A73E8 per the design review.",
        "{app}{area}页：按设计评审把主按钮改成品牌蓝 #1A73E8。",
    ),
    (
        "Moved the help link below the form on the {app} {area} screen.",
        "{app}{area}页面的帮助链接挪到表单下方。",
    ),
    (
        "Copy change on the {app} {area} page: the title now reads 'Welcome back'.",
        "{app}{area}页文案修改：标题改成“欢迎回来”。",
    ),
    (
        "{app} {area} page style: increased padding to 24px and rounded the input corners.",
        "{app}{area}页样式：内边距加到 24px，输入框改圆角。",
    ),
    (
        "Dark-mode colors for the {app} {area} page were tuned to meet contrast guidelines.",
        "{app}{area}页的深色模式配色调整到符合对比度规范。",
    ),
    (
        "Replaced the {app} {area} illustration with the new seasonal banner.",
        "{app}{area}页插画换成了新的季节性横幅。",
    ),
    (
        "Aligned the {app} {area} page font with the design system (14px body, 20px headings).",
        "{app}{area}页字体对齐设计规范（正文 14px，标题 20px）。",
    ),
];

fn keyword_qualifier_code(g: &mut Gen) {
    let ai = g.below(AREAS.len());
    let key = g.fresh(|g| format!("kq|{}|{}", g.below(APPS.len()), ai));
    let app_i: usize = key
        .split('|')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let app = APPS[app_i];
    let (area_en, area_zh, verb, symptom, cause) = AREAS[ai];
    let lang = g.lang(0.5);
    let tk = pools::ticket(g);
    let (app_s, area_s) = (
        t(&app, lang),
        if lang == Lang::En { area_en } else { area_zh },
    );
    let bug = match lang {
        Lang::En => format!(
            "Fixed the {app_s} {area_s} bug ({tk}): {}. Cause: {}.",
            symptom.0, cause.0
        ),
        Lang::Zh => format!(
            "修复了{app_s}{area_s}的 bug（{tk}）：{}。原因：{}。",
            symptom.1, cause.1
        ),
    };
    let at = g.any_time();
    let bug_i = g.push(
        MemSpec::new(NS_CODE, lang, MemoryKind::Episodic, bug)
            .context(match lang {
                Lang::En => format!("When {app_s} {area_s} misbehaves"),
                Lang::Zh => format!("{app_s}{area_s}出问题时"),
            })
            .tags(&["bug", area_en])
            .entity("ticket", tk)
            .entity("app", app.0)
            .importance(0.7)
            .source(Source::Agent)
            .at(at)
            .task(TaskType::Modify, Outcome::Success),
    );
    let mut judged = vec![(bug_i, 3)];
    if g.chance(0.35) {
        let l2 = g.lang(0.5);
        let text = match l2 {
            Lang::En => format!(
                "Users on the {} reported they could not {} after the last release; reproduced it and filed it for the web team.",
                app.0, verb.0
            ),
            Lang::Zh => format!("{}用户反馈上次发版后{}，已复现并转给研发。", app.1, verb.1),
        };
        let reported = at - Duration::hours(g.range(2, 30) as i64);
        let i = g.push(
            MemSpec::new(NS_CODE, l2, MemoryKind::Episodic, text)
                .tags(&["bug-report", area_en])
                .entity("app", app.0)
                .importance(0.4)
                .source(Source::User)
                .at(reported),
        );
        judged.push((i, 2));
    }
    let n_style = 4 + g.below(3);
    for tpl in g.pick_k(STYLE_NOTES, n_style) {
        let l = g.lang(0.5);
        let area = if l == Lang::En { area_en } else { area_zh };
        let text = t(tpl, l)
            .replace("{app}", t(&app, l))
            .replace("{area}", area);
        let at = g.any_time();
        let imp = g.importance(2, 5);
        let i = g.push(
            MemSpec::new(NS_CODE, l, MemoryKind::Episodic, text)
                .tags(&["ui", "style", area_en])
                .entity("app", app.0)
                .importance(imp)
                .source(Source::Agent)
                .at(at)
                .task(TaskType::Modify, Outcome::Success),
        );
        judged.push((i, 0));
    }
    // The same bug class in another app, when that combination is still free.
    let other_app = g.below(APPS.len());
    if other_app != app_i && g.used.insert(format!("kq|{other_app}|{ai}")) {
        let l = g.lang(0.5);
        let oapp = APPS[other_app];
        let tk2 = pools::ticket(g);
        let text = match l {
            Lang::En => format!(
                "Fixed the {} {area_en} bug ({tk2}): {}. Cause: {}.",
                oapp.0, symptom.0, cause.0
            ),
            Lang::Zh => format!(
                "修复了{}{area_zh}的 bug（{tk2}）：{}。原因：{}。",
                oapp.1, symptom.1, cause.1
            ),
        };
        let at = g.any_time();
        let i = g.push(
            MemSpec::new(NS_CODE, l, MemoryKind::Episodic, text)
                .tags(&["bug", area_en])
                .entity("ticket", tk2)
                .entity("app", oapp.0)
                .importance(0.7)
                .source(Source::Agent)
                .at(at)
                .task(TaskType::Modify, Outcome::Success),
        );
        judged.push((i, 0));
    }
    let ql = query_lang(g, lang, 0.12);
    let text = match ql {
        Lang::En => one(
            g,
            vec![
                format!("what was the {area_en} bug on the {}?", app.0),
                format!("{} {area_en} bug, what caused it", app.0),
                format!("why couldn't people {} on the {} last time?", verb.0, app.0),
            ],
        ),
        Lang::Zh => one(
            g,
            vec![
                format!("{}{area_zh}的 bug 是怎么回事？", app.1),
                format!("{}上次用户{}是什么原因？", app.1, verb.1),
            ],
        ),
    };
    g.query(NS_CODE, ql, text, &["keyword-qualifier"], judged);
}

const ASPECTS: &[(Pair, Pair, [Pair; 4])] = &[
    (
        ("battery", "电池"),
        (
            "the battery drains overnight even when switched off",
            "关机放一晚电就没了",
        ),
        [
            (
                "Product FAQ: the {p} battery is 4000 mAh and fully charges in about 2 hours.",
                "产品问答：{p}电池容量 4000 mAh，大约 2 小时充满。",
            ),
            (
                "Marketing copy for the {p} battery life claim was updated to '30 hours'.",
                "{p}电池续航宣传语更新为“30 小时”。",
            ),
            (
                "The {p} battery is not user-replaceable; direct such questions to the repair center.",
                "{p}电池不能自己更换，相关问题转维修中心。",
            ),
            (
                "Shipping rule: the {p} ships with the battery at 50% charge per air-freight regulations.",
                "运输规定：{p}按空运要求电池电量 50% 出厂。",
            ),
        ],
    ),
    (
        ("noise", "噪音"),
        (
            "it makes a loud rattling noise after a week of use",
            "用了一周就发出很响的咔咔声",
        ),
        [
            (
                "Product FAQ: the {p} is rated at 45 dB in normal mode.",
                "产品问答：{p}常规模式噪音 45 分贝。",
            ),
            (
                "The {p} has a quiet mode for night use; it is in the settings menu.",
                "{p}有夜间静音模式，在设置菜单里。",
            ),
            (
                "Spec sheet for {p}: noise level measured at 1 m distance.",
                "{p}规格表：噪音在 1 米距离测得。",
            ),
            (
                "Training note: explain that some fan noise from the {p} during the first use is normal.",
                "培训要点：{p}首次使用有风扇声属正常，要向客户解释。",
            ),
        ],
    ),
    (
        ("size", "尺码"),
        (
            "it runs two sizes small compared to the size chart",
            "比尺码表小了两个码",
        ),
        [
            (
                "Size chart for {p} updated with centimetre measurements.",
                "{p}尺码表更新，增加了厘米数据。",
            ),
            (
                "The {p} comes in sizes S to XXL; XXL is only available in black.",
                "{p}有 S 到 XXL，XXL 只有黑色。",
            ),
            (
                "Product page for {p} now shows a size recommendation widget.",
                "{p}商品页上线了尺码推荐组件。",
            ),
            (
                "Warehouse note: {p} sizes are stored on separate shelves, check the label before packing.",
                "仓库提示：{p}不同尺码放不同货架，打包前核对标签。",
            ),
        ],
    ),
    (
        ("smell", "异味"),
        (
            "it has a strong chemical smell that has not gone away after days",
            "有很重的化学味，放了几天还没散",
        ),
        [
            (
                "Product FAQ: the {p} is made of food-grade materials certified by SGS.",
                "产品问答：{p}采用 SGS 认证的食品级材料。",
            ),
            (
                "Care instructions for the {p}: wash with mild soap before first use.",
                "{p}保养说明：首次使用前用温和肥皂清洗。",
            ),
            (
                "The {p} packaging switched to recycled cardboard this quarter.",
                "本季度{p}包装换成了再生纸板。",
            ),
            (
                "Catalog note: the {p} now comes in a lavender-scented edition.",
                "商品目录：{p}新增薰衣草香型版本。",
            ),
        ],
    ),
    (
        ("app pairing", "App 配对"),
        (
            "it will not pair with the app on Android 14",
            "在安卓 14 上无法和 App 配对",
        ),
        [
            (
                "Help article: how to pair the {p} with the companion app in four steps.",
                "帮助文档：四步完成{p}与 App 的配对。",
            ),
            (
                "The {p} companion app added a Chinese interface in version 3.2.",
                "{p}配套 App 3.2 版本增加了中文界面。",
            ),
            (
                "Product FAQ: the {p} supports Bluetooth 5.3.",
                "产品问答：{p}支持蓝牙 5.3。",
            ),
            (
                "Marketing: the {p} app pairing screen appears in the new promo video.",
                "市场：新宣传片里出现了{p}的 App 配对界面。",
            ),
        ],
    ),
];

fn keyword_qualifier_cs(g: &mut Gen) {
    let key = g.fresh(|g| {
        format!(
            "kqcs|{}|{}",
            g.below(pools::PRODUCTS.len()),
            g.below(ASPECTS.len())
        )
    });
    let mut parts = key
        .split('|')
        .skip(1)
        .map(|s| s.parse::<usize>().unwrap_or(0));
    let (pi, ai) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    let (prod, _) = pools::PRODUCTS[pi];
    let (aspect, complaint, notes) = &ASPECTS[ai];
    let lang = g.lang(0.5);
    let name = pools::person(g, lang);
    let oid = pools::order_id(g);
    let text = match lang {
        Lang::En => format!(
            "Complaint: {name} says their {} (order {oid}) {}. Logged a quality complaint and offered a return.",
            prod.0, complaint.0
        ),
        Lang::Zh => format!(
            "投诉：{name}说买的{}（订单{oid}）{}。已登记质量投诉并提供退货。",
            prod.1, complaint.1
        ),
    };
    let at = g.any_time();
    let main = g.push(
        MemSpec::new(NS_CS, lang, MemoryKind::Episodic, text)
            .tags(&["complaint", "quality"])
            .entity("order_id", oid)
            .entity("product", prod.0)
            .importance(0.7)
            .at(at)
            .task(TaskType::Other, Outcome::Partial),
    );
    let mut judged = vec![(main, 3)];
    for tpl in notes {
        let l = g.lang(0.5);
        let text = t(tpl, l).replace("{p}", t(&prod, l));
        let at = g.any_time();
        let i = g.push(
            MemSpec::new(NS_CS, l, MemoryKind::Semantic, text)
                .tags(&["product-info"])
                .entity("product", prod.0)
                .importance(0.4)
                .source(Source::External)
                .at(at),
        );
        judged.push((i, 0));
    }
    let ql = query_lang(g, lang, 0.12);
    let text = match ql {
        Lang::En => one(
            g,
            vec![
                format!("{} {} complaint", prod.0, aspect.0),
                format!("any complaints about the {} {}?", prod.0, aspect.0),
            ],
        ),
        Lang::Zh => one(
            g,
            vec![
                format!("{}{}投诉", prod.1, aspect.1),
                format!("有没有客户投诉{}的{}问题？", prod.1, aspect.1),
            ],
        ),
    };
    g.query(NS_CS, ql, text, &["keyword-qualifier"], judged);
}
