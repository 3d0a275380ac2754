//! Vocabulary the templates draw from. Pairs are `(English, Chinese)`.

use super::{Gen, Lang};

pub(crate) type Pair = (&'static str, &'static str);

pub(crate) fn t(p: &Pair, lang: Lang) -> &'static str {
    match lang {
        Lang::En => p.0,
        Lang::Zh => p.1,
    }
}

pub(crate) const EN_FIRST: &[&str] = &[
    "Alice", "Brian", "Carmen", "Daniel", "Elena", "Farid", "Grace", "Hiro", "Irene", "Jonas",
    "Kavya", "Liam", "Maya", "Noah", "Olga", "Pedro", "Quinn", "Rosa", "Samir", "Tara", "Umar",
    "Vera", "Wes", "Ximena", "Yusuf", "Zoe", "Marcus", "Nadia", "Oscar", "Priya", "Ravi", "Sofia",
    "Tomas", "Helen", "Ivan", "Julia", "Kenji", "Laura", "Mateo", "Nina",
];
pub(crate) const EN_LAST: &[&str] = &[
    "Walker", "Chen", "Garcia", "Novak", "Okafor", "Silva", "Kim", "Patel", "Murphy", "Rossi",
    "Schmidt", "Tanaka", "Haddad", "Kowalski", "Larsen", "Moreau", "Nguyen", "Ortiz", "Price",
    "Quist", "Reyes", "Sato", "Turner", "Usman", "Varga", "Weber", "Young", "Zhou", "Ibrahim",
    "Fischer",
];
pub(crate) const ZH_SURNAME: &[&str] = &[
    "王", "李", "张", "刘", "陈", "杨", "黄", "赵", "吴", "周", "徐", "孙", "马", "朱", "胡", "郭",
    "何", "高", "林", "罗", "郑", "梁", "谢", "宋", "唐", "许", "韩", "冯", "邓", "曹",
];
pub(crate) const ZH_GIVEN: &[&str] = &[
    "伟", "芳", "娜", "敏", "静", "丽", "强", "磊", "军", "洋", "勇", "艳", "杰", "娟", "涛", "明",
    "超", "秀英", "霞", "平", "刚", "桂英", "晓东", "子轩", "欣怡", "浩然", "雨涵", "梓涵", "一鸣",
    "思远", "佳琪", "俊杰", "婷婷", "海燕", "建国", "志强", "文博", "若曦", "天宇", "嘉欣",
];

/// A person name in the given language, unique across the dataset.
pub(crate) fn person(g: &mut Gen, lang: Lang) -> String {
    g.fresh(|g| match lang {
        Lang::En => format!("{} {}", g.pick(EN_FIRST), g.pick(EN_LAST)),
        Lang::Zh => format!("{}{}", g.pick(ZH_SURNAME), g.pick(ZH_GIVEN)),
    })
}

/// Customer id like `C-204871`, unique.
pub(crate) fn customer_id(g: &mut Gen) -> String {
    g.fresh(|g| format!("C-{}", g.range(100_000, 999_999)))
}

/// Order number (5 or 8 digits), unique.
pub(crate) fn order_id(g: &mut Gen) -> String {
    g.fresh(|g| {
        if g.chance(0.7) {
            format!("{}", g.range(10_000, 99_999))
        } else {
            format!("{}", g.range(20_000_000, 29_999_999))
        }
    })
}

/// Variants of an id that differ by one digit or a transposition: realistic near misses.
pub(crate) fn near_ids(g: &mut Gen, id: &str, k: usize) -> Vec<String> {
    let mut out = Vec::new();
    let digits: Vec<char> = id.chars().collect();
    for _ in 0..200 {
        if out.len() >= k {
            break;
        }
        let mut d = digits.clone();
        let numeric: Vec<usize> = (0..d.len()).filter(|&i| d[i].is_ascii_digit()).collect();
        if numeric.len() < 2 {
            break;
        }
        if g.chance(0.5) {
            let i = numeric[g.below(numeric.len() - 1)];
            if i + 1 < d.len() && d[i + 1].is_ascii_digit() {
                d.swap(i, i + 1);
            }
        } else {
            let i = numeric[1 + g.below(numeric.len() - 1)];
            let cur = d[i].to_digit(10).unwrap_or(0);
            let next = (cur + 1 + g.below(9) as u32) % 10;
            d[i] = char::from_digit(next, 10).unwrap_or('0');
        }
        let cand: String = d.into_iter().collect();
        if cand != id && g.used.insert(cand.clone()) {
            out.push(cand);
        }
    }
    out
}

pub(crate) const PRODUCTS: &[(Pair, &str)] = &[
    (("wireless earbuds", "无线耳机"), "EB"),
    (("air fryer", "空气炸锅"), "AF"),
    (("running shoes", "跑步鞋"), "RS"),
    (("down jacket", "羽绒服"), "DJ"),
    (("robot vacuum", "扫地机器人"), "RV"),
    (("electric toothbrush", "电动牙刷"), "ET"),
    (("mechanical keyboard", "机械键盘"), "KB"),
    (("rice cooker", "电饭煲"), "RC"),
    (("yoga mat", "瑜伽垫"), "YM"),
    (("smart watch", "智能手表"), "SW"),
    (("office chair", "办公椅"), "OC"),
    (("baby stroller", "婴儿推车"), "BS"),
    (("phone case", "手机壳"), "PC"),
    (("coffee grinder", "磨豆机"), "CG"),
    (("desk lamp", "台灯"), "DL"),
    (("water purifier", "净水器"), "WP"),
];

