//! all-MiniLM-L6-v2 in-process: candle's BERT, mean pooling, L2 normalisation.

use std::fmt;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use hindsight_core::{EmbeddingSpace, l2_normalize};
use tokenizers::{Tokenizer, TruncationParams};

use crate::{EmbedError, Embedder};

/// Model id the MiniLM embedder reports.
pub const MINILM_MODEL_ID: &str = "all-MiniLM-L6-v2";
/// Files a model directory must hold.
pub const MODEL_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

/// How to load a [`MiniLmEmbedder`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MiniLmOptions {
    /// Directory with `model.safetensors`, `tokenizer.json` and `config.json`.
    pub dir: PathBuf,
    /// Longest input in tokens (special tokens included); longer texts are truncated.
    /// all-MiniLM-L6-v2 was trained with 256.
    pub max_tokens: usize,
    /// Texts per forward pass. A call with more texts is split, after sorting by length so each
    /// pass pads little.
    pub batch_size: usize,
}

impl MiniLmOptions {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        MiniLmOptions {
            dir: dir.into(),
            max_tokens: 256,
            batch_size: 32,
        }
    }
}

/// Sentence embeddings from all-MiniLM-L6-v2 (384 dimensions), computed on the CPU with candle.
///
/// The encoder runs over a right-padded batch; the token vectors are averaged over the real
/// tokens only (attention mask), then L2-normalised, as sentence-transformers does. Matrix
/// multiplications use candle's thread pool, sized to the available cores (override with
/// `RAYON_NUM_THREADS`).
pub struct MiniLmEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dim: usize,
    max_tokens: usize,
    batch_size: usize,
    dir: PathBuf,
}

impl fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("dir", &self.dir)
            .field("dim", &self.dim)
            .field("max_tokens", &self.max_tokens)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

impl MiniLmEmbedder {
    /// Loads the model from `dir` with default options.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        Self::load_with(&MiniLmOptions::new(dir.as_ref()))
    }

    pub fn load_with(opts: &MiniLmOptions) -> Result<Self, EmbedError> {
        let dir = &opts.dir;
        let missing: Vec<&str> = MODEL_FILES
            .iter()
            .copied()
            .filter(|f| !dir.join(f).is_file())
            .collect();
        if !missing.is_empty() {
            return Err(EmbedError::ModelMissing {
                dir: dir.clone(),
                what: missing.join(", "),
            });
        }
        let load_err = |what: &str, e: &dyn fmt::Display| EmbedError::ModelLoad {
            dir: dir.clone(),
            message: format!("{what}: {e}"),
        };
        if opts.batch_size == 0 {
            return Err(load_err("batch_size", &"must be at least 1"));
        }
        let config_text = std::fs::read_to_string(dir.join("config.json"))
            .map_err(|e| load_err("config.json", &e))?;
        let config: BertConfig =
            serde_json::from_str(&config_text).map_err(|e| load_err("config.json", &e))?;
        let max_tokens = opts.max_tokens.min(config.max_position_embeddings);
        if max_tokens < 2 {
            return Err(load_err(
                "max_tokens",
                &"must be at least 2 ([CLS] and [SEP])",
            ));
        }

        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| load_err("tokenizer.json", &e))?;
        // The shipped tokenizer.json pads everything to 128 tokens and truncates at 128: we pad
        // per forward pass ourselves (to the longest text of the pass) and truncate at 256.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| load_err("tokenizer.json truncation", &e))?;

        let device = Device::Cpu;
        let tensors = candle_core::safetensors::load(dir.join("model.safetensors"), &device)
            .map_err(|e| load_err("model.safetensors", &e))?;
        let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
        let model = BertModel::load(vb, &config).map_err(|e| load_err("model.safetensors", &e))?;
        Ok(MiniLmEmbedder {
            model,
            tokenizer,
            device,
            dim: config.hidden_size,
            max_tokens,
            batch_size: opts.batch_size,
            dir: dir.clone(),
        })
    }

    /// The directory the weights were loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Longest input in tokens; longer texts are truncated.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Token ids of `text` as the model sees it (with `[CLS]`/`[SEP]`, truncated).
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let enc = self
            .tokenizer
            .encode_fast(text, true)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// One forward pass over already tokenised, unpadded sequences.
    fn forward(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let inf = |e: candle_core::Error| EmbedError::Inference(e.to_string());
        let b = seqs.len();
        let n = seqs.iter().map(|s| s.len()).max().unwrap_or(0).max(1);
        let mut ids = vec![0u32; b * n];
        let mut mask = vec![0u32; b * n];
        for (row, s) in seqs.iter().enumerate() {
            ids[row * n..row * n + s.len()].copy_from_slice(s);
            mask[row * n..row * n + s.len()].fill(1);
        }
        let ids = Tensor::from_vec(ids, (b, n), &self.device).map_err(inf)?;
        let mask = Tensor::from_vec(mask, (b, n), &self.device).map_err(inf)?;
        let type_ids = ids.zeros_like().map_err(inf)?;
        let hidden = self
            .model
            .forward(&ids, &type_ids, Some(&mask))
            .map_err(inf)?; // [b, n, dim]
        // Mean over real tokens: sum(h * mask) / sum(mask).
        let mask_f = mask
            .to_dtype(DType::F32)
            .map_err(inf)?
            .unsqueeze(2)
            .map_err(inf)?; // [b, n, 1]
        let summed = hidden
            .broadcast_mul(&mask_f)
            .map_err(inf)?
            .sum(1)
            .map_err(inf)?; // [b, dim]
        let counts = mask_f
            .sum(1)
            .map_err(inf)?
            .clamp(1e-9f32, f32::MAX)
            .map_err(inf)?; // [b, 1]
        let pooled = summed.broadcast_div(&counts).map_err(inf)?;
        let mut out: Vec<Vec<f32>> = pooled.to_vec2().map_err(inf)?;
        for v in &mut out {
            l2_normalize(v);
        }
        Ok(out)
    }
}

impl Embedder for MiniLmEmbedder {
    fn space(&self) -> EmbeddingSpace {
        EmbeddingSpace {
            model: MINILM_MODEL_ID.to_string(),
            dim: self.dim,
        }
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch_fast(texts.to_vec(), true)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        let seqs: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        // Sort by length so each forward pass pads to a similar length, then restore input order.
        let mut order: Vec<usize> = (0..seqs.len()).collect();
        order.sort_by_key(|&i| seqs[i].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(self.batch_size) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| seqs[i]).collect();
            let vectors = self.forward(&batch)?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}
