//! How well the write path's redaction ([`find_sensitive`] then [`redact`], what a stored
//! memory's content goes through) finds labelled secrets: `datasets/guard/redaction-*/corpus.jsonl`, one
//! record per line, `{"id","language","text","secrets":[{"type","value"}],"hard_negative"}`,
//! where each `value` is the secret's exact text inside `text`.
//!
//! Per secret type ([`SensitiveKind`] names):
//! - *removed*: labelled secrets whose text no longer appears verbatim in the redacted output
//!   (what matters for privacy, whatever type the detector thought it was; lenient, since a
//!   span replacing any part of the secret counts);
//! - *typed*: labelled secrets overlapped by a detector span of their own type;
//! - *precision*: detector spans of the type that overlap a labelled secret of that type.
//!
//! Overall precision counts a span as right when it overlaps any labelled secret. Hard
//! negatives (texts with secret-looking strings and no secret) report how many were redacted at
//! all. Every rate carries a Wilson 95 % interval.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::corpus::CorpusIssue as LoadIssue;
use hindsight_eval::{Rate, wilson};
use hindsight_guard::GuardError;
use hindsight_guard::{SensitiveKind, find_sensitive, redact};

/// One labelled secret: its type and its exact text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelledSecret {
    #[serde(rename = "type")]
    pub kind: String,
    pub value: String,
}

/// One labelled text of the secrets set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretRecord {
    pub id: String,
    pub language: String,
    pub text: String,
    #[serde(default)]
    pub secrets: Vec<LabelledSecret>,
    #[serde(default)]
    pub hard_negative: bool,
}

/// Reads a secrets set (`DIR/corpus.jsonl`, or the file itself). A line that does not parse, names
/// an unknown type, or labels a value that is not in its text is a load issue, not a failure.
pub fn load_secrets(path: &Path) -> Result<(Vec<SecretRecord>, Vec<LoadIssue>), GuardError> {
    let file = if path.is_dir() {
        path.join("corpus.jsonl")
    } else {
        path.to_owned()
    };
    let bytes = std::fs::read(&file)
        .map_err(|e| GuardError::io(format!("reading {}", file.display()), e))?;
    let mut records = Vec::new();
    let mut issues = Vec::new();
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = i + 1;
        let Ok(text) = std::str::from_utf8(raw) else {
            issues.push(LoadIssue {
                line,
                message: "not UTF-8".into(),
            });
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        match serde_json::from_str::<SecretRecord>(text) {
            Err(e) => issues.push(LoadIssue {
                line,
                message: e.to_string(),
            }),
            Ok(r) => match r.secrets.iter().find_map(|s| label_problem(&r.text, s)) {
                Some(message) => issues.push(LoadIssue { line, message }),
                None => records.push(r),
            },
        }
    }
    Ok((records, issues))
}

fn label_problem(text: &str, s: &LabelledSecret) -> Option<String> {
    if SensitiveKind::parse(&s.kind).is_none() {
        Some(format!("unknown secret type {:?}", s.kind))
    } else if s.value.is_empty() || !text.contains(&s.value) {
        Some(format!("secret {:?} is not in the text", s.value))
    } else {
        None
    }
}

/// Detection of one secret type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedactionTypeReport {
    /// The type's name (`api_key`, `password`, ...).
    pub kind: String,
    /// Labelled secrets of the type whose text is gone from the redacted output.
    pub removed: Rate,
    /// Labelled secrets of the type overlapped by a span of the same type.
    pub typed: Rate,
    /// Detector spans of the type that overlap a labelled secret of the type.
    pub precision: Rate,
}

/// Redaction quality on a labelled secrets set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedactionEval {
    pub records: usize,
    /// Labelled secrets in all.
    pub secrets: usize,
    pub by_type: Vec<RedactionTypeReport>,
    /// All labelled secrets: removed from the output.
    pub removed: Rate,
    /// All detector spans: overlapping some labelled secret (of any type).
    pub precision: Rate,
    /// Hard negatives (no secret) whose text was redacted anywhere.
    pub hard_negatives_redacted: Rate,
    /// Records (with or without secrets) whose output still holds a labelled secret.
    pub records_leaking: Rate,
}

