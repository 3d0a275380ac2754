//! Seeded synthetic memories and queries for pre-filling a store and driving searches.
//!
//! Texts are combinatorial agent-memory sentences (customers, orders, services, incidents,
//! preferences), about one in eight in Chinese, each made unique by its identifiers. They are not
//! labelled: the load harness measures speed, not relevance (the evaluation harness does that).

use std::collections::BTreeMap;

use hindsight_core::{MemoryKind, NewMemory, Outcome, TaskType};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const FIRST: &[&str] = &[
    "Nina",
    "Omar",
    "Li Wei",
    "Sofia",
    "Kenji",
    "Amara",
    "Lukas",
    "Priya",
    "Diego",
    "Chen Jing",
    "Fatima",
    "Mateo",
    "Hana",
    "Ivan",
    "Grace",
    "Yusuf",
    "Elena",
    "Tomas",
    "Aiko",
    "Ravi",
];
const LAST: &[&str] = &[
    "Weber", "Haddad", "Zhang", "Rossi", "Tanaka", "Okafor", "Novak", "Sharma", "Garcia", "Liu",
    "Khan", "Silva", "Kim", "Petrov", "Brown", "Demir", "Popescu", "Berg", "Mori", "Iyer",
];
const SERVICES: &[&str] = &[
    "billing-api",
    "warehouse-sync",
    "email-relay",
    "search-gateway",
    "auth-service",
    "payment-worker",
    "inventory-db",
    "report-builder",
    "notification-hub",
    "order-router",
    "cdn-edge",
    "ledger-service",
    "pricing-engine",
    "media-transcoder",
    "user-profile",
];
const COURIERS: &[&str] = &[
    "DHL",
    "UPS",
    "FedEx",
    "GLS",
    "SF Express",
    "DPD",
    "Royal Mail",
];
const CITIES: &[&str] = &[
    "Berlin", "Shanghai", "Lisbon", "Osaka", "Nairobi", "Toronto", "Madrid", "Chengdu", "Oslo",
    "Mumbai", "Lyon", "Seoul",
];
const PREFS: &[&str] = &[
    "email over phone calls",
    "invoices in PDF",
    "morning delivery slots",
    "no marketing mail",
    "replies in Chinese",
    "a single weekly summary",
    "express shipping",
    "paper receipts",
    "contact through the app only",
    "eco packaging",
];
const CAUSES: &[&str] = &[
    "an expired TLS certificate",
    "a missing database index",
    "a retry storm after a deploy",
    "a full disk on the primary",
    "a race in the cache invalidation",
    "a misconfigured rate limit",
    "a schema migration that locked the table",
    "a DNS change that had not propagated",
];
const FIXES: &[&str] = &[
    "rotated the certificate and added an expiry alert",
    "added the index and rewrote the query",
    "added jittered backoff",
    "moved logs to the archive volume",
    "versioned the cache keys",
    "raised the limit to 600 calls per minute",
    "ran the migration online in batches",
    "lowered the TTL before the switch",
];
const ZH_SERVICES: &[&str] = &[
    "支付服务",
    "库存系统",
    "订单路由",
    "消息推送",
    "报表服务",
    "用户中心",
];
const ZH_PREFS: &[&str] = &[
    "用微信联系",
    "只要电子发票",
    "上午送货",
    "不要营销短信",
    "周末不打电话",
];
const ZH_CAUSES: &[&str] = &[
    "证书过期",
    "磁盘写满",
    "缓存失效有竞态",
    "限流配置错误",
    "数据库锁表",
];

fn name(rng: &mut ChaCha8Rng) -> String {
    format!(
        "{} {}",
        FIRST.choose(rng).copied().unwrap_or("Nina"),
        LAST.choose(rng).copied().unwrap_or("Weber")
    )
}

fn pick<'a>(rng: &mut ChaCha8Rng, xs: &[&'a str]) -> &'a str {
    xs.choose(rng).copied().unwrap_or_default()
}

