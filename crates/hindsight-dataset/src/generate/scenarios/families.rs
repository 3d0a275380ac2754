//! Memory families shared by scenarios and background (orders, tickets), and the superseded,
//! stale, failed-task and distractor scenarios.

use chrono::Duration;
use hindsight_core::{MemoryKind, Outcome, Source, Status, TaskType};

use super::super::pools::{self, Pair, t};
use super::super::{Gen, Lang, MemSpec, NS_CODE, NS_CS, NS_OPS, NS_PA};
use super::{one, query_lang};

pub(crate) const ORDER_ISSUES: usize = 10;

/// One customer-service episode about an order. `customer_name` is stored as an entity so a
/// follow-up can name the same person.
pub(crate) fn order_episode(
    g: &mut Gen,
    lang: Lang,
    issue: usize,
    oid: &str,
    prod: Pair,
    code: &str,
) -> MemSpec {
    let name = pools::person(g, lang);
    let cid = pools::customer_id(g);
    let sku = pools::sku(g, code);
    let city = *g.pick(pools::CITIES);
    let courier = *g.pick(pools::COURIERS);
    let n = g.range(3, 9);
    let amt = g.range(59, 3999);
    let coupon = *g.pick(&[10u64, 20, 30, 50]);
    let p = t(&prod, lang);
    let (content, tt, outcome, tag) = match (issue, lang) {
        (0, Lang::En) => (
            format!(
                "{name} ({cid}) said order {oid} ({p}, {sku}) was still not delivered after {n} days. The parcel was stuck at the {} hub; gave a ¥{coupon} coupon and asked {} to expedite.",
                city.0, courier.0
            ),
            TaskType::Query,
            Outcome::Success,
            "late-delivery",
        ),
        (0, Lang::Zh) => (
            format!(
                "{name}（{cid}）反映订单{oid}（{p}，{sku}）{n}天了还没到。查了物流，包裹卡在{}转运中心，给了{coupon}元优惠券并催{}加急。",
                city.1, courier.1
            ),
            TaskType::Query,
            Outcome::Success,
            "late-delivery",
        ),
        (1, Lang::En) => (
            format!(
                "Order {oid}: the {p} ({sku}) arrived with a cracked casing. {name} sent photos; approved a free replacement and emailed a return label."
            ),
            TaskType::Modify,
            Outcome::Success,
            "damaged",
        ),
        (1, Lang::Zh) => (
            format!(
                "订单{oid}：{p}（{sku}）到货外壳破裂，{name}发了照片。已批准免费换新，退货面单已发到客户邮箱。"
            ),
            TaskType::Modify,
            Outcome::Success,
            "damaged",
        ),
        (2, Lang::En) => (
            format!(
                "{name} received the wrong variant for order {oid}: ordered {sku} but got a different colour. Arranged an exchange; the customer keeps the wrong one until pickup."
            ),
            TaskType::Modify,
            Outcome::Success,
            "wrong-item",
        ),
        (2, Lang::Zh) => (
            format!(
                "订单{oid}发错了款，{name}下单的是{sku}，收到的颜色不对。已安排换货，上门取件前客户先保留错发的商品。"
            ),
            TaskType::Modify,
            Outcome::Success,
            "wrong-item",
        ),
        (3, Lang::En) => (
            format!(
                "Refund of ¥{amt} for order {oid} ({p}) processed after {name} returned it unopened; money goes back to the original payment method in 3-5 working days."
            ),
            TaskType::Modify,
            Outcome::Success,
            "refund",
        ),
        (3, Lang::Zh) => (
            format!(
                "订单{oid}（{p}）客户{name}未拆封退回，已退款{amt}元，原路退回，3-5个工作日到账。"
            ),
            TaskType::Modify,
            Outcome::Success,
            "refund",
        ),
        (4, Lang::En) => (
            format!(
                "{name} asked to change the delivery address of order {oid} before shipping. Updated it to the new {} address and confirmed with the warehouse.",
                city.0
            ),
            TaskType::Modify,
            Outcome::Success,
            "address-change",
        ),
        (4, Lang::Zh) => (
            format!(
                "{name}在发货前要求修改订单{oid}的收货地址，已改成{}的新地址，并和仓库确认过。",
                city.1
            ),
            TaskType::Modify,
            Outcome::Success,
            "address-change",
        ),
        (5, Lang::En) => (
            format!(
                "Order {oid} arrived with one item missing (the {p}, {sku}). Warehouse confirmed a picking error; reshipped it via {}.",
                courier.0
            ),
            TaskType::Modify,
            Outcome::Success,
            "missing-item",
        ),
        (5, Lang::Zh) => (
            format!(
                "订单{oid}少发了一件（{p}，{sku}），仓库确认是拣货错误，已用{}补发。",
                courier.1
            ),
            TaskType::Modify,
            Outcome::Success,
            "missing-item",
        ),
        (6, Lang::En) => (
            format!(
                "{name} needed a VAT invoice for order {oid} under their company name; issued the e-invoice and sent the PDF by email."
            ),
            TaskType::Create,
            Outcome::Success,
            "invoice",
        ),
        (6, Lang::Zh) => (
            format!(
                "{name}需要订单{oid}的增值税专用发票，抬头是公司名，已开具电子发票并邮件发送PDF。"
            ),
            TaskType::Create,
            Outcome::Success,
            "invoice",
        ),
        (7, Lang::En) => (
            format!(
                "Cancelled order {oid} at {name}'s request before it left the warehouse; the ¥{amt} payment was voided, no fee."
            ),
            TaskType::Modify,
            Outcome::Success,
            "cancel",
        ),
        (7, Lang::Zh) => (
            format!("应{name}要求取消了订单{oid}，当时还没出库，{amt}元付款已撤销，未收取手续费。"),
            TaskType::Modify,
            Outcome::Success,
            "cancel",
        ),
        (8, Lang::En) => (
            format!(
                "{name} was charged twice for order {oid} (¥{amt} each). The payments team confirmed a duplicate capture and reversed one charge."
            ),
            TaskType::Analyze,
            Outcome::Success,
            "double-charge",
        ),
        (8, Lang::Zh) => (
            format!(
                "{name}的订单{oid}被重复扣款两次（每次{amt}元），支付组确认是重复扣款，已撤销其中一笔。"
            ),
            TaskType::Analyze,
            Outcome::Success,
            "double-charge",
        ),
        (_, Lang::En) => (
            format!(
                "The power button of the {p} from order {oid} stopped responding after {n} weeks. Still under warranty, so {name} got a prepaid label to send it to the service center."
            ),
            TaskType::Other,
            Outcome::Partial,
            "warranty",
        ),
        (_, Lang::Zh) => (
            format!(
                "订单{oid}的{p}用了{n}周电源键就按不动了，还在保修期内，已给{name}寄送预付运单送修。"
            ),
            TaskType::Other,
            Outcome::Partial,
            "warranty",
        ),
    };
    let ctx = match lang {
        Lang::En => format!("When {name} or anyone asks about order {oid}"),
        Lang::Zh => format!("{name}或其他人询问订单{oid}时"),
    };
    let at = g.any_time();
    let imp = g.importance(3, 7);
    let src = if g.chance(0.7) {
        Source::Agent
    } else {
        Source::User
    };
    MemSpec::new(NS_CS, lang, MemoryKind::Episodic, content)
        .context(ctx)
        .tags(&["order", tag])
        .entity("order_id", oid)
        .entity("customer_id", cid)
        .entity("customer_name", name)
        .entity("sku", sku)
        .importance(imp)
        .source(src)
        .at(at)
        .task(tt, outcome)
}

