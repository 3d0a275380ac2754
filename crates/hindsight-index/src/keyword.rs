//! BM25 keyword index over memory text (tantivy), keyed by the backend's row key.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use tantivy::collector::TopDocs;
use tantivy::columnar::Column;
use tantivy::directory::error::LockError;
use tantivy::directory::{Directory, INDEX_WRITER_LOCK, MmapDirectory};
use tantivy::indexer::LogMergePolicy;
use tantivy::query::{BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::flat::best_first;
use crate::tokenizer::{MixedTokenizer, TOKENIZER_NAME};
use hindsight_text::tokenize;

/// Errors of the keyword index.
#[derive(Debug, thiserror::Error)]
pub enum KeywordError {
    #[error("keyword index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    #[error("keyword index directory {path}: {source}")]
    Directory {
        path: String,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("keyword index: writer lock poisoned")]
    Poisoned,
    /// A commit failed and rolling the writer back failed too: the index takes no commit until
    /// its owner reopens (and rebuilds) it.
    #[error(
        "keyword index: a commit and the rollback after it failed; reopen to rebuild the index"
    )]
    Broken,
    /// Another process holds the index's writer lock.
    #[error(
        "the keyword index is in use by another process (a hindsight command or server on the same \
         data directory): stop it, or wait for it to finish"
    )]
    InUse,
}

impl KeywordError {
    /// Whether tantivy could not open the index because what is on disk is damaged or unreadable
    /// by this build: a garbage or empty `meta.json`, a segment file it names missing, another
    /// schema or index version. The index is derived data, so its owner may move it aside and
    /// rebuild it. Not damage: the index in use by another process ([`KeywordError::InUse`]),
    /// IO errors (permissions, descriptors), a poisoned lock.
    pub fn is_damage(&self) -> bool {
        use tantivy::TantivyError as T;
        use tantivy::directory::error::OpenReadError as R;
        matches!(
            self,
            KeywordError::Tantivy(
                T::DataCorruption(_)
                    | T::IncompatibleIndex(_)
                    | T::SchemaError(_)
                    | T::DeserializeError(_)
                    | T::OpenReadError(R::FileDoesNotExist(_) | R::IncompatibleIndex(_))
            )
        )
    }
}

impl From<KeywordError> for hindsight_core::Error {
    fn from(e: KeywordError) -> Self {
        hindsight_core::Error::backend(e)
    }
}

pub type Result<T, E = KeywordError> = std::result::Result<T, E>;

/// Indexing memory budget of the single writer thread (tantivy's minimum is 15 MB).
const WRITER_BUDGET_BYTES: usize = 32_000_000;

/// Segments below this many documents share the first merge level (tantivy's default, 10,000).
const MIN_LAYER_DOCS: u32 = 64;
/// Size ratio, as a base-2 logarithm, that one merge level spans (8x; tantivy's default 0.75).
const LEVEL_LOG_SIZE: f64 = 3.0;

/// The merge policy for an index that commits after nearly every write (one small segment per
/// commit). With tantivy's defaults every segment under 10,000 documents sits in one level, so a
/// segment that has grown to thousands of documents is rewritten with each batch of 8 one-document
/// segments (measured: the merge thread took 11 % of the server's CPU in a write-only load at 100k
/// memories). Here levels start at 64 documents and span 8x each, and a merge takes 8 segments
/// of one level: each document is rewritten about once per level, and an index holds at most
/// 7 segments per level.
fn merge_policy() -> LogMergePolicy {
    let mut policy = LogMergePolicy::default();
    policy.set_min_layer_size(MIN_LAYER_DOCS);
    policy.set_level_log_size(LEVEL_LOG_SIZE);
    policy
}

/// Queued operations are handed to the writer once this many wait and the writer is free.
const PENDING_APPLY_AT: usize = 1024;

/// An operation since the last commit (see `KeywordIndex::queue`).
#[derive(Clone)]
enum Pending {
    Add(TantivyDocument),
    Delete(Term),
    Clear,
}

/// Every operation since the last successful commit, in order, and how many of them the writer
/// holds. They are kept until a commit succeeds: a failed commit rolls the writer back to the
/// last commit and the next one hands them all over again, so it misses none of them.
#[derive(Default)]
struct Journal {
    ops: Vec<Pending>,
    /// `ops[..applied]` are in the writer.
    applied: usize,
    /// Commits that fail on purpose (tests: `KeywordIndex::fail_next_commits`).
    fail_commits: usize,
}

