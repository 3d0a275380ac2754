//! BM25 keyword scoring in SQL, with the embedded backend's analyzer and formula.
//!
//! Terms come from [`hindsight_text::tokenize`] (Snowball English stems, stop words dropped,
//! jieba for Chinese, identifiers whole and in parts), so PostgreSQL's own parser and
//! dictionaries never see the text. A memory is a document of two fields, as in the embedded
//! `KeywordIndex`: its own text ([`Memory::own_text`]: content and context) and its
//! conversational neighbourhood, whose matches count [`NEIGHBOURHOOD_BOOST`] of an own match.
//! The score of a memory is, over the query's distinct terms `t` and both fields `f`,
//!
//! ```text
//! boost_f · idf_f(t) · tf·(k1 + 1) / (tf + k1·(1 − b + b·len_f / avglen_f))
//! idf_f(t) = ln(1 + (N − df_f(t) + 0.5) / (df_f(t) + 0.5))
//! ```
//!
//! with tantivy's `k1 = 1.2` and `b = 0.75`. `N`, the field lengths' sums and so `avglen_f` are
//! per namespace (`bm25_stats`), and so is `df_f(t)`: every memory counts, whatever its status,
//! as every memory is in the embedded index (a filter decides what is returned, not what is
//! counted).
//!
//! Tables (derived from `memories`, rebuilt by [`rebuild`]):
//!
//! - `bm25_postings (namespace, term, memory_id, own_tf, near_tf, own_len, near_len)`, one row per
//!   distinct term of a memory: its frequency in each field and the memory's field lengths (in
//!   terms). The primary key `(namespace, term, memory_id)` includes the other columns, so a
//!   query reads its terms' rows from the index alone; `df` is their count, so no row holds a
//!   per-term counter that every writer of a common term would have to lock. An index on
//!   `memory_id` serves the deletes.
//! - `bm25_stats (namespace, docs, own_len, near_len)`: memories and the sums of their field
//!   lengths. Each write adds its delta in its own transaction as its last statement (several
//!   namespaces in key order), so a writer holds the row only until its commit, never while it
//!   waits for another lock: no deadlock with the memories' row locks.
//! - `hs_meta.bm25_tokenizer`: the [`hindsight_text::TOKENIZER_VERSION`] the postings were built
//!   with; another version, or a memory count that disagrees with `bm25_stats`, rebuilds them on
//!   open.

use std::collections::{BTreeMap, BTreeSet};

use hindsight_core::{Filter, Memory, Namespace, Result};
use sqlx::{PgConnection, Postgres, QueryBuilder, Row};

use crate::codec::{db_err, push_filter};

/// BM25 term-frequency saturation (tantivy's).
pub(crate) const K1: f64 = 1.2;
/// BM25 length normalisation (tantivy's).
pub(crate) const B: f64 = 0.75;
/// Weight of a match in the neighbourhood relative to one in the memory's own text: the
/// embedded keyword index's field boost, so both backends rank alike.
pub(crate) const NEIGHBOURHOOD_BOOST: f64 = hindsight_text::NEIGHBOURHOOD_BOOST as f64;

/// `hs_meta` key recording the tokenizer version the postings were built with.
pub(crate) const META_TOKENIZER: &str = "bm25_tokenizer";

/// Memories read per round trip while rebuilding.
const REBUILD_PAGE: i64 = 1_000;

/// PostgreSQL rejects NUL in text; the tokenizer emits alphanumerics only, so this never drops a
/// term in practice.
fn usable(t: &str) -> bool {
    !t.is_empty() && !t.contains('\0')
}

/// The distinct terms of a user query, sorted (empty when it has none). Any user text is safe:
/// only tokenizer terms reach PostgreSQL, as bound parameters.
pub(crate) fn query_terms(query: &str) -> Vec<String> {
    hindsight_text::tokenize(query)
        .into_iter()
        .filter(|t| usable(t))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// A memory's postings: field lengths and per-term frequencies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DocTerms {
    /// Terms of the memory's own text (content and context).
    pub own_len: i32,
    /// Terms of its neighbourhood.
    pub near_len: i32,
    /// Term → (frequency in the own text, in the neighbourhood).
    pub terms: BTreeMap<String, (i32, i32)>,
}

