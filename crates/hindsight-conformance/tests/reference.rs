//! Runs the suite against a minimal in-process reference `Store` and `WorkingMemory` written
//! straight from the trait docs: proves every case is passable (and the macros expand), so a
//! backend failure points at the backend.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use hindsight_core::{
    Applied, EmbeddingSpace, Error, ErrorKind, Filter, Memory, MemoryId, Namespace, NamespaceLease,
    PathHit, PathHits, Result, Status, Store, StoreStats, StructuredQuery, WorkingEntry,
    WorkingMemory, WriteBatch, dot,
};

#[derive(Debug)]
struct RefStore {
    space: EmbeddingSpace,
    rows: Mutex<BTreeMap<MemoryId, (Memory, Vec<f32>)>>,
}

impl RefStore {
    fn new(space: EmbeddingSpace) -> Self {
        RefStore {
            space,
            rows: Mutex::new(BTreeMap::new()),
        }
    }
    fn rows(&self) -> MutexGuard<'_, BTreeMap<MemoryId, (Memory, Vec<f32>)>> {
        self.rows.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn check_dim(&self, v: &[f32]) -> Result<()> {
        if v.len() == self.space.dim {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::EmbeddingMismatch,
                format!("vector has {} dims, store {}", v.len(), self.space),
            ))
        }
    }
}

fn in_ns<'a>(
    rows: &'a mut BTreeMap<MemoryId, (Memory, Vec<f32>)>,
    ns: &Namespace,
    id: &MemoryId,
) -> Result<&'a mut Memory> {
    match rows.get_mut(id) {
        Some((m, _)) if &m.namespace == ns => Ok(m),
        _ => Err(Error::not_found(format!("memory {id} in {ns}"))),
    }
}

/// Lowercased alphanumeric words; runs of CJK ideographs become character bigrams.
fn tokens(text: &str) -> Vec<String> {
    let is_cjk = |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c);
    let mut out = Vec::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let mut latin = String::new();
        let mut cjk: Vec<char> = Vec::new();
        let flush_cjk = |cjk: &mut Vec<char>, out: &mut Vec<String>| {
            if cjk.len() == 1 {
                out.push(cjk[0].to_string());
            }
            out.extend(cjk.windows(2).map(|w| w.iter().collect()));
            cjk.clear();
        };
        for c in word.chars() {
            if is_cjk(c) {
                if !latin.is_empty() {
                    out.push(std::mem::take(&mut latin).to_lowercase());
                }
                cjk.push(c);
            } else {
                flush_cjk(&mut cjk, &mut out);
                latin.push(c);
            }
        }
        flush_cjk(&mut cjk, &mut out);
        if !latin.is_empty() {
            out.push(latin.to_lowercase());
        }
    }
    out
}

fn rank(mut hits: Vec<(Memory, f32)>, k: usize, recency: bool) -> PathHits {
    hits.sort_by(|(x, sx), (y, sy)| {
        let by_time = if recency {
            y.created_at.cmp(&x.created_at)
        } else {
            std::cmp::Ordering::Equal
        };
        sy.total_cmp(sx).then(by_time).then(x.id.cmp(&y.id))
    });
    hits.into_iter()
        .take(k)
        .map(|(m, score)| PathHit { id: m.id, score })
        .collect()
}