/// Byte ranges of every occurrence of `value` in `text`.
fn occurrences(text: &str, value: &str) -> Vec<(usize, usize)> {
    text.match_indices(value)
        .map(|(at, v)| (at, at + v.len()))
        .collect()
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

#[derive(Default)]
struct Tally {
    secrets: usize,
    removed: usize,
    typed: usize,
    spans: usize,
    spans_right: usize,
}

/// Evaluates the write path's redaction on `records` (see the module docs).
pub fn evaluate_redaction(records: &[SecretRecord]) -> RedactionEval {
    let mut by_kind: BTreeMap<&'static str, Tally> = SensitiveKind::ALL
        .iter()
        .map(|k| (k.as_str(), Tally::default()))
        .collect();
    let (mut spans, mut spans_right) = (0, 0);
    let (mut negatives, mut negatives_redacted, mut leaking) = (0, 0, 0);
    for r in records {
        let found = find_sensitive(&r.text);
        let output = redact(&r.text, &found);
        let labelled: Vec<(&str, Vec<(usize, usize)>)> = r
            .secrets
            .iter()
            .map(|s| (s.kind.as_str(), occurrences(&r.text, &s.value)))
            .collect();
        let mut leaked = false;
        for (s, (kind, at)) in r.secrets.iter().zip(&labelled) {
            let Some(t) = by_kind.get_mut(*kind) else {
                continue;
            };
            t.secrets += 1;
            if output.contains(&s.value) {
                leaked = true;
            } else {
                t.removed += 1;
            }
            if found.iter().any(|f| {
                f.kind.as_str() == *kind && at.iter().any(|&o| overlaps(o, (f.start, f.end)))
            }) {
                t.typed += 1;
            }
        }
        for f in &found {
            let span = (f.start, f.end);
            let hits_any = labelled
                .iter()
                .any(|(_, at)| at.iter().any(|&o| overlaps(o, span)));
            let hits_own = labelled
                .iter()
                .any(|(k, at)| *k == f.kind.as_str() && at.iter().any(|&o| overlaps(o, span)));
            spans += 1;
            spans_right += usize::from(hits_any);
            if let Some(t) = by_kind.get_mut(f.kind.as_str()) {
                t.spans += 1;
                t.spans_right += usize::from(hits_own);
            }
        }
        if r.hard_negative && r.secrets.is_empty() {
            negatives += 1;
            negatives_redacted += usize::from(!found.is_empty());
        }
        leaking += usize::from(leaked);
    }
    let secrets: usize = by_kind.values().map(|t| t.secrets).sum();
    let removed: usize = by_kind.values().map(|t| t.removed).sum();
    RedactionEval {
        records: records.len(),
        secrets,
        by_type: by_kind
            .iter()
            .map(|(kind, t)| RedactionTypeReport {
                kind: (*kind).to_owned(),
                removed: wilson(t.removed, t.secrets),
                typed: wilson(t.typed, t.secrets),
                precision: wilson(t.spans_right, t.spans),
            })
            .collect(),
        removed: wilson(removed, secrets),
        precision: wilson(spans_right, spans),
        hard_negatives_redacted: wilson(negatives_redacted, negatives),
        records_leaking: wilson(leaking, records.len()),
    }
}

/// What redaction got wrong on one record: labelled secrets still in the output, and detector
/// spans that overlap no labelled secret (with the text they covered).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedactionMistake {
    pub id: String,
    pub text: String,
    pub redacted: String,
    /// `(type, value)` of every labelled secret the output still contains verbatim.
    pub leaked: Vec<(String, String)>,
    /// `(detected type, covered text)` of every span on no labelled secret.
    pub false_spans: Vec<(String, String)>,
}

