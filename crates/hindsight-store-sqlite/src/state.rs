//! In-memory derived state: per-row filter metadata and per-namespace vector indexes.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use hindsight_core::{
    Filter, Memory, MemoryId, MemoryKind, Outcome, Status, TaskType, VectorIndex,
};
use hindsight_index::{AnnConfig, AnnIndex, SearchMode};

/// The fields of a memory that [`Filter`] looks at, plus its id and namespace.
#[derive(Clone, Debug)]
pub(crate) struct RowMeta {
    pub id: MemoryId,
    pub namespace: String,
    pub kind: MemoryKind,
    pub status: Status,
    pub created_at: DateTime<Utc>,
    pub tags: Vec<String>,
    pub entities: BTreeMap<String, String>,
    pub outcome: Option<Outcome>,
    pub task_type: Option<TaskType>,
}

impl RowMeta {
    pub fn of(m: &Memory) -> Self {
        RowMeta {
            id: m.id.clone(),
            namespace: m.namespace.0.clone(),
            kind: m.kind,
            status: m.status,
            created_at: m.created_at,
            tags: m.tags.clone(),
            entities: m.entities.clone(),
            outcome: m.outcome,
            task_type: m.task_type,
        }
    }

    /// Same semantics as [`Filter::matches`] (tested against it).
    pub fn matches(&self, f: &Filter) -> bool {
        (f.kinds.is_empty() || f.kinds.contains(&self.kind))
            && f.tags.iter().all(|t| self.tags.iter().any(|mt| mt == t))
            && !f
                .exclude_tags
                .iter()
                .any(|t| self.tags.iter().any(|mt| mt == t))
            && f.entities
                .iter()
                .all(|(k, v)| self.entities.get(k) == Some(v))
            && (f.outcomes.is_empty() || self.outcome.is_some_and(|o| f.outcomes.contains(&o)))
            && (f.task_types.is_empty()
                || self.task_type.is_some_and(|t| f.task_types.contains(&t)))
            && f.effective_statuses().contains(&self.status)
            && f.created.is_none_or(|r| r.contains(self.created_at))
    }
}

/// True when the filter only says "active memories" (the common case, served by a fast path),
/// apart from `exclude_tags`, which the fast paths check against the namespace's tag sets.
pub(crate) fn is_active_only(f: &Filter) -> bool {
    f.kinds.is_empty() && is_active_only_but_kinds(f)
}

/// [`is_active_only`] apart from `kinds` (which the caller checks itself).
fn is_active_only_but_kinds(f: &Filter) -> bool {
    f.tags.is_empty()
        && f.entities.is_empty()
        && f.outcomes.is_empty()
        && f.task_types.is_empty()
        && f.created.is_none()
        && f.effective_statuses() == [Status::Active]
}

/// A tag filter is answered by scoring its rows directly when its rarest tag is on at most this
/// many rows of the namespace.
const TAGGED_EXACT_MAX: usize = 4096;

/// One namespace's vectors, the keys in it that are not active, and the keys carrying each tag.
#[derive(Debug)]
pub(crate) struct NsVectors {
    pub vectors: AnnIndex,
    /// The namespace's keys that are not active (whether there are any decides the unfiltered
    /// search; membership is asked of [`State::inactive_bits`]).
    pub inactive: HashSet<u64>,
    /// Keys per exact tag (as [`Filter`] compares tags), so a selective tag filter (the
    /// consensus check's lesson lookup) scores its few rows instead of searching the graph.
    pub tagged: HashMap<String, HashSet<u64>>,
}

/// A set of row keys. Keys are SQLite rowids (`AUTOINCREMENT`: small and dense), so they live in
/// a bitset, one bit per rowid up to the largest (the state keeps a few, store-wide): the vector
/// search asks about thousands of rows per query, and a probe into a hash set of the namespace's
/// 15k superseded memories missed the cache each time, where the bitset is 14 KB at 110k rows
/// (the load test's vector stage at concurrency 1: 1.47 -> 1.37 ms). Keys of 2^27 and above (a
/// bitset of at most 16 MB below them), which a store assigns only after 134 million inserts, go
/// to a hash set.
#[derive(Clone, Debug, Default)]
pub(crate) struct KeySet {
    bits: Vec<u64>,
    large: HashSet<u64>,
}

impl KeySet {
    const BITSET_LIMIT: u64 = 1 << 27;