#[async_trait]
impl Store for RefStore {
    fn backend_name(&self) -> &'static str {
        "reference"
    }
    fn embedding_space(&self) -> &EmbeddingSpace {
        &self.space
    }
    /// Applies the batch to a copy of the rows and swaps it in only when every part succeeded.
    async fn apply(
        &self,
        ns: &Namespace,
        batch: WriteBatch,
        lease: NamespaceLease,
    ) -> Result<Applied> {
        batch.check(ns, &self.space)?;
        let mut rows = self.rows();
        let mut next = rows.clone();
        for (m, v) in &batch.inserts {
            self.check_dim(v)?;
            hindsight_core::storable_nanos("created_at", m.created_at)?;
            hindsight_core::storable_nanos("last_accessed_at", m.last_accessed_at)?;
            if next.insert(m.id.clone(), (m.clone(), v.clone())).is_some() {
                return Err(Error::conflict(format!("id {} exists", m.id)));
            }
        }
        for p in &batch.patches {
            let m = in_ns(&mut next, ns, &p.id)?;
            if p.expected.is_some_and(|e| e != m.status) {
                return Err(p.conflict(ns, m.status));
            }
            p.patch.apply(m);
            if let (Some(v), Some(row)) = (&p.vector, next.get_mut(&p.id)) {
                row.1.clone_from(v);
            }
        }
        for c in &batch.statuses {
            let m = in_ns(&mut next, ns, &c.id)?;
            if !c.admits(m.status) {
                return Err(c.conflict(ns, m.status));
            }
            c.applied_to(m);
        }
        *rows = next;
        drop(lease);
        let memory = |id: &MemoryId| rows[id].0.clone();
        Ok(Applied {
            patched: batch.patches.iter().map(|p| memory(&p.id)).collect(),
            changed: batch.statuses.iter().map(|c| memory(&c.id)).collect(),
        })
    }
    async fn get(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Memory>> {
        Ok(self
            .rows()
            .get(id)
            .filter(|(m, _)| &m.namespace == ns)
            .map(|(m, _)| m.clone()))
    }
    async fn get_many(&self, ns: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        let rows = self.rows();
        Ok(ids
            .iter()
            .filter_map(|id| rows.get(id))
            .filter(|(m, _)| &m.namespace == ns)
            .map(|(m, _)| m.clone())
            .collect())
    }
    async fn get_vector(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Vec<f32>>> {
        Ok(self
            .rows()
            .get(id)
            .filter(|(m, _)| &m.namespace == ns)
            .map(|(_, v)| v.clone()))
    }
    async fn record_access(
        &self,
        ns: &Namespace,
        ids: &[MemoryId],
        at: DateTime<Utc>,
    ) -> Result<()> {
        hindsight_core::storable_nanos("at", at)?;
        let mut rows = self.rows();
        let unique: HashSet<&MemoryId> = ids.iter().collect();
        for id in unique {
            if let Ok(m) = in_ns(&mut rows, ns, id) {
                m.access_count += 1;
                m.last_accessed_at = m.last_accessed_at.max(m.created_at).max(at);
            }
        }
        Ok(())
    }
    async fn add_usefulness(&self, ns: &Namespace, id: &MemoryId, delta: f32) -> Result<Memory> {
        let mut rows = self.rows();
        let m = in_ns(&mut rows, ns, id)?;
        m.usefulness += delta;
        Ok(m.clone())
    }
    async fn purge_forgotten(
        &self,
        ns: &Namespace,
        ids: Option<&[MemoryId]>,
    ) -> Result<Vec<MemoryId>> {
        let mut rows = self.rows();
        let doomed: Vec<MemoryId> = rows
            .values()
            .filter(|(m, _)| &m.namespace == ns && m.status == Status::Forgotten)
            .filter(|(m, _)| ids.is_none_or(|ids| ids.contains(&m.id)))
            .map(|(m, _)| m.id.clone())
            .collect();
        for id in &doomed {
            rows.remove(id);
        }
        Ok(doomed)
    }
    async fn vector_search(
        &self,
        ns: &Namespace,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<PathHits> {
        self.check_dim(query)?;
        let rows = self.rows();
        let hits = rows
            .values()
            .filter(|(m, _)| &m.namespace == ns && filter.matches(m))
            .map(|(m, v)| (m.clone(), dot(query, v)));
        Ok(rank(hits.collect(), k, false))
    }
    async fn keyword_search(
        &self,
        ns: &Namespace,
        query: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<PathHits> {
        // BM25 (k1 1.2, b 0.75) over the namespace's memories, whatever their status.
        const K1: f32 = 1.2;
        const B: f32 = 0.75;
        let rows = self.rows();
        let docs: Vec<(&Memory, HashMap<String, f32>, f32)> = rows
            .values()
            .filter(|(m, _)| &m.namespace == ns)
            .map(|(m, _)| {
                let toks = tokens(&m.index_text());
                let mut tf: HashMap<String, f32> = HashMap::new();
                for t in &toks {
                    *tf.entry(t.clone()).or_default() += 1.0;
                }
                (m, tf, toks.len() as f32)
            })
            .collect();
        let terms: HashSet<String> = tokens(query).into_iter().collect();
        let n = docs.len() as f32;
        let avg_len = docs.iter().map(|d| d.2).sum::<f32>() / n.max(1.0);
        let idf: HashMap<&String, f32> = terms
            .iter()
            .map(|t| {
                let df = docs.iter().filter(|(_, tf, _)| tf.contains_key(t)).count() as f32;
                (t, (1.0 + (n - df + 0.5) / (df + 0.5)).ln())
            })
            .collect();
        let hits = docs
            .iter()
            .filter(|(m, _, _)| filter.matches(m))
            .filter_map(|(m, tf, len)| {
                let norm = K1 * (1.0 - B + B * len / avg_len.max(1.0));
                let score: f32 = terms
                    .iter()
                    .filter_map(|t| tf.get(t).map(|f| idf[t] * f * (K1 + 1.0) / (f + norm)))
                    .sum();
                (score > 0.0).then(|| ((*m).clone(), score))
            });
        Ok(rank(hits.collect(), k, false))
    }
    async fn structured_search(
        &self,
        ns: &Namespace,
        query: &StructuredQuery,
        k: usize,
        filter: &Filter,
    ) -> Result<PathHits> {
        let rows = self.rows();
        let hits = rows
            .values()
            .filter(|(m, _)| &m.namespace == ns && filter.matches(m))
            .map(|(m, _)| (m.clone(), query.score(m)))
            .filter(|(_, s)| *s > 0.0);
        Ok(rank(hits.collect(), k, true))
    }
    async fn scan(
        &self,
        ns: &Namespace,
        after: Option<&MemoryId>,
        limit: usize,
    ) -> Result<Vec<Memory>> {
        let rows = self.rows();
        let page = rows
            .values()
            .filter(|(m, _)| &m.namespace == ns && after.is_none_or(|a| &m.id > a))
            .take(limit);
        Ok(page.map(|(m, _)| m.clone()).collect())
    }
    async fn namespaces(&self) -> Result<Vec<Namespace>> {
        let mut all: Vec<Namespace> = self
            .rows()
            .values()
            .map(|(m, _)| m.namespace.clone())
            .collect();
        all.sort();
        all.dedup();
        Ok(all)
    }
    async fn stats(&self) -> Result<StoreStats> {
        let rows = self.rows();
        let active = rows
            .values()
            .filter(|(m, _)| m.status == Status::Active)
            .count() as u64;
        let namespaces = rows
            .values()
            .map(|(m, _)| &m.namespace)
            .collect::<HashSet<_>>()
            .len() as u64;
        Ok(StoreStats {
            memories: rows.len() as u64,
            active,
            namespaces,
        })
    }
    async fn flush(&self) -> Result<()> {
        Ok(())
    }
}

type Key = (Namespace, String, String);

#[derive(Debug, Default)]
struct RefWorking {
    entries: Mutex<BTreeMap<Key, WorkingEntry>>,
}

impl RefWorking {
    fn live(&self) -> MutexGuard<'_, BTreeMap<Key, WorkingEntry>> {
        let mut map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let now = Utc::now();
        map.retain(|_, e| e.expires_at.is_none_or(|t| t > now));
        map
    }
}

#[async_trait]
impl WorkingMemory for RefWorking {
    async fn set(
        &self,
        ns: &Namespace,
        session: &str,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
    ) -> Result<WorkingEntry> {
        let expires_at = hindsight_core::expires_at(Utc::now(), ttl)?;
        let entry = WorkingEntry {
            session_id: session.into(),
            key: key.into(),
            value: value.into(),
            expires_at,
        };
        self.live()
            .insert((ns.clone(), session.into(), key.into()), entry.clone());
        Ok(entry)
    }
    async fn get(&self, ns: &Namespace, session: &str, key: &str) -> Result<Option<WorkingEntry>> {
        Ok(self
            .live()
            .get(&(ns.clone(), session.into(), key.into()))
            .cloned())
    }
    async fn get_all(&self, ns: &Namespace, session: &str) -> Result<Vec<WorkingEntry>> {
        let map = self.live();
        Ok(map
            .iter()
            .filter(|((n, s, _), _)| n == ns && s == session)
            .map(|(_, e)| e.clone())
            .collect())
    }
    async fn clear(&self, ns: &Namespace, session: &str, key: Option<&str>) -> Result<usize> {
        let mut map = self.live();
        let before = map.len();
        map.retain(|(n, s, k), _| !(n == ns && s == session && key.is_none_or(|key| key == k)));
        Ok(before - map.len())
    }
}

mod store {
    use super::*;
    hindsight_conformance::store_conformance_tests!(|space| async move { RefStore::new(space) });
}

mod working {
    use super::*;
    hindsight_conformance::working_memory_conformance_tests!(|| async move {
        let wm: Arc<dyn WorkingMemory> = Arc::new(RefWorking::default());
        wm
    });
}

#[test]
fn tokenizer_splits_words_and_cjk_bigrams() {
    assert_eq!(
        tokens("ORD-77812 was Issued"),
        ["ord", "77812", "was", "issued"]
    );
    assert_eq!(tokens("数据库迁移"), ["数据", "据库", "库迁", "迁移"]);
    assert_eq!(tokens("a顺"), ["a", "顺"]);
}