/// (component en/zh, symptom en/zh, cause en/zh, fix en/zh)
pub(crate) const BUGS: &[(Pair, Pair, Pair, Pair)] = &[
    (
        ("CSV export", "CSV 导出"),
        (
            "exported files had garbled Chinese in Excel",
            "导出的文件在 Excel 里中文乱码",
        ),
        (
            "the file was written without a UTF-8 BOM",
            "文件没有写 UTF-8 BOM",
        ),
        (
            "write the BOM and set the charset header",
            "写入 BOM 并设置 charset 头",
        ),
    ),
    (
        ("cart badge", "购物车角标"),
        (
            "the cart badge count lagged one item behind",
            "购物车角标数量总是少一件",
        ),
        (
            "the counter read the store before the update resolved",
            "在更新完成前就读取了状态",
        ),
        (
            "derive the count from the cart state",
            "改为从购物车状态计算数量",
        ),
    ),
    (
        ("date picker", "日期选择器"),
        (
            "the date picker allowed booking dates in the past",
            "日期选择器能选过去的日期",
        ),
        (
            "minDate was set from the server time zone",
            "minDate 用的是服务器时区",
        ),
        (
            "compute minDate in the user's time zone",
            "按用户时区计算 minDate",
        ),
    ),
    (
        ("email templates", "邮件模板"),
        (
            "order emails showed {{name}} instead of the customer name",
            "订单邮件里显示 {{name}} 而不是客户名",
        ),
        (
            "the template variable was renamed in one place only",
            "模板变量只改了一处",
        ),
        (
            "rename the variable everywhere and add a render test",
            "全部改名并加渲染测试",
        ),
    ),
    (
        ("image upload", "图片上传"),
        (
            "uploads over 5 MB failed silently",
            "超过 5MB 的图片上传静默失败",
        ),
        (
            "nginx client_max_body_size was 5m",
            "nginx client_max_body_size 只有 5m",
        ),
        (
            "raise the limit and show an error on failure",
            "调大限制并在失败时提示",
        ),
    ),
    (
        ("PDF invoice", "PDF 发票"),
        (
            "invoice PDFs cut off the last line item",
            "发票 PDF 最后一行商品被截断",
        ),
        (
            "the page-break logic ignored the footer height",
            "分页逻辑没算页脚高度",
        ),
        (
            "reserve footer space before breaking pages",
            "分页前预留页脚空间",
        ),
    ),
    (
        ("webhook retries", "Webhook 重试"),
        (
            "merchants received the same webhook up to 10 times",
            "商家同一个 webhook 最多收到 10 次",
        ),
        (
            "retries did not record successful deliveries",
            "重试时没记录已成功投递",
        ),
        (
            "store delivery ids and make retries idempotent",
            "记录投递 ID，重试幂等",
        ),
    ),
    (
        ("timezone display", "时区显示"),
        (
            "order times showed 8 hours off for overseas users",
            "海外用户看到的下单时间差 8 小时",
        ),
        (
            "timestamps were formatted as Asia/Shanghai everywhere",
            "所有时间都按 Asia/Shanghai 格式化",
        ),
        ("format with the browser's time zone", "按浏览器时区格式化"),
    ),
    (
        ("pagination", "分页"),
        (
            "the product list repeated items on page 2",
            "商品列表第二页出现重复商品",
        ),
        ("sorting by price was not stable", "按价格排序不稳定"),
        ("add the id as a tie-breaker", "加 id 作为次序键"),
    ),
    (
        ("coupon calculation", "优惠券计算"),
        (
            "two coupons could be stacked on sale items",
            "特价商品可以叠加两张优惠券",
        ),
        (
            "the exclusivity check ran before sale prices were applied",
            "互斥校验在特价生效前执行",
        ),
        ("validate coupons after pricing", "在计价后校验优惠券"),
    ),
    (
        ("inventory sync", "库存同步"),
        (
            "stock showed available for sold-out SKUs for ~10 minutes",
            "已售罄的 SKU 约 10 分钟内仍显示有货",
        ),
        (
            "the sync job only ran every 10 minutes",
            "同步任务 10 分钟才跑一次",
        ),
        (
            "push stock changes through the event bus",
            "库存变化改走事件总线推送",
        ),
    ),
    (
        ("report scheduler", "报表调度"),
        (
            "weekly reports were sent twice on DST changes",
            "夏令时切换时周报发了两次",
        ),
        (
            "cron ran in local time on a DST-observing host",
            "cron 在有夏令时的主机上按本地时间运行",
        ),
        ("run the scheduler in UTC", "调度改为 UTC"),
    ),
];

pub(crate) fn ticket_memory(g: &mut Gen, lang: Lang, bug: usize, id: &str) -> MemSpec {
    let (comp, symptom, cause, fix) = BUGS[bug % BUGS.len()];
    let pr = g.range(1000, 9999);
    let svc = *g.pick(pools::SERVICES);
    let content = match (lang, g.below(2)) {
        (Lang::En, 0) => format!(
            "{id} ({}): {}. Root cause: {}. Fix: {} (PR #{pr}).",
            comp.0, symptom.0, cause.0, fix.0
        ),
        (Lang::En, _) => format!(
            "Closed {id}. {} in {svc}: {}; it turned out {}. We now {}.",
            cap(comp.0),
            symptom.0,
            cause.0,
            fix.0
        ),
        (Lang::Zh, 0) => format!(
            "{id}（{}）：{}。根因：{}。修复：{}（PR #{pr}）。",
            comp.1, symptom.1, cause.1, fix.1
        ),
        (Lang::Zh, _) => format!(
            "关闭了 {id}。{svc} 的{}问题：{}，原因是{}，现在的做法是{}。",
            comp.1, symptom.1, cause.1, fix.1
        ),
    };
    let ctx = match lang {
        Lang::En => format!("When {id} or a similar {} problem comes up", comp.0),
        Lang::Zh => format!("再遇到 {id} 或类似的{}问题时", comp.1),
    };
    let at = g.any_time();
    let imp = g.importance(4, 7);
    MemSpec::new(NS_CODE, lang, MemoryKind::Episodic, content)
        .context(ctx)
        .tags(&["ticket", "bugfix"])
        .entity("ticket", id)
        .entity("service", svc)
        .importance(imp)
        .source(Source::Agent)
        .at(at)
        .task(TaskType::Modify, Outcome::Success)
}