/// Hands queued operations to the writer, in order.
fn apply(writer: &IndexWriter, ops: impl IntoIterator<Item = Pending>) -> Result<()> {
    for op in ops {
        match op {
            Pending::Add(doc) => {
                writer.add_document(doc)?;
            }
            Pending::Delete(term) => {
                writer.delete_term(term);
            }
            Pending::Clear => {
                writer.delete_all_documents()?;
            }
        }
    }
    Ok(())
}

#[derive(Clone, Copy, Debug)]
struct Fields {
    key: Field,
    namespace: Field,
    text: Field,
    neighbourhood: Field,
}

pub use hindsight_text::NEIGHBOURHOOD_BOOST;

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let key = b.add_u64_field("key", NumericOptions::default().set_indexed().set_fast());
    let namespace = b.add_text_field("namespace", STRING);
    let text_indexing = TextFieldIndexing::default()
        .set_tokenizer(TOKENIZER_NAME)
        .set_index_option(IndexRecordOption::WithFreqs);
    let text = b.add_text_field(
        "text",
        TextOptions::default().set_indexing_options(text_indexing.clone()),
    );
    let neighbourhood = b.add_text_field(
        "neighbourhood",
        TextOptions::default().set_indexing_options(text_indexing),
    );
    (
        b.build(),
        Fields {
            key,
            namespace,
            text,
            neighbourhood,
        },
    )
}

/// A BM25 index of `(key, namespace, text)` documents with a Chinese+English tokenizer.
///
/// The index is derived data: the owning store rebuilds it from its source of truth. Writes
/// become visible at [`KeywordIndex::commit`]; each commit stores a *watermark* (an opaque `u64`
/// such as the store's write generation) so the store can tell on open whether the index lags.
/// All methods take `&self`; the writer sits behind a mutex, and writes queue in front of it so
/// that they never wait for a running commit.
pub struct KeywordIndex {
    index: Index,
    reader: IndexReader,
    writer: Mutex<IndexWriter>,
    /// Operations since the last commit (see `KeywordIndex::queue`).
    journal: Mutex<Journal>,
    /// A rollback after a failed commit failed: the writer's state is unknown, so no commit may
    /// record a watermark any more (the owner rebuilds the index when it is reopened).
    broken: std::sync::atomic::AtomicBool,
    fields: Fields,
    /// Watermark of the last commit (what [`KeywordIndex::watermark`] reports).
    watermark: Mutex<Option<u64>>,
    /// The stamp recorded with the last watermarked commit ([`KeywordIndex::stamp`]), and the
    /// one the next will record ([`KeywordIndex::set_stamp`]).
    stamp: Mutex<Option<String>>,
    next_stamp: Mutex<String>,
}

impl std::fmt::Debug for KeywordIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeywordIndex")
            .field("num_docs", &self.num_docs())
            .finish_non_exhaustive()
    }
}

impl KeywordIndex {
    /// Opens the index in `dir`, creating the directory and an empty index if needed.
    pub fn open_or_create(dir: &Path) -> Result<Self> {
        let dir_err = |e: Box<dyn std::error::Error + Send + Sync>| KeywordError::Directory {
            path: dir.display().to_string(),
            source: e,
        };
        hindsight_text::warm_up();
        std::fs::create_dir_all(dir).map_err(|e| dir_err(Box::new(e)))?;
        let mmap = MmapDirectory::open(dir).map_err(|e| dir_err(Box::new(e)))?;
        let (schema, fields) = schema();
        let index = Index::open_or_create(mmap, schema)?;
        Self::from_index(index, fields)
    }

    /// Moves the index directory `dir` to `to` (a path that does not exist yet), holding the
    /// index's writer lock meanwhile: fails with [`KeywordError::InUse`] when another process
    /// has the index open, so an index in use is never moved away from under it.
    pub fn move_aside(dir: &Path, to: &Path) -> Result<()> {
        let dir_err = |e: Box<dyn std::error::Error + Send + Sync>| KeywordError::Directory {
            path: dir.display().to_string(),
            source: e,
        };
        let mmap = MmapDirectory::open(dir).map_err(|e| dir_err(Box::new(e)))?;
        let lock = mmap.acquire_lock(&INDEX_WRITER_LOCK).map_err(|e| match e {
            LockError::LockBusy => KeywordError::InUse,
            e => dir_err(Box::new(e)),
        })?;
        if to.exists() {
            return Err(dir_err(
                format!("cannot move it to {}: that path exists", to.display()).into(),
            ));
        }
        std::fs::rename(dir, to).map_err(|e| dir_err(Box::new(e)))?;
        // The lock is a flock on an open file (now inside `to`): closing it releases it.
        drop(lock);
        Ok(())
    }

