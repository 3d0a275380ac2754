//! `paraphrase` queries: the query shares no content word (English) and no pair of adjacent Han
//! characters (Chinese) with the memory it should find. The test suite checks this.

use hindsight_core::{MemoryKind, Source};

use super::pools::t;
use super::scenarios::query_lang;
use super::{Gen, MemSpec, NS_CODE, NS_CS, NS_OPS, NS_PA};

/// (namespace, kind, memory en/zh, query en/zh)
type Para = (
    &'static str,
    MemoryKind,
    (&'static str, &'static str),
    (&'static str, &'static str),
);

const PAIRS: &[Para] = &[
    (
        NS_PA,
        MemoryKind::Semantic,
        (
            "I am allergic to peanuts, so skip satay and anything fried in groundnut oil.",
            "我对花生过敏，沙爹和用花生油炸的东西都不能吃。",
        ),
        (
            "Which nuts must never end up on my plate?",
            "点菜时哪种坚果一定要避开？",
        ),
    ),
    (
        NS_PA,
        MemoryKind::Semantic,
        (
            "My passport expires in March 2026; renewal takes about three weeks.",
            "我的护照 2026 年 3 月到期，换发大约要三周。",
        ),
        (
            "When does my travel document run out?",
            "出国用的证件什么时候失效？",
        ),
    ),
    (
        NS_PA,
        MemoryKind::Semantic,
        (
            "The spare house key is hidden under the blue flowerpot by the back door.",
            "备用钥匙藏在后门旁边那个蓝色花盆下面。",
        ),
        (
            "If I get locked out, where can I find another way in?",
            "我被锁在外面了，去哪儿找能开门的东西？",
        ),
    ),
    (
        NS_PA,
        MemoryKind::Episodic,
        (
            "Dr. Lin said my cholesterol is fine but I should walk 30 minutes daily.",
            "林医生说我胆固醇正常，但每天要快走 30 分钟。",
        ),
        (
            "What exercise did the physician recommend for me?",
            "大夫建议我做什么运动？",
        ),
    ),
    (
        NS_PA,
        MemoryKind::Semantic,
        (
            "Water the orchids every Sunday, only a small cup, they rot if soaked.",
            "兰花每周日浇一次，只浇一小杯，泡水会烂根。",
        ),
        (
            "How often do those potted blooms need a drink?",
            "那几盆花多久要补充水分？",
        ),
    ),
    (
        NS_PA,
        MemoryKind::Semantic,
        (
            "Car insurance renews on 14 February with Ping An; the policy number is in the glovebox.",
            "车险 2 月 14 日在平安续保，保单号在手套箱里。",
        ),
        (
            "When is the vehicle coverage due again?",
            "汽车保险哪天到期？",
        ),
    ),
    (
        NS_PA,
        MemoryKind::Semantic,
        (
            "Grandma's favourite snack is sweet osmanthus cake from the shop near Wulin Square.",
            "奶奶最爱吃武林广场附近那家店的桂花糕。",
        ),
        (
            "What treat should I bring my father's mother?",
            "给老人家带点什么零嘴她最高兴？",
        ),
    ),
    (
        NS_PA,
        MemoryKind::Semantic,
        (
            "I get seasick, so book trains rather than ferries when we go to the islands.",
            "我会晕船，去海岛尽量坐火车别坐轮渡。",
        ),
        (
            "Any travel constraint about boats I mentioned?",
            "坐船的话我身体会怎样？",
        ),
    ),
    (
        NS_CS,
        MemoryKind::Semantic,
        (
            "Items bought during a livestream can be returned within 15 days even if opened.",
            "直播间购买的商品，拆封后 15 天内也可以退。",
        ),
        (
            "Customer unboxed something from the live sale two weeks ago, may they send it back?",
            "顾客在主播带货时下的单，用过了还能退吗？",
        ),
    ),
    (
        NS_CS,
        MemoryKind::Semantic,
        (
            "Gift cards cannot be refunded or exchanged for cash under any circumstances.",
            "礼品卡任何情况下都不能退款或兑换现金。",
        ),
        (
            "A shopper wants money back for a present voucher, is that allowed?",
            "顾客想把购物券折成钱拿回去，行不行？",
        ),
    ),
    (
        NS_CS,
        MemoryKind::Semantic,
        (
            "Orders to Hong Kong need the recipient's ID number for customs clearance.",
            "寄往香港的订单需要收件人身份证号用于清关。",
        ),
        (
            "What extra paperwork applies to parcels heading to HK?",
            "发货到港岛要额外提供什么材料？",
        ),
    ),
    (
        NS_CS,
        MemoryKind::Semantic,
        (
            "Members get free shipping only on orders above ¥99; below that the fee is ¥8.",
            "会员满 99 元才包邮，不满收 8 元运费。",
        ),
        (
            "Does a subscriber pay for delivery on a small purchase?",
            "订阅用户买得少也要付快递钱吗？",
        ),
    ),
    (
        NS_CS,
        MemoryKind::Semantic,
        (
            "Never promise a delivery date during the Spring Festival; couriers pause for a week.",
            "春节期间不要向客户承诺到货日期，快递会停运一周。",
        ),
        (
            "Can I tell someone when their parcel will arrive around Chinese New Year?",
            "过年那阵子，能跟买家说包裹哪天送到吗？",
        ),
    ),
    (
        NS_CS,
        MemoryKind::Semantic,
        (
            "Customers who paid by Huabei installments get refunds split back across the remaining periods.",
            "花呗分期付款的订单，退款会按剩余期数退回。",
        ),
        (
            "How is money returned for a purchase made on credit in monthly parts?",
            "按月还的那种买法，钱怎么还给顾客？",
        ),
    ),
    (
        NS_CS,
        MemoryKind::Semantic,
        (
            "Bulk buyers (over 50 units) must be routed to the B2B desk, not handled in chat.",
            "一次买 50 件以上的大客户要转给企业采购组，不在聊天里处理。",
        ),
        (
            "Who takes care of a company wanting hundreds of pieces?",
            "有公司想一口气订几百个，该找谁？",
        ),
    ),
    (
        NS_CS,
        MemoryKind::Semantic,
        (
            "The warehouse in Kunshan stops accepting returns at 4 pm on Fridays.",
            "昆山仓每周五下午四点后不再接收退货。",
        ),
        (
            "What is the cutoff for sending goods back to the Jiangsu depot before the weekend?",
            "江苏那个库房周末前最晚几点能寄回东西？",
        ),
    ),
    (
        NS_CODE,
        MemoryKind::Semantic,
        (
            "Never call the payment sandbox from unit tests; use the recorded fixtures in testdata/pay.",
            "单元测试里不要调用支付沙箱，用 testdata/pay 里录好的夹具。",
        ),
        (
            "Can my quick checks hit the fake billing server?",
            "写校验用例时能直连收款模拟环境吗？",
        ),
    ),
    (
        NS_CODE,
        MemoryKind::Semantic,
        (
            "Release branches are cut every other Wednesday at noon; late merges need Mei's approval.",
            "发布分支每隔一周的周三中午拉出，之后合入需要梅姐批准。",
        ),
        (
            "When does the fortnightly code freeze happen?",
            "双周封版是哪天几点？",
        ),
    ),
    (
        NS_CODE,
        MemoryKind::Semantic,
        (
            "The staging database is wiped and reseeded every night at 02:00 UTC.",
            "预发环境的数据库每天 UTC 凌晨 2 点清空并重新灌数据。",
        ),
        (
            "Why did my test records vanish overnight in pre-prod?",
            "我放在测试服的记录隔夜就没了，怎么回事？",
        ),
    ),
    (
        NS_CODE,
        MemoryKind::Semantic,
        (
            "Use the read replica for analytics queries; the primary is reserved for writes.",
            "统计类查询走只读从库，主库只留给写入。",
        ),
        (
            "Where should heavy reporting SQL go?",
            "跑报表的大 SQL 应该连哪台？",
        ),
    ),
    (
        NS_CODE,
        MemoryKind::Semantic,
        (
            "The Go services must be built with CGO disabled, or the Alpine images fail to start.",
            "Go 服务编译时必须关闭 CGO，否则 Alpine 镜像起不来。",
        ),
        (
            "Why would a golang container crash right at launch?",
            "golang 容器一启动就挂是什么原因？",
        ),
    ),
    (
        NS_CODE,
        MemoryKind::Semantic,
        (
            "API keys for the maps vendor live in Vault under secret/geo, never in .env files.",
            "地图供应商的 API key 放在 Vault 的 secret/geo 下，不能写进 .env 文件。",
        ),
        (
            "Where do I fetch the location provider credentials?",
            "定位服务那家公司给的密钥去哪拿？",
        ),
    ),
    (
        NS_CODE,
        MemoryKind::Semantic,
        (
            "Frontend bundles over 300 KB gzipped fail the size check in CI.",
            "前端打包产物 gzip 后超过 300KB，CI 的体积检查就会失败。",
        ),
        (
            "Is there a limit on how large the compiled JavaScript may get?",
            "编译出来的 JS 最多能多大？",
        ),
    ),
    (
        NS_CODE,
        MemoryKind::Semantic,
        (
            "Mobile push certificates expire each August; renew them in the Apple developer portal two weeks early.",
            "移动推送证书每年 8 月过期，要提前两周在苹果开发者后台续期。",
        ),
        (
            "What yearly task keeps iPhone notifications working?",
            "iPhone 通知想一直能收到，年年得做哪件事？",
        ),
    ),
    (
        NS_OPS,
        MemoryKind::Semantic,
        (
            "The Shanghai datacenter has planned power maintenance on the first Saturday of every quarter.",
            "上海机房每季度第一个周六有计划内的电力检修。",
        ),
        (
            "Is there a recurring outage window for the east-China server room?",
            "华东 IDC 会定期断电吗？",
        ),
    ),
    (
        NS_OPS,
        MemoryKind::Semantic,
        (
            "Disk alerts on the log servers are noisy; they self-heal after logrotate at 03:00.",
            "日志服务器的磁盘告警很吵，凌晨 3 点 logrotate 之后会自动恢复。",
        ),
        (
            "Should I wake someone up for storage warnings on the syslog boxes at night?",
            "半夜存储空间报警要不要叫人起来处理？",
        ),
    ),
    (
        NS_OPS,
        MemoryKind::Semantic,
        (
            "Only Wang Lei and Sara can approve firewall changes to the payment subnet.",
            "支付网段的防火墙变更只有王磊和 Sara 能审批。",
        ),
        (
            "Who signs off on network rule edits for the card-processing segment?",
            "刷卡那块的网络访问规则改动找谁签字？",
        ),
    ),
    (
        NS_OPS,
        MemoryKind::Semantic,
        (
            "The CDN bill spikes when the marketing team uploads uncompressed videos; ask them to transcode first.",
            "市场部上传未压缩视频时 CDN 费用会暴涨，让他们先转码。",
        ),
        (
            "Why did our content delivery costs jump this month?",
            "为什么加速网络的账单突然变高了？",
        ),
    ),
    (
        NS_OPS,
        MemoryKind::Semantic,
        (
            "Grafana on-call dashboards are read-only for contractors; grant edit via the infra-admins group.",
            "外包人员看 Grafana 值班看板只有只读权限，要编辑得加进 infra-admins 组。",
        ),
        (
            "An external consultant cannot modify monitoring panels, how do I fix that?",
            "第三方顾问改不了监控面板，怎么开通？",
        ),
    ),
    (
        NS_OPS,
        MemoryKind::Semantic,
        (
            "TLS for *.shop-cn.com is issued by DigiCert and renewed manually by Finance in June.",
            "*.shop-cn.com 的 SSL 由 DigiCert 签发，每年 6 月由财务手动续费。",
        ),
        (
            "Who pays for the storefront's HTTPS certificate and when?",
            "商城 HTTPS 证书谁出钱、什么时候办？",
        ),
    ),
    (
        NS_OPS,
        MemoryKind::Semantic,
        (
            "Kafka consumer lag above 50k on the orders topic means the invoice worker is stuck; restart it.",
            "orders topic 的 Kafka 消费积压超过 5 万，说明发票 worker 卡住了，重启它即可。",
        ),
        (
            "Messages are piling up in the event stream, what usually fixes it?",
            "事件流里消息越堆越多，一般怎么解决？",
        ),
    ),
    (
        NS_OPS,
        MemoryKind::Semantic,
        (
            "NTP drift on the Singapore hosts broke token validation twice; chrony must point at the internal time servers.",
            "新加坡主机时钟漂移导致两次 token 校验失败，chrony 必须指向内部时间服务器。",
        ),
        (
            "Login signatures rejected as expired on SEA machines, clock related?",
            "东南亚那几台机器签名老是被判过期，是对时的问题吗？",
        ),
    ),
];

pub(crate) fn all(g: &mut Gen) {
    for (ns, kind, mem, query) in PAIRS {
        let lang = g.lang(0.5);
        let at = g.any_time();
        let imp = g.importance(5, 9);
        let src = if *ns == NS_PA {
            Source::User
        } else {
            g.source()
        };
        let idx = g.push(
            MemSpec::new(ns, lang, *kind, t(mem, lang).to_owned())
                .tags(&["note"])
                .importance(imp)
                .source(src)
                .at(at),
        );
        let ql = query_lang(g, lang, 0.15);
        g.query(
            ns,
            ql,
            t(query, ql).to_owned(),
            &["paraphrase"],
            vec![(idx, 3)],
        );
    }
}
