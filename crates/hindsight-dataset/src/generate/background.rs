//! Background memories: many plausible memories per namespace that no query is about. Their
//! templates stay clear of every scenario subject (no deploys or migrations outside the pools, no
//! drink or airline preferences, no ports or on-call owners, ...), so they can only compete with,
//! never answer, a query.

use chrono::Duration;
use hindsight_core::{MemoryKind, Outcome, Source, TaskType};

use super::pools::{self, Pair, t};
use super::scenarios::{families, order_episode};
use super::{Gen, Lang, MemSpec, NS_CODE, NS_CS, NS_OPS, NS_PA};

pub(crate) fn all(g: &mut Gen) {
    customer_service(g);
    coding(g);
    ops(g);
    personal(g);
}

fn ctx(lang: Lang, en: String, zh: String) -> String {
    match lang {
        Lang::En => en,
        Lang::Zh => zh,
    }
}

// ---------------------------------------------------------------------------------------------

const CUSTOMER_NOTES: &[Pair] = &[
    (
        "is hard of hearing; speak slowly and confirm details in writing.",
        "听力不太好，说话放慢，细节要文字确认。",
    ),
    (
        "buys for a small shop and always asks for itemised receipts.",
        "是给小店进货的，每次都要明细小票。",
    ),
    (
        "was upset last time; stay polite and document every promise.",
        "上次情绪很激动，保持礼貌，所有承诺都要记录。",
    ),
    (
        "prefers Cantonese-speaking agents.",
        "希望由会说粤语的客服接待。",
    ),
    (
        "runs a pet shop and reorders pet supplies every month.",
        "开宠物店，每个月都会回购宠物用品。",
    ),
    (
        "is a student; usually asks whether student discounts apply.",
        "是学生，经常问能不能用学生优惠。",
    ),
    (
        "often orders gifts for their parents in another province.",
        "经常给外省的父母买礼物。",
    ),
    (
        "reported a fake product once; handle with extra care.",
        "曾经举报过假货，处理要格外仔细。",
    ),
    (
        "is visually impaired and uses a screen reader; send plain-text messages.",
        "视力障碍，使用读屏软件，发纯文本消息。",
    ),
    (
        "collects limited editions and asks about pre-orders early.",
        "收藏限量款，会很早询问预售。",
    ),
    (
        "has a company account and needs purchase orders referenced on invoices.",
        "是企业账户，发票上需要注明采购单号。",
    ),
    (
        "likes to chat; keep calls focused but friendly.",
        "很爱聊天，通话保持友好但别跑题。",
    ),
];

const POLICIES: &[Pair] = &[
    (
        "Price protection: if the price drops within 7 days of purchase, refund the difference once per order.",
        "价格保护：购买后 7 天内降价，每单可退一次差价。",
    ),
    (
        "Agents may issue a coupon of at most ¥50 without supervisor approval.",
        "客服无需主管审批最多可发 50 元优惠券。",
    ),
    (
        "Fresh food cannot be returned unless it arrived spoiled; ask for a photo within 24 hours.",
        "生鲜不支持退货，除非到货变质，需 24 小时内提供照片。",
    ),
    (
        "Personalised engraved items are final sale.",
        "定制刻字商品售出不退。",
    ),
    (
        "Large appliances are delivered and installed by the brand's own technicians.",
        "大家电由品牌方师傅送货安装。",
    ),
    (
        "Pre-order deposits are non-refundable after the balance payment window opens.",
        "预售定金在尾款支付开始后不退。",
    ),
    (
        "Cash on delivery is only available for orders below ¥2000.",
        "货到付款仅限 2000 元以下订单。",
    ),
    (
        "Customers can change the invoice title once within 30 days.",
        "客户 30 天内可修改一次发票抬头。",
    ),
    (
        "When a parcel shows delivered but the customer has nothing, open a courier investigation before refunding.",
        "物流显示签收但客户没收到时，先发起快递调查再退款。",
    ),
    (
        "Never ask a customer for their full card number or SMS verification code.",
        "绝不向客户索要完整卡号或短信验证码。",
    ),
    (
        "Trade-in credit is applied after the old device passes inspection.",
        "以旧换新的抵扣在旧机检测通过后发放。",
    ),
    (
        "Warranty for electronics is one year from the delivery date, two years for laptops.",
        "电子产品保修期为签收起一年，笔记本电脑两年。",
    ),
    (
        "Complaints mentioning injuries must be forwarded to the safety team the same day.",
        "涉及人身伤害的投诉当天转给安全团队。",
    ),
    (
        "Orders flagged by the risk system cannot be manually released by agents.",
        "被风控拦截的订单客服不能手动放行。",
    ),
    (
        "Out-of-stock items in a paid order are refunded automatically after 48 hours.",
        "已付款订单中的缺货商品 48 小时后自动退款。",
    ),
    (
        "Customers may split one order into at most three shipments.",
        "一个订单最多拆成三个包裹发货。",
    ),
    (
        "Bundle discounts are forfeited if one item of the bundle is returned.",
        "套装中退回任一件商品，套装优惠取消。",
    ),
    (
        "Chat transcripts are retained for 180 days.",
        "聊天记录保留 180 天。",
    ),
];

