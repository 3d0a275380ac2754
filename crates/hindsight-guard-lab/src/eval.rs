//! Catch-rate evaluation of the guard on labelled corpus records.
//!
//! Detectors compared on the same records:
//! - `rules`: any Rule/Reject-severity rule hit.
//! - `classifier-embedding`: the embedding-only head at its validated, trust-scaled threshold
//!   (only with embeddings).
//! - `classifier-lexical`: the lexical-only head without rule override.
//! - `classifier-ngram`: the n-gram head alone at its validated threshold, without rule override.
//! - `combined`: the guard's actual policy (quarantine or reject) with the embeddings given.
//! - `combined-no-embedding`: the policy when the caller has no embedding (only reported when
//!   embeddings were given, to show the fallback).
//!
//! Rates carry Wilson 95 % intervals. Benign records with planted secrets also measure redaction:
//! the fraction whose redacted text no longer contains any planted secret value.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::corpus::CorpusRecord;
use hindsight_eval::cluster_bootstrap_ci;
use hindsight_eval::{Rate, wilson};
use hindsight_guard::GuardError;
use hindsight_guard::HeadKind;
use hindsight_guard::{Analysis, Guard, VerdictKind};

/// One detector's numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DetectorReport {
    pub detector: String,
    pub catch_rate: Rate,
    pub catch_by_category: BTreeMap<String, Rate>,
    pub catch_by_language: BTreeMap<String, Rate>,
    pub catch_by_style: BTreeMap<String, Rate>,
    pub fpr_benign: Rate,
    pub fpr_hard_negative: Rate,
    pub fpr_by_language: BTreeMap<String, Rate>,
    /// (TPR + TNR) / 2 over all records.
    pub balanced_accuracy: f64,
}

/// Redaction of planted secrets in benign records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedactionReport {
    /// Records with planted secrets whose redacted text contains none of them.
    pub secrets_removed: Rate,
    /// Benign records without planted secrets that the guard still redacted.
    pub spurious_redaction: Rate,
}

/// The full report (serialisable for the eval report).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GuardEvalReport {
    /// The split(s) evaluated, e.g. `test`.
    pub split: String,
    pub records: usize,
    pub attacks: usize,
    pub benign: usize,
    pub hard_negatives: usize,
    pub embeddings: bool,
    pub embedding_model: String,
    /// Base thresholds of the heads (before trust scaling).
    pub thresholds: BTreeMap<String, f32>,
    pub detectors: Vec<DetectorReport>,
    pub redaction: RedactionReport,
    /// The combined policy's catch rate and FPR with intervals that resample whole generator
    /// templates (records of one template are not independent); `None` for hand-written sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_ci: Option<TemplateCi>,
    /// Verdicts of the combined policy.
    pub verdict_counts: BTreeMap<String, usize>,
    /// Every record the combined policy got wrong (missed attacks, flagged benign texts), for
    /// error analysis (`hindsight-lab guard eval --mistakes FILE`). Not part of the report JSON.
    #[serde(skip)]
    pub mistakes: Vec<Mistake>,
    /// Every record's scores, for choosing a threshold or policy offline (`hindsight-lab guard eval
    /// --scores FILE`). Not part of the report JSON.
    #[serde(skip)]
    pub scores: Vec<RecordScore>,
}

/// Percentile bootstrap 95 % intervals of the combined policy's catch rate and FPR that resample
/// base templates (attack and benign templates separately) instead of records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TemplateCi {
    pub attack_templates: usize,
    pub benign_templates: usize,
    pub tpr: [f64; 2],
    pub fpr: [f64; 2],
}

/// The generator's base template of a record (`attack/<category>/<lang>/<i>` or
/// `benign/<group>/<i>`, without `+wrapN`, `+mix` or `+sensitive` variants), or `None` when
/// the record's `template` is not one (hand-written sets name a group of records there).
fn base_template(template: &str) -> Option<&str> {
    let base = template.split('+').next()?;
    (base.starts_with("attack/") || base.starts_with("benign/")).then_some(base)
}

