//! The deterministic bilingual agent-memory generator.
//!
//! Output: four namespaces (`customer-service`, `coding-agent`, `ops-agent`,
//! `personal-assistant`) of Chinese and English memories, and queries tagged with the scenario
//! they test ([`SCENARIO_TAGS`]). Every query is judged against its whole namespace:
//!
//! - scenario instances own a *subject* (an order id, a service + setting, a person) that no other
//!   memory in the namespace talks about, so nothing unplanted can be relevant; or
//! - for topic pools (deploys, migrations, ...) relevance is computed by a predicate over every
//!   memory of the pool (`time-scoped` queries), never by listing planted memories.
//!
//! Memory ids are assigned after a deterministic shuffle and a sort by time, so ids reveal nothing
//! about which memories were planted. All randomness comes from one `ChaCha8Rng`; collections that
//! reach the output are `Vec`s or `BTree*`s, so a seed always produces the same bytes.

mod background;
mod paraphrase;
mod pools;
mod scenarios;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Datelike, Duration, TimeZone, Utc};
use hindsight_core::{MemoryKind, Outcome, Source, Status, TaskType};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::format::{Dataset, DatasetMeta, MemoryRecord, Qrels, QueryRecord};

/// Scenario tags every generated query carries at least one of.
pub const SCENARIO_TAGS: &[&str] = &[
    "exact-id",
    "near-antonym",
    "keyword-qualifier",
    "time-scoped",
    "superseded",
    "stale",
    "failed-task",
    "cross-lingual",
    "paraphrase",
    "distractor",
];

pub(crate) const NS_CS: &str = "customer-service";
pub(crate) const NS_CODE: &str = "coding-agent";
pub(crate) const NS_OPS: &str = "ops-agent";
pub(crate) const NS_PA: &str = "personal-assistant";

/// Language of a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Lang {
    En,
    Zh,
}

impl Lang {
    pub(crate) fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }
}

/// A memory under construction, with the generator-only attributes used for judging.
#[derive(Clone, Debug)]
pub(crate) struct Mem {
    pub rec: MemoryRecord,
    pub lang: Lang,
    /// Topic pool the memory belongs to (`deploy`, `db-migration`, ...), for predicate judging.
    pub topic: &'static str,
}

/// A query under construction; judgements point at indices into `Gen::mems`.
#[derive(Clone, Debug)]
pub(crate) struct Query {
    pub text: String,
    pub lang: Lang,
    pub namespace: &'static str,
    pub now: DateTime<Utc>,
    pub tags: Vec<&'static str>,
    pub judged: Vec<(usize, i32)>,
}

/// Builder for one memory; `Gen::push` turns it into a [`Mem`].
#[derive(Clone, Debug)]
pub(crate) struct MemSpec {
    pub namespace: &'static str,
    pub lang: Lang,
    pub kind: MemoryKind,
    pub content: String,
    pub context: String,
    pub tags: Vec<String>,
    pub entities: Vec<(&'static str, String)>,
    pub importance: f32,
    pub source: Source,
    pub created_at: DateTime<Utc>,
    pub status: Option<Status>,
    pub task_type: Option<TaskType>,
    pub outcome: Option<Outcome>,
    pub topic: &'static str,
}

impl MemSpec {
    pub(crate) fn new(
        namespace: &'static str,
        lang: Lang,
        kind: MemoryKind,
        content: String,
    ) -> Self {
        MemSpec {
            namespace,
            lang,
            kind,
            content,
            context: String::new(),
            tags: Vec::new(),
            entities: Vec::new(),
            importance: 0.5,
            source: Source::User,
            created_at: period_start(),
            status: None,
            task_type: None,
            outcome: None,
            topic: "",
        }
    }
    pub(crate) fn context(mut self, c: impl Into<String>) -> Self {
        self.context = c.into();
        self
    }
    pub(crate) fn tags(mut self, tags: &[&str]) -> Self {
        self.tags = tags.iter().map(|t| (*t).to_owned()).collect();
        self
    }
    pub(crate) fn entity(mut self, k: &'static str, v: impl Into<String>) -> Self {
        self.entities.push((k, v.into()));
        self
    }
    pub(crate) fn importance(mut self, i: f32) -> Self {
        self.importance = i;
        self
    }
    pub(crate) fn source(mut self, s: Source) -> Self {
        self.source = s;
        self
    }
    pub(crate) fn at(mut self, t: DateTime<Utc>) -> Self {
        self.created_at = t;
        self
    }
    pub(crate) fn status(mut self, s: Status) -> Self {
        self.status = Some(s);
        self
    }
    pub(crate) fn task(mut self, t: TaskType, o: Outcome) -> Self {
        self.task_type = Some(t);
        self.outcome = Some(o);
        self
    }
    pub(crate) fn topic(mut self, t: &'static str) -> Self {
        self.topic = t;
        self
    }
}

/// First instant memories may carry (a Monday).
pub(crate) fn period_start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 6, 23, 0, 0, 0)
        .single()
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

