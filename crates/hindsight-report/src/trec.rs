//! TREC run and qrels writers.

use std::fmt::Write as _;
use std::path::Path;

use hindsight_eval::{EvalError, Result};
use hindsight_eval::{Qrels, Run, rank_hits};

/// Writes `qid Q0 docid rank score setup` lines, at most `depth` per query, ranked with the same
/// tie-breaking as the metrics (score descending, document id descending, duplicates dropped).
/// Identifiers containing whitespace cannot be represented and are an error.
pub fn write_trec_run(
    path: impl AsRef<Path>,
    run: &Run,
    setup_name: &str,
    depth: usize,
) -> Result<()> {
    let path = path.as_ref();
    check_token("setup name", setup_name)?;
    let mut out = String::new();
    for (qid, hits) in run {
        check_token("query id", qid)?;
        for (rank, (docid, score)) in rank_hits(hits).into_iter().take(depth).enumerate() {
            check_token("document id", docid)?;
            let _ = writeln!(out, "{qid} Q0 {docid} {} {score} {setup_name}", rank + 1);
        }
    }
    std::fs::write(path, out).map_err(|e| EvalError::io(path, e))
}

/// Writes `qid 0 docid relevance` lines (query and document ids in sorted order).
pub fn write_qrels(path: impl AsRef<Path>, qrels: &Qrels) -> Result<()> {
    let path = path.as_ref();
    let mut out = String::new();
    for (qid, judged) in qrels {
        check_token("query id", qid)?;
        for (docid, rel) in judged {
            check_token("document id", docid)?;
            let _ = writeln!(out, "{qid} 0 {docid} {rel}");
        }
    }
    std::fs::write(path, out).map_err(|e| EvalError::io(path, e))
}

fn check_token(what: &str, value: &str) -> Result<()> {
    if value.is_empty() || value.chars().any(char::is_whitespace) {
        return Err(EvalError::InvalidInput(format!(
            "{what} {value:?} is empty or contains whitespace"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use hindsight_eval::{evaluate, parse_qrels, parse_run};

    #[test]
    fn run_round_trips_with_trec_ranks() {
        let dir = tempfile::tempdir().unwrap();
        let run: Run = [(
            "q1".to_owned(),
            vec![
                ("a".to_owned(), 0.5),
                ("c".to_owned(), 0.5),
                ("b".to_owned(), 0.75),
                ("d".to_owned(), 0.1),
            ],
        )]
        .into_iter()
        .collect();
        let path = dir.path().join("run.txt");
        write_trec_run(&path, &run, "hybrid", 3).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "q1 Q0 b 1 0.75 hybrid\nq1 Q0 c 2 0.5 hybrid\nq1 Q0 a 3 0.5 hybrid\n"
        );
        let back = parse_run(&text).unwrap();
        assert_eq!(back["q1"].len(), 3);
        assert!(write_trec_run(&path, &run, "two words", 3).is_err());
    }

    #[test]
    fn qrels_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let qrels = parse_qrels("q2 0 x 1\nq1 0 b 0\nq1 0 a 3\n").unwrap();
        let path = dir.path().join("qrels.txt");
        write_qrels(&path, &qrels).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "q1 0 a 3\nq1 0 b 0\nq2 0 x 1\n");
        let back = parse_qrels(&text).unwrap();
        assert_eq!(back, qrels);
        assert_eq!(evaluate(&back, &Run::new()).missing_from_run, ["q1", "q2"]);
    }
}
