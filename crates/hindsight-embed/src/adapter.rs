//! Low-rank adapters (LoRA) for the encoder's dense layers, and the task head trained with them.
//!
//! An adapter changes each dense layer `W` (`[in x out]`) of every encoder layer to
//! `W + (alpha / rank) · A · B`, with `A` `[in x rank]` and `B` `[rank x out]`, and adds a linear
//! head over the L2-normalised mean-pooled output: `logit = head · pooled + head_bias`. The base
//! weights are not changed on disk; [`IntentModel`](crate::IntentModel) merges the deltas into a
//! second copy of the encoder at load time, so scoring costs one ordinary forward pass.
//!
//! The file format is JSON: the shapes, the head as numbers, and every `A`/`B` matrix as base64
//! of little-endian f32 (a rank-8 adapter for MiniLM-L6 is about 1.8 MB).

use std::path::Path;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::EmbedError;

/// Format tag written into every adapter file.
pub const ADAPTER_FORMAT: &str = "hindsight-lora-v1";

/// The six dense layers of a BERT layer an adapter changes, in file order.
pub const ADAPTED: [&str; 6] = [
    "query",
    "key",
    "value",
    "attention_output",
    "intermediate",
    "output",
];

/// One low-rank delta: `a` is `[n_in x rank]`, `b` is `[rank x n_out]`, both row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct LowRank {
    pub n_in: usize,
    pub n_out: usize,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
}

impl LowRank {
    /// `scale · a · b` as a row-major `[n_in x n_out]` matrix.
    pub fn delta(&self, rank: usize, scale: f32) -> Vec<f32> {
        let mut out = vec![0.0f32; self.n_in * self.n_out];
        for i in 0..self.n_in {
            let row = &mut out[i * self.n_out..(i + 1) * self.n_out];
            for r in 0..rank {
                let s = scale * self.a[i * rank + r];
                if s == 0.0 {
                    continue;
                }
                for (o, b) in row
                    .iter_mut()
                    .zip(&self.b[r * self.n_out..(r + 1) * self.n_out])
                {
                    *o += s * b;
                }
            }
        }
        out
    }
}

/// A LoRA adapter plus its binary head, for one base model.
#[derive(Clone, Debug, PartialEq)]
pub struct LoraAdapter {
    /// Model id of the base encoder (e.g. `all-MiniLM-L6-v2`).
    pub base_model: String,
    pub rank: usize,
    pub alpha: f32,
    /// Longest input in tokens the adapter was trained with (scoring truncates the same way).
    pub max_tokens: usize,
    /// Per encoder layer, the deltas in [`ADAPTED`] order.
    pub layers: Vec<[LowRank; 6]>,
    /// Head weights over the L2-normalised mean-pooled vector.
    pub head: Vec<f32>,
    pub head_bias: f32,
    /// Free-form record of how it was trained (data, options, seed, losses).
    pub training: serde_json::Value,
}

impl LoraAdapter {
    /// `alpha / rank`, the factor on every `A · B`.
    pub fn scale(&self) -> f32 {
        self.alpha / self.rank as f32
    }

    /// The delta for encoder layer `layer`, dense layer `which` (an [`ADAPTED`] name), if any.
    pub(crate) fn delta(&self, layer: usize, which: &str) -> Option<Vec<f32>> {
        let idx = ADAPTED.iter().position(|n| *n == which)?;
        let lr = &self.layers.get(layer)?[idx];
        Some(lr.delta(self.rank, self.scale()))
    }

