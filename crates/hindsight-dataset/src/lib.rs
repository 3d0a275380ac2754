//! Evaluation datasets for hindsight: the on-disk format, the shipped bilingual generator, and
//! importers for public benchmarks.
//!
//! A dataset directory holds `memories.jsonl`, `queries.jsonl`, `qrels.tsv` and an optional
//! `dataset.toml`; `datasets/FORMAT.md` documents every field and default. In memory it is a
//! [`Dataset`]: wire records ([`MemoryRecord`], [`QueryRecord`]) with their defaults resolved, graded
//! [`Qrels`], the [`DatasetMeta`] from `dataset.toml`, and the [`LoadIssue`]s (file + line) of lines
//! that were skipped. [`MemoryRecord::to_new_memory`] hands a record to the write pipeline.
//!
//! - [`load_dataset`] reads a directory; a bad line is reported and skipped, never fatal.
//! - [`write_dataset`] writes one deterministically (stable order, sorted maps).
//! - [`generate`] builds the bilingual (Chinese + English) agent-memory query log shipped in
//!   `datasets/retrieval/agent-memory-bilingual/`: same seed, byte-identical output.
//! - [`generate_chat`] builds `conversations-bilingual`: multi-session chat logs (English and
//!   Chinese) with single-hop, temporal, multi-hop and updated-fact questions; same seed, same data.
//! - [`import_beir`] and [`import_locomo`] convert public benchmarks into this format, and
//!   [`import_memorybank`] the MemoryBank chats, judged with the repository's qrels.

mod beir;
mod error;
mod format;
mod generate;
mod generate_chat;
mod load;
mod locomo;
mod memorybank;
mod write;

pub use beir::{BeirOptions, import_beir};
pub use error::DatasetError;
pub use format::{
    DEFAULT_IMPORTANCE, Dataset, DatasetMeta, LoadIssue, LoadSummary, MemoryRecord, Qrels,
    QueryRecord, default_created_at,
};
pub use generate::{SCENARIO_TAGS, generate};
pub use generate_chat::generate_chat;
pub use load::load_dataset;
pub use locomo::{ADVERSARIAL_CATEGORY, import_locomo, parse_locomo_time};
pub use memorybank::{import_memorybank, memorybank_namespace};
pub use write::write_dataset;