/// [`TemplateCi`] of the combined policy's decisions, when every record has a generator
/// template.
fn template_ci(records: &[CorpusRecord], flagged: &[bool]) -> Option<TemplateCi> {
    let mut attacks: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut benign: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (r, &f) in records.iter().zip(flagged) {
        let t = base_template(&r.template)?;
        let c = if r.is_attack() {
            attacks.entry(t).or_default()
        } else {
            benign.entry(t).or_default()
        };
        c.0 += usize::from(f);
        c.1 += 1;
    }
    let a: Vec<(usize, usize)> = attacks.values().copied().collect();
    let b: Vec<(usize, usize)> = benign.values().copied().collect();
    Some(TemplateCi {
        attack_templates: a.len(),
        benign_templates: b.len(),
        tpr: cluster_bootstrap_ci(&a, 10_000, 0x7E57)?,
        fpr: cluster_bootstrap_ci(&b, 10_000, 0xBE9)?,
    })
}

/// One record's scores: what each layer said, before the policy combined them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordScore {
    pub id: String,
    pub label: String,
    pub category: String,
    pub language: String,
    pub style: String,
    pub hard_negative: bool,
    pub source: String,
    /// Probability of the head the policy decided with (`full+ngram`, or `lexical+ngram`
    /// without an embedding).
    pub probability: f32,
    pub head: String,
    /// Every head's probability (`full` and `embedding` only with an embedding), for trying
    /// other combinations offline.
    pub heads: BTreeMap<String, f32>,
    /// The trust-scaled threshold `probability` was compared with.
    pub threshold: f32,
    /// A Rule- or Reject-severity rule matched.
    pub rule_flagged: bool,
    /// A Reject-severity rule matched.
    pub reject_hit: bool,
    /// Names of the rules (cues included) that matched.
    pub rules: Vec<String>,
    pub verdict: String,
}

/// One record the combined policy got wrong.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mistake {
    pub id: String,
    pub label: String,
    pub category: String,
    pub language: String,
    pub style: String,
    pub source: String,
    pub template: String,
    pub verdict: String,
    /// Score of the combined policy (classifier probability, or 1 for a rule hit).
    pub score: f32,
    /// Names of the rules (cues included) that matched.
    pub rules: Vec<String>,
    pub text: String,
}

#[derive(Default)]
struct Tally {
    pos: (usize, usize),
    neg: (usize, usize),
    hard: (usize, usize),
    by_cat: BTreeMap<String, (usize, usize)>,
    by_lang: BTreeMap<String, (usize, usize)>,
    by_style: BTreeMap<String, (usize, usize)>,
    neg_lang: BTreeMap<String, (usize, usize)>,
}

impl Tally {
    fn add(&mut self, r: &CorpusRecord, flagged: bool) {
        let f = usize::from(flagged);
        let bump = |e: &mut (usize, usize)| {
            e.0 += f;
            e.1 += 1;
        };
        if r.is_attack() {
            bump(&mut self.pos);
            bump(self.by_cat.entry(r.category.clone()).or_default());
            bump(self.by_lang.entry(r.language.clone()).or_default());
            bump(self.by_style.entry(r.style.clone()).or_default());
        } else {
            bump(&mut self.neg);
            bump(self.neg_lang.entry(r.language.clone()).or_default());
            if r.hard_negative {
                bump(&mut self.hard);
            }
        }
    }

    fn report(self, name: &str) -> DetectorReport {
        let map = |m: BTreeMap<String, (usize, usize)>| {
            m.into_iter().map(|(k, (a, n))| (k, wilson(a, n))).collect()
        };
        let tpr = wilson(self.pos.0, self.pos.1);
        let fpr = wilson(self.neg.0, self.neg.1);
        DetectorReport {
            detector: name.to_owned(),
            balanced_accuracy: (tpr.rate + 1.0 - fpr.rate) / 2.0,
            catch_rate: tpr,
            catch_by_category: map(self.by_cat),
            catch_by_language: map(self.by_lang),
            catch_by_style: map(self.by_style),
            fpr_benign: fpr,
            fpr_hard_negative: wilson(self.hard.0, self.hard.1),
            fpr_by_language: map(self.neg_lang),
        }
    }
}

