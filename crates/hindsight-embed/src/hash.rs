//! A deterministic feature-hashing embedder for unit tests (no model, no IO).

use hindsight_core::{EmbeddingSpace, l2_normalize};

use crate::{EmbedError, Embedder};

/// Signed feature hashing of word tokens, CJK characters (each one a token, plus adjacent bigrams)
/// and character trigrams of words. Texts that share words land close together, nothing more:
/// there is no semantics here, so [`Embedder::is_test_only`] is true and reports label it.
///
/// Deterministic across runs and platforms (FNV-1a, not `std`'s randomised hasher).
#[derive(Clone, Debug)]
pub struct HashEmbedder {
    dim: usize,
}

const WORD_WEIGHT: f32 = 1.0;
const NGRAM_WEIGHT: f32 = 0.5;

impl HashEmbedder {
    /// A hash embedder with `dim` dimensions (must be > 0).
    pub fn new(dim: usize) -> Result<Self, EmbedError> {
        if dim == 0 {
            return Err(EmbedError::spec("hash:0", "`dim` must be at least 1"));
        }
        Ok(HashEmbedder { dim })
    }

    fn embed_text(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dim];
        for_each_feature(text, |feature, weight| {
            let h = fnv1a(feature.as_bytes());
            // usize is at least 32 bits on every target we build for; the modulo keeps it in range.
            let slot = (h % self.dim as u64) as usize;
            let sign = if (h >> 63) == 0 { 1.0 } else { -1.0 };
            v[slot] += sign * weight;
        });
        l2_normalize(&mut v);
        v
    }
}

impl Embedder for HashEmbedder {
    fn space(&self) -> EmbeddingSpace {
        EmbeddingSpace {
            model: format!("hash-test-only-{}", self.dim),
            dim: self.dim,
        }
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.embed_text(t)).collect())
    }

    fn is_test_only(&self) -> bool {
        true
    }
}

/// True for characters that scripts write without spaces between words (Han, kana, Hangul).
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F) // Extensions B..F, compatibility supplement
}

/// Calls `f(feature, weight)` for every feature of `text`: lower-cased word tokens (prefixed
/// `w:`), their character trigrams with boundary markers (`g:`), single CJK characters (`w:`)
/// and CJK bigrams (`g:`).
fn for_each_feature(text: &str, mut f: impl FnMut(&str, f32)) {
    let lower = text.to_lowercase();
    let mut word = String::new();
    let mut prev_cjk: Option<char> = None;
    let mut buf = String::new();
    let mut flush_word = |word: &mut String, f: &mut dyn FnMut(&str, f32)| {
        if word.is_empty() {
            return;
        }
        buf.clear();
        buf.push_str("w:");
        buf.push_str(word);
        f(&buf, WORD_WEIGHT);
        let chars: Vec<char> = std::iter::once('<')
            .chain(word.chars())
            .chain(std::iter::once('>'))
            .collect();
        for tri in chars.windows(3) {
            buf.clear();
            buf.push_str("g:");
            buf.extend(tri);
            f(&buf, NGRAM_WEIGHT);
        }
        word.clear();
    };
    for c in lower.chars() {
        if is_cjk(c) {
            flush_word(&mut word, &mut f);
            let mut tmp = [0u8; 4];
            let mut feature = String::from("w:");
            feature.push_str(c.encode_utf8(&mut tmp));
            f(&feature, WORD_WEIGHT);
            if let Some(p) = prev_cjk {
                let mut bigram = String::from("g:");
                bigram.push(p);
                bigram.push(c);
                f(&bigram, NGRAM_WEIGHT);
            }
            prev_cjk = Some(c);
        } else if c.is_alphanumeric() {
            prev_cjk = None;
            word.push(c);
        } else {
            prev_cjk = None;
            flush_word(&mut word, &mut f);
        }
    }
    flush_word(&mut word, &mut f);
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::cosine;

    fn embed(e: &HashEmbedder, t: &str) -> Vec<f32> {
        e.embed_one(t).expect("hash embedding never fails")
    }

    #[test]
    fn deterministic_normalised_and_sized() {
        let e = HashEmbedder::new(64).expect("dim 64");
        let a = embed(&e, "The cat sat on the mat");
        let b = embed(&e, "The cat sat on the mat");
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
        // Fixed across runs and platforms: a known FNV-1a value.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn shared_words_score_higher_than_disjoint_ones() {
        let e = HashEmbedder::new(256).expect("dim 256");
        let q = embed(&e, "database migration failed");
        let near = embed(&e, "the database migration failed last week");
        let far = embed(&e, "user prefers express shipping");
        assert!(cosine(&q, &near) > cosine(&q, &far) + 0.3);
    }

    #[test]
    fn cjk_characters_are_tokens() {
        let e = HashEmbedder::new(256).expect("dim 256");
        let q = embed(&e, "顺丰快递");
        let near = embed(&e, "用户喜欢顺丰快递");
        let far = embed(&e, "数据库迁移失败");
        assert!(cosine(&q, &near) > cosine(&q, &far) + 0.3);
        // Case-insensitive for Latin text.
        assert_eq!(embed(&e, "Hello World"), embed(&e, "hello world"));
    }

    #[test]
    fn empty_text_is_zero_and_zero_dim_is_rejected() {
        let e = HashEmbedder::new(8).expect("dim 8");
        assert_eq!(embed(&e, "  ,. "), vec![0.0; 8]);
        assert!(HashEmbedder::new(0).is_err());
        assert!(e.is_test_only());
        assert_eq!(
            e.space(),
            EmbeddingSpace {
                model: "hash-test-only-8".into(),
                dim: 8
            }
        );
        assert!(e.embed(&[]).expect("empty batch").is_empty());
    }
}