fn customer_service(g: &mut Gen) {
    for _ in 0..260 {
        let lang = g.lang(0.5);
        let issue = g.below(families::ORDER_ISSUES);
        let (prod, code) = *g.pick(pools::PRODUCTS);
        let oid = pools::order_id(g);
        let mut spec = order_episode(g, lang, issue, &oid, prod, code);
        if g.chance(0.15) {
            spec.content.push_str(match lang {
                Lang::En => " The customer was kept updated by SMS at every step, confirmed they were satisfied, and agreed to close the case; no further compensation was requested and no follow-up call is needed unless they contact us again.",
                Lang::Zh => "每一步都短信通知了客户，客户确认满意并同意结案，没有再要求补偿，除非客户再次联系，否则无需回访。",
            });
        }
        g.push(spec);
    }
    for _ in 0..95 {
        let lang = g.lang(0.5);
        let name = pools::person(g, lang);
        let cid = pools::customer_id(g);
        let note = *g.pick(CUSTOMER_NOTES);
        let text = match lang {
            Lang::En => format!("{name} ({cid}) {}", note.0),
            Lang::Zh => format!("{name}（{cid}）{}", note.1),
        };
        let at = g.any_time();
        let imp = g.importance(3, 7);
        let src = if g.chance(0.6) {
            Source::Agent
        } else {
            Source::User
        };
        g.push(
            MemSpec::new(NS_CS, lang, MemoryKind::Semantic, text)
                .context(ctx(
                    lang,
                    format!("Whenever {name} contacts support"),
                    format!("{name}联系客服时"),
                ))
                .tags(&["customer-profile"])
                .entity("customer_id", cid)
                .importance(imp)
                .source(src)
                .at(at),
        );
    }
    for p in POLICIES {
        let lang = g.lang(0.5);
        let at = g.days_ago(60, 180);
        let imp = g.importance(6, 9);
        g.push(
            MemSpec::new(NS_CS, lang, MemoryKind::Semantic, t(p, lang).to_owned())
                .context(ctx(
                    lang,
                    "Customer-service policy handbook".into(),
                    "客服政策手册".into(),
                ))
                .tags(&["policy"])
                .importance(imp)
                .source(Source::External)
                .at(at),
        );
    }
    for _ in 0..60 {
        let lang = g.lang(0.5);
        let (prod, code) = *g.pick(pools::PRODUCTS);
        let sku = pools::sku(g, code);
        let at = g.any_time();
        let back = at + Duration::days(g.range(3, 20) as i64);
        let pct = *g.pick(&[10u32, 15, 20, 30]);
        let text = match (lang, g.below(3)) {
            (Lang::En, 0) => format!(
                "Restock: {} ({sku}) expected back on {}.",
                prod.0,
                pools::date_text(lang, back)
            ),
            (Lang::En, 1) => format!(
                "Promotion: {} ({sku}) {pct}% off for the weekend flash sale; limit two per customer.",
                prod.0
            ),
            (Lang::En, _) => format!(
                "{sku} ({}) is being discontinued; offer the newer model when customers ask.",
                prod.0
            ),
            (Lang::Zh, 0) => format!(
                "补货：{}（{sku}）预计{}到货。",
                prod.1,
                pools::date_text(lang, back)
            ),
            (Lang::Zh, 1) => format!(
                "促销：{}（{sku}）周末闪购 {pct}% 折扣，每人限购两件。",
                prod.1
            ),
            (Lang::Zh, _) => format!("{sku}（{}）即将停产，客户问起时推荐新款。", prod.1),
        };
        g.push(
            MemSpec::new(NS_CS, lang, MemoryKind::Semantic, text)
                .tags(&["catalog"])
                .entity("sku", sku)
                .importance(0.4)
                .source(Source::External)
                .at(at),
        );
    }
}