    /// A fresh index in RAM (tests, ephemeral stores).
    pub fn open_in_ram() -> Result<Self> {
        let (schema, fields) = schema();
        Self::from_index(Index::create_in_ram(schema), fields)
    }

    fn from_index(index: Index, fields: Fields) -> Result<Self> {
        index
            .tokenizers()
            .register(TOKENIZER_NAME, TextAnalyzer::from(MixedTokenizer));
        let writer = index
            .writer_with_num_threads(1, WRITER_BUDGET_BYTES)
            .map_err(|e| match e {
                tantivy::TantivyError::LockFailure(LockError::LockBusy, _) => KeywordError::InUse,
                e => e.into(),
            })?;
        writer.set_merge_policy(Box::new(merge_policy()));
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        // The payload is `<watermark>` or `<watermark> <stamp>`.
        let payload = index.load_metas()?.payload.unwrap_or_default();
        let (mark, stamp) = match payload.trim().split_once(' ') {
            Some((mark, stamp)) => (mark, Some(stamp.to_owned())),
            None => (payload.trim(), None),
        };
        let watermark = mark.parse::<u64>().ok();
        Ok(KeywordIndex {
            index,
            reader,
            writer: Mutex::new(writer),
            journal: Mutex::new(Journal::default()),
            broken: std::sync::atomic::AtomicBool::new(false),
            fields,
            watermark: Mutex::new(watermark),
            stamp: Mutex::new(stamp),
            next_stamp: Mutex::new(String::new()),
        })
    }