/// Every memory is created before this instant (Tuesday 2025-12-23 00:00 UTC); every query's
/// `now` is at or after it, so no query sees a memory from its future.
pub(crate) fn cutoff() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 12, 23, 0, 0, 0)
        .single()
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

pub(crate) fn day(y: i32, m: u32, d: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, 0, 0, 0)
        .single()
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

/// Generator state.
pub(crate) struct Gen {
    pub rng: ChaCha8Rng,
    pub mems: Vec<Mem>,
    pub queries: Vec<Query>,
    /// Values that must stay unique across the whole dataset (ids, subjects, names).
    pub used: BTreeSet<String>,
}

impl Gen {
    fn new(seed: u64) -> Self {
        Gen {
            rng: ChaCha8Rng::seed_from_u64(seed),
            mems: Vec::new(),
            queries: Vec::new(),
            used: BTreeSet::new(),
        }
    }

    /// Uniform index below `n` (n > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            0
        } else {
            self.rng.random_range(0..n as u64) as usize
        }
    }
    pub(crate) fn range(&mut self, lo: u64, hi_inclusive: u64) -> u64 {
        self.rng.random_range(lo..=hi_inclusive)
    }
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p.clamp(0.0, 1.0))
    }
    pub(crate) fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
    pub(crate) fn lang(&mut self, p_zh: f64) -> Lang {
        if self.chance(p_zh) {
            Lang::Zh
        } else {
            Lang::En
        }
    }
    /// Two indices into a slice, distinct.
    pub(crate) fn pick_k<'a, T>(&mut self, xs: &'a [T], k: usize) -> Vec<&'a T> {
        let mut idx: Vec<usize> = (0..xs.len()).collect();
        idx.shuffle(&mut self.rng);
        idx.into_iter().take(k).map(|i| &xs[i]).collect()
    }
    /// A random time in `[a, b)` at minute resolution, during working-ish hours (01..=14 UTC is
    /// 09..=22 in China, where most of these teams work).
    pub(crate) fn time_between(&mut self, a: DateTime<Utc>, b: DateTime<Utc>) -> DateTime<Utc> {
        let days = (b - a).num_days().max(1) as u64;
        let d = self.range(0, days - 1) as i64;
        let base = a
            .date_naive()
            .and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc())
            .unwrap_or(a)
            + Duration::days(d);
        let t = base + Duration::minutes(self.range(60, 15 * 60) as i64);
        if t < a {
            a + Duration::minutes(self.range(1, 600) as i64)
        } else if t >= b {
            b - Duration::minutes(self.range(1, 300) as i64)
        } else {
            t
        }
    }
    /// Any time in the memory period.
    pub(crate) fn any_time(&mut self) -> DateTime<Utc> {
        self.time_between(period_start(), cutoff())
    }
    /// A time `lo..hi` days before the cutoff.
    pub(crate) fn days_ago(&mut self, lo: i64, hi: i64) -> DateTime<Utc> {
        self.time_between(cutoff() - Duration::days(hi), cutoff() - Duration::days(lo))
    }
    /// A query time in the days after the cutoff.
    pub(crate) fn query_now(&mut self) -> DateTime<Utc> {
        cutoff() + Duration::minutes(self.range(8 * 60, 8 * 24 * 60) as i64)
    }
    /// A value not used before; `make` is retried until it yields a fresh one.
    pub(crate) fn fresh(&mut self, mut make: impl FnMut(&mut Self) -> String) -> String {
        for _ in 0..10_000 {
            let v = make(self);
            if self.used.insert(v.clone()) {
                return v;
            }
        }
        // Exhausted: disambiguate deterministically.
        let v = format!("{}-{}", make(self), self.used.len());
        self.used.insert(v.clone());
        v
    }
    pub(crate) fn importance(&mut self, lo: u32, hi: u32) -> f32 {
        self.range(lo as u64, hi as u64) as f32 / 10.0
    }
    pub(crate) fn source(&mut self) -> Source {
        match self.below(10) {
            0..=4 => Source::User,
            5..=7 => Source::Agent,
            _ => Source::External,
        }
    }

    pub(crate) fn push(&mut self, s: MemSpec) -> usize {
        let mut rec = MemoryRecord::new(String::new(), s.content);
        rec.namespace = s.namespace.to_owned();
        rec.kind = s.kind;
        rec.context = s.context;
        rec.tags = s.tags;
        rec.tags.push(format!("lang:{}", s.lang.code()));
        rec.entities = s
            .entities
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        rec.importance = s.importance;
        rec.source = s.source;
        rec.created_at = s.created_at.min(cutoff() - Duration::minutes(1));
        rec.status = s.status;
        rec.task_type = s.task_type;
        rec.outcome = s.outcome;
        self.mems.push(Mem {
            rec,
            lang: s.lang,
            topic: s.topic,
        });
        self.mems.len() - 1
    }

    pub(crate) fn query(
        &mut self,
        namespace: &'static str,
        lang: Lang,
        text: String,
        tags: &[&'static str],
        judged: Vec<(usize, i32)>,
    ) {
        let now = self.query_now();
        self.query_at(namespace, lang, text, tags, judged, now);
    }

    pub(crate) fn query_at(
        &mut self,
        namespace: &'static str,
        lang: Lang,
        text: String,
        tags: &[&'static str],
        judged: Vec<(usize, i32)>,
        now: DateTime<Utc>,
    ) {
        let text = self.noisy(text, lang);
        let mut tags: Vec<&'static str> = tags.to_vec();
        // Cross-lingual when at least half of the relevance (weighted by grade) is written in the
        // other language.
        let total: i32 = judged.iter().filter(|(_, r)| *r > 0).map(|(_, r)| *r).sum();
        let other: i32 = judged
            .iter()
            .filter(|(i, r)| *r > 0 && self.mems[*i].lang != lang)
            .map(|(_, r)| *r)
            .sum();
        if total > 0 && 2 * other >= total && !tags.contains(&"cross-lingual") {
            tags.push("cross-lingual");
        }
        tags.sort_unstable();
        self.queries.push(Query {
            text,
            lang,
            namespace,
            now,
            tags,
            judged,
        });
    }

    /// Occasional realistic noise in English queries: a lower-cased start, a dropped question
    /// mark, or one transposed letter pair in a long alphabetic word.
    fn noisy(&mut self, text: String, lang: Lang) -> String {
        if lang == Lang::Zh {
            if self.chance(0.15) {
                return text.trim_end_matches(['？', '?', '。']).to_owned();
            }
            return text;
        }
        let mut out = text;
        if self.chance(0.15) {
            out = out.trim_end_matches('?').to_owned();
        }
        if self.chance(0.2) {
            let mut cs = out.chars();
            if let Some(f) = cs.next() {
                out = f.to_lowercase().chain(cs).collect();
            }
        }
        if self.chance(0.06) {
            let words: Vec<&str> = out.split(' ').collect();
            let candidates: Vec<usize> = (0..words.len())
                .filter(|&i| {
                    words[i].len() >= 6 && words[i].chars().all(|c| c.is_ascii_lowercase())
                })
                .collect();
            if !candidates.is_empty() {
                let wi = candidates[self.below(candidates.len())];
                let mut chars: Vec<char> = words[wi].chars().collect();
                let p = 1 + self.below(chars.len() - 3);
                chars.swap(p, p + 1);
                let typo: String = chars.into_iter().collect();
                let mut ws: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
                ws[wi] = typo;
                out = ws.join(" ");
            }
        }
        out
    }
}

/// Generates the shipped dataset. Same seed, same bytes once written.
pub fn generate(seed: u64) -> Dataset {
    let mut g = Gen::new(seed);
    scenarios::all(&mut g);
    paraphrase::all(&mut g);
    background::all(&mut g);
    finish(g, seed)
}

fn ns_prefix(ns: &str) -> &'static str {
    match ns {
        NS_CS => "cs",
        NS_CODE => "code",
        NS_OPS => "ops",
        _ => "pa",
    }
}