// ---------------------------------------------------------------------------------------------

const BUMP_LIBS: &[&str] = &[
    "lodash",
    "serde",
    "jackson-databind",
    "gson",
    "zod",
    "webpack",
    "eslint",
    "log4j",
    "netty",
    "redis-py",
    "dayjs",
    "reqwest",
];

const REVIEW_NOTES: &[Pair] = &[
    (
        "prefer early returns over nested ifs in the handler",
        "处理函数里用提前返回代替多层 if",
    ),
    (
        "the timeout branch swallows the error; log it with context",
        "超时分支吞掉了错误，要带上下文记录日志",
    ),
    (
        "add a tracing span around the database call",
        "数据库调用外面加一个 tracing span",
    ),
    (
        "this loop does N+1 queries; batch them",
        "这个循环有 N+1 查询，改成批量",
    ),
    (
        "magic number 86400 should be a named constant",
        "魔法数字 86400 应该定义成常量",
    ),
    ("public function lacks doc comments", "公开函数缺少文档注释"),
    (
        "the mutex is held across an await point",
        "锁跨越了 await 点",
    ),
    (
        "test only covers the happy path; add the empty-input case",
        "测试只覆盖了正常路径，补上空输入的情况",
    ),
    (
        "money is stored as float; use integer cents",
        "金额用了浮点数，改用整数分",
    ),
    (
        "the new endpoint is missing an auth check",
        "新接口缺少鉴权校验",
    ),
    (
        "string concatenation builds SQL; use bind parameters",
        "用字符串拼接 SQL，改用参数绑定",
    ),
    (
        "unused import left after the refactor",
        "重构后留下了无用的 import",
    ),
];

const FLAKY: &[Pair] = &[
    (
        "a time-dependent assertion around midnight",
        "断言依赖时间，跨零点就失败",
    ),
    (
        "shared Redis state between test cases",
        "测试用例之间共享了 Redis 状态",
    ),
    (
        "port collisions when tests run in parallel",
        "并行执行时端口冲突",
    ),
    (
        "an unordered map compared with a fixed expected string",
        "无序 map 和固定字符串做比较",
    ),
    (
        "a race between the mock server start and the first request",
        "mock 服务启动和第一个请求之间有竞态",
    ),
];

const CONVENTIONS: &[Pair] = &[
    (
        "commit messages follow Conventional Commits",
        "提交信息遵循 Conventional Commits",
    ),
    (
        "every PR needs two approvals, one from the owning team",
        "每个 PR 需要两个批准，其中一个来自负责团队",
    ),
    (
        "logs are structured JSON with a request_id field",
        "日志是带 request_id 字段的结构化 JSON",
    ),
    (
        "errors are wrapped with context before returning",
        "错误返回前要包装上下文",
    ),
    (
        "public HTTP handlers are versioned under /v2",
        "对外 HTTP 接口都在 /v2 下",
    ),
    (
        "database access goes through the repository layer only",
        "数据库访问只能通过 repository 层",
    ),
    (
        "feature code lives in src/features/<name>",
        "功能代码放在 src/features/<name>",
    ),
    (
        "integration tests are tagged and run nightly",
        "集成测试打标签，每晚运行",
    ),
];

