//! A persistent, append-only vector cache keyed by the sha256 of the text.
//!
//! Replaying the same dataset (evaluation, the load harness) embeds the same texts again and
//! again; on this project's 2-core machine that is most of an evaluation's wall time. The cache
//! file holds records of `sha256(text) ++ dim x f32 (little-endian)`, one file per model and
//! dimension, so vectors of different spaces never mix. A torn last record (a crash mid-append)
//! is ignored on load and overwritten by the next append.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use hindsight_core::EmbeddingSpace;
use sha2::{Digest, Sha256};

use crate::{CacheStats, EmbedError, Embedder};

type Key = [u8; 32];

#[derive(Debug)]
struct State {
    map: HashMap<Key, Vec<f32>>,
    file: File,
}

/// Wraps an embedder with a vector cache on disk (see the module docs).
#[derive(Debug)]
pub struct DiskCachedEmbedder<E> {
    inner: E,
    path: PathBuf,
    state: Mutex<State>,
    hits: AtomicU64,
    misses: AtomicU64,
}

fn key(text: &str) -> Key {
    Sha256::digest(text.as_bytes()).into()
}

fn sanitize(model: &str) -> String {
    model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Bump when a change to the bf16 or int8 kernels changes their vectors (2: int8 added, layer
/// norm and softmax summed in lanes).
const LOSSY_KERNELS_REVISION: u32 = 2;

impl<E: Embedder> DiskCachedEmbedder<E> {
    /// Opens (or creates) the cache for `inner`'s space (and [`Embedder::variant`]) under `dir`.
    pub fn open(inner: E, dir: &Path) -> Result<Self, EmbedError> {
        let space = inner.space();
        fs::create_dir_all(dir)
            .map_err(|e| EmbedError::io(format!("creating {}", dir.display()), e))?;
        // Vectors of a variant (e.g. int8 arithmetic) get their own file, with the revision of
        // the lossy kernels in its name: their numbers change when those kernels do, which f32's
        // (held to the reference forward pass) do not.
        // bf16 products on AMX tiles sum in another order than `vdpbf16ps` (int8 sums are exact
        // on both), so those vectors get a file of their own too.
        let variant = inner.variant().map_or(String::new(), |v| {
            let tiles = if v == "bf16" && crate::amx::usable(crate::amx::TileOp::Bf16) {
                "-amx"
            } else {
                ""
            };
            format!("-{}{tiles}-r{LOSSY_KERNELS_REVISION}", sanitize(&v))
        });
        let path = dir.join(format!(
            "{}-{}{variant}.vecs",
            sanitize(&space.model),
            space.dim
        ));
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| EmbedError::io(format!("opening {}", path.display()), e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| EmbedError::io(format!("reading {}", path.display()), e))?;
        let record = 32 + 4 * space.dim;
        let whole = bytes.len() / record * record;
        if whole != bytes.len() {
            // Drop a torn tail so the next append starts on a record boundary.
            file.set_len(whole as u64)
                .map_err(|e| EmbedError::io(format!("truncating {}", path.display()), e))?;
            file.seek(SeekFrom::End(0))
                .map_err(|e| EmbedError::io(format!("seeking {}", path.display()), e))?;
        }
        let mut map = HashMap::with_capacity(whole / record);
        for rec in bytes[..whole].chunks_exact(record) {
            let mut k = [0u8; 32];
            k.copy_from_slice(&rec[..32]);
            let v = rec[32..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            map.insert(k, v);
        }
        Ok(DiskCachedEmbedder {
            inner,
            path,
            state: Mutex::new(State { map, file }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn stats(&self) -> CacheStats {
        let len = self.state.lock().map(|s| s.map.len()).unwrap_or(0);
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            len,
            capacity: usize::MAX,
        }
    }
}

impl<E: Embedder> Embedder for DiskCachedEmbedder<E> {
    fn space(&self) -> EmbeddingSpace {
        self.inner.space()
    }

    fn is_test_only(&self) -> bool {
        self.inner.is_test_only()
    }
    fn variant(&self) -> Option<String> {
        self.inner.variant()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let keys: Vec<Key> = texts.iter().map(|t| key(t)).collect();
        let mut out: Vec<Option<Vec<f32>>> = {
            let state = self
                .state
                .lock()
                .map_err(|_| EmbedError::Inference("disk cache lock poisoned".into()))?;
            keys.iter().map(|k| state.map.get(k).cloned()).collect()
        };
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        self.hits
            .fetch_add((texts.len() - missing.len()) as u64, Ordering::Relaxed);
        self.misses
            .fetch_add(missing.len() as u64, Ordering::Relaxed);
        if !missing.is_empty() {
            let batch: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let vectors = self.inner.embed(&batch)?;
            let mut state = self
                .state
                .lock()
                .map_err(|_| EmbedError::Inference("disk cache lock poisoned".into()))?;
            let mut buf = Vec::with_capacity(vectors.len() * (32 + 4 * self.inner.space().dim));
            for (&i, v) in missing.iter().zip(vectors) {
                buf.extend_from_slice(&keys[i]);
                for x in &v {
                    buf.extend_from_slice(&x.to_le_bytes());
                }
                state.map.insert(keys[i], v.clone());
                out[i] = Some(v);
            }
            // A failed append only loses cache entries, never results.
            if let Err(e) = state.file.write_all(&buf).and_then(|()| state.file.flush()) {
                tracing::warn!(path = %self.path.display(), error = %e, "could not append to the embedding cache");
            }
        }
        out.into_iter()
            .map(|v| {
                v.ok_or_else(|| EmbedError::Inference("embedder returned too few vectors".into()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HashEmbedder;

    #[test]
    fn second_open_serves_from_disk_and_a_torn_tail_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let texts = ["alpha", "beta", "上周的数据库迁移"];
        let direct = HashEmbedder::new(16)
            .expect("dim")
            .embed(&texts)
            .expect("embed");
        let first = DiskCachedEmbedder::open(HashEmbedder::new(16).expect("dim"), dir.path())
            .expect("open");
        assert_eq!(first.embed(&texts).expect("embed"), direct);
        assert_eq!((first.stats().hits, first.stats().misses), (0, 3));
        assert_eq!(
            first.embed(&["beta", "gamma"]).expect("embed")[0],
            direct[1]
        );
        assert_eq!((first.stats().hits, first.stats().misses), (1, 4));
        let path = first.path().to_owned();
        drop(first);
        // simulate a crash mid-append
        let mut f = OpenOptions::new().append(true).open(&path).expect("open");
        f.write_all(&[7u8; 20]).expect("write");
        drop(f);
        let second = DiskCachedEmbedder::open(HashEmbedder::new(16).expect("dim"), dir.path())
            .expect("reopen");
        assert_eq!(second.embed(&texts).expect("embed"), direct);
        assert_eq!((second.stats().hits, second.stats().misses), (3, 0));
        assert_eq!(second.stats().len, 4);
        assert_eq!(fs::metadata(&path).expect("meta").len(), 4 * (32 + 4 * 16));
        // another dimension is another file
        let other =
            DiskCachedEmbedder::open(HashEmbedder::new(8).expect("dim"), dir.path()).expect("open");
        assert_eq!(other.stats().len, 0);
    }
}