fn cap(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

pub(crate) fn all(g: &mut Gen) {
    superseded(g);
    stale(g);
    failed_task(g);
    distractor(g);
}

// ---------------------------------------------------------------------------------------------
// superseded

/// A subject whose value changes: (namespace, subject kind, values, memory template en/zh with
/// `{s}` subject and `{v}` value, "changed" template en/zh, query en/zh with `{s}`).
struct Change {
    ns: &'static str,
    subject: fn(&mut Gen, Lang) -> String,
    values: &'static [Pair],
    stated: Pair,
    changed: Pair,
    query: Pair,
}

fn subj_person(g: &mut Gen, lang: Lang) -> String {
    pools::person(g, lang)
}
fn subj_customer(g: &mut Gen, lang: Lang) -> String {
    let name = pools::person(g, lang);
    let cid = pools::customer_id(g);
    match lang {
        Lang::En => format!("{name} ({cid})"),
        Lang::Zh => format!("{name}（{cid}）"),
    }
}
fn subj_repo(g: &mut Gen, _: Lang) -> String {
    g.fresh(|g| {
        format!(
            "{}-{}",
            g.pick(&["web", "api", "mobile", "infra", "data", "admin"]),
            g.pick(pools::SERVICES)
        )
    })
}
fn subj_cluster(g: &mut Gen, _: Lang) -> String {
    g.fresh(|g| {
        format!(
            "{}-{}",
            g.pick(pools::CLUSTERS),
            g.pick(&["sh1", "sh2", "bj1", "sg1"])
        )
    })
}

const CHANGES: &[Change] = &[
    Change {
        ns: NS_PA,
        subject: subj_person,
        values: &[
            ("black coffee", "黑咖啡"),
            ("green tea", "绿茶"),
            ("an oat latte", "燕麦拿铁"),
            ("jasmine tea", "茉莉花茶"),
            ("hot chocolate", "热可可"),
            ("sparkling water", "气泡水"),
            ("soy milk", "豆浆"),
        ],
        stated: ("{s} drinks {v} every morning.", "{s}每天早上喝{v}。"),
        changed: (
            "{s} has switched to {v} in the morning now.",
            "{s}现在早上改喝{v}了。",
        ),
        query: (
            "What should I get {s} to drink in the morning?",
            "早上给{s}准备什么喝的？",
        ),
    },
    Change {
        ns: NS_PA,
        subject: subj_person,
        values: &[
            ("Air China", "国航"),
            ("China Eastern", "东航"),
            ("Hainan Airlines", "海航"),
            ("Singapore Airlines", "新加坡航空"),
            ("Cathay Pacific", "国泰"),
        ],
        stated: (
            "When booking flights for {s}, use {v}; they collect miles there.",
            "给{s}订机票用{v}，他在那攒里程。",
        ),
        changed: (
            "{s} moved their frequent-flyer status to {v}; book that airline from now on.",
            "{s}把常旅客身份转到{v}了，以后订这家。",
        ),
        query: (
            "Which airline should I book for {s}?",
            "给{s}订机票选哪家航空公司？",
        ),
    },
    Change {
        ns: NS_PA,
        subject: subj_person,
        values: &[
            ("Tuesday evenings", "周二晚上"),
            ("Saturday mornings", "周六上午"),
            ("Thursday at lunch", "周四中午"),
            ("Sunday afternoons", "周日下午"),
        ],
        stated: ("{s}'s tennis lesson is on {v}.", "{s}的网球课在{v}。"),
        changed: (
            "{s}'s tennis lesson moved to {v}.",
            "{s}的网球课改到{v}了。",
        ),
        query: ("When is {s}'s tennis lesson?", "{s}的网球课是什么时候？"),
    },
    Change {
        ns: NS_CS,
        subject: subj_customer,
        values: &[
            ("SF Express", "顺丰"),
            ("JD Logistics", "京东物流"),
            ("ZTO Express", "中通"),
            ("China Post EMS", "邮政EMS"),
        ],
        stated: ("{s} wants orders shipped with {v}.", "{s}要求发{v}。"),
        changed: (
            "{s} asked us to use {v} for future orders.",
            "{s}说以后的订单都改发{v}。",
        ),
        query: ("Which courier does {s} want?", "{s}要发哪家快递？"),
    },
    Change {
        ns: NS_CS,
        subject: subj_customer,
        values: &[
            ("phone calls", "电话"),
            ("WeChat", "微信"),
            ("email", "邮件"),
            ("SMS", "短信"),
        ],
        stated: (
            "{s} prefers to be contacted by {v}.",
            "{s}希望通过{v}联系。",
        ),
        changed: (
            "{s} said: from now on reach me by {v} only.",
            "{s}说以后只用{v}联系他。",
        ),
        query: ("How should we contact {s}?", "联系{s}用什么方式？"),
    },
    Change {
        ns: NS_CS,
        subject: subj_customer,
        values: &[
            ("weekday daytime", "工作日白天"),
            ("weekends only", "只在周末"),
            ("after 7 pm", "晚上 7 点以后"),
            ("before 10 am", "上午 10 点前"),
        ],
        stated: (
            "Deliveries for {s} should arrive {v}.",
            "{s}的快递要{v}送达。",
        ),
        changed: (
            "{s} changed the delivery window to {v}.",
            "{s}把送货时间改成{v}。",
        ),
        query: (
            "When can deliveries to {s} arrive?",
            "{s}的货什么时候送合适？",
        ),
    },
    Change {
        ns: NS_CODE,
        subject: subj_repo,
        values: &[
            ("black + isort", "black + isort"),
            ("ruff format", "ruff format"),
            ("prettier", "prettier"),
            ("biome", "biome"),
            ("rustfmt with a custom config", "自定义配置的 rustfmt"),
        ],
        stated: (
            "In {s}, code is formatted with {v}; CI fails on diffs.",
            "{s} 用 {v} 格式化代码，有 diff CI 就失败。",
        ),
        changed: (
            "{s} moved its formatter to {v}.",
            "{s} 的格式化工具换成了 {v}。",
        ),
        query: ("Which formatter does {s} use?", "{s} 用什么格式化工具？"),
    },
    Change {
        ns: NS_CODE,
        subject: subj_repo,
        values: &[
            ("GitHub Actions", "GitHub Actions"),
            ("Jenkins", "Jenkins"),
            ("GitLab CI", "GitLab CI"),
            ("Buildkite", "Buildkite"),
        ],
        stated: (
            "{s} runs its pipelines on {v}.",
            "{s} 的流水线跑在 {v} 上。",
        ),
        changed: (
            "The {s} pipeline was migrated to {v}.",
            "{s} 的流水线迁到了 {v}。",
        ),
        query: ("Where does the {s} CI run?", "{s} 的 CI 在哪跑？"),
    },
    Change {
        ns: NS_OPS,
        subject: subj_cluster,
        values: &[
            ("01:00 UTC", "UTC 01:00"),
            ("03:30 UTC", "UTC 03:30"),
            ("18:00 UTC", "UTC 18:00"),
            ("every 6 hours", "每 6 小时"),
        ],
        stated: (
            "Full backup of {s} runs at {v}.",
            "{s} 的全量备份在 {v} 执行。",
        ),
        changed: (
            "Moved the {s} full backup schedule to {v}.",
            "{s} 全量备份时间调整为 {v}。",
        ),
        query: ("When does the {s} backup run?", "{s} 什么时候备份？"),
    },
    Change {
        ns: NS_OPS,
        subject: subj_cluster,
        values: &[
            ("7 days", "7 天"),
            ("14 days", "14 天"),
            ("30 days", "30 天"),
            ("90 days", "90 天"),
        ],
        stated: ("Log retention for {s} is {v}.", "{s} 的日志保留 {v}。"),
        changed: (
            "Log retention on {s} is now {v}.",
            "{s} 日志保留期现在是 {v}。",
        ),
        query: ("How long are {s} logs kept?", "{s} 的日志保留多久？"),
    },
];

fn superseded(g: &mut Gen) {
    for i in 0..44 {
        let change = &CHANGES[i % CHANGES.len()];
        let lang = g.lang(0.5);
        let subject = (change.subject)(g, lang);
        let chain = if g.chance(0.2) { 3 } else { 2 };
        let vals: Vec<Pair> = g
            .pick_k(change.values, chain)
            .into_iter()
            .copied()
            .collect();
        let mark_old = i % 2 == 0;
        let mut ids = Vec::new();
        for (k, v) in vals.iter().enumerate() {
            let newest = k + 1 == vals.len();
            let l = if g.chance(0.8) { lang } else { g.lang(0.5) };
            let subj = subject.clone();
            let tpl = if k == 0 || g.chance(0.4) {
                change.stated
            } else {
                change.changed
            };
            let text = t(&tpl, l).replace("{s}", &subj).replace("{v}", t(v, l));
            let at = match (k, vals.len()) {
                (0, _) => g.days_ago(100, 175),
                (1, 3) => g.days_ago(45, 95),
                _ => g.days_ago(3, 40),
            };
            // The old value sometimes carries the higher importance: only time tells.
            let imp = if newest {
                g.importance(5, 7)
            } else {
                g.importance(5, 9)
            };
            let mut spec = MemSpec::new(change.ns, l, MemoryKind::Semantic, text)
                .tags(&["preference"])
                .entity("subject", subj)
                .importance(imp)
                .source(Source::User)
                .at(at);
            if !newest && mark_old {
                spec = spec.status(Status::Superseded);
            }
            ids.push(g.push(spec));
        }
        let n = ids.len();
        let judged: Vec<(usize, i32)> = ids
            .iter()
            .enumerate()
            .map(|(k, &i)| (i, if k + 1 == n { 3 } else { 0 }))
            .collect();
        let ql = query_lang(g, lang, 0.15);
        let text = t(&change.query, ql).replace("{s}", &subject);
        let variant = if mark_old {
            "variant:old-marked-superseded"
        } else {
            "variant:both-active"
        };
        g.query(change.ns, ql, text, &["superseded", variant], judged);
    }
}

// ---------------------------------------------------------------------------------------------
// stale

/// (namespace, subject maker, old fact en/zh, newer fact en/zh, query en/zh); `{s}` subject,
/// `{a}` old value, `{b}` new value, drawn from `values`.
struct Drift {
    ns: &'static str,
    subject: fn(&mut Gen, Lang) -> String,
    values: fn(&mut Gen) -> (String, String),
    old: Pair,
    new: Pair,
    query: Pair,
}

fn hosts_pair(g: &mut Gen) -> (String, String) {
    (pools::host(g, "db"), pools::host(g, "db"))
}
fn rate_pair(g: &mut Gen) -> (String, String) {
    let a = *g.pick(&[30u32, 60, 100]);
    (a.to_string(), (a * (2 + g.below(4) as u32)).to_string())
}
fn version_pair(g: &mut Gen) -> (String, String) {
    let (major, minor) = (g.range(1, 4), g.range(0, 20));
    let a = format!("{major}.{minor}.{}", g.range(0, 9));
    let b = format!("{major}.{}.{}", minor + g.range(1, 6), g.range(0, 9));
    (a, b)
}
fn fee_pair(g: &mut Gen) -> (String, String) {
    let a = g.range(6, 15);
    (a.to_string(), (a + g.range(2, 8)).to_string())
}
fn days_pair(g: &mut Gen) -> (String, String) {
    let a = *g.pick(&[7u32, 10]);
    (a.to_string(), (a + *g.pick(&[5u32, 8, 20])).to_string())
}
fn time_pair(g: &mut Gen) -> (String, String) {
    let a = g.range(6, 8);
    (format!("{a}:00"), format!("{}:30", a + 1))
}
fn phone_pair(g: &mut Gen) -> (String, String) {
    (
        format!("138{:08}", g.range(0, 99_999_999)),
        format!("139{:08}", g.range(0, 99_999_999)),
    )
}
fn subj_vendor(g: &mut Gen, _: Lang) -> String {
    g.fresh(|g| {
        format!(
            "{} {}",
            g.pick(&[
                "Aliyun",
                "Tencent Cloud",
                "Twilio",
                "SendGrid",
                "Baidu Maps",
                "Amap",
                "WeChat Pay",
                "Stripe"
            ]),
            g.pick(&["SMS", "geocoding", "email", "OCR", "refund", "push"])
        )
    })
}
fn subj_lib(g: &mut Gen, _: Lang) -> String {
    g.fresh(|g| {
        format!(
            "{} in {}",
            g.pick(&[
                "axios",
                "tokio",
                "sqlx",
                "react-query",
                "protobuf",
                "grpc-java",
                "okhttp",
                "pydantic",
                "spring-boot",
                "vite"
            ]),
            g.pick(pools::SERVICES)
        )
    })
}
fn subj_region(g: &mut Gen, lang: Lang) -> String {
    const REGIONS: &[Pair] = &[
        ("Xinjiang", "新疆"),
        ("Tibet", "西藏"),
        ("Inner Mongolia", "内蒙古"),
        ("Qinghai", "青海"),
        ("Hainan", "海南"),
        ("Macau", "澳门"),
        ("Ningxia", "宁夏"),
        ("Gansu", "甘肃"),
        ("Yunnan", "云南"),
        ("Heilongjiang", "黑龙江"),
        ("Jilin", "吉林"),
        ("Guangxi", "广西"),
        ("Guizhou", "贵州"),
        ("Shanxi", "山西"),
    ];
    let i = g.fresh(|g| format!("region|{}", g.below(REGIONS.len())));
    let i: usize = i
        .rsplit('|')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    t(&REGIONS[i % REGIONS.len()], lang).to_owned()
}
fn subj_place(g: &mut Gen, lang: Lang) -> String {
    pools::person(g, lang)
}

const DRIFTS: &[Drift] = &[
    Drift {
        ns: NS_OPS,
        subject: subj_cluster,
        values: hosts_pair,
        old: (
            "The primary of {s} is {a}; replicas are read-only.",
            "{s} 的主库是 {a}，从库只读。",
        ),
        new: (
            "After the failover drill, {b} serves writes for {s}.",
            "故障切换演练后，{s} 的写入由 {b} 承担。",
        ),
        query: ("which host is the {s} primary?", "{s} 现在主库是哪台？"),
    },
    Drift {
        ns: NS_OPS,
        subject: subj_vendor,
        values: rate_pair,
        old: (
            "The {s} API allows {a} requests per minute per key.",
            "{s} 接口每个 key 每分钟限 {a} 次。",
        ),
        new: (
            "Vendor confirmed our {s} quota is {b} requests/min per key as of this quarter.",
            "供应商确认本季度起我们的 {s} 配额是每 key 每分钟 {b} 次。",
        ),
        query: ("What's the {s} rate limit?", "{s} 的调用频率上限是多少？"),
    },
    Drift {
        ns: NS_CODE,
        subject: subj_lib,
        values: version_pair,
        old: (
            "Keep {s} pinned at {a}; newer versions break our retry middleware.",
            "{s} 要固定在 {a}，新版本会弄坏我们的重试中间件。",
        ),
        new: (
            "{s} now runs {b}; the retry middleware was rewritten and works with it.",
            "{s} 现在用 {b}，重试中间件已重写，兼容新版本。",
        ),
        query: (
            "Which version of {s} should we be on?",
            "{s} 应该用哪个版本？",
        ),
    },
    Drift {
        ns: NS_CS,
        subject: subj_region,
        values: fee_pair,
        old: (
            "Shipping to {s} costs ¥{a} per order regardless of weight.",
            "发往{s}每单运费 {a} 元，不论重量。",
        ),
        new: (
            "Current carrier contract: orders to {s} are charged ¥{b} shipping.",
            "当前物流合同：发往{s}的订单运费 {b} 元。",
        ),
        query: ("How much is shipping to {s}?", "寄到{s}运费多少？"),
    },
    Drift {
        ns: NS_CS,
        subject: subj_region,
        values: days_pair,
        old: (
            "Customers in {s} have {a} days to request a return.",
            "{s}的客户可在 {a} 天内申请退货。",
        ),
        new: (
            "Return requests from {s} are accepted within {b} days under the new policy.",
            "新政策下{s}的退货申请期限为 {b} 天。",
        ),
        query: (
            "How long do customers in {s} have to return items?",
            "{s}的客户退货期限是几天？",
        ),
    },
    Drift {
        ns: NS_PA,
        subject: subj_place,
        values: time_pair,
        old: (
            "{s}'s gym opens at {a} on weekdays.",
            "{s}的健身房工作日 {a} 开门。",
        ),
        new: (
            "{s}'s gym, winter hours: doors open {b} Monday to Friday.",
            "{s}的健身房冬季营业时间：周一到周五 {b} 开门。",
        ),
        query: (
            "What time does {s}'s gym open on weekdays?",
            "{s}的健身房工作日几点开门？",
        ),
    },
    Drift {
        ns: NS_PA,
        subject: subj_place,
        values: phone_pair,
        old: ("{s}'s mobile number is {a}.", "{s}的手机号是 {a}。"),
        new: (
            "{s}'s current number: {b} (the old SIM was cancelled).",
            "{s}现在的号码：{b}（旧卡已注销）。",
        ),
        query: ("What's {s}'s phone number?", "{s}的电话号码是多少？"),
    },
];

fn stale(g: &mut Gen) {
    for i in 0..42 {
        let d = &DRIFTS[i % DRIFTS.len()];
        let lang = g.lang(0.5);
        let subject = (d.subject)(g, lang);
        let (a, b) = (d.values)(g);
        let render = |tpl: &Pair, l: Lang| {
            t(tpl, l)
                .replace("{s}", &subject)
                .replace("{a}", &a)
                .replace("{b}", &b)
        };
        let l_old = if g.chance(0.9) { lang } else { g.lang(0.5) };
        let old_t = g.days_ago(120, 178);
        let old_imp = g.importance(7, 9);
        let old_src = if g.chance(0.5) {
            Source::External
        } else {
            Source::Agent
        };
        let old = g.push(
            MemSpec::new(d.ns, l_old, MemoryKind::Semantic, render(&d.old, l_old))
                .tags(&["fact"])
                .entity("subject", subject.clone())
                .importance(old_imp)
                .source(old_src)
                .at(old_t),
        );
        let l_new = if g.chance(0.9) { lang } else { g.lang(0.5) };
        let new_t = g.days_ago(2, 40);
        let new_imp = g.importance(5, 7);
        let new = g.push(
            MemSpec::new(d.ns, l_new, MemoryKind::Semantic, render(&d.new, l_new))
                .tags(&["fact"])
                .entity("subject", subject.clone())
                .importance(new_imp)
                .source(Source::Agent)
                .at(new_t),
        );
        let ql = query_lang(g, lang, 0.15);
        let text = render(&d.query, ql);
        g.query(d.ns, ql, text, &["stale"], vec![(new, 3), (old, 0)]);
    }
}

// ---------------------------------------------------------------------------------------------
// failed-task

/// (namespace, target maker, action en/zh (imperative, `{x}` = target), failure en/zh, fix en/zh,
/// unrelated success on the same target en/zh)
struct Lesson {
    ns: &'static str,
    target: fn(&mut Gen) -> String,
    action: Pair,
    failure: Pair,
    fix: Pair,
    other: Pair,
}

fn t_lb(g: &mut Gen) -> String {
    pools::host(g, "edge-lb")
}
fn t_host(g: &mut Gen) -> String {
    pools::host(g, "app")
}
fn t_broker(g: &mut Gen) -> String {
    pools::host(g, "kafka")
}
fn t_cluster(g: &mut Gen) -> String {
    subj_cluster(g, Lang::En)
}
fn t_service(g: &mut Gen) -> String {
    g.fresh(|g| format!("{}#lesson", g.pick(pools::SERVICES)))
        .replace("#lesson", "")
}
fn t_amount(g: &mut Gen) -> String {
    g.fresh(|g| format!("¥{}", g.range(5001, 30000)))
}
fn t_customer(g: &mut Gen) -> String {
    pools::customer_id(g)
}
fn t_person(g: &mut Gen) -> String {
    let l = g.lang(0.5);
    pools::person(g, l)
}

const LESSONS: &[Lesson] = &[
    Lesson {
        ns: NS_OPS,
        target: t_lb,
        action: ("rotate the TLS certificate on {x}", "给 {x} 换 TLS 证书"),
        failure: (
            "nginx kept serving the old chain until a reload, and Android clients failed the handshake for 20 minutes",
            "nginx 没 reload 一直用旧证书链，安卓客户端握手失败了 20 分钟",
        ),
        fix: (
            "reload nginx right after replacing the files and check the chain with openssl s_client",
            "替换文件后立即 reload nginx，并用 openssl s_client 检查证书链",
        ),
        other: (
            "Upgraded the kernel on {x} to 5.15; rebooted during the low-traffic window.",
            "{x} 内核升级到 5.15，在低峰期重启。",
        ),
    },
    Lesson {
        ns: NS_OPS,
        target: t_host,
        action: ("grow the data disk on {x}", "给 {x} 扩数据盘"),
        failure: (
            "the partition was resized but the filesystem was not, so the disk still showed 100% used",
            "分区扩了但文件系统没扩，磁盘仍显示 100%",
        ),
        fix: (
            "run resize2fs (or xfs_growfs) after growpart and verify with df -h",
            "growpart 之后执行 resize2fs（或 xfs_growfs），用 df -h 确认",
        ),
        other: (
            "Rotated the SSH host keys on {x} as part of the quarterly hardening.",
            "季度加固时轮换了 {x} 的 SSH 主机密钥。",
        ),
    },
    Lesson {
        ns: NS_OPS,
        target: t_broker,
        action: ("restart the broker {x}", "重启 broker {x}"),
        failure: (
            "it was restarted without moving partition leadership first; producers timed out and 3k messages were retried",
            "没先迁移分区 leader 就重启，生产者超时，重试了 3000 条消息",
        ),
        fix: (
            "use controlled shutdown and wait for under-replicated partitions to reach 0 before the next broker",
            "用受控关闭，等 under-replicated 分区归零再处理下一台",
        ),
        other: (
            "Added {x} to the disk-usage dashboard.",
            "把 {x} 加到磁盘使用率看板。",
        ),
    },
    Lesson {
        ns: NS_OPS,
        target: t_cluster,
        action: (
            "restore last night's backup into {x}",
            "把昨晚的备份恢复到 {x}",
        ),
        failure: (
            "the restore ran against the live instance instead of a fresh one and overwrote two hours of writes",
            "恢复操作打到了线上实例而不是新实例，覆盖了两小时的写入",
        ),
        fix: (
            "always restore into a new instance, verify row counts, then switch traffic",
            "始终恢复到新实例，核对行数后再切流量",
        ),
        other: (
            "Enabled slow-query logging on {x} with a 500 ms threshold.",
            "给 {x} 开启慢查询日志，阈值 500ms。",
        ),
    },
    Lesson {
        ns: NS_OPS,
        target: t_cluster,
        action: (
            "upgrade {x} to the next minor version",
            "把 {x} 升级到下一个小版本",
        ),
        failure: (
            "the upgrade reset a custom parameter group and max_connections dropped to 100, causing connection errors",
            "升级重置了自定义参数组，max_connections 变回 100，连接报错",
        ),
        fix: (
            "re-attach the custom parameter group and compare SHOW ALL output before and after",
            "重新挂载自定义参数组，对比升级前后的 SHOW ALL 输出",
        ),
        other: (
            "Created a read-only user for the BI team on {x}.",
            "在 {x} 上给 BI 组建了只读账号。",
        ),
    },
    Lesson {
        ns: NS_CODE,
        target: t_service,
        action: ("run the schema migration for {x}", "给 {x} 执行表结构变更"),
        failure: (
            "ALTER TABLE took an exclusive lock on the orders table and blocked checkouts for 6 minutes",
            "ALTER TABLE 对订单表加了排他锁，结算被阻塞了 6 分钟",
        ),
        fix: (
            "set lock_timeout, add columns without defaults, and backfill in batches",
            "设置 lock_timeout，加列不带默认值，分批回填",
        ),
        other: (
            "Added OpenTelemetry tracing to {x}.",
            "给 {x} 接入了 OpenTelemetry 链路追踪。",
        ),
    },
    Lesson {
        ns: NS_CODE,
        target: t_service,
        action: (
            "regenerate the API client for {x}",
            "重新生成 {x} 的 API 客户端",
        ),
        failure: (
            "the generator renamed enum variants and broke three downstream builds",
            "生成器把枚举名改了，导致三个下游构建失败",
        ),
        fix: (
            "pin the generator version and diff the public API before publishing",
            "固定生成器版本，发布前对比公开 API",
        ),
        other: (
            "Wrote the README section on local setup for {x}.",
            "补了 {x} 的本地环境搭建文档。",
        ),
    },
    Lesson {
        ns: NS_CODE,
        target: t_service,
        action: (
            "upgrade the Node.js runtime of {x}",
            "升级 {x} 的 Node.js 版本",
        ),
        failure: (
            "native modules were not rebuilt and the container crashed on start with an ABI mismatch",
            "原生模块没重新编译，容器启动时 ABI 不匹配崩溃",
        ),
        fix: (
            "rebuild native modules in the Dockerfile and run the smoke test before merging",
            "在 Dockerfile 里重新编译原生模块，合并前跑冒烟测试",
        ),
        other: (
            "Split the {x} test suite into unit and integration jobs.",
            "把 {x} 的测试拆成单元测试和集成测试两个任务。",
        ),
    },
    Lesson {
        ns: NS_CODE,
        target: t_service,
        action: (
            "rename the environment variables of {x}",
            "给 {x} 的环境变量改名",
        ),
        failure: (
            "staging still had the old names, the service fell back to defaults and pointed at the production bucket",
            "预发环境还是旧变量名，服务用了默认值，指向了生产桶",
        ),
        fix: (
            "support both names for one release and fail fast when neither is set",
            "一个版本内同时支持新旧变量名，都没有时直接报错退出",
        ),
        other: (
            "Reviewed the logging format of {x}; no changes needed.",
            "检查了 {x} 的日志格式，无需修改。",
        ),
    },
    Lesson {
        ns: NS_CS,
        target: t_amount,
        action: (
            "refund an order of {x} through the refund API",
            "通过退款接口给 {x} 的订单退款",
        ),
        failure: (
            "refunds above ¥5000 are rejected by the API and the customer got an error SMS",
            "超过 5000 元的退款会被接口拒绝，客户还收到了失败短信",
        ),
        fix: (
            "file a manual-approval refund in the finance console instead",
            "改为在财务后台提交人工审批退款",
        ),
        other: (
            "Sent an invoice copy for an order of {x} to the customer's accountant.",
            "把 {x} 订单的发票副本发给了客户的会计。",
        ),
    },
    Lesson {
        ns: NS_CS,
        target: t_customer,
        action: (
            "merge the duplicate accounts of customer {x}",
            "合并客户 {x} 的重复账号",
        ),
        failure: (
            "merging dropped the loyalty points of the secondary account and the customer complained",
            "合并后副账号的积分丢了，客户投诉",
        ),
        fix: (
            "export points and coupons of both accounts first, merge, then re-credit",
            "先导出两个账号的积分和优惠券，合并后再补发",
        ),
        other: (
            "Updated the shipping address of customer {x}.",
            "更新了客户 {x} 的收货地址。",
        ),
    },
    Lesson {
        ns: NS_CS,
        target: t_customer,
        action: (
            "cancel a shipped order for customer {x}",
            "给客户 {x} 取消已发货的订单",
        ),
        failure: (
            "the cancellation went through but the parcel was still delivered, so the customer got the goods and a refund",
            "取消成功了但包裹还是送到了，客户货和退款都拿到了",
        ),
        fix: (
            "ask the courier to intercept the parcel first and cancel only after the interception is confirmed",
            "先让快递拦截包裹，确认拦截成功后再取消",
        ),
        other: (
            "Customer {x} asked for the warranty terms; sent the PDF.",
            "客户 {x} 询问保修条款，已发送 PDF。",
        ),
    },
    Lesson {
        ns: NS_PA,
        target: t_person,
        action: (
            "book train tickets for {x} on 12306",
            "在 12306 给{x}买火车票",
        ),
        failure: (
            "the passenger's ID number had a typo and the ticket could not be collected at the station",
            "乘客身份证号输错一位，到车站取不了票",
        ),
        fix: (
            "copy the ID number from the saved passenger profile and double-check before paying",
            "从常用乘客信息里复制身份证号，付款前再核对一遍",
        ),
        other: (
            "Booked a dinner table for {x}'s team on Friday.",
            "给{x}的团队订了周五的晚餐。",
        ),
    },
    Lesson {
        ns: NS_PA,
        target: t_person,
        action: ("send flowers to {x}", "给{x}送花"),
        failure: (
            "the order used the old address and the bouquet was returned",
            "下单用了旧地址，花被退回来了",
        ),
        fix: (
            "confirm the current address with {x} the day before ordering",
            "下单前一天先和{x}确认现在的地址",
        ),
        other: (
            "Added {x}'s birthday to the shared calendar.",
            "把{x}的生日加到了共享日历。",
        ),
    },
    Lesson {
        ns: NS_PA,
        target: t_person,
        action: ("transfer the monthly rent to {x}", "给{x}转月租"),
        failure: (
            "the bank's daily transfer limit blocked the payment and the rent was two days late",
            "银行单日转账限额导致付款失败，房租晚了两天",
        ),
        fix: (
            "raise the transfer limit in the banking app a day early or split the payment",
            "提前一天在手机银行调高限额，或者分两笔转",
        ),
        other: ("Saved {x}'s WeChat contact card.", "保存了{x}的微信名片。"),
    },
];

fn failed_task(g: &mut Gen) {
    for i in 0..48 {
        let lesson = &LESSONS[i % LESSONS.len()];
        let target = (lesson.target)(g);
        let lang = g.lang(0.5);
        let act = |l: Lang| t(&lesson.action, l).replace("{x}", &target);
        let text = match lang {
            Lang::En => format!(
                "Tried to {}: it failed because {}. Next time: {}.",
                act(lang),
                lesson.failure.0,
                t(&lesson.fix, lang).replace("{x}", &target)
            ),
            Lang::Zh => format!(
                "尝试{}失败：{}。下次要{}。",
                act(lang),
                lesson.failure.1,
                t(&lesson.fix, lang).replace("{x}", &target)
            ),
        };
        let ctx = match lang {
            Lang::En => format!("Before anyone tries to {} again", act(Lang::En)),
            Lang::Zh => format!("再次{}之前", act(Lang::Zh)),
        };
        let at = g.days_ago(10, 150);
        let imp = g.importance(3, 6);
        let warn = g.push(
            MemSpec::new(lesson.ns, lang, MemoryKind::Warning, text)
                .context(ctx)
                .tags(&["lesson", "failure"])
                .entity("target", target.clone())
                .importance(imp)
                .source(Source::Agent)
                .at(at)
                .task(TaskType::Modify, Outcome::Failure),
        );
        let mut judged = vec![(warn, 3)];
        if g.chance(0.5) {
            // An earlier run of the same task that happened to succeed: partially relevant.
            let l = g.lang(0.5);
            let text = match l {
                Lang::En => format!(
                    "Managed to {} without issues; it took about {} minutes.",
                    act(l),
                    g.range(10, 50)
                ),
                Lang::Zh => format!("顺利完成{}，大约用了 {} 分钟。", act(l), g.range(10, 50)),
            };
            let at2 = at - Duration::days(g.range(20, 60) as i64);
            let i2 = g.push(
                MemSpec::new(lesson.ns, l, MemoryKind::Episodic, text)
                    .tags(&["task"])
                    .entity("target", target.clone())
                    .importance(0.5)
                    .source(Source::Agent)
                    .at(at2)
                    .task(TaskType::Modify, Outcome::Success),
            );
            judged.push((i2, 1));
        }
        // Same target, unrelated task: a judged distractor.
        let l = g.lang(0.5);
        let at3 = g.any_time();
        let other = g.push(
            MemSpec::new(
                lesson.ns,
                l,
                MemoryKind::Episodic,
                t(&lesson.other, l).replace("{x}", &target),
            )
            .tags(&["task"])
            .entity("target", target.clone())
            .importance(0.5)
            .source(Source::Agent)
            .at(at3)
            .task(TaskType::Modify, Outcome::Success),
        );
        judged.push((other, 0));
        let ql = query_lang(g, lang, 0.12);
        let a = act(ql);
        let text = match ql {
            Lang::En => one(
                g,
                vec![
                    format!("I'm about to {a}. Anything I should watch out for?"),
                    format!("plan for tonight: {a}, any notes from last time?"),
                    format!("Going to {a} tomorrow morning, did anything go wrong before?"),
                ],
            ),
            Lang::Zh => one(
                g,
                vec![
                    format!("准备{a}，之前有什么坑吗？"),
                    format!("今晚要{a}，上次有没有踩过雷？"),
                    format!("{a}需要注意什么"),
                ],
            ),
        };
        g.query(lesson.ns, ql, text, &["failed-task"], judged);
    }
}

// ---------------------------------------------------------------------------------------------
// distractor: families of sibling facts that differ in one attribute.

struct Family {
    ns: &'static str,
    members: usize,
    queries: usize,
    subject: fn(&mut Gen, Lang) -> String,
    value: fn(&mut Gen, Lang) -> String,
    fact: Pair,
    query: Pair,
}

fn v_port(g: &mut Gen, _: Lang) -> String {
    g.fresh(|g| format!("{}", g.range(7000, 9999)))
}
fn v_person(g: &mut Gen, l: Lang) -> String {
    pools::person(g, l)
}
fn v_retry(g: &mut Gen, l: Lang) -> String {
    let n = g.range(1, 5);
    let ms = *g.pick(&[100u32, 200, 250, 500, 1000]);
    match l {
        Lang::En => format!("{n} retries with {ms} ms exponential backoff"),
        Lang::Zh => format!("重试 {n} 次，指数退避起始 {ms}ms"),
    }
}
fn v_gift(g: &mut Gen, l: Lang) -> String {
    let gifts: &[Pair] = &[
        ("a silk scarf", "一条丝巾"),
        ("a bluetooth speaker", "一个蓝牙音箱"),
        ("a set of fountain pens", "一套钢笔"),
        ("concert tickets", "演唱会门票"),
        ("a tea set", "一套茶具"),
        ("a cookbook", "一本菜谱"),
        ("a leather wallet", "一个皮夹"),
        ("a board game", "一套桌游"),
        ("a plant for the balcony", "一盆阳台绿植"),
        ("a massage voucher", "一张按摩券"),
    ];
    t(g.pick(gifts), l).to_owned()
}
fn v_city(g: &mut Gen, l: Lang) -> String {
    t(g.pick(pools::CITIES), l).to_owned()
}
fn v_tier(g: &mut Gen, l: Lang) -> String {
    let tiers: &[Pair] = &[
        ("Gold", "金卡"),
        ("Platinum", "白金卡"),
        ("Silver", "银卡"),
        ("Diamond", "钻石卡"),
    ];
    let agent = pools::person(g, l);
    match l {
        Lang::En => format!(
            "a {} member; their dedicated agent is {agent}",
            t(g.pick(tiers), l)
        ),
        Lang::Zh => format!("{}会员，专属客服是{agent}", t(g.pick(tiers), l)),
    }
}
fn s_service(g: &mut Gen, _: Lang) -> String {
    g.pick(pools::SERVICES).to_string()
}
fn s_customer(g: &mut Gen, l: Lang) -> String {
    pools::person(g, l)
}

const FAMILIES: &[Family] = &[
    Family {
        ns: NS_OPS,
        members: 16,
        queries: 9,
        subject: s_service,
        value: v_port,
        fact: (
            "{s} listens on port {v} behind the internal load balancer.",
            "{s} 在内网负载均衡后面监听 {v} 端口。",
        ),
        query: ("what port is {s} on?", "{s} 用的是哪个端口？"),
    },
    Family {
        ns: NS_OPS,
        members: 16,
        queries: 8,
        subject: s_service,
        value: v_person,
        fact: (
            "Primary on-call for {s} this rotation: {v}.",
            "本轮 {s} 的主值班人：{v}。",
        ),
        query: ("who do I page for {s}?", "{s} 出问题找谁？"),
    },
    Family {
        ns: NS_CODE,
        members: 16,
        queries: 9,
        subject: s_service,
        value: v_retry,
        fact: (
            "HTTP client policy for calls to {s}: {v}.",
            "调用 {s} 的 HTTP 客户端策略：{v}。",
        ),
        query: (
            "retry settings when calling {s}?",
            "调用 {s} 时的重试策略是什么？",
        ),
    },
    Family {
        ns: NS_CS,
        members: 16,
        queries: 9,
        subject: s_customer,
        value: v_tier,
        fact: ("{s} is {v}.", "{s}是{v}。"),
        query: (
            "Is {s} a VIP? Who handles them?",
            "{s}是什么会员等级，谁负责？",
        ),
    },
    Family {
        ns: NS_PA,
        members: 16,
        queries: 8,
        subject: s_customer,
        value: v_gift,
        fact: (
            "For {s}'s birthday last year I gave {v}; they loved it.",
            "去年{s}生日我送了{v}，对方很喜欢。",
        ),
        query: (
            "What did I give {s} for their last birthday?",
            "去年{s}生日我送的什么？",
        ),
    },
    Family {
        ns: NS_PA,
        members: 14,
        queries: 8,
        subject: s_customer,
        value: v_city,
        fact: (
            "{s} moved to {v} for a new job.",
            "{s}为了新工作搬到了{v}。",
        ),
        query: ("Which city does {s} live in now?", "{s}现在住哪个城市？"),
    },
];

fn distractor(g: &mut Gen) {
    for fam in FAMILIES {
        let mut members = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..fam.members {
            let l = g.lang(0.5);
            let mut s = (fam.subject)(g, l);
            while !seen.insert(s.clone()) {
                s = (fam.subject)(g, l);
            }
            let v = (fam.value)(g, l);
            let text = t(&fam.fact, l).replace("{s}", &s).replace("{v}", &v);
            let at = g.any_time();
            let imp = g.importance(4, 7);
            let src = g.source();
            let i = g.push(
                MemSpec::new(fam.ns, l, MemoryKind::Semantic, text)
                    .tags(&["fact"])
                    .entity("subject", s.clone())
                    .importance(imp)
                    .source(src)
                    .at(at),
            );
            members.push((i, s, l));
        }
        let chosen = g
            .pick_k(&members, fam.queries)
            .into_iter()
            .cloned()
            .collect::<Vec<_>>();
        for (target, s, l) in chosen {
            let ql = query_lang(g, l, 0.15);
            let text = t(&fam.query, ql).replace("{s}", &s);
            let mut judged = vec![(target, 3)];
            for (j, _, _) in g.pick_k(&members, 9) {
                if *j != target && judged.len() < 9 {
                    judged.push((*j, 0));
                }
            }
            g.query(fam.ns, ql, text, &["distractor"], judged);
        }
    }
}