fn coding(g: &mut Gen) {
    for _ in 0..170 {
        let lang = g.lang(0.45);
        let bug = g.below(families::BUGS.len());
        let id = pools::ticket(g);
        let spec = families::ticket_memory(g, lang, bug, &id);
        g.push(spec);
    }
    for _ in 0..70 {
        let lang = g.lang(0.45);
        let lib = *g.pick(BUMP_LIBS);
        let svc = *g.pick(pools::SERVICES);
        let (a, b) = (pools::version(g), pools::version(g));
        let text = match (lang, g.below(2)) {
            (Lang::En, 0) => {
                format!("Bumped {lib} from {a} to {b} in {svc}; no API changes, tests green.")
            }
            (Lang::En, _) => format!(
                "Dependabot PR for {lib} {b} in {svc} merged after fixing two deprecation warnings."
            ),
            (Lang::Zh, 0) => format!("{svc} 的 {lib} 从 {a} 升到 {b}，接口无变化，测试全过。"),
            (Lang::Zh, _) => {
                format!("{svc} 的 {lib} {b} 依赖升级 PR 已合并，顺手修了两个弃用警告。")
            }
        };
        let at = g.any_time();
        g.push(
            MemSpec::new(NS_CODE, lang, MemoryKind::Episodic, text)
                .tags(&["dependency"])
                .entity("service", svc)
                .importance(0.3)
                .source(Source::Agent)
                .at(at)
                .task(TaskType::Modify, Outcome::Success),
        );
    }
    for _ in 0..80 {
        let lang = g.lang(0.45);
        let svc = *g.pick(pools::SERVICES);
        let pr = g.range(1000, 9999);
        let note = *g.pick(REVIEW_NOTES);
        let author = pools::person(g, lang);
        let text = match lang {
            Lang::En => format!("Review of PR #{pr} in {svc} by {author}: {}.", note.0),
            Lang::Zh => format!("{author} 提交的 {svc} PR #{pr} 评审意见：{}。", note.1),
        };
        let at = g.any_time();
        let imp = g.importance(2, 5);
        g.push(
            MemSpec::new(NS_CODE, lang, MemoryKind::Episodic, text)
                .tags(&["code-review"])
                .entity("service", svc)
                .importance(imp)
                .source(Source::Agent)
                .at(at)
                .task(TaskType::Analyze, Outcome::Success),
        );
    }
    for _ in 0..50 {
        let lang = g.lang(0.45);
        let svc = *g.pick(pools::SERVICES);
        let test = format!(
            "test_{}_{}",
            g.pick(&[
                "refund",
                "cart",
                "login_rate",
                "export",
                "webhook",
                "price",
                "stock"
            ]),
            g.pick(&["roundtrip", "concurrent", "expiry", "retry", "pagination"])
        );
        let reason = *g.pick(FLAKY);
        let p = g.range(2, 20);
        let text = match lang {
            Lang::En => format!(
                "Flaky test {test} in {svc}: fails about {p}% of CI runs because of {}; quarantined until fixed.",
                reason.0
            ),
            Lang::Zh => format!(
                "{svc} 的 {test} 不稳定：约 {p}% 的 CI 运行失败，原因是{}，已隔离待修。",
                reason.1
            ),
        };
        let at = g.any_time();
        g.push(
            MemSpec::new(NS_CODE, lang, MemoryKind::Semantic, text)
                .tags(&["ci", "flaky-test"])
                .entity("service", svc)
                .importance(0.4)
                .source(Source::Agent)
                .at(at),
        );
    }
    for _ in 0..50 {
        let lang = g.lang(0.45);
        let repo = format!(
            "{}-{}",
            g.pick(&["web", "api", "mobile", "infra", "data", "admin"]),
            g.pick(pools::SERVICES)
        );
        let conv = *g.pick(CONVENTIONS);
        let text = match lang {
            Lang::En => format!("In {repo}, {}.", conv.0),
            Lang::Zh => format!("{repo} 仓库约定：{}。", conv.1),
        };
        let at = g.any_time();
        let imp = g.importance(4, 7);
        g.push(
            MemSpec::new(NS_CODE, lang, MemoryKind::Semantic, text)
                .context(ctx(
                    lang,
                    format!("When contributing to {repo}"),
                    format!("给 {repo} 提交代码时"),
                ))
                .tags(&["convention"])
                .importance(imp)
                .source(Source::User)
                .at(at),
        );
    }
}

// ---------------------------------------------------------------------------------------------