/// `n` distinct synthetic memories in `namespace`, deterministic for `seed`.
pub fn memories(n: usize, namespace: &str, seed: u64) -> Vec<NewMemory> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|i| memory(&mut rng, i, namespace)).collect()
}

/// The memory at index `i` alone, drawn from a generator seeded with `seed`: its identifiers
/// (customer, order, ticket) follow from `i` as in [`memories`], its template and names from
/// `seed`. The load run's stores use it with a growing `i`, so they vary as the prefill does.
pub fn memory_at(i: usize, namespace: &str, seed: u64) -> NewMemory {
    memory(&mut ChaCha8Rng::seed_from_u64(seed), i, namespace)
}

fn memory(rng: &mut ChaCha8Rng, i: usize, namespace: &str) -> NewMemory {
    let customer = format!("C-{:06}", 100_000 + (i * 7919) % 900_000);
    let order = format!("ORD-{:06}", (i * 104_729 + 17) % 1_000_000);
    let ticket = format!("OPS-{}", 1000 + i);
    let who = name(rng);
    let (kind, content, tags, entities, task): (_, String, Vec<&str>, Vec<(&str, String)>, _) =
        match rng.random_range(0..8u32) {
            0 => (
                MemoryKind::Semantic,
                format!("{who} ({customer}) prefers {}.", pick(rng, PREFS)),
                vec!["preference", "lang:en"],
                vec![("customer", customer.clone())],
                None,
            ),
            1 => (
                MemoryKind::Semantic,
                format!(
                    "{who} ({customer}) wants order {order} shipped with {} to {}.",
                    pick(rng, COURIERS),
                    pick(rng, CITIES)
                ),
                vec!["order", "lang:en"],
                vec![("customer", customer.clone()), ("order", order.clone())],
                None,
            ),
            2 => (
                MemoryKind::Episodic,
                format!(
                    "Incident {ticket} on {}: caused by {}; we {}.",
                    pick(rng, SERVICES),
                    pick(rng, CAUSES),
                    pick(rng, FIXES)
                ),
                vec!["incident", "lang:en"],
                vec![("ticket", ticket.clone())],
                Some((TaskType::Analyze, Outcome::Success)),
            ),
            3 => (
                MemoryKind::Warning,
                format!(
                    "Deploying {} on a Friday failed ({ticket}): {} took it down for {} minutes; check it before releasing.",
                    pick(rng, SERVICES),
                    pick(rng, CAUSES),
                    rng.random_range(5..120u32)
                ),
                vec!["deploy", "lang:en"],
                vec![("ticket", ticket.clone())],
                Some((TaskType::Create, Outcome::Failure)),
            ),
            4 => (
                MemoryKind::Semantic,
                format!(
                    "{who} moved from {} to {} and asked us to update the address on {customer}.",
                    pick(rng, CITIES),
                    pick(rng, CITIES)
                ),
                vec!["address", "lang:en"],
                vec![("customer", customer.clone())],
                None,
            ),
            5 => (
                MemoryKind::Episodic,
                format!(
                    "Refunded {} EUR on {order} for {who} after a late {} delivery.",
                    rng.random_range(5..400u32),
                    pick(rng, COURIERS)
                ),
                vec!["refund", "lang:en"],
                vec![("order", order.clone()), ("customer", customer.clone())],
                Some((TaskType::Modify, Outcome::Success)),
            ),
            6 => (
                MemoryKind::Semantic,
                format!(
                    "客户 {customer} 希望{}，订单 {order} 发往{}。",
                    pick(rng, ZH_PREFS),
                    pick(rng, CITIES)
                ),
                vec!["preference", "lang:zh"],
                vec![("customer", customer.clone())],
                None,
            ),
            _ => (
                MemoryKind::Episodic,
                format!(
                    "{ticket}：{}故障，原因是{}，已在 {} 分钟内恢复。",
                    pick(rng, ZH_SERVICES),
                    pick(rng, ZH_CAUSES),
                    rng.random_range(3..90u32)
                ),
                vec!["incident", "lang:zh"],
                vec![("ticket", ticket.clone())],
                Some((TaskType::Analyze, Outcome::Partial)),
            ),
        };
    let mut m = NewMemory::new(namespace, kind, content);
    m.tags = tags.into_iter().map(str::to_owned).collect();
    m.entities = entities
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect::<BTreeMap<_, _>>();
    if let Some((t, o)) = task {
        m.task_type = Some(t);
        m.outcome = Some(o);
    }
    m
}