fn count(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

impl DocTerms {
    /// The postings of a document with these two fields.
    pub(crate) fn of(own_text: &str, neighbourhood: &str) -> Self {
        let own = hindsight_text::tokenize(own_text);
        let near = if neighbourhood.is_empty() {
            Vec::new()
        } else {
            hindsight_text::tokenize(neighbourhood)
        };
        let mut terms: BTreeMap<String, (i32, i32)> = BTreeMap::new();
        for t in own.iter().filter(|t| usable(t)) {
            terms.entry(t.clone()).or_default().0 += 1;
        }
        for t in near.iter().filter(|t| usable(t)) {
            terms.entry(t.clone()).or_default().1 += 1;
        }
        DocTerms {
            own_len: count(own.len()),
            near_len: count(near.len()),
            terms,
        }
    }

    /// The postings of a memory.
    pub(crate) fn of_memory(m: &Memory) -> Self {
        Self::of(&m.own_text(), &m.neighbourhood)
    }
}

/// Changes to `bm25_stats`, per namespace (ordered, so rows are locked in key order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StatsDelta(BTreeMap<String, [i64; 3]>);

impl StatsDelta {
    /// One more memory with these postings in `ns`.
    pub(crate) fn add(&mut self, ns: &str, doc: &DocTerms) {
        self.shift(ns, 1, doc.own_len.into(), doc.near_len.into());
    }

    /// Adds `docs` memories and these field lengths (negative to remove).
    pub(crate) fn shift(&mut self, ns: &str, docs: i64, own_len: i64, near_len: i64) {
        let e = self.0.entry(ns.to_owned()).or_default();
        e[0] += docs;
        e[1] += own_len;
        e[2] += near_len;
    }

    /// Writes the deltas. Call it as the transaction's last statement before its commit: the
    /// rows it updates are the namespaces' hot rows, and a writer holding one must not wait for
    /// any other lock (see the module docs).
    pub(crate) async fn apply(&self, conn: &mut PgConnection) -> Result<()> {
        let changed: Vec<(&String, &[i64; 3])> =
            self.0.iter().filter(|(_, d)| **d != [0; 3]).collect();
        if changed.is_empty() {
            return Ok(());
        }
        let column = |i: usize| changed.iter().map(|(_, d)| d[i]).collect::<Vec<i64>>();
        // The rows are inserted, or updated, in the arrays' order: namespaces ascending.
        sqlx::query(
            "INSERT INTO bm25_stats AS s (namespace, docs, own_len, near_len) \
             SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[]) \
             ON CONFLICT (namespace) DO UPDATE SET docs = s.docs + excluded.docs, \
             own_len = s.own_len + excluded.own_len, near_len = s.near_len + excluded.near_len",
        )
        .bind(
            changed
                .iter()
                .map(|(ns, _)| (*ns).clone())
                .collect::<Vec<_>>(),
        )
        .bind(column(0))
        .bind(column(1))
        .bind(column(2))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        Ok(())
    }
}

/// Inserts the postings of these memories (`(namespace, id, postings)`).
pub(crate) async fn insert_postings(
    conn: &mut PgConnection,
    docs: &[(&str, &str, &DocTerms)],
) -> Result<()> {
    let rows: usize = docs.iter().map(|(_, _, d)| d.terms.len()).sum();
    if rows == 0 {
        return Ok(());
    }
    let mut namespace = Vec::with_capacity(rows);
    let mut term = Vec::with_capacity(rows);
    let mut memory_id = Vec::with_capacity(rows);
    let mut own_tf = Vec::with_capacity(rows);
    let mut near_tf = Vec::with_capacity(rows);
    let mut own_len = Vec::with_capacity(rows);
    let mut near_len = Vec::with_capacity(rows);
    for (ns, id, doc) in docs {
        for (t, (own, near)) in &doc.terms {
            namespace.push(*ns);
            term.push(t.as_str());
            memory_id.push(*id);
            own_tf.push(*own);
            near_tf.push(*near);
            own_len.push(doc.own_len);
            near_len.push(doc.near_len);
        }
    }
    sqlx::query(
        "INSERT INTO bm25_postings (namespace, term, memory_id, own_tf, near_tf, own_len, near_len) \
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::int[])",
    )
    .bind(namespace)
    .bind(term)
    .bind(memory_id)
    .bind(own_tf)
    .bind(near_tf)
    .bind(own_len)
    .bind(near_len)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Deletes the postings of these memories (of namespace `ns`) and returns what they held:
/// `(memories with postings, own lengths, neighbourhood lengths)`, summed. A memory without any
/// term has no postings, and its lengths are 0, so the sums are exact.
pub(crate) async fn delete_postings(
    conn: &mut PgConnection,
    ns: &Namespace,
    ids: &[String],
) -> Result<(i64, i64, i64)> {
    if ids.is_empty() {
        return Ok((0, 0, 0));
    }
    let row = sqlx::query(
        "WITH gone AS (DELETE FROM bm25_postings WHERE memory_id = ANY($1) AND namespace = $2 \
         RETURNING memory_id, own_len, near_len), \
         per_doc AS (SELECT memory_id, max(own_len) AS own_len, max(near_len) AS near_len FROM gone GROUP BY memory_id) \
         SELECT count(*) AS docs, coalesce(sum(own_len), 0)::bigint AS own_len, \
         coalesce(sum(near_len), 0)::bigint AS near_len FROM per_doc",
    )
    .bind(ids)
    .bind(ns.as_str())
    .fetch_one(&mut *conn)
    .await
    .map_err(db_err)?;
    let get = |c: &str| -> Result<i64> { row.try_get(c).map_err(db_err) };
    Ok((get("docs")?, get("own_len")?, get("near_len")?))
}

/// Appends the keyword query: the top `k` memories of `ns` passing `filter`, by BM25 over
/// `terms` (distinct), as `(id, score)`, best first, ties by id descending.
pub(crate) fn push_search(
    qb: &mut QueryBuilder<Postgres>,
    ns: &Namespace,
    terms: Vec<String>,
    k: usize,
    filter: &Filter,
) -> Result<()> {
    // The weight of a field: boost · idf · (k1 + 1) · tf / (tf + k1 · (1 − b + b · len / avglen)),
    // 0 where the term is not in the field.
    let field = |tf: &str, df: &str, len: &str, total: &str, boost: f64| {
        format!(
            "CASE WHEN p.{tf} > 0 THEN {boost:?} * ln(1 + (st.docs - p.{df} + 0.5) / (p.{df} + 0.5)) \
             * p.{tf} * {k1p:?} / (p.{tf} + {K1:?} * ({omb:?} + {B:?} * p.{len} / (st.{total} / st.docs))) ELSE 0 END",
            k1p = K1 + 1.0,
            omb = 1.0 - B,
        )
    };
    qb.push(
        "WITH st AS (SELECT docs::float8 AS docs, greatest(own_len, 1)::float8 AS own_len, \
         greatest(near_len, 1)::float8 AS near_len FROM bm25_stats WHERE namespace = ",
    );
    qb.push_bind(ns.as_str().to_owned());
    // One pass over the query terms' postings: the window counts are the terms' df.
    qb.push(
        "), p AS (SELECT memory_id, own_tf, near_tf, own_len::float8 AS own_len, near_len::float8 AS near_len, \
         (count(*) FILTER (WHERE own_tf > 0) OVER w)::float8 AS df_own, \
         (count(*) FILTER (WHERE near_tf > 0) OVER w)::float8 AS df_near \
         FROM bm25_postings WHERE namespace = ",
    );
    qb.push_bind(ns.as_str().to_owned());
    qb.push(" AND term = ANY(");
    qb.push_bind(terms);
    qb.push("::text[]) WINDOW w AS (PARTITION BY term)), s AS (SELECT p.memory_id AS id, sum(");
    qb.push(field("own_tf", "df_own", "own_len", "own_len", 1.0));
    qb.push(" + ");
    qb.push(field(
        "near_tf",
        "df_near",
        "near_len",
        "near_len",
        NEIGHBOURHOOD_BOOST,
    ));
    // Ties by id descending, as the fusion ranks them, so the depth cut keeps the ones it would
    // rank first. The scored memories are probed best first (one primary-key lookup each) until
    // `k` pass the filter. A plain join is planned as a hash join that reads every row of the
    // namespace: 181 ms against 25 ms for a 4-term query over 100k memories
    // (`docs/decisions/postgres-bm25.md`).
    qb.push(
        ") AS score FROM p CROSS JOIN st GROUP BY p.memory_id) \
         SELECT c.id, c.score FROM (SELECT id, score FROM s ORDER BY score DESC, id DESC) AS c \
         CROSS JOIN LATERAL (SELECT 1 FROM memories WHERE memories.id = c.id AND memories.namespace = ",
    );
    qb.push_bind(ns.as_str().to_owned());
    push_filter(qb, filter)?;
    qb.push(") AS f ORDER BY c.score DESC, c.id DESC LIMIT ");
    qb.push_bind(i64::try_from(k).unwrap_or(i64::MAX));
    Ok(())
}

/// Whether the postings must be rebuilt: built with another tokenizer (or never, as in a store
/// laid out before them), or their memory count disagrees with the table's (a write that did
/// not maintain them).
pub(crate) async fn needs_rebuild(conn: &mut PgConnection) -> Result<Option<String>> {
    let built: Option<String> = sqlx::query_scalar("SELECT value FROM hs_meta WHERE key = $1")
        .bind(META_TOKENIZER)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_err)?;
    match built {
        None => return Ok(Some("no keyword postings yet".into())),
        Some(v) if v != hindsight_text::TOKENIZER_VERSION => {
            return Ok(Some(format!(
                "postings built with tokenizer version {v}, this build's is {}",
                hindsight_text::TOKENIZER_VERSION
            )));
        }
        Some(_) => {}
    }
    let row = sqlx::query(
        "SELECT (SELECT count(*) FROM memories) AS memories, \
         (SELECT coalesce(sum(docs), 0)::bigint FROM bm25_stats) AS counted",
    )
    .fetch_one(&mut *conn)
    .await
    .map_err(db_err)?;
    let memories: i64 = row.try_get("memories").map_err(db_err)?;
    let counted: i64 = row.try_get("counted").map_err(db_err)?;
    Ok((memories != counted).then(|| {
        format!("the keyword statistics count {counted} memories, the table holds {memories}")
    }))
}

/// Rebuilds `bm25_postings` and `bm25_stats` from `memories` (the source of truth) inside the
/// caller's transaction, with other writers of `memories` held off (`EXCLUSIVE` lock: reads go
/// on), and records the tokenizer version. Returns the number of memories indexed.
pub(crate) async fn rebuild(conn: &mut PgConnection) -> Result<u64> {
    for sql in [
        "LOCK TABLE memories IN EXCLUSIVE MODE",
        "TRUNCATE bm25_postings, bm25_stats",
    ] {
        sqlx::query(sql).execute(&mut *conn).await.map_err(db_err)?;
    }
    let mut stats = StatsDelta::default();
    let mut after = String::new();
    let mut indexed = 0u64;
    loop {
        let rows = sqlx::query(
            "SELECT id, namespace, content, context, neighbourhood FROM memories \
             WHERE id > $1 ORDER BY id LIMIT $2",
        )
        .bind(&after)
        .bind(REBUILD_PAGE)
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)?;
        let Some(last) = rows.last() else { break };
        after = last.try_get("id").map_err(db_err)?;
        let mut page: Vec<(String, String, DocTerms)> = Vec::with_capacity(rows.len());
        for r in &rows {
            let get = |c: &str| -> Result<String> { r.try_get(c).map_err(db_err) };
            let (ns, content, context) = (get("namespace")?, get("content")?, get("context")?);
            let doc = DocTerms::of(
                &hindsight_core::index_text(&content, &context),
                &get("neighbourhood")?,
            );
            stats.add(&ns, &doc);
            page.push((ns, get("id")?, doc));
        }
        let docs: Vec<(&str, &str, &DocTerms)> = page
            .iter()
            .map(|(ns, id, d)| (ns.as_str(), id.as_str(), d))
            .collect();
        insert_postings(conn, &docs).await?;
        indexed += rows.len() as u64;
        if indexed.is_multiple_of(50_000) {
            tracing::info!(indexed, "rebuilding the keyword postings");
        }
    }
    stats.apply(conn).await?;
    sqlx::query(
        "INSERT INTO hs_meta (key, value) VALUES ($1, $2) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )
    .bind(META_TOKENIZER)
    .bind(hindsight_text::TOKENIZER_VERSION)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(indexed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_terms_are_distinct_analyzer_terms() {
        assert_eq!(
            query_terms("database migration database"),
            // The shared analyzer stems English (Snowball).
            vec!["databas".to_owned(), "migrat".to_owned()]
        );
        assert!(query_terms("  '; -- () & | !").is_empty());
        assert!(query_terms("数据库迁移").contains(&"迁移".to_owned()));
    }

    #[test]
    fn postings_count_both_fields_apart() {
        let d = DocTerms::of("Refund ORD-77812 refund", "the refund was late");
        // Identifiers whole and in parts; stop words dropped, lengths in terms.
        assert_eq!(d.own_len, 5, "{d:?}");
        assert_eq!(d.near_len, 2, "{d:?}");
        assert_eq!(d.terms.get("refund"), Some(&(2, 1)));
        assert_eq!(d.terms.get("ord-77812"), Some(&(1, 0)));
        assert_eq!(d.terms.get("late"), Some(&(0, 1)));
        assert_eq!(DocTerms::of("", ""), DocTerms::default());
    }

    #[test]
    fn stats_deltas_sum_per_namespace_in_order() {
        let mut s = StatsDelta::default();
        s.add("b", &DocTerms::of("one two", ""));
        s.add("a", &DocTerms::of("three", "four five"));
        s.shift("b", -1, -2, 0);
        assert_eq!(
            s.0.into_iter().collect::<Vec<_>>(),
            vec![("a".to_owned(), [1, 1, 2]), ("b".to_owned(), [0, 0, 0])]
        );
    }
}
