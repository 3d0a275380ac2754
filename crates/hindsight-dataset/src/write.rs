//! Writing a dataset directory deterministically: records in `Dataset` order, qrels sorted by
//! query id then memory id, map keys sorted, `\n` line endings. The same `Dataset` always
//! produces byte-identical files.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::DatasetError;
use crate::format::Dataset;
use crate::load::{MEMORIES, META, QRELS, QUERIES};

/// Writes `memories.jsonl`, `queries.jsonl`, `qrels.tsv` and `dataset.toml` into `dir`
/// (created if missing; existing files are replaced).
pub fn write_dataset(dir: impl AsRef<Path>, dataset: &Dataset) -> Result<(), DatasetError> {
    write_dir(dir.as_ref(), dataset)
}

fn write_dir(dir: &Path, ds: &Dataset) -> Result<(), DatasetError> {
    std::fs::create_dir_all(dir).map_err(|e| DatasetError::io(dir, e))?;
    let mut memories = String::new();
    for m in &ds.memories {
        let line = serde_json::to_string(m).map_err(|e| {
            DatasetError::invalid(dir.join(MEMORIES), format!("memory {}: {e}", m.id))
        })?;
        memories.push_str(&line);
        memories.push('\n');
    }
    let mut queries = String::new();
    for q in &ds.queries {
        let line = serde_json::to_string(q).map_err(|e| {
            DatasetError::invalid(dir.join(QUERIES), format!("query {}: {e}", q.id))
        })?;
        queries.push_str(&line);
        queries.push('\n');
    }
    let mut qrels = String::new();
    for (qid, docs) in &ds.qrels {
        for (docid, rel) in docs {
            let _ = writeln!(qrels, "{qid}\t0\t{docid}\t{rel}");
        }
    }
    let meta = toml::to_string(&ds.meta)
        .map_err(|e| DatasetError::invalid(dir.join(META), e.to_string()))?;
    for (name, text) in [
        (MEMORIES, memories),
        (QUERIES, queries),
        (QRELS, qrels),
        (META, meta),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| DatasetError::io(path, e))?;
    }
    Ok(())
}