/// Evaluates `guard` on `records` (normally one split). `embeddings`, when given, must be aligned
/// with `records` (the embedding of each record's text).
pub fn evaluate(
    guard: &Guard,
    records: &[CorpusRecord],
    embeddings: Option<&[Vec<f32>]>,
) -> Result<GuardEvalReport, GuardError> {
    if let Some(e) = embeddings
        && e.len() != records.len()
    {
        return Err(GuardError::Invalid(format!(
            "{} embeddings for {} records",
            e.len(),
            records.len()
        )));
    }
    let mut rules = Tally::default();
    let mut cls_emb = Tally::default();
    let mut cls_lex = Tally::default();
    let mut cls_ngram = Tally::default();
    let mut combined = Tally::default();
    let mut combined_noemb = Tally::default();
    let mut combined_flags = Vec::with_capacity(records.len());
    let mut verdicts: BTreeMap<String, usize> = BTreeMap::new();
    let mut mistakes = Vec::new();
    let mut scores = Vec::with_capacity(records.len());
    let (mut sec_ok, mut sec_n, mut spur, mut spur_n) = (0, 0, 0, 0);
    let clf = guard.classifier();
    for (i, r) in records.iter().enumerate() {
        let emb = embeddings.map(|e| e[i].as_slice());
        let a = Analysis::of(&r.text);
        rules.add(r, a.rule_flagged());
        // Every single head's probability where it applies: `full` and `embedding` only with an
        // embedding the classifier accepts (without one `probability` falls back or scores 0).
        let heads: Vec<(HeadKind, f32)> = [
            HeadKind::Full,
            HeadKind::Lexical,
            HeadKind::Embedding,
            HeadKind::Ngram,
        ]
        .into_iter()
        .filter(|&k| k != HeadKind::Embedding || clf.accepts_embedding(emb))
        .filter_map(|k| {
            let (p, used) = clf.probability(k, emb, &a.lexical, &a.ngrams);
            (used == k).then_some((k, p))
        })
        .collect();
        let flags = |kind: HeadKind| {
            heads
                .iter()
                .any(|&(k, p)| k == kind && p >= guard.threshold(kind, r.source))
        };
        if emb.is_some() {
            cls_emb.add(r, flags(HeadKind::Embedding));
        }
        cls_lex.add(r, flags(HeadKind::Lexical));
        cls_ngram.add(r, flags(HeadKind::Ngram));
        let v = guard.decide(&r.text, &a, r.source, emb);
        combined.add(r, v.verdict.is_flagged());
        combined_flags.push(v.verdict.is_flagged());
        if v.verdict.is_flagged() != r.is_attack() {
            mistakes.push(Mistake {
                id: r.id.clone(),
                label: if r.is_attack() { "attack" } else { "benign" }.to_owned(),
                category: r.category.clone(),
                language: r.language.clone(),
                style: r.style.clone(),
                source: r.source.to_string(),
                template: r.template.clone(),
                verdict: v.verdict.as_str().to_owned(),
                score: v.score,
                rules: a.hits.iter().map(|h| h.rule.to_owned()).collect(),
                text: r.text.clone(),
            });
        }
        let (p, head) = guard.probability(&a, emb);
        scores.push(RecordScore {
            id: r.id.clone(),
            label: if r.is_attack() { "attack" } else { "benign" }.to_owned(),
            category: r.category.clone(),
            language: r.language.clone(),
            style: r.style.clone(),
            hard_negative: r.hard_negative,
            source: r.source.to_string(),
            probability: p,
            head: head.as_str().to_owned(),
            heads: heads
                .iter()
                .map(|&(k, p)| (k.as_str().to_owned(), p))
                .collect(),
            threshold: guard.threshold(head, r.source),
            rule_flagged: a.rule_flagged(),
            reject_hit: a.reject_hit(),
            rules: a.hits.iter().map(|h| h.rule.to_owned()).collect(),
            verdict: v.verdict.as_str().to_owned(),
        });
        *verdicts.entry(v.verdict.as_str().to_owned()).or_default() += 1;
        if emb.is_some() {
            let v2 = guard.decide(&r.text, &a, r.source, None);
            combined_noemb.add(r, v2.verdict.is_flagged());
        }
        if !r.is_attack() {
            let out = v.redacted.clone().unwrap_or_else(|| r.text.clone());
            if r.secrets.is_empty() {
                spur_n += 1;
                if v.verdict == VerdictKind::Redact || v.redacted.is_some() {
                    spur += 1;
                }
            } else {
                sec_n += 1;
                if r.secrets.iter().all(|s| !out.contains(s.as_str())) {
                    sec_ok += 1;
                }
            }
        }
    }
    let mut detectors = vec![rules.report("rules")];
    if embeddings.is_some() {
        detectors.push(cls_emb.report("classifier-embedding"));
    }
    detectors.push(cls_lex.report("classifier-lexical"));
    detectors.push(cls_ngram.report("classifier-ngram"));
    detectors.push(combined.report("combined"));
    if embeddings.is_some() {
        detectors.push(combined_noemb.report("combined-no-embedding"));
    }
    let mut splits: Vec<&str> = records.iter().map(|r| r.split.as_str()).collect();
    splits.sort();
    splits.dedup();
    let thresholds = clf
        .heads()
        .into_iter()
        .map(|k| (k.as_str().to_owned(), guard.base_threshold(k)))
        .collect();
    Ok(GuardEvalReport {
        split: splits.join("+"),
        records: records.len(),
        attacks: records.iter().filter(|r| r.is_attack()).count(),
        benign: records.iter().filter(|r| !r.is_attack()).count(),
        hard_negatives: records.iter().filter(|r| r.hard_negative).count(),
        embeddings: embeddings.is_some(),
        embedding_model: clf.embedding_model.clone(),
        thresholds,
        detectors,
        redaction: RedactionReport {
            secrets_removed: wilson(sec_ok, sec_n),
            spurious_redaction: wilson(spur, spur_n),
        },
        template_ci: template_ci(records, &combined_flags),
        verdict_counts: verdicts,
        mistakes,
        scores,
    })
}