fn finish(mut g: Gen, seed: u64) -> Dataset {
    // Shuffle, then order by (namespace, time) and number: ids reveal neither planting order nor
    // which memories belong to a scenario.
    let mut order: Vec<usize> = (0..g.mems.len()).collect();
    order.shuffle(&mut g.rng);
    order.sort_by(|&a, &b| {
        let (ma, mb) = (&g.mems[a].rec, &g.mems[b].rec);
        (ma.namespace.as_str(), ma.created_at).cmp(&(mb.namespace.as_str(), mb.created_at))
    });
    let mut new_id = vec![String::new(); g.mems.len()];
    let mut counters: BTreeMap<&str, u32> = BTreeMap::new();
    let mut memories = Vec::with_capacity(g.mems.len());
    for &i in &order {
        let ns = ns_prefix(&g.mems[i].rec.namespace);
        let c = counters.entry(ns).or_insert(0);
        *c += 1;
        new_id[i] = format!("{ns}-{c:05}");
        let mut rec = g.mems[i].rec.clone();
        rec.id = new_id[i].clone();
        memories.push(rec);
    }

    // Queries: shuffled, so scenario families are interleaved, then numbered.
    let mut qorder: Vec<usize> = (0..g.queries.len()).collect();
    qorder.shuffle(&mut g.rng);
    let mut queries = Vec::new();
    let mut qrels = Qrels::new();
    let mut tag_counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut ns_queries: BTreeMap<String, u64> = BTreeMap::new();
    let mut lang_counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut grade_counts: BTreeMap<String, u64> = BTreeMap::new();
    for (n, &i) in qorder.iter().enumerate() {
        let q = &g.queries[i];
        let id = format!("q{:04}", n + 1);
        let mut tags: Vec<String> = q.tags.iter().map(|t| (*t).to_owned()).collect();
        for t in &tags {
            *tag_counts.entry(t.clone()).or_insert(0) += 1;
        }
        tags.push(format!("lang:{}", q.lang.code()));
        *ns_queries.entry(q.namespace.to_owned()).or_insert(0) += 1;
        *lang_counts
            .entry(format!("queries_{}", q.lang.code()))
            .or_insert(0) += 1;
        let docs = qrels.entry(id.clone()).or_default();
        for &(m, rel) in &q.judged {
            let e = docs.entry(new_id[m].clone()).or_insert(rel);
            *e = (*e).max(rel);
        }
        for rel in docs.values() {
            *grade_counts.entry(format!("rel_{rel}")).or_insert(0) += 1;
        }
        queries.push(QueryRecord {
            id,
            text: q.text.clone(),
            namespace: q.namespace.to_owned(),
            now: q.now,
            tags,
            filters: None,
        });
    }

    let mut ns_memories: BTreeMap<String, u64> = BTreeMap::new();
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    for m in &g.mems {
        *ns_memories.entry(m.rec.namespace.clone()).or_insert(0) += 1;
        *lang_counts
            .entry(format!("memories_{}", m.lang.code()))
            .or_insert(0) += 1;
        *kinds.entry(m.rec.kind.as_str().to_owned()).or_insert(0) += 1;
    }
    let mut totals = BTreeMap::new();
    totals.insert("memories".to_owned(), memories.len() as u64);
    totals.insert("queries".to_owned(), queries.len() as u64);
    totals.insert(
        "qrels".to_owned(),
        qrels.values().map(|d| d.len() as u64).sum(),
    );
    let counts = BTreeMap::from([
        ("totals".to_owned(), totals),
        ("memories_per_namespace".to_owned(), ns_memories),
        ("queries_per_namespace".to_owned(), ns_queries),
        ("query_tags".to_owned(), tag_counts),
        ("languages".to_owned(), lang_counts),
        ("memory_kinds".to_owned(), kinds),
        ("judgements_per_grade".to_owned(), grade_counts),
    ]);
    let first = memories
        .iter()
        .map(|m| m.created_at)
        .min()
        .unwrap_or_else(period_start);
    let last = memories
        .iter()
        .map(|m| m.created_at)
        .max()
        .unwrap_or_else(cutoff);
    let meta = DatasetMeta {
        name: "agent-memory-bilingual".to_owned(),
        description: format!(
            "Synthetic bilingual (Chinese + English) agent-memory query log: four agent namespaces, \
             memories from {} to {} (UTC), queries asked between {} and {}. Each query is tagged with \
             the retrieval scenario(s) it tests and judged against its whole namespace (graded 0..3; \
             0 = judged hard distractor). Relative dates in queries (\"last week\", \"上周\") are \
             calendar periods in UTC relative to the query's `now`; weeks start on Monday.",
            first.format("%Y-%m-%d"),
            last.format("%Y-%m-%d"),
            cutoff().format("%Y-%m-%d"),
            (cutoff() + Duration::days(8)).format("%Y-%m-%d"),
        ),
        languages: vec!["zh".to_owned(), "en".to_owned()],
        licence: "CC0-1.0, generated".to_owned(),
        produced_by: format!("hindsight-dataset generator, seed {seed}"),
        counts,
    };
    Dataset {
        meta,
        memories,
        queries,
        qrels,
        issues: Vec::new(),
    }
}

/// Monday 00:00 of the week containing `t`.
pub(crate) fn week_start(t: DateTime<Utc>) -> DateTime<Utc> {
    let d = t.date_naive() - Duration::days(t.weekday().num_days_from_monday() as i64);
    d.and_hms_opt(0, 0, 0).map(|x| x.and_utc()).unwrap_or(t)
}