const SYMPTOMS: &[Pair] = &[
    ("p99 latency spiked to 4s", "p99 延迟飙到 4 秒"),
    ("5xx error rate hit 3%", "5xx 错误率达到 3%"),
    (
        "memory grew steadily until the OOM killer fired",
        "内存持续上涨直到被 OOM 杀掉",
    ),
    ("CPU was pinned at 100%", "CPU 一直 100%"),
    ("clients saw connection resets", "客户端出现连接重置"),
    (
        "health checks flapped for 15 minutes",
        "健康检查抖动了 15 分钟",
    ),
];
/// (cause, the mitigation that fits it)
const CAUSES: &[(Pair, Pair)] = &[
    (
        (
            "a noisy neighbour VM on the same hypervisor",
            "同一宿主机上的吵闹邻居虚拟机",
        ),
        ("moved the pod to another node", "把 pod 迁到了其他节点"),
    ),
    (
        (
            "long GC pauses after a traffic surge",
            "流量激增后的长时间 GC 停顿",
        ),
        (
            "restarted the instance and opened a follow-up ticket",
            "重启实例并建了跟进工单",
        ),
    ),
    (
        (
            "a stale DNS cache pointing at a retired upstream",
            "DNS 缓存过期指向已下线的上游",
        ),
        ("flushed the resolver cache", "清空了解析缓存"),
    ),
    (
        ("a slow third-party risk API", "第三方风控接口变慢"),
        (
            "added a circuit breaker around the call",
            "给这个调用加了熔断",
        ),
    ),
    (
        (
            "a thread pool exhausted by a retry storm from one client",
            "某个客户端的重试风暴耗尽线程池",
        ),
        ("rate-limited the offending client", "对问题客户端限流"),
    ),
    (
        ("a misconfigured health-check path", "健康检查路径配置错误"),
        ("fixed the path and added an alert", "修正路径并加了告警"),
    ),
    (
        (
            "a regex with catastrophic backtracking on one input",
            "某个输入触发正则灾难性回溯",
        ),
        (
            "rewrote the pattern and added a timeout",
            "改写正则并加了超时",
        ),
    ),
];
const RUNBOOK: &[Pair] = &[
    (
        "Never run KEYS on the production Redis; use SCAN with a count.",
        "生产 Redis 禁止执行 KEYS，用带 count 的 SCAN。",
    ),
    (
        "To silence an alert for maintenance, create an Alertmanager silence with your name and the ticket id.",
        "维护期间静默告警，要在 Alertmanager 里建静默并写上姓名和工单号。",
    ),
    (
        "Production SSH goes through the bastion; direct access is blocked.",
        "生产环境 SSH 必须经过堡垒机，直连被禁止。",
    ),
    (
        "Changes to production need a change ticket approved before 17:00 the day before.",
        "生产变更需要前一天 17 点前审批通过的变更单。",
    ),
    (
        "The status page is updated by the incident commander, nobody else.",
        "状态页只能由事故指挥更新。",
    ),
    (
        "Terraform state lives in the ops-state bucket; never edit it by hand.",
        "Terraform 状态存放在 ops-state 桶，禁止手动修改。",
    ),
    (
        "Postmortems are due within five working days of a P1.",
        "P1 事故后五个工作日内要交复盘报告。",
    ),
    (
        "Use the ops-bot in the war room channel to page a second responder.",
        "在作战群里用 ops-bot 呼叫第二响应人。",
    ),
    (
        "Container images must come from the internal registry; public pulls are blocked.",
        "容器镜像必须来自内部仓库，公网拉取被禁止。",
    ),
    (
        "Secrets are rotated every 90 days by the vault-rotator job.",
        "密钥由 vault-rotator 任务每 90 天轮换一次。",
    ),
];
const CRON: &[Pair] = &[
    ("compacts the search index segments", "合并搜索索引段"),
    (
        "exports yesterday's orders to the data warehouse",
        "把昨天的订单导出到数仓",
    ),
    ("purges expired sessions", "清理过期会话"),
    ("recomputes loyalty tiers", "重新计算会员等级"),
    (
        "sends the daily sales summary email",
        "发送每日销售汇总邮件",
    ),
    (
        "reconciles payments with the bank statement",
        "和银行流水对账",
    ),
    (
        "warms the product cache before the morning peak",
        "早高峰前预热商品缓存",
    ),
];

