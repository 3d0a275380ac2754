//! all-MiniLM-L6-v2 in-process: the packed BERT encoder, mean pooling, L2 normalisation.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use candle_core::Device;
use hindsight_core::EmbeddingSpace;
use tokenizers::{Tokenizer, TruncationParams};

use crate::bert::{BertConfig, BertEncoder};
use crate::{EmbedError, Embedder};

/// Model id the MiniLM embedder reports.
pub const MINILM_MODEL_ID: &str = "all-MiniLM-L6-v2";
/// Files a model directory must hold.
pub const MODEL_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

/// The arithmetic of the encoder's dense layers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// f32 weights and inputs: agrees with the reference forward pass to 2e-7. Documents (stored
    /// vectors) are embedded this way except where [`Precision::fastest_for_documents`] picks
    /// bf16 (Intel AMX).
    #[default]
    F32,
    /// bfloat16 weights and inputs with f32 sums: with AVX-512 BF16 (`vdpbf16ps`) about 1.5x
    /// faster than f32 for a query and half the weight bytes, on Intel AMX tiles (`tdpbf16ps`)
    /// about 1.8x faster per document; vectors differ from f32 by ~1e-3 per component.
    /// Elsewhere a portable emulation gives the same vectors (to rounding) but is slower than
    /// f32, so [`Precision::fastest_for_queries`] picks f32 there.
    Bf16,
    /// int8 weights (per output column scales) and inputs (per row scales, dynamic), exact i32
    /// sums: a quarter of the weight bytes and, with AVX-512 VNNI (`vpdpbusd`), four products per
    /// lane per instruction. Lossy: see the reference test for the measured agreement with f32.
    /// Without AVX-512 VNNI a portable integer loop runs it (correct, speed not measured), so
    /// [`Precision::fastest_for_queries`] picks f32 there.
    Int8,
}

impl Precision {
    /// The faster arithmetic for queries on this CPU: int8 where AVX-512 VNNI runs it natively,
    /// f32 everywhere else. (bf16 is not picked: on the hosts this project has measured it ranged
    /// from 1.5x faster than f32 to 7 % slower, and int8 beats both wherever bf16 runs natively.)
    pub fn fastest_for_queries() -> Precision {
        if crate::kernels::int8_is_native() {
            Precision::Int8
        } else {
            Precision::F32
        }
    }

    /// The arithmetic for documents (stored vectors) on this CPU: bf16 where Intel AMX runs it
    /// on tiles (a document embeds in about 60 % of the f32 time there, at cosine >= 0.9999 to
    /// the f32 vector), f32 everywhere else. Never int8: stored vectors stay close to the
    /// reference model's.
    pub fn fastest_for_documents() -> Precision {
        if crate::amx::usable(crate::amx::TileOp::Bf16) {
            Precision::Bf16
        } else {
            Precision::F32
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::Int8 => "int8",
        })
    }
}

impl FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "f32" => Ok(Precision::F32),
            "bf16" => Ok(Precision::Bf16),
            "int8" => Ok(Precision::Int8),
            other => Err(format!("unknown precision {other:?} (f32, bf16 or int8)")),
        }
    }
}

/// How to load a [`MiniLmEmbedder`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MiniLmOptions {
    /// Directory with `model.safetensors`, `tokenizer.json` and `config.json`.
    pub dir: PathBuf,
    /// Longest input in tokens (special tokens included); longer texts are truncated.
    /// all-MiniLM-L6-v2 was trained with 256.
    pub max_tokens: usize,
    /// Texts per forward pass; a call with more texts is split. Texts are never padded (their
    /// tokens are packed), so this only bounds the memory of one pass.
    pub batch_size: usize,
}

impl MiniLmOptions {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        MiniLmOptions {
            dir: dir.into(),
            max_tokens: 256,
            batch_size: 64,
        }
    }
}