    pub fn read(path: &Path) -> Result<LoraAdapter, EmbedError> {
        let text = std::fs::read_to_string(path).map_err(|e| EmbedError::Adapter {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::from_json(&text).map_err(|message| EmbedError::Adapter {
            path: path.to_path_buf(),
            message,
        })
    }

    pub fn write(&self, path: &Path) -> Result<(), EmbedError> {
        let text = serde_json::to_string(&self.to_file()).map_err(|e| EmbedError::Adapter {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        std::fs::write(path, text + "\n").map_err(|e| EmbedError::Adapter {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }

    fn to_file(&self) -> AdapterFile {
        let b64 = |v: &[f32]| {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            base64::engine::general_purpose::STANDARD.encode(bytes)
        };
        AdapterFile {
            format: ADAPTER_FORMAT.to_string(),
            base_model: self.base_model.clone(),
            rank: self.rank,
            alpha: self.alpha,
            max_tokens: self.max_tokens,
            layers: self
                .layers
                .iter()
                .map(|l| {
                    l.iter()
                        .map(|lr| FileLowRank {
                            n_in: lr.n_in,
                            n_out: lr.n_out,
                            a: b64(&lr.a),
                            b: b64(&lr.b),
                        })
                        .collect()
                })
                .collect(),
            head: self.head.clone(),
            head_bias: self.head_bias,
            training: self.training.clone(),
        }
    }

    /// Parses and checks an adapter file's text.
    pub fn from_json(text: &str) -> Result<LoraAdapter, String> {
        let f: AdapterFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if f.format != ADAPTER_FORMAT {
            return Err(format!("format {:?} is not {ADAPTER_FORMAT:?}", f.format));
        }
        if f.rank == 0 || !f.alpha.is_finite() || f.max_tokens < 2 {
            return Err("rank, alpha or max_tokens out of range".into());
        }
        let floats = |s: &str, n: usize, what: &str| -> Result<Vec<f32>, String> {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| format!("{what}: {e}"))?;
            if bytes.len() != n * 4 {
                return Err(format!("{what}: {} bytes, expected {}", bytes.len(), n * 4));
            }
            let v: Vec<f32> = bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            if v.iter().any(|x| !x.is_finite()) {
                return Err(format!("{what}: not finite"));
            }
            Ok(v)
        };
        let mut layers = Vec::with_capacity(f.layers.len());
        for (i, l) in f.layers.iter().enumerate() {
            if l.len() != ADAPTED.len() {
                return Err(format!("layer {i}: {} deltas, expected 6", l.len()));
            }
            let mut parts = Vec::with_capacity(6);
            for (lr, name) in l.iter().zip(ADAPTED) {
                let what = format!("layer {i} {name}");
                parts.push(LowRank {
                    n_in: lr.n_in,
                    n_out: lr.n_out,
                    a: floats(&lr.a, lr.n_in * f.rank, &what)?,
                    b: floats(&lr.b, f.rank * lr.n_out, &what)?,
                });
            }
            let arr: [LowRank; 6] = parts
                .try_into()
                .map_err(|_| format!("layer {i}: expected 6 deltas"))?;
            layers.push(arr);
        }
        if f.head.iter().any(|x| !x.is_finite()) || !f.head_bias.is_finite() {
            return Err("head is not finite".into());
        }
        Ok(LoraAdapter {
            base_model: f.base_model,
            rank: f.rank,
            alpha: f.alpha,
            max_tokens: f.max_tokens,
            layers,
            head: f.head,
            head_bias: f.head_bias,
            training: f.training,
        })
    }

    /// Checks the adapter against an encoder's shapes.
    pub(crate) fn check_shapes(
        &self,
        layers: usize,
        hidden: usize,
        intermediate: usize,
    ) -> Result<(), String> {
        if self.layers.len() != layers {
            return Err(format!(
                "adapter has {} layers, the encoder {layers}",
                self.layers.len()
            ));
        }
        if self.head.len() != hidden {
            return Err(format!(
                "adapter head has {} weights, the encoder's hidden size is {hidden}",
                self.head.len()
            ));
        }
        let shapes = [
            (hidden, hidden),
            (hidden, hidden),
            (hidden, hidden),
            (hidden, hidden),
            (hidden, intermediate),
            (intermediate, hidden),
        ];
        for (i, l) in self.layers.iter().enumerate() {
            for ((lr, name), (n_in, n_out)) in l.iter().zip(ADAPTED).zip(shapes) {
                if (lr.n_in, lr.n_out) != (n_in, n_out) {
                    return Err(format!(
                        "layer {i} {name}: [{} x {}], expected [{n_in} x {n_out}]",
                        lr.n_in, lr.n_out
                    ));
                }
            }
        }
        Ok(())
    }
}

#[derive(Serialize, Deserialize)]
struct FileLowRank {
    n_in: usize,
    n_out: usize,
    a: String,
    b: String,
}

#[derive(Serialize, Deserialize)]
struct AdapterFile {
    format: String,
    base_model: String,
    rank: usize,
    alpha: f32,
    max_tokens: usize,
    layers: Vec<Vec<FileLowRank>>,
    head: Vec<f32>,
    head_bias: f32,
    #[serde(default)]
    training: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny(rank: usize) -> LoraAdapter {
        let lr = |n_in: usize, n_out: usize, k: f32| LowRank {
            n_in,
            n_out,
            a: (0..n_in * rank).map(|i| k * (i as f32 + 1.0)).collect(),
            b: (0..rank * n_out).map(|i| 0.5 - i as f32 * 0.1).collect(),
        };
        LoraAdapter {
            base_model: "tiny".into(),
            rank,
            alpha: 2.0 * rank as f32,
            max_tokens: 16,
            layers: vec![[
                lr(4, 4, 0.1),
                lr(4, 4, 0.2),
                lr(4, 4, 0.3),
                lr(4, 4, 0.4),
                lr(4, 8, 0.5),
                lr(8, 4, 0.6),
            ]],
            head: vec![0.25, -1.0, 3.5, 1e-7],
            head_bias: -0.75,
            training: serde_json::json!({"seed": 7}),
        }
    }

    #[test]
    fn file_round_trip_is_exact() {
        let a = tiny(2);
        let text = serde_json::to_string(&a.to_file()).unwrap();
        assert_eq!(LoraAdapter::from_json(&text).unwrap(), a);
        a.check_shapes(1, 4, 8).unwrap();
        assert!(a.check_shapes(1, 4, 6).is_err());
        assert!(a.check_shapes(2, 4, 8).is_err());
    }

    #[test]
    fn truncated_or_foreign_files_are_refused() {
        let a = tiny(2);
        let mut f = a.to_file();
        f.layers[0][1].b.truncate(4);
        let err = LoraAdapter::from_json(&serde_json::to_string(&f).unwrap()).unwrap_err();
        assert!(err.contains("layer 0 key"), "{err}");
        let mut f = a.to_file();
        f.format = "other".into();
        assert!(LoraAdapter::from_json(&serde_json::to_string(&f).unwrap()).is_err());
        assert!(LoraAdapter::from_json("{").is_err());
    }

    #[test]
    fn delta_is_scaled_a_times_b() {
        let a = tiny(2);
        let lr = &a.layers[0][4];
        let d = lr.delta(2, a.scale());
        for i in 0..lr.n_in {
            for o in 0..lr.n_out {
                let want: f32 = (0..2)
                    .map(|r| lr.a[i * 2 + r] * lr.b[r * lr.n_out + o])
                    .sum();
                assert!((d[i * lr.n_out + o] - a.scale() * want).abs() < 1e-6);
            }
        }
    }
}