    pub fn contains(&self, key: u64) -> bool {
        if key < Self::BITSET_LIMIT {
            self.bits
                .get((key / 64) as usize)
                .is_some_and(|w| w >> (key % 64) & 1 == 1)
        } else {
            self.large.contains(&key)
        }
    }

    /// Adds `key`; whether it was absent.
    pub fn insert(&mut self, key: u64) -> bool {
        if key < Self::BITSET_LIMIT {
            let word = (key / 64) as usize;
            if word >= self.bits.len() {
                self.bits.resize(word + 1, 0);
            }
            let mask = 1u64 << (key % 64);
            let absent = self.bits[word] & mask == 0;
            self.bits[word] |= mask;
            absent
        } else {
            self.large.insert(key)
        }
    }

    /// Drops `key`; whether it was present.
    pub fn remove(&mut self, key: u64) -> bool {
        if key < Self::BITSET_LIMIT {
            let mask = 1u64 << (key % 64);
            match self.bits.get_mut((key / 64) as usize) {
                Some(w) if *w & mask != 0 => {
                    *w &= !mask;
                    true
                }
                _ => false,
            }
        } else {
            self.large.remove(&key)
        }
    }
}

/// Records whether `key` of `ns` is inactive, in the namespace's set and the store-wide bits.
fn mark_inactive(ns: &mut NsVectors, bits: &mut KeySet, key: u64, inactive: bool) {
    if inactive {
        ns.inactive.insert(key);
        bits.insert(key);
    } else {
        ns.inactive.remove(&key);
        bits.remove(key);
    }
}

impl NsVectors {
    fn untag(&mut self, key: u64, tags: &[String]) {
        for t in tags {
            if let Some(keys) = self.tagged.get_mut(t) {
                keys.remove(&key);
                if keys.is_empty() {
                    self.tagged.remove(t);
                }
            }
        }
    }
}

/// Derived in-memory state of a store, rebuilt from SQLite at open.
#[derive(Debug)]
pub(crate) struct State {
    dim: usize,
    ann: AnnConfig,
    /// While loading at open, namespaces defer their HNSW graphs to [`State::finish_load`].
    loading: bool,
    pub rows: HashMap<u64, RowMeta>,
    pub namespaces: HashMap<String, NsVectors>,
    /// Every key that is not active, and the keys of each kind, store-wide: a namespace's
    /// vector index only holds that namespace's keys, so the vector search's filter can ask
    /// these (one load each) instead of `rows`. Store-wide rather than per namespace, so their
    /// size is bounded by the largest rowid once, not once per namespace.
    inactive_bits: KeySet,
    kind_bits: HashMap<MemoryKind, KeySet>,
}

impl State {
    pub fn new(dim: usize, ann: AnnConfig) -> Self {
        State {
            dim,
            ann,
            loading: false,
            rows: HashMap::new(),
            namespaces: HashMap::new(),
            inactive_bits: KeySet::default(),
            kind_bits: HashMap::new(),
        }
    }

    /// A state being bulk-loaded: HNSW graphs are built once, in [`State::finish_load`].
    pub fn loading(dim: usize, ann: AnnConfig) -> Self {
        State {
            loading: true,
            ..State::new(dim, ann)
        }
    }

    /// Ends the bulk load: builds the int8 copy and the graph of every namespace that reached
    /// their thresholds.
    pub fn finish_load(&mut self) {
        self.loading = false;
        for ns in self.namespaces.values_mut() {
            ns.vectors.finish_bulk_load();
        }
    }

    /// Inserts or replaces a row; `vector` replaces the stored vector when given.
    pub fn upsert(&mut self, key: u64, meta: RowMeta, vector: Option<&[f32]>) {
        let (dim, ann, loading) = (self.dim, self.ann, self.loading);
        let ns = self
            .namespaces
            .entry(meta.namespace.clone())
            .or_insert_with(|| NsVectors {
                vectors: if loading {
                    AnnIndex::new_bulk(dim, ann)
                } else {
                    AnnIndex::new(dim, ann)
                },
                inactive: HashSet::new(),
                tagged: HashMap::new(),
            });
        if let Some(v) = vector {
            ns.vectors.upsert(key, v);
        }
        if let Some(old) = self.rows.get(&key) {
            ns.untag(key, &old.tags);
            if let Some(set) = self.kind_bits.get_mut(&old.kind) {
                set.remove(key);
            }
        }
        self.kind_bits.entry(meta.kind).or_default().insert(key);
        for t in &meta.tags {
            ns.tagged.entry(t.clone()).or_default().insert(key);
        }
        mark_inactive(
            ns,
            &mut self.inactive_bits,
            key,
            meta.status != Status::Active,
        );
        self.rows.insert(key, meta);
    }

