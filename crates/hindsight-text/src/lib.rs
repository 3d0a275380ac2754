//! The keyword path's analyzer for mixed Chinese / English text, shared by every backend.
//!
//! The embedded store's tantivy index, PostgreSQL's BM25 postings and Qdrant's sparse vectors all
//! index and query the terms of [`tokenize`], so one query finds the same terms on any backend.
//!
//! CJK runs are segmented with jieba (search mode: long words plus their sub-words); other text
//! is split into lowercase alphanumeric words. Identifier-like words joined by `-`, `_` or `.`
//! ("ORD-88231", "v1.2") are emitted whole and as their parts, so both "ORD-88231" and "88231"
//! find them. Punctuation and whitespace never become tokens.
//!
//! Words of letters only are stemmed (Snowball English: "went"/"going" stay apart, but "dogs" and
//! "dog", "painting" and "paint" meet), and English and Chinese stop words ("the", "did", "的",
//! "了") are dropped: they match every document and only dilute BM25. Tokens with digits and whole
//! identifiers are kept as written.

use std::sync::OnceLock;

use jieba_rs::Jieba;
use rust_stemmers::{Algorithm, Stemmer};

/// Tokens longer than this (in bytes) are dropped: they are noise (base64, hashes), and indexes
/// cap term length anyway.
const MAX_TOKEN_BYTES: usize = 80;

/// The process-wide jieba instance; the dictionary load takes a noticeable fraction of a second.
fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}

/// Loads jieba's dictionary on a background thread, so that the first CJK text a server
/// tokenizes (a write or a query) does not wait for it; a tokenizer that needs it before the load
/// finishes waits for that load instead of starting its own.
pub fn warm_up() {
    // Without a thread (the spawn failed) the first use loads it, as before.
    let _ = std::thread::Builder::new()
        .name("jieba-load".into())
        .spawn(|| {
            jieba();
        });
}

/// Chinese/Japanese/Korean script characters handed to jieba.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F) // Extensions B..F and supplement
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() && !is_cjk(c)
}

fn is_joiner(c: char) -> bool {
    matches!(c, '-' | '_' | '.')
}

/// What a query term matched in a document's neighbourhood (the turns before it in its
/// conversation) counts, relative to a match in the document's own text: a turn's context helps
/// find it, but the turn after an answer must not match the question as well as the answer.
/// Chosen on the two conversational datasets (`docs/decisions/conversation-neighbourhoods.md`).
pub const NEIGHBOURHOOD_BOOST: f32 = 0.5;

/// One token with its byte span in the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub text: String,
    pub start: usize,
    pub end: usize,
}

/// The version of [`tokenize`]'s output. Keyword indexes record it with their watermark, and a
/// store rebuilds an index built under another version. Bump it whenever the tokens change (a
/// new rule, another jieba dictionary); the `tokens_match_the_version` test fails until then.
pub const TOKENIZER_VERSION: &str = "2";