/// SKU like `AF-4471-BLK`, unique.
pub(crate) fn sku(g: &mut Gen, code: &str) -> String {
    const COLORS: &[&str] = &["BLK", "WHT", "GRY", "BLU", "RED", "GRN", "PNK", "SLV"];
    let code = code.to_owned();
    g.fresh(move |g| format!("{}-{}-{}", code, g.range(1000, 9999), g.pick(COLORS)))
}

pub(crate) const COURIERS: &[Pair] = &[
    ("SF Express", "顺丰"),
    ("JD Logistics", "京东物流"),
    ("ZTO Express", "中通"),
    ("YTO Express", "圆通"),
    ("China Post EMS", "邮政EMS"),
];

pub(crate) const SERVICES: &[&str] = &[
    "payment-gateway",
    "order-service",
    "inventory-api",
    "notification-service",
    "auth-service",
    "search-indexer",
    "billing-worker",
    "checkout-web",
    "user-profile",
    "recommendation-svc",
    "shipping-tracker",
    "coupon-service",
    "report-generator",
    "ledger-service",
    "media-uploader",
    "pricing-engine",
    "fraud-scorer",
    "session-store",
    "email-relay",
    "warehouse-sync",
    "loyalty-points",
    "address-validator",
    "invoice-renderer",
    "feature-flags",
    "chat-gateway",
    "review-moderation",
    "geo-lookup",
    "export-jobs",
    "webhook-dispatcher",
    "cart-service",
];

pub(crate) const CLUSTERS: &[&str] = &[
    "orders-pg",
    "ledger-pg",
    "users-mysql",
    "catalog-pg",
    "analytics-ch",
    "sessions-redis",
    "events-kafka",
    "search-es",
    "billing-pg",
    "audit-pg",
    "metrics-tsdb",
    "queue-rabbit",
];

/// Hostname like `db-07.sh2.prod.internal`, unique.
pub(crate) fn host(g: &mut Gen, role: &str) -> String {
    const DCS: &[&str] = &["sh1", "sh2", "bj1", "hz1", "sg1", "fra1"];
    let role = role.to_owned();
    g.fresh(move |g| {
        format!(
            "{}-{:02}.{}.prod.internal",
            role,
            g.range(1, 48),
            g.pick(DCS)
        )
    })
}

pub(crate) const JIRA: &[&str] = &[
    "PAY", "AUTH", "ORD", "INV", "WEB", "MOB", "SRCH", "CART", "NOTIF", "RPT",
];

/// Ticket id like `PAY-1432`, unique.
pub(crate) fn ticket(g: &mut Gen) -> String {
    g.fresh(|g| format!("{}-{}", g.pick(JIRA), g.range(100, 4999)))
}

pub(crate) const CITIES: &[Pair] = &[
    ("Shanghai", "上海"),
    ("Beijing", "北京"),
    ("Hangzhou", "杭州"),
    ("Shenzhen", "深圳"),
    ("Chengdu", "成都"),
    ("Singapore", "新加坡"),
    ("Tokyo", "东京"),
    ("Berlin", "柏林"),
    ("Wuhan", "武汉"),
    ("Xi'an", "西安"),
];

/// Family and social relations for the personal assistant: `(English, Chinese)`.
pub(crate) const RELATIONS: &[Pair] = &[
    ("my mother", "我妈"),
    ("my father", "我爸"),
    ("my wife", "我老婆"),
    ("my husband", "我老公"),
    ("my sister", "我姐"),
    ("my brother", "我哥"),
    ("my son", "我儿子"),
    ("my daughter", "我女儿"),
    ("my grandmother", "我奶奶"),
    ("my uncle", "我舅舅"),
    ("my aunt", "我姑姑"),
    ("my colleague", "我同事"),
    ("my boss", "我老板"),
    ("my neighbour", "我邻居"),
    ("my friend", "我朋友"),
];

/// A version like `2.14.3`.
pub(crate) fn version(g: &mut Gen) -> String {
    format!("{}.{}.{}", g.range(1, 5), g.range(0, 30), g.range(0, 12))
}

/// One of a list of (English, Chinese) templates rendered with `{}`-free closures is awkward in
/// Rust; templates are therefore written as functions returning `String` in each module.
pub(crate) fn weekday(lang: Lang, t: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::Datelike;
    const EN: [&str; 7] = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    const ZH: [&str; 7] = ["周一", "周二", "周三", "周四", "周五", "周六", "周日"];
    let i = t.weekday().num_days_from_monday() as usize;
    match lang {
        Lang::En => EN[i].to_owned(),
        Lang::Zh => ZH[i].to_owned(),
    }
}

/// A date written in the memory's language (`Dec 9` / `12月9日`).
pub(crate) fn date_text(lang: Lang, t: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::Datelike;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    match lang {
        Lang::En => format!("{} {}", MONTHS[t.month0() as usize], t.day()),
        Lang::Zh => format!("{}月{}日", t.month(), t.day()),
    }
}