/// `n` generated search queries in the style of the memories (deterministic for `seed`).
pub fn queries(n: usize, seed: u64) -> Vec<String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|i| query(&mut rng, i)).collect()
}

fn query(rng: &mut ChaCha8Rng, i: usize) -> String {
    match rng.random_range(0..7u32) {
        0 => format!("What does {} prefer?", name(rng)),
        1 => format!(
            "Which courier for order ORD-{:06}?",
            (i * 104_729 + 17) % 1_000_000
        ),
        2 => format!("Why did {} go down last time?", pick(rng, SERVICES)),
        3 => format!("Any warnings before deploying {}?", pick(rng, SERVICES)),
        4 => format!("Where does {} live now?", name(rng)),
        5 => format!("客户 C-{:06} 有什么偏好", 100_000 + (i * 7919) % 900_000),
        _ => format!("{}上次是什么原因出的故障", pick(rng, ZH_SERVICES)),
    }
}

/// A query nobody has asked before (for the cold-cache phase): a logged or generated query plus
/// two three-digit numbers, so the server's query-embedding cache cannot hold it.
///
/// The marker is short on purpose: a long one ("(ref 6617c1146988e-17)", about 15 word pieces)
/// doubled the tokens of a typical query and made the measured embedding ~1.7 ms (a third) slower
/// than the query alone. Three-digit numbers are below the query rules' identifier length (4), so
/// the marker starts no identifier lookup on the structured path (a six-digit number did); it
/// still adds two terms to the BM25 query. The markers of one run are distinct for its first
/// million queries and start at a run-dependent offset, so a second run against the same server
/// almost never repeats one; the server profile's `cached_embeddings` would show it if it did.
pub fn cold_query(base: &str, run: u64, i: u64) -> String {
    let n = (run.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_000 + i % 1_000_000) % 1_000_000;
    format!("{base} {:03} {:03}", n / 1000, n % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn memories_are_deterministic_valid_and_distinct() {
        let a = memories(2000, "default", 7);
        let b = memories(2000, "default", 7);
        assert_eq!(
            a.iter().map(|m| &m.content).collect::<Vec<_>>(),
            b.iter().map(|m| &m.content).collect::<Vec<_>>()
        );
        for m in &a {
            m.validate().expect("generated memory is valid");
        }
        let distinct: HashSet<&str> = a.iter().map(|m| m.content.as_str()).collect();
        assert!(
            distinct.len() > 1990,
            "only {} distinct texts",
            distinct.len()
        );
        assert!(a.iter().any(|m| m.tags.iter().any(|t| t == "lang:zh")));
        assert_ne!(memories(50, "default", 8)[0].content, a[0].content);
    }

    #[test]
    fn cold_queries_are_unique() {
        let q = queries(10, 1);
        assert_eq!(q.len(), 10);
        assert_ne!(cold_query(&q[0], 1, 0), cold_query(&q[0], 1, 1));
        let texts: HashSet<String> = (0..50_000).map(|i| cold_query(&q[0], 7, i)).collect();
        assert_eq!(texts.len(), 50_000, "distinct within a run");
        // One short marker: the query, then two three-digit numbers.
        let c = cold_query(&q[0], 7, 3);
        let marker: Vec<&str> = c[q[0].len()..].split_whitespace().collect();
        assert_eq!(marker.len(), 2, "{c}");
        assert!(
            marker
                .iter()
                .all(|m| m.len() == 3 && m.chars().all(|ch| ch.is_ascii_digit())),
            "{c}"
        );
        // The marker is not an identifier: the query rules extract nothing more than from the base.
        assert_eq!(
            hindsight_retrieval::extract_identifiers(&c),
            hindsight_retrieval::extract_identifiers(&q[0])
        );
    }
}
