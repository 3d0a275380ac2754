//! A BERT encoder over packed token rows, for sentence embeddings on the CPU.
//!
//! The texts of a forward pass are not padded to a common length: their tokens are stacked into
//! one `[tokens x hidden]` matrix, so every dense layer is one matrix product over real tokens
//! only, and attention runs per text (and head) on its own rows. With no padding there is no
//! attention mask, and the mean pooling averages exactly the text's own rows. Weights are read
//! with candle (`model.safetensors`, any float dtype), transposed (`[in x out]`), with the query,
//! key and value projections fused into one `[hidden x 3·hidden]` matrix, and kept as f32 in the
//! column-panel layout of `kernels::PackedMatrix`.

use std::collections::HashMap;
use std::sync::OnceLock;

use candle_core::{DType, Tensor};
use hindsight_core::l2_normalize;
use rayon::prelude::*;
use serde::Deserialize;

use crate::kernels::{
    MatRef, PackedBf16, PackedI8, PackedMatrix, Panels, Threads, gelu, layer_norm, matmul,
    matmul_packed, quantize_rows, softmax,
};
use crate::minilm::Precision;

/// The `config.json` fields the encoder needs (Hugging Face BERT names).
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default)]
    pub position_embedding_type: Option<String>,
}

fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}
fn default_act() -> String {
    "gelu".into()
}

impl BertConfig {
    /// Rejects configurations this encoder would compute wrongly.
    pub fn validate(&self) -> Result<(), String> {
        if self.hidden_act != "gelu" {
            return Err(format!(
                "hidden_act {:?} is not supported (only the exact \"gelu\")",
                self.hidden_act
            ));
        }
        if let Some(kind) = &self.position_embedding_type
            && kind != "absolute"
        {
            return Err(format!(
                "position_embedding_type {kind:?} is not supported (only \"absolute\")"
            ));
        }
        if self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads)
        {
            return Err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if self.type_vocab_size == 0 || self.max_position_embeddings == 0 {
            return Err("type_vocab_size and max_position_embeddings must be positive".into());
        }
        Ok(())
    }
}

/// A PyTorch `Linear` as read: `w` is `[n_in x n_out]` row-major (already transposed).
struct Linear {
    w: Vec<f32>,
    b: Vec<f32>,
    n_in: usize,
    n_out: usize,
}

/// A dense layer, `y = x · w + b`, with `w` packed for [`matmul_packed`] in f32, bf16 and int8.
struct Dense {
    w: PackedMatrix,
    /// `w` in bf16, packed on the first bf16 pass (f32-only processes never pay for it).
    bf: OnceLock<PackedBf16>,
    /// `w` in int8, packed on the first int8 pass.
    q8: OnceLock<PackedI8>,
    b: Vec<f32>,
    n_out: usize,
}

impl From<Linear> for Dense {
    fn from(l: Linear) -> Dense {
        Dense {
            w: PackedMatrix::new(&l.w, l.n_in, l.n_out),
            bf: OnceLock::new(),
            q8: OnceLock::new(),
            b: l.b,
            n_out: l.n_out,
        }
    }
}

impl Dense {
    /// `w` in bf16, packed on first use.
    fn bf16(&self) -> &PackedBf16 {
        self.bf.get_or_init(|| PackedBf16::from_f32(&self.w))
    }

    /// `w` in int8, packed on first use.
    fn int8(&self) -> &PackedI8 {
        self.q8.get_or_init(|| PackedI8::from_f32(&self.w))
    }