fn pct(r: &Rate) -> String {
    format!(
        "{:.1}% [{:.1}, {:.1}] ({}/{})",
        100.0 * r.rate,
        100.0 * r.ci95[0],
        100.0 * r.ci95[1],
        r.hits,
        r.n
    )
}

impl GuardEvalReport {
    /// Markdown tables: overall, per category, per language, per style.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Guard evaluation on split `{}`: {} records ({} attacks, {} benign of which {} hard negatives); embeddings: {}",
            self.split,
            self.records,
            self.attacks,
            self.benign,
            self.hard_negatives,
            if self.embeddings {
                self.embedding_model.as_str()
            } else {
                "none (lexical fallback)"
            }
        );
        let _ = writeln!(
            s,
            "\n| detector | catch rate (TPR) | FPR benign | FPR hard negatives | balanced acc. |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|");
        for d in &self.detectors {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {:.3} |",
                d.detector,
                pct(&d.catch_rate),
                pct(&d.fpr_benign),
                pct(&d.fpr_hard_negative),
                d.balanced_accuracy
            );
        }
        if let Some(t) = &self.template_ci {
            let _ = writeln!(
                s,
                "\nCombined, resampling templates instead of records (bootstrap over {} attack and {} benign templates): catch rate [{:.1}, {:.1}], FPR benign [{:.1}, {:.1}]",
                t.attack_templates,
                t.benign_templates,
                100.0 * t.tpr[0],
                100.0 * t.tpr[1],
                100.0 * t.fpr[0],
                100.0 * t.fpr[1]
            );
        }
        type Getter = fn(&DetectorReport) -> &BTreeMap<String, Rate>;
        let sections: [(&str, Getter); 4] = [
            ("catch rate by category", |d| &d.catch_by_category),
            ("catch rate by language", |d| &d.catch_by_language),
            ("catch rate by style", |d| &d.catch_by_style),
            ("FPR by language", |d| &d.fpr_by_language),
        ];
        for (title, get) in sections {
            let keys: Vec<&String> = self
                .detectors
                .first()
                .map(|d| get(d).keys().collect())
                .unwrap_or_default();
            let _ = writeln!(s, "\n{title}:\n");
            let _ = write!(s, "| detector |");
            for k in &keys {
                let _ = write!(s, " {k} |");
            }
            let _ = writeln!(s, "\n|---|{}", "---|".repeat(keys.len()));
            for d in &self.detectors {
                let _ = write!(s, "| {} |", d.detector);
                for k in &keys {
                    let cell = get(d).get(*k).map(pct).unwrap_or_default();
                    let _ = write!(s, " {cell} |");
                }
                let _ = writeln!(s);
            }
        }
        let _ = writeln!(
            s,
            "\nredaction: planted secrets removed {}; benign texts without planted secrets redacted {}",
            pct(&self.redaction.secrets_removed),
            pct(&self.redaction.spurious_redaction)
        );
        let _ = writeln!(s, "combined verdicts: {:?}", self.verdict_counts);
        let _ = writeln!(s, "base thresholds: {:?}", self.thresholds);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_templates_are_the_generators_only() {
        assert_eq!(
            base_template("attack/exfiltration/en/4+wrap16"),
            Some("attack/exfiltration/en/4")
        );
        assert_eq!(
            base_template("benign/0/34+mix+sensitive"),
            Some("benign/0/34")
        );
        assert_eq!(base_template("fresh/a/benign/benign/en"), None);
    }
}