/// Sentence embeddings from all-MiniLM-L6-v2 (384 dimensions), computed on the CPU.
///
/// Weights are read with candle; the encoder (`bert.rs`) packs the tokens of a batch without
/// padding, runs the dense layers as packed matrix products in f32, bf16 or int8 ([`Precision`])
/// and attention per text, then averages each text's token vectors and L2-normalises them, as
/// sentence-transformers does. Passes over more than a few dozen tokens run on the rayon pool,
/// sized to the available cores (override with `RAYON_NUM_THREADS`); shorter ones (a query) on
/// the calling thread. [`MiniLmEmbedder::with_precision`] gives a second handle
/// on the same weights with other arithmetic (the engine's query embedder).
pub struct MiniLmEmbedder {
    model: Arc<BertEncoder>,
    tokenizer: Arc<Tokenizer>,
    precision: Precision,
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
            .field("precision", &self.precision)
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
        let config = read_config(dir)?;
        let load_err = |what: &str, e: &dyn fmt::Display| EmbedError::ModelLoad {
            dir: dir.clone(),
            message: format!("{what}: {e}"),
        };
        if opts.batch_size == 0 {
            return Err(load_err("batch_size", &"must be at least 1"));
        }
        let max_tokens = opts.max_tokens.min(config.max_position_embeddings);
        if max_tokens < 2 {
            return Err(load_err(
                "max_tokens",
                &"must be at least 2 ([CLS] and [SEP])",
            ));
        }

        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| load_err("tokenizer.json", &e))?;
        // The shipped tokenizer.json pads everything to 128 tokens and truncates at 128: the
        // encoder packs tokens without padding, and we truncate at 256.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| load_err("tokenizer.json truncation", &e))?;

        let tensors = candle_core::safetensors::load(dir.join("model.safetensors"), &Device::Cpu)
            .map_err(|e| load_err("model.safetensors", &e))?;
        let model =
            BertEncoder::load(&config, tensors).map_err(|e| load_err("model.safetensors", &e))?;
        Ok(MiniLmEmbedder {
            dim: model.hidden_size(),
            model: Arc::new(model),
            tokenizer: Arc::new(tokenizer),
            precision: Precision::F32,
            max_tokens,
            batch_size: opts.batch_size,
            dir: dir.clone(),
        })
    }

    /// Another handle on the same weights that computes in `precision`. The f32 weights are
    /// shared; a bf16 or int8 copy (half or a quarter of their size) is packed now, once per
    /// model, so the first query does not pay for it.
    pub fn with_precision(&self, precision: Precision) -> MiniLmEmbedder {
        self.model.prepare(precision);
        MiniLmEmbedder {
            model: Arc::clone(&self.model),
            tokenizer: Arc::clone(&self.tokenizer),
            precision,
            dim: self.dim,
            max_tokens: self.max_tokens,
            batch_size: self.batch_size,
            dir: self.dir.clone(),
        }
    }

    pub fn precision(&self) -> Precision {
        self.precision
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
}

impl Embedder for MiniLmEmbedder {
    fn space(&self) -> EmbeddingSpace {
        EmbeddingSpace {
            model: MINILM_MODEL_ID.to_string(),
            dim: self.dim,
        }
    }

    fn variant(&self) -> Option<String> {
        (self.precision != Precision::F32).then(|| self.precision.to_string())
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
        let mut out = Vec::with_capacity(texts.len());
        for chunk in seqs.chunks(self.batch_size) {
            out.extend(
                self.model
                    .embed(chunk, self.precision)
                    .map_err(EmbedError::Inference)?,
            );
        }
        Ok(out)
    }
}

/// Checks that `dir` holds [`MODEL_FILES`] and reads its validated `config.json`.
pub(crate) fn read_config(dir: &Path) -> Result<BertConfig, EmbedError> {
    let missing: Vec<&str> = MODEL_FILES
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if !missing.is_empty() {
        return Err(EmbedError::ModelMissing {
            dir: dir.to_path_buf(),
            what: missing.join(", "),
        });
    }
    let err = |m: String| EmbedError::ModelLoad {
        dir: dir.to_path_buf(),
        message: m,
    };
    let text = std::fs::read_to_string(dir.join("config.json"))
        .map_err(|e| err(format!("config.json: {e}")))?;
    let config: BertConfig =
        serde_json::from_str(&text).map_err(|e| err(format!("config.json: {e}")))?;
    config
        .validate()
        .map_err(|e| err(format!("config.json: {e}")))?;
    Ok(config)
}