    /// `x · w + b (+ residual)` for `rows` input rows.
    fn apply(
        &self,
        x: &[f32],
        rows: usize,
        residual: Option<&[f32]>,
        precision: Precision,
        threads: Threads,
    ) -> Vec<f32> {
        let mut out = Vec::with_capacity(rows * self.n_out);
        match residual {
            Some(res) => {
                for row in res.chunks_exact(self.n_out).take(rows) {
                    out.extend(row.iter().zip(&self.b).map(|(r, b)| r + b));
                }
            }
            None => {
                for _ in 0..rows {
                    out.extend_from_slice(&self.b);
                }
            }
        }
        match precision {
            Precision::F32 => matmul_packed(&mut out, rows, x, &self.w, threads),
            Precision::Bf16 => matmul_packed(&mut out, rows, x, self.bf16(), threads),
            Precision::Int8 => {
                let q8 = self.int8();
                let (codes, row_scale) = quantize_rows(&x[..rows * self.w.k()], self.w.k());
                // Zeroed by writing, not `vec!` (calloc): fresh zero-page mappings would fault
                // again, with a TLB flush across threads, when the pool's threads write them.
                let mut acc = Vec::with_capacity(rows * self.n_out);
                acc.resize(rows * self.n_out, 0.0f32);
                matmul_packed(&mut acc, rows, &codes, q8, threads);
                q8.dequantize(&mut out, &acc, &row_scale);
            }
        }
        out
    }
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

struct Layer {
    qkv: Dense,
    attn_out: Dense,
    attn_norm: Norm,
    intermediate: Dense,
    output: Dense,
    output_norm: Norm,
}

/// BERT weights and the packed forward pass.
pub(crate) struct BertEncoder {
    hidden: usize,
    heads: usize,
    eps: f32,
    vocab: usize,
    max_positions: usize,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type0: Vec<f32>,
    emb_norm: Norm,
    layers: Vec<Layer>,
}

/// Passes of up to this many token rows run on the calling thread (see `BertEncoder::embed`).
const SERIAL_ROWS: usize = 64;

/// `f(i, chunk)` for the `i`-th chunk of `len` values of `x`, on the pool or the calling thread.
fn for_each_row(
    threads: Threads,
    x: &mut [f32],
    len: usize,
    f: impl Fn(usize, &mut [f32]) + Send + Sync,
) {
    match threads {
        Threads::Pool => x.par_chunks_mut(len).enumerate().for_each(|(i, c)| f(i, c)),
        Threads::Caller => x.chunks_mut(len).enumerate().for_each(|(i, c)| f(i, c)),
    }
}

/// Named tensors from a safetensors file, read as `f32`; names may carry a `bert.` prefix.
struct Weights(HashMap<String, Tensor>);

impl Weights {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let t = self
            .0
            .get(name)
            .or_else(|| self.0.get(&format!("bert.{name}")))
            .ok_or_else(|| format!("tensor {name} is missing"))?;
        if t.dims() != shape {
            return Err(format!(
                "tensor {name} has shape {:?}, expected {shape:?}",
                t.dims()
            ));
        }
        t.to_dtype(DType::F32)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| format!("tensor {name}: {e}"))
    }

    /// A PyTorch `Linear` (`weight` is `[out x in]`), transposed to `[in x out]`.
    fn linear(&self, prefix: &str, n_in: usize, n_out: usize) -> Result<Linear, String> {
        let w = self.get(&format!("{prefix}.weight"), &[n_out, n_in])?;
        let b = self.get(&format!("{prefix}.bias"), &[n_out])?;
        Ok(Linear {
            w: transpose(&w, n_out, n_in),
            b,
            n_in,
            n_out,
        })
    }

    fn norm(&self, prefix: &str, n: usize) -> Result<Norm, String> {
        Ok(Norm {
            gamma: self.get(&format!("{prefix}.weight"), &[n])?,
            beta: self.get(&format!("{prefix}.bias"), &[n])?,
        })
    }
}

/// `[rows x cols]` row-major to `[cols x rows]` row-major.
fn transpose(m: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; m.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = m[r * cols + c];
        }
    }
    out
}

/// Columns of several `[n_in x n_i]` dense layers side by side: one `[n_in x sum n_i]` layer.
fn fuse_columns(parts: &[Linear]) -> Linear {
    let n_in = parts[0].n_in;
    let n_out: usize = parts.iter().map(|p| p.n_out).sum();
    let mut w = Vec::with_capacity(n_in * n_out);
    for i in 0..n_in {
        for p in parts {
            w.extend_from_slice(&p.w[i * p.n_out..(i + 1) * p.n_out]);
        }
    }
    let b = parts.iter().flat_map(|p| p.b.iter().copied()).collect();
    Linear { w, b, n_in, n_out }
}