/// The records of `records` where redaction leaked a secret or redacted something unlabelled,
/// for studying a development set (never a held-out one).
pub fn redaction_mistakes(records: &[SecretRecord]) -> Vec<RedactionMistake> {
    let mut out = Vec::new();
    for r in records {
        let found = find_sensitive(&r.text);
        let redacted = redact(&r.text, &found);
        let leaked: Vec<(String, String)> = r
            .secrets
            .iter()
            .filter(|s| redacted.contains(&s.value))
            .map(|s| (s.kind.clone(), s.value.clone()))
            .collect();
        let false_spans: Vec<(String, String)> = found
            .iter()
            .filter(|f| {
                !r.secrets.iter().any(|s| {
                    occurrences(&r.text, &s.value)
                        .iter()
                        .any(|&o| overlaps(o, (f.start, f.end)))
                })
            })
            .map(|f| {
                (
                    f.kind.as_str().to_owned(),
                    r.text[f.start..f.end].to_owned(),
                )
            })
            .collect();
        if !leaked.is_empty() || !false_spans.is_empty() {
            out.push(RedactionMistake {
                id: r.id.clone(),
                text: r.text.clone(),
                redacted,
                leaked,
                false_spans,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(text: &str, secrets: &[(&str, &str)], hard_negative: bool) -> SecretRecord {
        SecretRecord {
            id: "r".into(),
            language: "en".into(),
            text: text.into(),
            secrets: secrets
                .iter()
                .map(|(k, v)| LabelledSecret {
                    kind: (*k).into(),
                    value: (*v).into(),
                })
                .collect(),
            hard_negative,
        }
    }

    #[test]
    fn counts_removal_type_and_precision_per_type() {
        let records = [
            // An email the detector finds: removed, typed, one right span.
            record(
                "write to ana.lopez@example.org today",
                &[("email", "ana.lopez@example.org")],
                false,
            ),
            // A secret labelled with a type, in a text the detector finds nothing in.
            record("the door code is banana", &[("password", "banana")], false),
            // No secret, but an email-shaped string the detector will redact: a wrong span.
            record("contact support@example.com for help", &[], true),
        ];
        let e = evaluate_redaction(&records);
        assert_eq!((e.records, e.secrets), (3, 2));
        let email = e.by_type.iter().find(|t| t.kind == "email").unwrap();
        assert_eq!((email.removed.hits, email.removed.n), (1, 1));
        assert_eq!((email.typed.hits, email.typed.n), (1, 1));
        assert_eq!((email.precision.hits, email.precision.n), (1, 2));
        let password = e.by_type.iter().find(|t| t.kind == "password").unwrap();
        assert_eq!((password.removed.hits, password.removed.n), (0, 1));
        assert_eq!((password.precision.hits, password.precision.n), (0, 0));
        assert_eq!((e.removed.hits, e.removed.n), (1, 2));
        assert_eq!((e.precision.hits, e.precision.n), (1, 2));
        assert_eq!(
            (e.hard_negatives_redacted.hits, e.hard_negatives_redacted.n),
            (1, 1)
        );
        assert_eq!((e.records_leaking.hits, e.records_leaking.n), (1, 3));

        // The same records' mistakes: the leaked password and the unlabelled e-mail.
        let m = redaction_mistakes(&records);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].leaked, [("password".into(), "banana".into())]);
        assert!(m[0].false_spans.is_empty());
        assert_eq!(
            m[1].false_spans,
            [("email".into(), "support@example.com".into())]
        );
        assert_eq!(m[1].redacted, "contact [REDACTED:email] for help");
    }

    #[test]
    fn loading_reports_bad_labels_as_issues() {
        let dir = tempfile::tempdir().unwrap();
        let lines = [
            r#"{"id":"a","language":"en","text":"pin 1234","secrets":[{"type":"password","value":"1234"}]}"#,
            r#"{"id":"b","language":"en","text":"pin 1234","secrets":[{"type":"pin","value":"1234"}]}"#,
            r#"{"id":"c","language":"en","text":"pin 1234","secrets":[{"type":"password","value":"9999"}]}"#,
            "not json",
        ];
        std::fs::write(dir.path().join("corpus.jsonl"), lines.join("\n")).unwrap();
        let (records, issues) = load_secrets(dir.path()).unwrap();
        assert_eq!(records.len(), 1);
        let lines: Vec<usize> = issues.iter().map(|i| i.line).collect();
        assert_eq!(lines, [2, 3, 4]);
        assert!(issues[0].message.contains("pin"), "{issues:?}");
    }
}