fn ops(g: &mut Gen) {
    for _ in 0..170 {
        let lang = g.lang(0.5);
        let svc = *g.pick(pools::SERVICES);
        let host = pools::host(g, "app");
        let (s, (c, m)) = (*g.pick(SYMPTOMS), *g.pick(CAUSES));
        let text = match (lang, g.below(2)) {
            (Lang::En, 0) => format!(
                "Incident on {svc} ({host}): {}. Cause: {}. Mitigation: {}.",
                s.0, c.0, m.0
            ),
            (Lang::En, _) => format!(
                "{svc} on {host}: {} for about {} minutes; traced to {}, so we {}.",
                s.0,
                g.range(5, 90),
                c.0,
                m.0
            ),
            (Lang::Zh, 0) => format!(
                "{svc}（{host}）故障：{}。原因：{}。处理：{}。",
                s.1, c.1, m.1
            ),
            (Lang::Zh, _) => format!(
                "{host} 上的 {svc} {}，持续约 {} 分钟，定位到{}，于是{}。",
                s.1,
                g.range(5, 90),
                c.1,
                m.1
            ),
        };
        // Some write-ups are long, reflection-style summaries.
        let text = if g.chance(0.2) {
            match lang {
                Lang::En => format!(
                    "{text} Follow-ups: add a dashboard panel for it, review the alert threshold with the owning team, and write a runbook entry so the next person on shift can recognise the pattern within five minutes instead of starting from scratch."
                ),
                Lang::Zh => format!(
                    "{text}后续事项：为此加一个监控面板，和负责团队一起复核告警阈值，并补一条运维手册条目，让下一位值守同事五分钟内就能认出这种模式，而不是从头排查。"
                ),
            }
        } else {
            text
        };
        let at = g.any_time();
        let imp = g.importance(4, 8);
        g.push(
            MemSpec::new(NS_OPS, lang, MemoryKind::Episodic, text)
                .context(ctx(
                    lang,
                    format!("When {svc} misbehaves again"),
                    format!("{svc} 再次异常时"),
                ))
                .tags(&["incident"])
                .entity("service", svc)
                .entity("host", host)
                .importance(imp)
                .source(Source::Agent)
                .at(at)
                .task(TaskType::Analyze, Outcome::Success),
        );
    }
    for _ in 0..90 {
        let lang = g.lang(0.5);
        let svc = *g.pick(pools::SERVICES);
        let host = pools::host(g, "app");
        let cores = *g.pick(&[4u32, 8, 16, 32]);
        let ram = cores * *g.pick(&[2u32, 4]);
        let text = match lang {
            Lang::En => format!("{host} runs {svc}; {cores} cores, {ram} GB RAM, Ubuntu 22.04."),
            Lang::Zh => format!("{host} 上跑的是 {svc}，{cores} 核 {ram}G 内存，Ubuntu 22.04。"),
        };
        let at = g.any_time();
        g.push(
            MemSpec::new(NS_OPS, lang, MemoryKind::Semantic, text)
                .tags(&["inventory"])
                .entity("host", host)
                .entity("service", svc)
                .importance(0.3)
                .source(Source::External)
                .at(at),
        );
    }
    for _ in 0..60 {
        let lang = g.lang(0.5);
        let svc = *g.pick(pools::SERVICES);
        let rps = g.range(200, 9000);
        let hour = g.range(9, 22);
        let head = g.range(10, 60);
        let text = match lang {
            Lang::En => format!(
                "Capacity: {svc} peaks at about {rps} rps around {hour}:00 local time with {head}% headroom."
            ),
            Lang::Zh => {
                format!("容量：{svc} 在本地时间 {hour} 点左右达到峰值约 {rps} rps，余量 {head}%。")
            }
        };
        let at = g.any_time();
        g.push(
            MemSpec::new(NS_OPS, lang, MemoryKind::Semantic, text)
                .tags(&["capacity"])
                .entity("service", svc)
                .importance(0.4)
                .source(Source::Agent)
                .at(at),
        );
    }
    for r in RUNBOOK {
        let lang = g.lang(0.5);
        let at = g.days_ago(30, 180);
        g.push(
            MemSpec::new(NS_OPS, lang, MemoryKind::Semantic, t(r, lang).to_owned())
                .context(ctx(lang, "Ops runbook".into(), "运维手册".into()))
                .tags(&["runbook"])
                .importance(0.8)
                .source(Source::User)
                .at(at),
        );
    }
    for _ in 0..50 {
        let lang = g.lang(0.5);
        let host = pools::host(g, "cron");
        let job = *g.pick(CRON);
        let time = format!("{:02}:{:02}", g.range(0, 23), *g.pick(&[0u32, 15, 30, 45]));
        let text = match lang {
            Lang::En => format!("Cron on {host} at {time} UTC {}.", job.0),
            Lang::Zh => format!("{host} 上的定时任务每天 UTC {time} {}。", job.1),
        };
        let at = g.any_time();
        g.push(
            MemSpec::new(NS_OPS, lang, MemoryKind::Semantic, text)
                .tags(&["cron"])
                .entity("host", host)
                .importance(0.3)
                .source(Source::External)
                .at(at),
        );
    }
    for _ in 0..40 {
        let lang = g.lang(0.5);
        let svc = *g.pick(pools::SERVICES);
        let who = pools::person(g, lang);
        let n = g.range(0, 6);
        let text = match lang {
            Lang::En => format!(
                "Shift handover from {who}: {n} alerts overnight, {svc} needs a closer look at its error budget."
            ),
            Lang::Zh => format!("{who} 交班：夜里 {n} 条告警，{svc} 的错误预算需要重点关注。"),
        };
        let at = g.any_time();
        g.push(
            MemSpec::new(NS_OPS, lang, MemoryKind::Episodic, text)
                .tags(&["handover"])
                .entity("service", svc)
                .importance(0.3)
                .source(Source::User)
                .at(at),
        );
    }
}

