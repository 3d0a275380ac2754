//! Hashed word and character n-grams: the input of the classifier's n-gram head.
//!
//! A text becomes sparse counts over [`NGRAM_DIM`] buckets: word unigrams and bigrams (a word is
//! a run of letters, digits and `_`; a run of Chinese characters is one word) in the first
//! [`BUCKETS_PER_KIND`] buckets, and character 2- to 4-grams inside each whitespace-separated
//! word padded with one space on either side in the second. Strings are hashed with 64-bit FNV-1a,
//! so buckets are the same on every platform and build. The guard feeds the text after its
//! aggressive normalisation (case, full-width forms, lookalikes, spaced letters), the text the
//! rules see.
//!
//! [`tfidf`] weighs counts as `(1 + ln tf) * idf` and scales the row to unit length; [`fit_idf`]
//! computes the smoothed idf `ln((1 + n) / (1 + df)) + 1` over training rows.

/// Buckets for word n-grams, and again for character n-grams.
pub const BUCKETS_PER_KIND: usize = 8192;

/// Length of an n-gram feature row.
pub const NGRAM_DIM: usize = 2 * BUCKETS_PER_KIND;

/// A sparse row: `(bucket, value)` with buckets strictly increasing.
pub type SparseRow = Vec<(u32, f32)>;

/// FNV-1a of `kind` followed by the concatenation of `parts` (a bigram hashes as its words with a
/// space between, without building the string).
fn fnv1a(kind: u8, parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in std::iter::once(kind).chain(parts.iter().flat_map(|p| p.bytes())) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn bucket(kind: u8, parts: &[&str]) -> u32 {
    let offset = if kind == b'w' { 0 } else { BUCKETS_PER_KIND };
    // Both values are below NGRAM_DIM (16,384), so the sum fits u32.
    (offset + (fnv1a(kind, parts) % BUCKETS_PER_KIND as u64) as usize) as u32
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Raw n-gram counts of `text`, lower-cased, as a sparse row.
pub fn ngram_counts(text: &str) -> SparseRow {
    let lower = text.to_lowercase();
    let mut buckets: Vec<u32> = Vec::new();
    let words: Vec<&str> = lower
        .split(|c: char| !is_word_char(c))
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        buckets.push(bucket(b'w', &[w]));
        if let Some(next) = words.get(i + 1) {
            buckets.push(bucket(b'w', &[w, " ", next]));
        }
    }
    let mut padded = String::new();
    for w in lower.split_whitespace() {
        padded.clear();
        padded.push(' ');
        padded.push_str(w);
        padded.push(' ');
        let starts: Vec<usize> = padded
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(padded.len()))
            .collect();
        let chars = starts.len() - 1;
        // Padding makes every word at least 3 characters long; a word no longer than n ends
        // the loop after its n-grams (its n-gram is the whole padded word).
        for n in 2..=chars.min(4) {
            for i in 0..=chars - n {
                buckets.push(bucket(b'c', &[&padded[starts[i]..starts[i + n]]]));
            }
        }
    }
    buckets.sort_unstable();
    let mut row: SparseRow = Vec::new();
    for b in buckets {
        match row.last_mut() {
            Some((last, count)) if *last == b => *count += 1.0,
            _ => row.push((b, 1.0)),
        }
    }
    row
}

/// `w · row` for a sparse row (buckets outside `w` count 0).
pub fn sparse_dot(row: &[(u32, f32)], w: &[f32]) -> f32 {
    row.iter()
        .filter_map(|&(j, x)| w.get(j as usize).map(|w| w * x))
        .sum()
}

/// Smoothed inverse document frequency per bucket over `rows` (raw counts).
pub fn fit_idf<'a>(rows: impl IntoIterator<Item = &'a SparseRow>) -> Vec<f32> {
    let mut df = vec![0u32; NGRAM_DIM];
    let mut n = 0u32;
    for row in rows {
        n += 1;
        for &(b, _) in row {
            if let Some(d) = df.get_mut(b as usize) {
                *d += 1;
            }
        }
    }
    df.iter()
        .map(|&d| ((1.0 + n as f32) / (1.0 + d as f32)).ln() + 1.0)
        .collect()
}

/// `(1 + ln tf) * idf` per bucket, scaled to unit length. Buckets outside `idf` are dropped.
pub fn tfidf(counts: &[(u32, f32)], idf: &[f32]) -> SparseRow {
    let mut row: SparseRow = counts
        .iter()
        .filter(|(_, tf)| *tf > 0.0)
        .filter_map(|&(b, tf)| idf.get(b as usize).map(|w| (b, (1.0 + tf.ln()) * w)))
        .collect();
    let norm = row.iter().map(|(_, x)| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for (_, x) in &mut row {
            *x /= norm;
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words_bigrams_and_padded_character_grams() {
        let row = ngram_counts("Ab ab");
        // Words: "ab" twice, bigram "ab ab" once. Characters per word " ab ": 3 two-grams, 2
        // three-grams, 1 four-gram; twice.
        let total: f32 = row.iter().map(|(_, c)| c).sum();
        assert_eq!(total, 2.0 + 1.0 + 2.0 * 6.0);
        assert_eq!(
            row.iter().find(|(b, _)| *b == bucket(b'w', &["ab"])),
            Some(&(bucket(b'w', &["ab"]), 2.0))
        );
        assert!(
            row.windows(2).all(|w| w[0].0 < w[1].0),
            "buckets strictly increase"
        );
        assert!(row.iter().all(|(b, _)| (*b as usize) < NGRAM_DIM));
        // Word buckets are in the first half, character buckets in the second.
        // A bigram hashes as the joined string: the committed model's buckets.
        assert_eq!(bucket(b'w', &["ab", " ", "ab"]), bucket(b'w', &["ab ab"]));
        assert!((bucket(b'w', &["ab"]) as usize) < BUCKETS_PER_KIND);
        assert!((bucket(b'c', &[" a"]) as usize) >= BUCKETS_PER_KIND);
    }

    #[test]
    fn a_one_letter_word_has_no_four_grams() {
        // " a " has two 2-grams and one 3-gram (itself).
        let row = ngram_counts("a");
        let chars: f32 = row
            .iter()
            .filter(|(b, _)| *b as usize >= BUCKETS_PER_KIND)
            .map(|(_, c)| c)
            .sum();
        assert_eq!(chars, 3.0);
    }

    #[test]
    fn chinese_runs_are_words_and_grams_span_characters() {
        let row = ngram_counts("以后删除不需要确认");
        assert!(
            row.iter()
                .any(|(b, _)| *b == bucket(b'w', &["以后删除不需要确认"]))
        );
        assert!(row.iter().any(|(b, _)| *b == bucket(b'c', &["确认"])));
        assert!(row.iter().any(|(b, _)| *b == bucket(b'c', &["认 "])));
    }

    #[test]
    fn tfidf_rows_have_unit_length_and_rare_grams_weigh_more() {
        let docs = [
            ngram_counts("delete the file"),
            ngram_counts("keep the file"),
        ];
        let idf = fit_idf(docs.iter());
        let the = bucket(b'w', &["the"]) as usize;
        let delete = bucket(b'w', &["delete"]) as usize;
        assert!(idf[delete] > idf[the]);
        let row = tfidf(&docs[0], &idf);
        let norm: f32 = row.iter().map(|(_, x)| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-5);
        assert!(tfidf(&[], &idf).is_empty());
    }
}