    fn writer(&self) -> Result<MutexGuard<'_, IndexWriter>> {
        self.writer.lock().map_err(|_| KeywordError::Poisoned)
    }

    /// Queues one operation. A commit holds the writer for milliseconds, and an `add` that waited
    /// for it would stall its caller (an async worker, under the store's write lock); queued
    /// operations reach the writer in order at the next commit, or earlier when the queue is long
    /// and the writer is free. They stay in the journal until a commit succeeds.
    fn queue(&self, op: Pending) -> Result<()> {
        let mut journal = self.journal()?;
        journal.ops.push(op);
        if journal.ops.len() - journal.applied >= PENDING_APPLY_AT
            && let Ok(writer) = self.writer.try_lock()
        {
            let from = journal.applied;
            // Counted as applied even if this fails: the writer then refuses the commit, which
            // rolls it back and hands everything over again.
            journal.applied = journal.ops.len();
            apply(&writer, journal.ops[from..].iter().cloned())?;
        }
        Ok(())
    }

    fn journal(&self) -> Result<MutexGuard<'_, Journal>> {
        self.journal.lock().map_err(|_| KeywordError::Poisoned)
    }

    /// Makes the next `n` commits fail once prepared (the writer holds their documents), as a
    /// failing disk would (tests of the owners' recovery; the journal keeps their operations for
    /// the commit after).
    #[doc(hidden)]
    pub fn fail_next_commits(&self, n: usize) -> Result<()> {
        self.journal()?.fail_commits = n;
        Ok(())
    }

    /// Adds a document (visible after the next commit). Adding an existing key again creates a
    /// duplicate: call [`KeywordIndex::delete`] first to replace.
    pub fn add(&self, key: u64, namespace: &str, text: &str) -> Result<()> {
        self.add_with_neighbourhood(key, namespace, text, "")
    }

    /// [`KeywordIndex::add`] of a document with a neighbourhood: text that helps find it but
    /// matches at [`NEIGHBOURHOOD_BOOST`] of its own text's weight.
    pub fn add_with_neighbourhood(
        &self,
        key: u64,
        namespace: &str,
        text: &str,
        neighbourhood: &str,
    ) -> Result<()> {
        let mut doc = TantivyDocument::default();
        doc.add_u64(self.fields.key, key);
        doc.add_text(self.fields.namespace, namespace);
        doc.add_text(self.fields.text, text);
        if !neighbourhood.is_empty() {
            doc.add_text(self.fields.neighbourhood, neighbourhood);
        }
        self.queue(Pending::Add(doc))
    }

    /// Deletes every document with `key` (effective at the next commit).
    pub fn delete(&self, key: u64) -> Result<()> {
        self.queue(Pending::Delete(Term::from_field_u64(self.fields.key, key)))
    }

    /// Removes all documents. Takes effect at the next commit together with any adds made after
    /// it, so a rebuild (`clear`, `add`..., `commit_with_watermark`) is atomic on disk.
    pub fn clear(&self) -> Result<()> {
        self.queue(Pending::Clear)
    }

    /// Commits pending writes, keeping the current watermark.
    pub fn commit(&self) -> Result<()> {
        let wm = *self.watermark.lock().map_err(|_| KeywordError::Poisoned)?;
        self.commit_inner(wm)
    }

    /// Commits pending writes and records `watermark` with them, atomically.
    pub fn commit_with_watermark(&self, watermark: u64) -> Result<()> {
        self.commit_inner(Some(watermark))
    }

    /// Commits every journalled operation. When the commit fails, the writer is rolled back to
    /// the last commit and the journal kept whole, so the next commit holds every operation again
    /// (and its watermark claims nothing it lacks); only a failed rollback leaves the index
    /// refusing commits.
    fn commit_inner(&self, wm: Option<u64>) -> Result<()> {
        if self.broken.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(KeywordError::Broken);
        }
        let mut writer = self.writer()?;
        let next_stamp = self
            .next_stamp
            .lock()
            .map_err(|_| KeywordError::Poisoned)?
            .clone();
        // Everything queued before this point is in this commit (the store's watermark relies
        // on it: a generation staged before the commit started is covered).
        let (batch, upto, fail) = {
            let mut journal = self.journal()?;
            let upto = journal.ops.len();
            let batch: Vec<Pending> = journal.ops[journal.applied..upto].to_vec();
            journal.applied = upto;
            let fail = journal.fail_commits > 0;
            journal.fail_commits = journal.fail_commits.saturating_sub(1);
            (batch, upto, fail)
        };
        let mut opstamp = None;
        let committed = (|| {
            apply(&writer, batch)?;
            let mut prepared = writer.prepare_commit()?;
            opstamp = Some(prepared.opstamp());
            if fail {
                return Err(KeywordError::Tantivy(tantivy::TantivyError::SystemError(
                    "injected commit failure".into(),
                )));
            }
            if let Some(w) = wm {
                prepared.set_payload(&match next_stamp.as_str() {
                    "" => w.to_string(),
                    stamp => format!("{w} {stamp}"),
                });
            }
            prepared.commit()?;
            Ok(())
        })();
        if let Err(e) = committed {
            // Back to the last commit: the operations of the failed one are in the journal.
            match writer.rollback() {
                Ok(last) if opstamp == Some(last) && !fail => {
                    // The commit did land (it failed after writing its metadata): done after all.
                    writer.set_merge_policy(Box::new(merge_policy()));
                }
                Ok(_) => {
                    writer.set_merge_policy(Box::new(merge_policy()));
                    self.journal()?.applied = 0;
                    return Err(e);
                }
                Err(rollback) => {
                    self.broken.store(true, std::sync::atomic::Ordering::SeqCst);
                    tracing::error!(error = %rollback, "keyword index rollback failed after a failed commit");
                    return Err(e);
                }
            }
        }
        {
            let mut journal = self.journal()?;
            journal.ops.drain(..upto);
            journal.applied -= upto;
        }
        drop(writer);
        *self.watermark.lock().map_err(|_| KeywordError::Poisoned)? = wm;
        if wm.is_some() {
            *self.stamp.lock().map_err(|_| KeywordError::Poisoned)? =
                (!next_stamp.is_empty()).then_some(next_stamp);
        }
        self.reader.reload()?;
        Ok(())
    }

    /// Watermark stored with the last commit; `None` for a fresh index.
    pub fn watermark(&self) -> Option<u64> {
        self.watermark.lock().ok().and_then(|w| *w)
    }

    /// What the owner recorded with the last watermarked commit to say which source and which
    /// tokenizer the index was built from ([`KeywordIndex::set_stamp`]); `None` for a fresh
    /// index or one committed without a stamp.
    pub fn stamp(&self) -> Option<String> {
        self.stamp.lock().ok().and_then(|s| s.clone())
    }

    /// Sets the stamp that watermarked commits record from now on. A store stamps its index
    /// with its database's identity and [`crate::TOKENIZER_VERSION`], so an index built from
    /// another database, or with other tokens, is rebuilt even when its watermark matches.
    pub fn set_stamp(&self, stamp: &str) {
        if let Ok(mut s) = self.next_stamp.lock() {
            *s = stamp.to_owned();
        }
    }

    /// Committed documents.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Top `k` keys in `namespace` by BM25 for any of the query's terms (OR semantics), skipping
    /// keys `accept` rejects. The query is tokenized like documents and never parsed as syntax,
    /// so any user text is accepted; a query without terms returns nothing.
    pub fn search(
        &self,
        namespace: &str,
        query: &str,
        k: usize,
        accept: &dyn Fn(u64) -> bool,
    ) -> Result<Vec<(u64, f32)>> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let mut seen = HashSet::new();
        let searcher = self.reader.searcher();
        // A neighbourhood clause only where some document has a neighbourhood.
        let neighbourhoods = searcher.segment_readers().iter().any(|r| {
            r.inverted_index(self.fields.neighbourhood)
                .is_ok_and(|i| i.terms().num_terms() > 0)
        });
        let terms: Vec<(Occur, Box<dyn Query>)> = tokenize(query)
            .into_iter()
            .filter(|t| seen.insert(t.clone()))
            .flat_map(|t| {
                let own = TermQuery::new(
                    Term::from_field_text(self.fields.text, &t),
                    IndexRecordOption::WithFreqs,
                );
                let mut clauses = vec![(Occur::Should, Box::new(own) as Box<dyn Query>)];
                if neighbourhoods {
                    let near = TermQuery::new(
                        Term::from_field_text(self.fields.neighbourhood, &t),
                        IndexRecordOption::WithFreqs,
                    );
                    clauses.push((
                        Occur::Should,
                        Box::new(BoostQuery::new(Box::new(near), NEIGHBOURHOOD_BOOST))
                            as Box<dyn Query>,
                    ));
                }
                clauses
            })
            .collect();
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let ns_term = Term::from_field_text(self.fields.namespace, namespace);
        // When every document (deleted ones included) belongs to `namespace`, the namespace clause
        // filters nothing, and leaving it out keeps the query a pure disjunction, which tantivy
        // answers with block-max WAND instead of scoring every matching document.
        let all_docs: u64 = searcher
            .segment_readers()
            .iter()
            .map(|r| u64::from(r.max_doc()))
            .sum();
        let query: Box<dyn Query> = if searcher.doc_freq(&ns_term)? == all_docs {
            Box::new(BooleanQuery::new(terms))
        } else {
            let ns = TermQuery::new(ns_term, IndexRecordOption::Basic);
            Box::new(BooleanQuery::new(vec![
                (
                    Occur::Must,
                    Box::new(ConstScoreQuery::new(Box::new(ns), 0.0)),
                ),
                (Occur::Must, Box::new(BooleanQuery::new(terms))),
            ]))
        };

        let mut fetch = k.saturating_mul(2).max(k + 16);
        // Ties at the k-th score are completed by refetching, but only up to this many hits: on
        // templated text thousands of documents can share a score, and completing such a tie
        // scored the whole posting lists again and again (100k memories: 12-18 ms a query). A
        // tie wider than this is cut in tantivy's order, which depends on the segment layout.
        let max_fetch = k.saturating_mul(32).max(fetch);
        // Each segment's `key` column, opened once per search: opening it resolves the field by
        // name and reads the column's metadata, which per hit cost more than the search itself.
        let mut keys: Vec<Option<Column<u64>>> = vec![None; searcher.segment_readers().len()];
        loop {
            // No hit count: counting would score every matching document.
            let top = searcher.search(&query, &TopDocs::with_limit(fetch).order_by_score())?;
            let exhausted = top.len() < fetch;
            let lowest_fetched = top.last().map(|(score, _)| *score);
            let mut out = Vec::with_capacity(top.len());
            for (score, addr) in top {
                let Some(key) = key_of(&searcher, addr, &mut keys)? else {
                    continue;
                };
                if accept(key) {
                    out.push((key, score));
                }
            }
            // Equal BM25 scores are ordered by key, so results do not depend on the segment layout
            // (which background merges change). That needs every document tied with the k-th
            // hit (up to `max_fetch`): when the k-th score equals the lowest fetched one, more may be unfetched.
            out.sort_by(best_first);
            let boundary_is_complete =
                out.len() >= k && lowest_fetched.is_some_and(|low| out[k - 1].1 > low);
            let tie_cap_reached = out.len() >= k && fetch >= max_fetch;
            if exhausted || boundary_is_complete || tie_cap_reached {
                out.truncate(k);
                return Ok(out);
            }
            fetch = if out.len() >= k {
                fetch.saturating_mul(4).min(max_fetch)
            } else {
                fetch.saturating_mul(4)
            };
        }
    }

    /// The underlying tantivy index (diagnostics).
    pub fn tantivy_index(&self) -> &Index {
        &self.index
    }
}