// ---------------------------------------------------------------------------------------------

const EVENTS: &[Pair] = &[
    ("dentist check-up", "牙医复查"),
    ("haircut", "理发"),
    ("parent-teacher meeting", "家长会"),
    ("car service at the 4S shop", "4S 店保养车"),
    ("piano lesson for the kids", "孩子钢琴课"),
    ("dinner reservation", "晚餐订位"),
    ("call with the landlord", "和房东通电话"),
    ("eye test at the optician", "眼镜店验光"),
    ("volunteering at the animal shelter", "去动物收容所做志愿者"),
    ("pick-up of the new sofa", "新沙发提货"),
];
const PEOPLE_FACTS: &[Pair] = &[
    (
        "works as a nurse at the children's hospital",
        "在儿童医院当护士",
    ),
    ("has two kids in primary school", "有两个上小学的孩子"),
    (
        "is learning Japanese for a trip next year",
        "在学日语，准备明年去旅行",
    ),
    (
        "supports Manchester United and never misses a match",
        "是曼联球迷，每场比赛都看",
    ),
    ("is vegetarian", "吃素"),
    (
        "just adopted a golden retriever called Mango",
        "刚领养了一只叫芒果的金毛",
    ),
    (
        "is training for the Hangzhou half marathon",
        "在为杭州半马做训练",
    ),
    ("plays guitar in a weekend band", "周末在乐队弹吉他"),
    ("is renovating their kitchen", "在装修厨房"),
    ("collects vinyl records", "收藏黑胶唱片"),
    (
        "is a great cook, especially Sichuan dishes",
        "很会做饭，尤其是川菜",
    ),
    ("teaches maths at a high school", "在高中教数学"),
    ("is allergic to cats", "对猫过敏"),
    ("prefers voice messages to typing", "更喜欢发语音而不是打字"),
];
const TODOS: &[Pair] = &[
    ("return the drill to the neighbour", "把电钻还给邻居"),
    ("pick up the dry cleaning", "去取干洗的衣服"),
    ("renew the library card", "续办图书证"),
    ("book the kids' summer camp", "给孩子报夏令营"),
    (
        "cancel the unused streaming subscription",
        "取消不用的视频会员",
    ),
    (
        "back up the family photos to the NAS",
        "把家庭照片备份到 NAS",
    ),
    ("buy batteries for the smoke detector", "给烟雾报警器买电池"),
    (
        "send the signed lease back to the agent",
        "把签好的租约寄回中介",
    ),
    ("fix the dripping bathroom tap", "修好浴室滴水的龙头"),
    ("print photos for grandpa's album", "给爷爷的相册洗照片"),
];
const BOOKS: &[Pair] = &[
    ("The Three-Body Problem", "《三体》"),
    ("Atomic Habits", "《掌控习惯》"),
    ("To Live", "《活着》"),
    ("Sapiens", "《人类简史》"),
    ("The Remains of the Day", "《长日将尽》"),
    ("Fortress Besieged", "《围城》"),
    ("Project Hail Mary", "《挽救计划》"),
];
const HOTELS: &[Pair] = &[
    ("a lake-view room at the Hyatt", "凯悦的湖景房"),
    ("a family suite near the old town", "古城附近的家庭套房"),
    ("a capsule hotel by the station", "车站旁的胶囊酒店"),
    ("a guesthouse in the hills", "山里的民宿"),
];