    pub fn set_status(&mut self, key: u64, status: Status) {
        if let Some(meta) = self.rows.get_mut(&key) {
            meta.status = status;
            if let Some(ns) = self.namespaces.get_mut(&meta.namespace) {
                mark_inactive(ns, &mut self.inactive_bits, key, status != Status::Active);
            }
        }
    }

    pub fn remove(&mut self, key: u64) {
        if let Some(meta) = self.rows.remove(&key)
            && let Some(ns) = self.namespaces.get_mut(&meta.namespace)
        {
            ns.vectors.remove(key);
            mark_inactive(ns, &mut self.inactive_bits, key, false);
            if let Some(set) = self.kind_bits.get_mut(&meta.kind) {
                set.remove(key);
            }
            ns.untag(key, &meta.tags);
        }
    }

    /// Top `k` `(key, cosine)` in `namespace` admitted by `filter`.
    /// The vector tier answering unfiltered searches in `namespace` (`None`: no vectors there).
    pub fn vector_tier(&self, namespace: &str) -> Option<SearchMode> {
        self.namespaces.get(namespace).map(|ns| ns.vectors.tier())
    }

    pub fn vector_search(
        &self,
        namespace: &str,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Vec<(u64, f32)> {
        let Some(ns) = self.namespaces.get(namespace) else {
            return Vec::new();
        };
        // Rows carrying an excluded tag (the engine excludes its guard lessons from every
        // search): usually none, and then the fast paths run as if nothing were excluded.
        let excluded: Vec<&HashSet<u64>> = filter
            .exclude_tags
            .iter()
            .filter_map(|t| ns.tagged.get(t))
            .filter(|keys| !keys.is_empty())
            .collect();
        let kept = |key: u64| !excluded.iter().any(|keys| keys.contains(&key));
        if is_active_only(filter) {
            if ns.inactive.is_empty() && excluded.is_empty() {
                ns.vectors.search_all(query, k)
            } else {
                ns.vectors.search(query, k, &|key| {
                    !self.inactive_bits.contains(key) && kept(key)
                })
            }
        } else if is_active_only_but_kinds(filter) {
            // Only kinds (and the default status): two bitset loads per candidate.
            let kinds: Vec<&KeySet> = filter
                .kinds
                .iter()
                .filter_map(|kind| self.kind_bits.get(kind))
                .collect();
            ns.vectors.search(query, k, &|key| {
                !self.inactive_bits.contains(key)
                    && kinds.iter().any(|set| set.contains(key))
                    && kept(key)
            })
        } else {
            let admits = |key: u64| self.rows.get(&key).is_some_and(|m| m.matches(filter));
            // Every required tag must be on the row: the rarest tag's keys are a superset of
            // the admitted rows. Few of them (or none): score just those.
            let tagged = |t: &String| ns.tagged.get(t).map_or(0, HashSet::len);
            if let Some(rarest) = filter.tags.iter().min_by_key(|t| tagged(t))
                && tagged(rarest) <= TAGGED_EXACT_MAX
            {
                let keys = ns.tagged.get(rarest).into_iter().flatten().copied();
                return ns
                    .vectors
                    .flat()
                    .search_keys(query, keys.filter(|&key| admits(key)), k);
            }
            ns.vectors.search(query, k, &admits)
        }
    }

    /// Whether `key` is a row of `namespace` admitted by `filter`.
    pub fn admits(&self, key: u64, namespace: &str, filter: &Filter) -> bool {
        self.admitted(key, namespace, filter).is_some()
    }

    /// The metadata of `key` when it is in `namespace` and passes `filter`.
    pub fn admitted(&self, key: u64, namespace: &str, filter: &Filter) -> Option<&RowMeta> {
        self.rows
            .get(&key)
            .filter(|m| m.namespace == namespace && m.matches(filter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::{Namespace, Source, TimeRange};

    fn memory(i: u32) -> Memory {
        let t =
            DateTime::from_timestamp(1_700_000_000 + i64::from(i) * 3600, 0).expect("valid time");
        Memory {
            id: MemoryId(format!("m{i}")),
            namespace: Namespace::new("ns"),
            kind: MemoryKind::ALL[i as usize % MemoryKind::ALL.len()],
            content: "c".into(),
            tags: if i.is_multiple_of(2) {
                vec!["a".into()]
            } else {
                vec!["a".into(), "b".into()]
            },
            context: String::new(),
            entities: BTreeMap::from([("order".to_owned(), format!("o{}", i % 3))]),
            importance: 0.5,
            source: Source::User,
            created_at: t,
            last_accessed_at: t,
            access_count: 0,
            usefulness: 0.0,
            status: Status::ALL[i as usize % Status::ALL.len()],
            status_reason: None,
            superseded_by: None,
            task_id: None,
            task_type: (!i.is_multiple_of(4))
                .then(|| TaskType::ALL[i as usize % TaskType::ALL.len()]),
            outcome: (!i.is_multiple_of(3)).then(|| Outcome::ALL[i as usize % Outcome::ALL.len()]),
            embedding_model: "m".into(),
            neighbourhood: String::new(),
        }
    }

    #[test]
    fn row_meta_matches_agrees_with_filter_matches() {
        let t0 = DateTime::from_timestamp(1_700_000_000, 0).expect("valid time");
        let filters = vec![
            Filter::default(),
            Filter {
                kinds: vec![MemoryKind::Semantic, MemoryKind::Warning],
                ..Filter::default()
            },
            Filter {
                tags: vec!["b".into()],
                statuses: Status::ALL.to_vec(),
                ..Filter::default()
            },
            Filter {
                entities: BTreeMap::from([("order".into(), "o1".into())]),
                statuses: Status::ALL.to_vec(),
                ..Filter::default()
            },
            Filter {
                outcomes: vec![Outcome::Failure],
                statuses: vec![Status::Forgotten, Status::Active],
                ..Filter::default()
            },
            Filter {
                task_types: vec![TaskType::Modify],
                statuses: Status::ALL.to_vec(),
                ..Filter::default()
            },
            Filter {
                created: Some(TimeRange {
                    start: t0 + chrono::Duration::hours(5),
                    end: t0 + chrono::Duration::hours(20),
                }),
                statuses: Status::ALL.to_vec(),
                ..Filter::default()
            },
        ];
        for f in &filters {
            let mut admitted = 0;
            for i in 0..60 {
                let m = memory(i);
                assert_eq!(
                    RowMeta::of(&m).matches(f),
                    f.matches(&m),
                    "memory {i} filter {f:?}"
                );
                admitted += usize::from(f.matches(&m));
            }
            assert!(
                admitted > 0,
                "filter admits nothing, test is vacuous: {f:?}"
            );
        }
    }

    #[test]
    fn tag_filters_score_tagged_rows_like_a_full_scan() {
        let mut s = State::new(4, AnnConfig::default());
        let vector = |i: u32| {
            let mut v = vec![(i % 7) as f32, (i % 5) as f32, 1.0, (i % 3) as f32];
            hindsight_core::l2_normalize(&mut v);
            v
        };
        for i in 0..80 {
            let mut m = memory(i);
            if i % 10 == 0 {
                m.tags.push("lesson".into());
            }
            s.upsert(u64::from(i), RowMeta::of(&m), Some(&vector(i)));
        }
        // Retag one row and drop another: the tag index must follow.
        let mut m = memory(3);
        m.tags = vec!["lesson".into()];
        s.upsert(3, RowMeta::of(&m), Some(&vector(3)));
        s.remove(20);
        let q = vector(11);
        for filter in [
            Filter {
                tags: vec!["lesson".into()],
                statuses: Status::ALL.to_vec(),
                ..Filter::default()
            },
            Filter {
                tags: vec!["lesson".into(), "b".into()],
                statuses: Status::ALL.to_vec(),
                ..Filter::default()
            },
            Filter {
                tags: vec!["lesson".into()],
                kinds: vec![MemoryKind::Warning],
                ..Filter::default()
            },
            Filter {
                tags: vec!["nobody-has-this".into()],
                ..Filter::default()
            },
        ] {
            let ns = &s.namespaces["ns"];
            let admits = |key: u64| s.rows.get(&key).is_some_and(|m| m.matches(&filter));
            let want = ns.vectors.flat().search(&q, 5, &admits);
            assert_eq!(s.vector_search("ns", &q, 5, &filter), want, "{filter:?}");
        }
        let lessons = Filter {
            tags: vec!["lesson".into()],
            statuses: Status::ALL.to_vec(),
            ..Filter::default()
        };
        let keys: HashSet<u64> = s
            .vector_search("ns", &q, 100, &lessons)
            .into_iter()
            .map(|h| h.0)
            .collect();
        assert_eq!(keys, HashSet::from([0, 3, 10, 30, 40, 50, 60, 70]));
    }

    #[test]
    fn kind_filter_fast_path_agrees_with_the_reference_filter() {
        let mut s = State::new(2, AnnConfig::default());
        let rows: Vec<(u64, Memory)> = (0..60u32).map(|i| (u64::from(i) + 1, memory(i))).collect();
        for (key, m) in &rows {
            let a = *key as f32 * 0.1;
            s.upsert(*key, RowMeta::of(m), Some(&[a.cos(), a.sin()]));
        }
        // Rewrites that change a row's kind and status, and removals.
        for key in [3u64, 10, 17] {
            let mut m = rows[key as usize - 1].1.clone();
            m.kind = MemoryKind::ALL[(key as usize + 1) % MemoryKind::ALL.len()];
            m.status = Status::Active;
            s.upsert(key, RowMeta::of(&m), None);
        }
        s.set_status(4, Status::Forgotten);
        s.remove(20);
        // Another namespace's rows share the store-wide bitsets but never its vector index.
        for i in 0..10u32 {
            let mut m = memory(i);
            m.namespace = Namespace::new("other");
            s.upsert(1000 + u64::from(i), RowMeta::of(&m), Some(&[1.0, 0.0]));
        }
        for kinds in [
            vec![MemoryKind::Semantic],
            vec![MemoryKind::Warning, MemoryKind::Episodic],
            MemoryKind::ALL.to_vec(),
        ] {
            let filter = Filter {
                kinds,
                ..Filter::default()
            };
            let got = s.vector_search("ns", &[1.0, 0.0], 100, &filter);
            let mut want: Vec<u64> = s
                .rows
                .iter()
                .filter(|(_, m)| m.namespace == "ns" && m.matches(&filter))
                .map(|(k, _)| *k)
                .collect();
            want.sort_unstable();
            let mut keys: Vec<u64> = got.iter().map(|h| h.0).collect();
            keys.sort_unstable();
            assert!(!want.is_empty());
            assert_eq!(keys, want, "{:?}", filter.kinds);
        }
    }

    #[test]
    fn key_set_tracks_small_and_large_keys() {
        let mut set = KeySet::default();
        assert!(!set.contains(0) && !set.contains(u64::MAX));
        for key in [0, 63, 64, 1000, KeySet::BITSET_LIMIT, u64::MAX] {
            assert!(set.insert(key), "{key}");
            assert!(!set.insert(key), "{key} twice");
            assert!(set.contains(key), "{key}");
        }
        assert!(!set.contains(1) && !set.contains(65) && !set.contains(999));
        for key in [63, u64::MAX] {
            assert!(set.remove(key));
            assert!(!set.remove(key));
            assert!(!set.contains(key));
        }
        assert!(!set.remove(5_000_000), "beyond the bitset");
        assert!(set.contains(64) && set.contains(KeySet::BITSET_LIMIT));
        for key in [0, 64, 1000, KeySet::BITSET_LIMIT] {
            assert!(set.remove(key));
        }
        assert!(
            [0, 63, 64, 1000, KeySet::BITSET_LIMIT, u64::MAX]
                .iter()
                .all(|&key| !set.contains(key))
        );
    }

    #[test]
    fn active_only_fast_path_skips_inactive_rows() {
        let mut s = State::new(2, AnnConfig::default());
        let mut a = memory(0);
        a.status = Status::Active;
        let mut b = memory(1);
        b.status = Status::Active;
        s.upsert(1, RowMeta::of(&a), Some(&[1.0, 0.0]));
        s.upsert(2, RowMeta::of(&b), Some(&[0.8, 0.6]));
        assert_eq!(
            s.vector_search("ns", &[1.0, 0.0], 5, &Filter::default())
                .len(),
            2
        );
        s.set_status(1, Status::Forgotten);
        let hits = s.vector_search("ns", &[1.0, 0.0], 5, &Filter::default());
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![2]);
        let all = Filter {
            statuses: Status::ALL.to_vec(),
            ..Filter::default()
        };
        assert_eq!(s.vector_search("ns", &[1.0, 0.0], 5, &all).len(), 2);
        s.remove(2);
        assert!(
            s.vector_search("ns", &[1.0, 0.0], 5, &Filter::default())
                .is_empty()
        );
        assert!(s.vector_search("other", &[1.0, 0.0], 5, &all).is_empty());
    }
}