impl BertEncoder {
    /// Reads the weights and packs the dense layers.
    pub fn load(
        config: &BertConfig,
        tensors: HashMap<String, Tensor>,
    ) -> Result<BertEncoder, String> {
        config.validate()?;
        let w = Weights(tensors);
        let (h, inter) = (config.hidden_size, config.intermediate_size);
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{i}");
            let dense = |name: &str, n_in: usize, n_out: usize| {
                w.linear(&format!("{p}.{name}"), n_in, n_out)
            };
            let q = dense("attention.self.query", h, h)?;
            let k = dense("attention.self.key", h, h)?;
            let v = dense("attention.self.value", h, h)?;
            layers.push(Layer {
                qkv: fuse_columns(&[q, k, v]).into(),
                attn_out: dense("attention.output.dense", h, h)?.into(),
                attn_norm: w.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                intermediate: dense("intermediate.dense", h, inter)?.into(),
                output: dense("output.dense", inter, h)?.into(),
                output_norm: w.norm(&format!("{p}.output.LayerNorm"), h)?,
            });
        }
        let types = w.get(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, h],
        )?;
        Ok(BertEncoder {
            hidden: h,
            heads: config.num_attention_heads,
            eps: config.layer_norm_eps as f32,
            vocab: config.vocab_size,
            max_positions: config.max_position_embeddings,
            word: w.get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?,
            position: w.get(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, h],
            )?,
            token_type0: types[..h].to_vec(),
            emb_norm: w.norm("embeddings.LayerNorm", h)?,
            layers,
        })
    }

    /// Packs the weights `precision` needs now (the bf16 and int8 copies are otherwise packed on
    /// first use).
    pub fn prepare(&self, precision: Precision) {
        for l in &self.layers {
            for d in [&l.qkv, &l.attn_out, &l.intermediate, &l.output] {
                match precision {
                    Precision::F32 => {}
                    Precision::Bf16 => {
                        d.bf16();
                    }
                    Precision::Int8 => {
                        d.int8();
                    }
                }
            }
        }
    }

    pub fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// Mean-pooled, L2-normalised sentence vectors of tokenised texts (with special tokens).
    pub fn embed(&self, seqs: &[&[u32]], precision: Precision) -> Result<Vec<Vec<f32>>, String> {
        let h = self.hidden;
        // (first row, length) of each text in the packed matrix.
        let mut spans = Vec::with_capacity(seqs.len());
        let mut rows = 0usize;
        for (i, s) in seqs.iter().enumerate() {
            if s.is_empty() || s.len() > self.max_positions {
                return Err(format!(
                    "text {i} has {} tokens; 1 to {} are supported",
                    s.len(),
                    self.max_positions
                ));
            }
            if let Some(bad) = s.iter().find(|&&id| id as usize >= self.vocab) {
                return Err(format!(
                    "text {i} has token id {bad} outside the vocabulary of {}",
                    self.vocab
                ));
            }
            spans.push((rows, s.len()));
            rows += s.len();
        }
        if rows == 0 {
            return Ok(Vec::new());
        }
        let tokens: Vec<(usize, usize)> = seqs
            .iter()
            .flat_map(|s| s.iter().enumerate().map(|(pos, &id)| (id as usize, pos)))
            .collect();

        // A pass of a few texts (a query or two) runs on the calling thread: handing each of its
        // ~50 steps to the pool costs more than the second core saves (on this project's 2-core
        // VM a thread wake-up is tens of µs; criterion `minilm_single_query*`).
        let threads = if rows <= SERIAL_ROWS {
            Threads::Caller
        } else {
            Threads::Pool
        };
        let mut x = vec![0.0f32; rows * h];
        for_each_row(threads, &mut x, h, |i, row| {
            let (id, pos) = tokens[i];
            let word = &self.word[id * h..(id + 1) * h];
            let position = &self.position[pos * h..(pos + 1) * h];
            for (((o, w), p), t) in row
                .iter_mut()
                .zip(word)
                .zip(position)
                .zip(&self.token_type0)
            {
                *o = w + p + t;
            }
            layer_norm(row, &self.emb_norm.gamma, &self.emb_norm.beta, self.eps);
        });

        for layer in &self.layers {
            let qkv = layer.qkv.apply(&x, rows, None, precision, threads);
            let context = self.attention(&qkv, &spans, rows, threads);
            let mut x1 = layer
                .attn_out
                .apply(&context, rows, Some(&x), precision, threads);
            self.normalize_rows(&mut x1, &layer.attn_norm, threads);
            let mut inner = layer
                .intermediate
                .apply(&x1, rows, None, precision, threads);
            for_each_row(
                threads,
                &mut inner,
                layer.intermediate.n_out * 16,
                |_, rows| gelu(rows),
            );
            let mut x2 = layer
                .output
                .apply(&inner, rows, Some(&x1), precision, threads);
            self.normalize_rows(&mut x2, &layer.output_norm, threads);
            x = x2;
        }

        Ok(spans
            .iter()
            .map(|&(start, len)| {
                let mut v = vec![0.0f32; h];
                for row in x[start * h..(start + len) * h].chunks_exact(h) {
                    for (a, b) in v.iter_mut().zip(row) {
                        *a += b;
                    }
                }
                let inv = 1.0 / len as f32;
                v.iter_mut().for_each(|a| *a *= inv);
                l2_normalize(&mut v);
                v
            })
            .collect())
    }

    fn normalize_rows(&self, x: &mut [f32], norm: &Norm, threads: Threads) {
        for_each_row(threads, x, self.hidden, |_, row| {
            layer_norm(row, &norm.gamma, &norm.beta, self.eps)
        });
    }

    /// Scaled dot-product attention of every text with itself, per head: `[rows x hidden]`.
    fn attention(
        &self,
        qkv: &[f32],
        spans: &[(usize, usize)],
        rows: usize,
        threads: Threads,
    ) -> Vec<f32> {
        let h = self.hidden;
        let d = h / self.heads;
        let stride = 3 * h;
        let scale = 1.0 / (d as f32).sqrt();
        let jobs: Vec<(usize, usize, usize)> = spans
            .iter()
            .flat_map(|&(start, len)| (0..self.heads).map(move |head| (start, len, head)))
            .collect();
        let job = |&(start, len, head): &(usize, usize, usize)| {
            let q = MatRef {
                data: qkv,
                offset: start * stride + head * d,
                row_stride: stride,
                col_stride: 1,
            };
            // Kᵀ: element (i, j) is key j's component i.
            let k_t = MatRef {
                data: qkv,
                offset: start * stride + h + head * d,
                row_stride: 1,
                col_stride: stride,
            };
            let v = MatRef {
                data: qkv,
                offset: start * stride + 2 * h + head * d,
                row_stride: stride,
                col_stride: 1,
            };
            let mut scores = vec![0.0f32; len * len];
            matmul(
                &mut scores,
                len,
                len,
                d,
                q,
                k_t,
                false,
                scale,
                Threads::Caller,
            );
            scores.chunks_exact_mut(len).for_each(softmax);
            let mut out = vec![0.0f32; len * d];
            matmul(
                &mut out,
                len,
                d,
                len,
                MatRef::rows(&scores, len),
                v,
                false,
                1.0,
                Threads::Caller,
            );
            out
        };
        let parts: Vec<Vec<f32>> = match threads {
            Threads::Pool => jobs.par_iter().map(job).collect(),
            Threads::Caller => jobs.iter().map(job).collect(),
        };
        let mut context = vec![0.0f32; rows * h];
        for (&(start, _, head), part) in jobs.iter().zip(&parts) {
            for (i, src) in part.chunks_exact(d).enumerate() {
                let at = (start + i) * h + head * d;
                context[at..at + d].copy_from_slice(src);
            }
        }
        context
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_and_fuse() {
        let m = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2x3
        assert_eq!(transpose(&m, 2, 3), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        let linear = |w: Vec<f32>, b: Vec<f32>, n_out| Linear {
            w,
            b,
            n_in: 2,
            n_out,
        };
        let a = linear(vec![1.0, 2.0, 3.0, 4.0], vec![0.5, 0.5], 2);
        let b = linear(vec![9.0, 8.0], vec![-1.0], 1);
        let f = fuse_columns(&[a, b]);
        assert_eq!(f.w, vec![1.0, 2.0, 9.0, 3.0, 4.0, 8.0]);
        assert_eq!(f.b, vec![0.5, 0.5, -1.0]);
        let f = Dense::from(f);
        // x = [1, 1]: [1+3+0.5, 2+4+0.5, 9+8-1]
        for threads in [Threads::Caller, Threads::Pool] {
            for p in [Precision::F32, Precision::Bf16] {
                // Every value here is exact in bf16.
                assert_eq!(
                    f.apply(&[1.0, 1.0], 1, None, p, threads),
                    vec![4.5, 6.5, 16.0]
                );
            }
            // int8: each column's largest weight is exact (127 steps), the others within half
            // a step of their column's scale (3/127, 4/127 and 9/127), x = [1, 1] exactly.
            let q = f.apply(&[1.0, 1.0], 1, None, Precision::Int8, threads);
            for (got, (want, step)) in q.iter().zip([(4.5, 3.0), (6.5, 4.0), (16.0, 9.0)]) {
                assert!((got - want).abs() <= step / 127.0, "{q:?}");
            }
            assert_eq!(
                f.apply(
                    &[1.0, 1.0],
                    1,
                    Some(&[1.0, 1.0, 1.0]),
                    Precision::F32,
                    threads
                ),
                vec![5.5, 7.5, 17.0]
            );
        }
    }

    #[test]
    fn config_validation() {
        let json = r#"{"vocab_size":10,"hidden_size":8,"num_hidden_layers":1,
            "num_attention_heads":3,"intermediate_size":16,"max_position_embeddings":4}"#;
        let c: BertConfig = serde_json::from_str(json).expect("parses");
        assert!(c.validate().unwrap_err().contains("multiple"));
        let c = BertConfig {
            num_attention_heads: 2,
            hidden_act: "relu".into(),
            ..c
        };
        assert!(c.validate().unwrap_err().contains("relu"));
    }
}