fn personal(g: &mut Gen) {
    for _ in 0..120 {
        let lang = g.lang(0.55);
        let ev = *g.pick(EVENTS);
        let at = g.any_time();
        let when = at + Duration::days(g.range(2, 20) as i64);
        let hour = g.range(9, 19);
        let text = match lang {
            Lang::En => format!(
                "Calendar: {} on {} ({}) at {hour}:00.",
                ev.0,
                pools::date_text(lang, when),
                pools::weekday(lang, when)
            ),
            Lang::Zh => format!(
                "日程：{}{}{hour} 点，{}。",
                pools::date_text(lang, when),
                pools::weekday(lang, when),
                ev.1
            ),
        };
        g.push(
            MemSpec::new(NS_PA, lang, MemoryKind::Episodic, text)
                .tags(&["calendar"])
                .importance(0.4)
                .source(Source::User)
                .at(at),
        );
    }
    for _ in 0..130 {
        let lang = g.lang(0.55);
        let who = pools::person(g, lang);
        let rel = *g.pick(pools::RELATIONS);
        let fact = *g.pick(PEOPLE_FACTS);
        let text = match (lang, g.below(2)) {
            (Lang::En, 0) => format!("{who} {}.", fact.0),
            (Lang::En, _) => format!("{who} ({}) {}.", rel.0.trim_start_matches("my "), fact.0),
            (Lang::Zh, 0) => format!("{who}{}。", fact.1),
            (Lang::Zh, _) => format!("{who}（{}）{}。", rel.1.trim_start_matches('我'), fact.1),
        };
        let at = g.any_time();
        let imp = g.importance(3, 7);
        g.push(
            MemSpec::new(NS_PA, lang, MemoryKind::Semantic, text)
                .tags(&["people"])
                .entity("person", who)
                .importance(imp)
                .source(Source::User)
                .at(at),
        );
    }
    for _ in 0..60 {
        let lang = g.lang(0.55);
        let city = *g.pick(pools::CITIES);
        let hotel = *g.pick(HOTELS);
        let code = format!(
            "{}{}",
            g.pick(&["HX", "BK", "TR", "CT"]),
            g.range(100_000, 999_999)
        );
        let at = g.any_time();
        let nights = g.range(1, 5);
        let text = match lang {
            Lang::En => format!(
                "Booked {} in {} for {nights} nights from {}; confirmation {code}.",
                hotel.0,
                city.0,
                pools::date_text(lang, at + Duration::days(20))
            ),
            Lang::Zh => format!(
                "订了{}{}，{}入住 {nights} 晚，确认号 {code}。",
                city.1,
                hotel.1,
                pools::date_text(lang, at + Duration::days(20))
            ),
        };
        g.push(
            MemSpec::new(NS_PA, lang, MemoryKind::Episodic, text)
                .tags(&["travel", "hotel"])
                .entity("booking", code)
                .importance(0.5)
                .source(Source::User)
                .at(at)
                .task(TaskType::Create, Outcome::Success),
        );
    }
    for _ in 0..70 {
        let lang = g.lang(0.55);
        let todo = *g.pick(TODOS);
        let text = match lang {
            Lang::En => one_of(
                g,
                vec![
                    format!("Remind me to {}.", todo.0),
                    format!("To do this weekend: {}.", todo.0),
                ],
            ),
            Lang::Zh => one_of(
                g,
                vec![
                    format!("提醒我{}。", todo.1),
                    format!("周末待办：{}。", todo.1),
                ],
            ),
        };
        let at = g.any_time();
        g.push(
            MemSpec::new(NS_PA, lang, MemoryKind::Episodic, text)
                .tags(&["todo"])
                .importance(0.3)
                .source(Source::User)
                .at(at),
        );
    }
    for _ in 0..50 {
        let lang = g.lang(0.55);
        let book = *g.pick(BOOKS);
        let verdict = *g.pick(&[
            ("loved it", "非常喜欢"),
            ("a bit slow in the middle", "中间有点拖"),
            ("would recommend to dad", "想推荐给爸爸"),
            ("gave up halfway", "读了一半放弃了"),
        ]);
        let text = match lang {
            Lang::En => format!("Finished reading {}: {}.", book.0, verdict.0),
            Lang::Zh => format!("读完了{}：{}。", book.1, verdict.1),
        };
        let at = g.any_time();
        g.push(
            MemSpec::new(NS_PA, lang, MemoryKind::Episodic, text)
                .tags(&["reading"])
                .importance(0.2)
                .source(Source::User)
                .at(at),
        );
    }
}

fn one_of(g: &mut Gen, v: Vec<String>) -> String {
    super::scenarios::one(g, v)
}