/// English words too common to tell documents apart (closed-class words: articles, pronouns,
/// auxiliaries, prepositions, conjunctions, question words).
const STOP_EN: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "d",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "o",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Chinese function words jieba emits on their own (particles, pronouns, the commonest verbs of
/// being and having, question words).
const STOP_ZH: &[&str] = &[
    "的",
    "了",
    "着",
    "过",
    "是",
    "在",
    "和",
    "与",
    "及",
    "或",
    "也",
    "都",
    "就",
    "还",
    "又",
    "吗",
    "呢",
    "吧",
    "啊",
    "呀",
    "哦",
    "嗯",
    "么",
    "我",
    "你",
    "您",
    "他",
    "她",
    "它",
    "我们",
    "你们",
    "他们",
    "她们",
    "这",
    "那",
    "这个",
    "那个",
    "一个",
    "有",
    "没有",
    "什么",
    "哪",
    "哪里",
    "怎么",
    "为什么",
    "谁",
    "几",
    "多少",
    "会",
    "能",
    "要",
    "让",
    "被",
    "把",
    "给",
    "对",
    "从",
    "到",
    "向",
    "很",
    "太",
    "更",
    "最",
    "不",
    "没",
];

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// A word of letters only, analysed: `None` for a stop word, else its stem.
fn analyse_word(lower: &str) -> Option<String> {
    if STOP_EN.binary_search(&lower).is_ok() {
        return None;
    }
    if lower.chars().all(|c| c.is_ascii_alphabetic()) {
        return Some(stemmer().stem(lower).into_owned());
    }
    Some(lower.to_owned())
}

/// Splits `text` into index terms (lowercased; CJK segmented). The same function drives indexing
/// and query construction, so a query matches exactly the terms a document was indexed under.
pub fn tokenize(text: &str) -> Vec<String> {
    pieces(text).into_iter().map(|p| p.text).collect()
}

/// [`tokenize`] with byte offsets.
pub fn pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let end_of = |i: usize| chars.get(i).map_or(text.len(), |&(b, _)| b);
    let mut i = 0;
    while let Some(&(start, c)) = chars.get(i) {
        if is_cjk(c) {
            let mut j = i;
            while chars.get(j).is_some_and(|&(_, c)| is_cjk(c)) {
                j += 1;
            }
            let run = &text[start..end_of(j)];
            for t in jieba().cut_for_search(run, true) {
                if t.word.chars().any(char::is_alphanumeric) && !STOP_ZH.contains(&t.word) {
                    push(&mut out, t.word, start + t.byte_start, start + t.byte_end);
                }
            }
            i = j;
        } else if is_word_char(c) {
            // A word: alphanumerics, possibly joined by single joiners between alphanumerics.
            let mut j = i;
            let mut parts = vec![(i, i)];
            loop {
                while chars.get(j).is_some_and(|&(_, c)| is_word_char(c)) {
                    j += 1;
                }
                if let Some(last) = parts.last_mut() {
                    last.1 = j;
                }
                let joined = chars.get(j).is_some_and(|&(_, c)| is_joiner(c))
                    && chars.get(j + 1).is_some_and(|&(_, c)| is_word_char(c));
                if !joined {
                    break;
                }
                j += 1;
                parts.push((j, j));
            }
            if parts.len() > 1 {
                // An identifier: whole, then its parts (analysed like words).
                push(&mut out, &text[start..end_of(j)], start, end_of(j));
                for (a, b) in parts {
                    push_word(&mut out, &text[end_of(a)..end_of(b)], end_of(a), end_of(b));
                }
            } else {
                push_word(&mut out, &text[start..end_of(j)], start, end_of(j));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// [`push`] of a word after [`analyse_word`]: a stop word is dropped, a word of letters stemmed.
fn push_word(out: &mut Vec<Piece>, word: &str, start: usize, end: usize) {
    if word.is_empty() || word.len() > MAX_TOKEN_BYTES {
        return;
    }
    if let Some(w) = analyse_word(&word.to_lowercase()) {
        out.push(Piece {
            text: w,
            start,
            end,
        });
    }
}

fn push(out: &mut Vec<Piece>, word: &str, start: usize, end: usize) {
    if word.is_empty() || word.len() > MAX_TOKEN_BYTES {
        return;
    }
    out.push(Piece {
        text: word.to_lowercase(),
        start,
        end,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tokens of a fixed bilingual sample, hashed. When this fails, the tokenizer's output
    /// changed: bump [`TOKENIZER_VERSION`] (stored indexes then rebuild) and record the new
    /// fingerprint here.
    #[test]
    fn tokens_match_the_version() {
        let sample = "The user's ORD-3381 refund (¥1,299) moved to 2024-11-30; 用户要求把北京仓的\
                      退款单号改为ORD-3381，下周三前处理完。Deploy web-01 v2.3.1 at 14:30 UTC, \
                      e-mail ann.lee@example.com, 全角ＡＢＣ１２３ and café naïve façade.";
        let joined = tokenize(sample).join("\u{1f}");
        // FNV-1a, 64 bits.
        let hash = joined.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        assert_eq!(
            (TOKENIZER_VERSION, format!("{hash:016x}")),
            ("2", "7841e3f2b6d1cb1d".to_owned()),
            "tokens: {:?}",
            tokenize(sample)
        );
    }

    fn check(input: &str, expect: &[&str]) {
        assert_eq!(tokenize(input), expect, "tokens of {input:?}");
    }

    #[test]
    fn english_is_lowercased_and_punctuation_dropped() {
        check(
            "Hello, World!  The API: rate-limited?",
            &["hello", "world", "api", "rate-limited", "rate", "limit"],
        );
    }

    #[test]
    fn words_are_stemmed_and_stop_words_dropped_in_both_languages() {
        check(
            "When did Caroline's dogs go painting?",
            &["carolin", "dog", "go", "paint"],
        );
        check("Caroline painted her dog", &["carolin", "paint", "dog"]);
        // Numbers, identifiers and non-ASCII words are kept as written.
        check("The 3 cafés, ID-7", &["3", "cafés", "id-7", "id", "7"]);
        check("我的猫是什么颜色", &["猫", "颜色"]);
    }

    #[test]
    fn identifiers_emit_whole_and_parts() {
        check(
            "order ORD-88231 shipped",
            &["order", "ord-88231", "ord", "88231", "ship"],
        );
        check("v1.2.", &["v1.2", "v1", "2"]);
        check("x--b", &["x", "b"]);
    }

    #[test]
    fn chinese_is_segmented_and_mixed_text_splits_by_script() {
        let toks = tokenize("上周完成了数据库迁移");
        assert!(toks.contains(&"数据库".to_owned()), "{toks:?}");
        assert!(toks.contains(&"迁移".to_owned()), "{toks:?}");
        let toks = tokenize("API限流每分钟60次。");
        assert_eq!(toks.first().map(String::as_str), Some("api"));
        assert!(toks.contains(&"限流".to_owned()), "{toks:?}");
        assert!(toks.contains(&"60".to_owned()), "{toks:?}");
        assert!(!toks.iter().any(|t| t == "。"), "{toks:?}");
    }

    #[test]
    fn offsets_point_into_the_input() {
        let text = "查订单 ORD-1 ok";
        for p in pieces(text) {
            assert_eq!(text[p.start..p.end].to_lowercase(), p.text);
        }
    }
}