/// The row key of the document at `addr`, from its segment's `key` column (opened on first use
/// and kept in `columns`, one slot per segment).
fn key_of(
    searcher: &tantivy::Searcher,
    addr: DocAddress,
    columns: &mut [Option<Column<u64>>],
) -> Result<Option<u64>> {
    let slot = columns
        .get_mut(addr.segment_ord as usize)
        .ok_or_else(|| tantivy::TantivyError::InvalidArgument("segment out of range".into()))?;
    let column = match slot {
        Some(column) => column,
        None => slot.insert(
            searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64("key")?,
        ),
    };
    Ok(column.first(addr.doc_id))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A failed commit loses nothing: the next commit holds every document of the failed one
    /// (also those handed to the writer early, past `PENDING_APPLY_AT`), none twice, with its
    /// watermark; deletes and clears are replayed in order too. Before, the documents the
    /// writer held were gone and the owner had to refuse every later commit.
    #[test]
    fn a_failed_commit_is_retried_whole_by_the_next() {
        let idx = KeywordIndex::open_in_ram().unwrap();
        let all = |idx: &KeywordIndex| {
            let mut keys: Vec<u64> = idx
                .search("ns", "common", 10_000, &|_| true)
                .unwrap()
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            keys.sort_unstable();
            keys
        };
        idx.add(0, "ns", "common zero").unwrap();
        idx.add(1, "ns", "common one").unwrap();
        idx.commit_with_watermark(1).unwrap();

        idx.delete(0).unwrap();
        let early = PENDING_APPLY_AT as u64 + 10;
        for key in 2..2 + early {
            idx.add(key, "ns", "common bulk").unwrap();
        }
        idx.fail_next_commits(1).unwrap();
        assert!(idx.commit_with_watermark(2).is_err());
        assert_eq!(idx.watermark(), Some(1));
        assert_eq!(all(&idx), vec![0, 1], "the failed commit is not visible");

        idx.add(9_999, "ns", "common late").unwrap();
        idx.commit_with_watermark(3).unwrap();
        assert_eq!(idx.watermark(), Some(3));
        let mut want: Vec<u64> = (1..2 + early).collect();
        want.push(9_999);
        assert_eq!(all(&idx), want);
        assert_eq!(idx.num_docs(), want.len() as u64, "no document twice");

        // A clear in a failed commit is replayed in order too.
        idx.clear().unwrap();
        idx.add(5, "ns", "common after clear").unwrap();
        idx.fail_next_commits(1).unwrap();
        assert!(idx.commit_with_watermark(4).is_err());
        idx.commit_with_watermark(4).unwrap();
        assert_eq!(all(&idx), vec![5]);
        assert_eq!(idx.num_docs(), 1);
    }

    /// The merge policy leaves a grown segment alone while one-document commits pile up, and
    /// merges those among themselves once there are 8 (the default policy would rewrite the
    /// 6,000-document segment with them).
    #[test]
    fn merge_policy_merges_small_segments_without_the_grown_one() {
        use tantivy::index::SegmentId;
        use tantivy::indexer::MergePolicy;
        let index = Index::create_in_ram(schema().0);
        let metas = |sizes: &[u32]| -> Vec<_> {
            sizes
                .iter()
                .map(|&n| index.new_segment_meta(SegmentId::generate_random(), n))
                .collect()
        };
        let ours = merge_policy();
        let grown = metas(&[95_232, 6_144, 1, 1, 2, 1, 1, 1, 1, 1]);
        let candidates = ours.compute_merge_candidates(&grown);
        assert_eq!(candidates.len(), 1, "{candidates:?}");
        let merged: Vec<u32> = grown
            .iter()
            .filter(|m| candidates[0].0.contains(&m.id()))
            .map(|m| m.max_doc())
            .collect();
        assert_eq!(merged, vec![1, 1, 2, 1, 1, 1, 1, 1]);
        assert!(
            LogMergePolicy::default()
                .compute_merge_candidates(&grown)
                .iter()
                .any(|c| c.0.contains(&grown[1].id())),
            "tantivy's default would merge the grown segment too"
        );
        // Seven small ones wait; eight of one level merge; levels span 8x.
        assert!(ours.compute_merge_candidates(&grown[..9]).is_empty());
        let level = metas(&[600, 500, 450, 400, 300, 200, 100, 80, 3]);
        let candidates = ours.compute_merge_candidates(&level);
        assert_eq!(candidates.len(), 1);
        assert_eq!(
            candidates[0].0.len(),
            8,
            "the 3-document segment is not in their level"
        );
    }

    fn keys(hits: &[(u64, f32)]) -> Vec<u64> {
        hits.iter().map(|h| h.0).collect()
    }

    fn all(_: u64) -> bool {
        true
    }

    fn sample() -> KeywordIndex {
        let idx = KeywordIndex::open_in_ram().unwrap();
        idx.add(1, "a", "上周完成了数据库迁移，没有停机").unwrap();
        idx.add(
            2,
            "a",
            "The payment API is rate limited to 60 calls per minute",
        )
        .unwrap();
        idx.add(
            3,
            "a",
            "Customer complained about order ORD-88231 arriving late",
        )
        .unwrap();
        idx.add(4, "b", "数据库迁移 in namespace b, also mentions payment")
            .unwrap();
        idx.add(5, "a", "用户喜欢顺丰快递").unwrap();
        idx.commit().unwrap();
        idx
    }

    #[test]
    fn chinese_query_finds_chinese_doc() {
        let idx = sample();
        assert_eq!(
            keys(&idx.search("a", "数据库迁移", 10, &all).unwrap()),
            vec![1]
        );
        assert_eq!(keys(&idx.search("a", "顺丰", 10, &all).unwrap()), vec![5]);
    }

    #[test]
    fn english_matches_case_insensitively() {
        let idx = sample();
        assert_eq!(
            keys(&idx.search("a", "PAYMENT api", 10, &all).unwrap()),
            vec![2]
        );
        // Stemmed: "limits" finds "limited"; a word that only shares letters does not.
        assert!(!idx.search("a", "limits", 10, &all).unwrap().is_empty());
        assert!(idx.search("a", "limousine", 10, &all).unwrap().is_empty());
    }

    #[test]
    fn identifiers_match_whole_and_numeric_part() {
        let idx = sample();
        assert_eq!(
            keys(&idx.search("a", "ORD-88231", 10, &all).unwrap()),
            vec![3]
        );
        assert_eq!(keys(&idx.search("a", "88231", 10, &all).unwrap()), vec![3]);
        assert_eq!(
            keys(&idx.search("a", "where is ord-88231?", 10, &all).unwrap())[0],
            3
        );
    }

    #[test]
    fn namespaces_are_isolated() {
        let idx = sample();
        assert_eq!(
            keys(&idx.search("b", "数据库迁移", 10, &all).unwrap()),
            vec![4]
        );
        assert_eq!(
            keys(&idx.search("b", "payment", 10, &all).unwrap()),
            vec![4]
        );
        assert!(idx.search("c", "payment", 10, &all).unwrap().is_empty());
    }

    #[test]
    fn more_matching_terms_rank_higher_and_accept_filters() {
        let idx = KeywordIndex::open_in_ram().unwrap();
        for key in 0..50 {
            idx.add(key, "n", &format!("deploy log entry {key}"))
                .unwrap();
        }
        idx.add(100, "n", "deploy rollback failed").unwrap();
        idx.commit().unwrap();
        let hits = idx.search("n", "deploy rollback", 3, &all).unwrap();
        assert_eq!(hits[0].0, 100);
        assert!(hits[0].1 > hits[1].1);
        // Accept rejects most rows: over-fetching still fills k.
        let hits = idx
            .search("n", "deploy", 5, &|k| (40..100).contains(&k))
            .unwrap();
        assert_eq!(hits.len(), 5);
        assert!(hits.iter().all(|h| (40..100).contains(&h.0)));
    }

    #[test]
    fn syntax_like_queries_do_not_error() {
        let idx = sample();
        assert!(idx.search("a", "\"foo AND (", 5, &all).unwrap().is_empty());
        assert!(idx.search("a", "  ，。！ ", 5, &all).unwrap().is_empty());
        assert_eq!(
            keys(&idx.search("a", "payment AND (", 5, &all).unwrap()),
            vec![2]
        );
    }

    #[test]
    fn delete_and_clear() {
        let idx = sample();
        idx.delete(3).unwrap();
        idx.commit().unwrap();
        assert!(idx.search("a", "88231", 10, &all).unwrap().is_empty());
        assert_eq!(idx.num_docs(), 4);
        idx.clear().unwrap();
        idx.add(9, "a", "fresh doc").unwrap();
        idx.commit_with_watermark(42).unwrap();
        assert_eq!(idx.num_docs(), 1);
        assert_eq!(idx.watermark(), Some(42));
    }

    /// Queued operations reach the writer in the order they were made: a replace (delete, then
    /// add) keeps only the new text, a clear drops what came before it but not what came after,
    /// and a queue long enough to be handed over before the commit keeps that order too.
    #[test]
    fn queued_operations_apply_in_order() {
        let idx = KeywordIndex::open_in_ram().unwrap();
        idx.add(1, "a", "old wording").unwrap();
        idx.commit().unwrap();
        idx.delete(1).unwrap();
        idx.add(1, "a", "new wording").unwrap();
        idx.add(2, "a", "another doc").unwrap();
        assert_eq!(
            idx.num_docs(),
            1,
            "nothing queued is visible before the commit"
        );
        idx.commit().unwrap();
        assert_eq!(
            keys(&idx.search("a", "wording", 10, &all).unwrap()),
            vec![1]
        );
        assert!(idx.search("a", "old", 10, &all).unwrap().is_empty());
        idx.add(3, "a", "dropped by the clear").unwrap();
        idx.commit().unwrap();
        // (tantivy's clear drops segments, not documents still being indexed: the store clears
        // only right after opening, with nothing queued.)
        idx.clear().unwrap();
        for key in 10..10 + 2 * PENDING_APPLY_AT as u64 {
            idx.add(key, "a", "after the clear").unwrap();
        }
        idx.delete(10).unwrap();
        idx.commit().unwrap();
        assert_eq!(idx.num_docs(), 2 * PENDING_APPLY_AT as u64 - 1);
        assert!(idx.search("a", "dropped", 10, &all).unwrap().is_empty());
        assert!(idx.search("a", "another", 10, &all).unwrap().is_empty());
        let hits = idx.search("a", "after clear", 3000, &all).unwrap();
        assert!(
            !keys(&hits).contains(&10),
            "the delete queued after the adds applies to them"
        );
    }

    /// While a commit holds the writer, `add` and `delete` queue and return at once.
    #[test]
    fn writes_do_not_wait_for_a_running_commit() {
        let idx = std::sync::Arc::new(KeywordIndex::open_in_ram().unwrap());
        let busy = idx.writer().unwrap(); // as a commit would hold it
        let (done, finished) = std::sync::mpsc::channel();
        let writer_side = std::sync::Arc::clone(&idx);
        let handle = std::thread::spawn(move || {
            for key in 0..3 {
                writer_side.add(key, "a", "queued while busy").unwrap();
            }
            writer_side.delete(0).unwrap();
            done.send(()).unwrap();
        });
        let returned = finished.recv_timeout(std::time::Duration::from_secs(10));
        drop(busy);
        handle.join().unwrap();
        assert!(returned.is_ok(), "add waited for the writer");
        idx.commit().unwrap();
        assert_eq!(
            keys(&idx.search("a", "queued", 10, &all).unwrap()),
            vec![1, 2]
        );
    }

    #[test]
    fn a_second_opener_is_told_the_index_is_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let first = KeywordIndex::open_or_create(dir.path()).unwrap();
        let err = KeywordIndex::open_or_create(dir.path()).unwrap_err();
        assert!(matches!(err, KeywordError::InUse), "{err}");
        assert!(
            err.to_string().contains("in use by another process"),
            "{err}"
        );
        drop(first);
        KeywordIndex::open_or_create(dir.path()).unwrap();
    }

    #[test]
    fn reopen_from_disk_keeps_docs_and_watermark() {
        let dir = tempfile::tempdir().unwrap();
        {
            let idx = KeywordIndex::open_or_create(dir.path()).unwrap();
            assert_eq!((idx.watermark(), idx.stamp()), (None, None));
            idx.set_stamp("db=one tokenizer=1");
            idx.add(7, "a", "上周完成了数据库迁移").unwrap();
            idx.commit_with_watermark(3).unwrap();
            assert_eq!(idx.stamp().as_deref(), Some("db=one tokenizer=1"));
            idx.add(8, "a", "second doc").unwrap();
            idx.commit().unwrap();
        }
        let idx = KeywordIndex::open_or_create(dir.path()).unwrap();
        assert_eq!(idx.num_docs(), 2);
        assert_eq!(idx.watermark(), Some(3));
        assert_eq!(idx.stamp().as_deref(), Some("db=one tokenizer=1"));
        assert_eq!(
            keys(&idx.search("a", "数据库迁移", 10, &all).unwrap()),
            vec![7]
        );
    }

    #[test]
    fn ties_at_the_cut_do_not_depend_on_segment_layout() {
        // 60 documents with identical text tie on BM25; which of them make the top 5 must not
        // depend on how they were committed (one segment vs many).
        let one = KeywordIndex::open_in_ram().unwrap();
        let many = KeywordIndex::open_in_ram().unwrap();
        for key in (1..=60u64).rev() {
            one.add(key, "a", "the deploy was rolled back").unwrap();
            many.add(key, "a", "the deploy was rolled back").unwrap();
            if key % 7 == 0 {
                many.commit().unwrap();
            }
        }
        one.commit().unwrap();
        many.commit().unwrap();
        let a = one.search("a", "deploy rolled back", 5, &all).unwrap();
        let b = many.search("a", "deploy rolled back", 5, &all).unwrap();
        assert_eq!(keys(&a), vec![1, 2, 3, 4, 5]);
        assert_eq!(keys(&a), keys(&b));
    }
}
