//! Qdrant backend for hindsight: a [`hindsight_core::Store`] whose only source of truth is a
//! Qdrant server, reached over gRPC with `qdrant-client`.
//!
//! [`QdrantStore`] (in `store`) implements the trait; [`QdrantConfig`] says where the server is
//! (`qdrant://HOST:PORT[?prefix=NAME&api_key=KEY]`, [`QdrantConfig::from_url`]). The private
//! modules are the pieces a reader can check without a server, each with its unit tests:
//! `payload` (memory ↔ point payload), `conditions` ([`hindsight_core::Filter`] /
//! [`hindsight_core::StructuredQuery`] → Qdrant filter), `sparse` (BM25 term weights), `ids`
//! (memory id → point id), `locks` (per-id serialisation) and `config` (URL, collection names).
//!
//! # Design
//!
//! **One collection per embedding space, shared by all namespaces.** The collection is named
//! `{prefix}_{model}_{dim}_{hash}` (e.g. `hindsight_all-minilm-l6-v2_384_1c9d0e2a`) and also records
//! the model in its metadata. Opening a store whose prefix already holds a collection of another
//! space fails with `EmbeddingMismatch` naming `hindsight reembed`, so vectors of two models are
//! never mixed. Inside, namespaces are a payload partition rather than a collection each:
//! agent memory has many small namespaces (one per agent or user), and a Qdrant collection carries
//! fixed costs (segments, WAL, optimizer threads, its own HNSW) that thousands of tiny collections
//! multiply. The namespace field has a keyword index with `is_tenant: true`, which makes Qdrant
//! store each tenant's points together, and the collection uses `m: 0, payload_m: 16`, so HNSW
//! graphs are built per tenant rather than globally. Isolation does not rely on callers: every
//! request this crate builds carries the namespace condition (`conditions::namespace`), and every
//! returned memory is checked against the requested namespace again before it leaves the store. The
//! store-wide id uniqueness of the `Store` contract also comes naturally: the point id is a hash
//! of the memory id alone.
//!
//! **Payload indexes** on `kind`, `status`, `outcome`, `task_type`, `tags` (exact, for
//! [`hindsight_core::Filter`]), lowercased `tags_lc`, entity pairs `ent` / `ent_lc`, lowercased
//! entity values `ent_val_lc` (for the structured path, which ignores ASCII case) and `created_us`
//! (integer microseconds: range filters and newest-first ordering). They have HNSW links disabled
//! (`enable_hnsw: false`); only the tenant field gets per-value graphs. Filters are translated into
//! Qdrant conditions as a pre-filter and every hit is re-checked with
//! [`hindsight_core::Filter::matches`]; the structured path ranks with
//! [`hindsight_core::StructuredQuery::score`]. So the reference semantics hold exactly, and the
//! conformance suite checks them.
//!
//! **Keyword path: Qdrant sparse vectors with the IDF modifier, not a tantivy sidecar.** Each point
//! carries a `bm25` sparse vector of BM25 term-frequency weights from the same jieba/English
//! tokenizer as the embedded backend (`hindsight_text::tokenize`), and Qdrant applies the IDF at
//! query time. A sidecar would give byte-identical BM25 scores, but it would be a second copy of the
//! data in each process. It would have to be rebuilt by scrolling the collection on every start,
//! and it would silently miss writes made by other processes: Qdrant has no atomic counter that
//! could serve as a watermark. That breaks what a server backend is for: several stateless
//! processes over one database. Sparse vectors keep Qdrant the single source of truth, filter with
//! the same payload conditions, and are written in the same upsert as the dense vector, so a
//! memory can never be searchable by one path and missing from the other. The cost: the document
//! length normalisation uses a fixed average length (`sparse::AVG_DOC_LEN`), and IDF is computed
//! over the whole collection, not per namespace. Keyword scores therefore differ slightly from
//! tantivy's BM25. The evaluation harness measures that difference (`hindsight-lab eval --backend
//! qdrant://…`).
//!
//! **Concurrency and what `apply` makes atomic.** Qdrant has no multi-point transactions and no
//! atomic increment. `record_access`, `add_usefulness` and `apply` are read-modify-write cycles
//! serialised per id by an in-process lock table (`locks`). `apply` takes the locks of every id
//! its batch names, reads every memory it changes (with its vector), checks the whole batch
//! against them (ids absent, targets present in the namespace, every expected status), and only
//! then writes: the inserts first, with `update_mode: insert_only` (a racing process cannot be
//! overwritten: its id makes the insert fail), then every changed memory as one whole point. A
//! write that fails takes back the ones before it: the inserted points are deleted and the
//! changed ones written back as they were read. So a batch is all or nothing against its own
//! checks, against a racing insert of one of its ids, and against a write that fails with the
//! server still reachable. It is not all or nothing against the process dying between its
//! writes or the undo failing too (the error then says the batch is partially stored), and
//! readers may see the inserts before the status changes for the length of the call. Its
//! compare-and-set holds against this process (the locks, and the engine's namespace lock), not
//! against another process writing between the read and the write: two *processes* changing
//! the same memory can lose an update (last write wins), and a counter update, which writes the
//! whole payload back, can undo another process's status change. Run one writer process per
//! collection.
//!
//! **Known costs.** `scan` collects the namespace's ids to page in id order (Qdrant orders scrolls
//! by point id and has no range queries on keywords), so a full scan is quadratic in pages. It is
//! meant for exports and re-embedding, not hot paths.

mod conditions;
mod config;
mod ids;
mod locks;
mod payload;
mod sparse;
mod store;
mod version;

pub use config::{DEFAULT_PREFIX, QdrantConfig, collection_name};
pub use ids::point_id;
pub use store::QdrantStore;
