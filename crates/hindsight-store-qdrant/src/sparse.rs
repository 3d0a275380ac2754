//! The keyword path's document and query vectors: BM25 term weights as Qdrant sparse vectors.
//!
//! Text is split by [`hindsight_text::tokenize`], the same Chinese (jieba) + English tokenizer the
//! embedded backend's tantivy index uses, so identifiers (`ORD-77812`), English words and
//! unsegmented Chinese produce the same terms in both backends. Each term maps to a `u32` dimension
//! by FNV-1a; the document value is BM25's saturated term frequency
//! `tf·(k1+1) / (tf + k1·(1 − b + b·len/avgdl))` and the query value is 1 per distinct term. The
//! collection's sparse vector is created with `modifier: idf`, so Qdrant multiplies each matched
//! dimension by the term's inverse document frequency at query time: the score is BM25 with a fixed
//! `avgdl` ([`AVG_DOC_LEN`]) instead of the live average (which would need every stored vector to be
//! rewritten as the corpus changes).

use std::collections::BTreeMap;

use hindsight_text::NEIGHBOURHOOD_BOOST;

/// BM25 `k1` (term-frequency saturation), tantivy's default.
pub const K1: f32 = 1.2;
/// BM25 `b` (length normalisation), tantivy's default.
pub const B: f32 = 0.75;
/// Assumed average document length in terms. Memories are short facts and episodes; the shipped
/// dataset averages about this many terms per `index_text`.
pub const AVG_DOC_LEN: f32 = 24.0;

/// Dimension of a term: 32-bit FNV-1a of its UTF-8 bytes. Distinct terms may collide (a birthday
/// bound of about one pair in 100k distinct terms); a collision only merges two terms' postings.
pub fn term_dim(term: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in term.as_bytes() {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Sparse vector `(indices, values)` of a document, indices ascending: a term's value is its
/// saturated BM25 frequency in the memory's own text plus [`NEIGHBOURHOOD_BOOST`] times that in
/// its conversational neighbourhood, each field length-normalised on its own. With Qdrant's IDF
/// this scores like the embedded index's two fields, where a match in the turn before counts half
/// of one in the turn itself.
pub fn document_vector(own_text: &str, neighbourhood: &str) -> (Vec<u32>, Vec<f32>) {
    let mut weights: BTreeMap<u32, f32> = BTreeMap::new();
    for (text, boost) in [(own_text, 1.0), (neighbourhood, NEIGHBOURHOOD_BOOST)] {
        for (dim, w) in field_weights(text) {
            *weights.entry(dim).or_insert(0.0) += boost * w;
        }
    }
    weights.into_iter().unzip()
}

/// BM25's saturated term frequency of every term of `text`, by dimension.
fn field_weights(text: &str) -> BTreeMap<u32, f32> {
    let terms = hindsight_text::tokenize(text);
    let len = terms.len() as f32;
    let mut tf: BTreeMap<u32, f32> = BTreeMap::new();
    for t in &terms {
        *tf.entry(term_dim(t)).or_insert(0.0) += 1.0;
    }
    let norm = K1 * (1.0 - B + B * len / AVG_DOC_LEN);
    tf.into_iter()
        .map(|(dim, f)| (dim, f * (K1 + 1.0) / (f + norm)))
        .collect()
}

/// Sparse query vector: weight 1 per distinct term (Qdrant applies the IDF), indices ascending.
/// Empty when the text has no terms (punctuation only), in which case there is nothing to search.
pub fn query_vector(text: &str) -> (Vec<u32>, Vec<f32>) {
    let mut dims: Vec<u32> = hindsight_text::tokenize(text)
        .iter()
        .map(|t| term_dim(t))
        .collect();
    dims.sort_unstable();
    dims.dedup();
    let values = vec![1.0; dims.len()];
    (dims, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weight(v: &(Vec<u32>, Vec<f32>), term: &str) -> Option<f32> {
        let d = term_dim(term);
        v.0.iter().position(|&i| i == d).map(|p| v.1[p])
    }

    #[test]
    fn fnv1a_reference_values() {
        // Published FNV-1a 32-bit test vectors.
        assert_eq!(term_dim(""), 0x811c_9dc5);
        assert_eq!(term_dim("a"), 0xe40c_292c);
        assert_eq!(term_dim("foobar"), 0xbf9c_f968);
    }

    #[test]
    fn document_weights_follow_bm25_tf() {
        let doc = document_vector("database database migration", "");
        assert!(doc.0.windows(2).all(|w| w[0] < w[1]), "indices ascending");
        let len = hindsight_text::tokenize("database database migration").len() as f32;
        let norm = K1 * (1.0 - B + B * len / AVG_DOC_LEN);
        // Terms are the shared analyzer's stems.
        let two = weight(&doc, "databas").expect("database indexed");
        let one = weight(&doc, "migrat").expect("migration indexed");
        assert!((two - 2.0 * (K1 + 1.0) / (2.0 + norm)).abs() < 1e-6);
        assert!((one - (K1 + 1.0) / (1.0 + norm)).abs() < 1e-6);
        assert!(two > one && two < 2.0 * one, "saturating tf");
    }

    #[test]
    fn longer_documents_weigh_a_term_less() {
        let short = document_vector("refund issued", "");
        let long = document_vector(
            "refund issued after a long discussion with the courier about the lost parcel and the \
             customer who waited two weeks for an answer from support",
            "",
        );
        assert!(weight(&short, "refund").is_some());
        assert!(weight(&short, "refund") > weight(&long, "refund"));
    }

    #[test]
    fn a_neighbourhood_match_counts_half_of_an_own_match() {
        let own = document_vector("painting class", "");
        let near = document_vector("went home", "painting class");
        let both = document_vector("painting class", "painting class");
        let (o, n, b) = (
            weight(&own, "paint").expect("own"),
            weight(&near, "paint").expect("neighbourhood"),
            weight(&both, "paint").expect("both"),
        );
        assert!((n - NEIGHBOURHOOD_BOOST * o).abs() < 1e-6, "{n} vs {o}");
        assert!(
            (b - (1.0 + NEIGHBOURHOOD_BOOST) * o).abs() < 1e-6,
            "{b} vs {o}"
        );
        assert!(weight(&near, "home").is_some() && weight(&own, "home").is_none());
    }

    #[test]
    fn query_terms_are_distinct_and_unit_weighted() {
        let q = query_vector("database Database migration 数据库迁移");
        assert!(q.0.windows(2).all(|w| w[0] < w[1]), "distinct, ascending");
        assert!(q.1.iter().all(|&v| v == 1.0));
        assert!(weight(&q, "databas").is_some(), "stemmed: {q:?}");
        assert!(
            weight(&q, "数据库").is_some(),
            "jieba splits Chinese: {q:?}"
        );
        assert!(
            query_vector("  ?! ").0.is_empty(),
            "punctuation has no terms"
        );
    }

    #[test]
    fn identifiers_match_between_query_and_document() {
        let doc = document_vector("Refund for order ORD-77812 was issued twice", "");
        let q = query_vector("what's the order status? (ORD-77812)");
        let shared = q.0.iter().filter(|d| doc.0.contains(d)).count();
        assert!(
            shared >= 2,
            "order + the identifier's terms: {q:?} vs {doc:?}"
        );
    }
}
