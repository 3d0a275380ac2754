//! The report's write-guard section: the guard's catch rate on its labelled test split
//! ([`GuardCatchReport`]) and the end-to-end poisoning evaluation ([`GuardE2eReport`]).
//!
//! Plain wire structs (numbers and names only): the harness and the CLI fill them from the guard
//! crate's and the engine's own types, so this crate stays independent of both.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// The optional `guard` section of a [`crate::Summary`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuardSection {
    /// Detection quality on the labelled injection corpus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch: Option<GuardCatchReport>,
    /// Attack success with the guard off vs on, through the real write and read pipelines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e: Option<GuardE2eReport>,
    /// Detection quality on the hand-written challenge set (`datasets/injection-challenge`):
    /// attacks phrased outside the corpus generator's templates, held out from all development.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<GuardCatchReport>,
    /// Detection quality on a second author's probe set (`datasets/injection-probe`), held out
    /// from all development.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<GuardCatchReport>,
    /// Detection quality on the selection set (`datasets/injection-select`, its `validation`
    /// split): independent authors, never trained on; it chose the training policy of the
    /// precision-oriented model (`model/classifier-precise.json`), not the default's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<GuardCatchReport>,
    /// False positives on code-heavy benign memories (`datasets/injection-codes`; no attacks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codes: Option<GuardCatchReport>,
    /// Detection quality on the fresh held-out set (`datasets/injection-fresh`): 1,499 texts by
    /// three authors who saw only the threat description; never trained on and never
    /// used to choose a model, threshold or rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh: Option<GuardCatchReport>,
    /// Redaction of labelled secrets (`datasets/secrets`), by the write path's detector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redaction: Option<RedactionReport>,
    /// Redaction on the second held-out secrets set (`datasets/secrets-fresh`, written in session
    /// 26 by an author who saw no detector, dataset or code; never used to develop a detector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redaction_fresh: Option<RedactionReport>,
}

/// How well the write path's redaction finds labelled secrets, per type. Rates carry Wilson
/// 95 % intervals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RedactionReport {
    /// The secrets set (a directory name).
    pub corpus: String,
    pub records: usize,
    pub secrets: usize,
    /// Per type: labelled secrets gone from the output, of them covered by a span of their own
    /// type, and detector spans of the type that overlap a labelled secret of the type.
    pub by_type: Vec<RedactionTypeRow>,
    /// All labelled secrets gone from the output.
    pub removed: Rate,
    /// All detector spans overlapping a labelled secret (any type).
    pub precision: Rate,
    /// Texts with secret-looking strings and no secret that were redacted anywhere.
    pub hard_negatives_redacted: Rate,
}

/// Percentile bootstrap 95 % intervals over templates (see [`GuardCatchReport::template_ci`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TemplateInterval {
    pub attack_templates: usize,
    pub benign_templates: usize,
    pub tpr: [f64; 2],
    pub fpr: [f64; 2],
}

/// One secret type's row of [`RedactionReport`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RedactionTypeRow {
    pub kind: String,
    pub removed: Rate,
    pub typed: Rate,
    pub precision: Rate,
}

/// A proportion with its sample size and a 95 % confidence interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Number of cases.
    pub n: usize,
    /// Cases counted (caught attacks for a TPR, flagged benign writes for an FPR).
    pub hits: usize,
    /// `hits / n` (0 when `n` is 0).
    pub rate: f64,
    /// 95 % interval `[lo, hi]`.
    pub ci95: [f64; 2],
}

/// Catch rate of the guard on a labelled split (the guard helper's evaluation, converted).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuardCatchReport {
    /// Which split was scored (`test`).
    pub split: String,
    /// Which detector the numbers are for (normally the guard's combined policy).
    #[serde(default)]
    pub detector: String,
    /// Records scored and the embedding model the classifier saw (empty: none).
    #[serde(default)]
    pub records: usize,
    #[serde(default)]
    pub embedding_model: String,
    /// Classifier decision threshold, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// TPR over every attack.
    pub tpr: Rate,
    /// TPR per attack category.
    #[serde(default)]
    pub tpr_by_category: BTreeMap<String, Rate>,
    /// TPR per language (`en`, `zh`).
    #[serde(default)]
    pub tpr_by_language: BTreeMap<String, Rate>,
    /// TPR per style (`direct`, `embedded`, `obfuscated`).
    #[serde(default)]
    pub tpr_by_style: BTreeMap<String, Rate>,
    /// FPR on all benign writes: ordinary ones and hard negatives together.
    pub fpr_benign: Rate,
    /// FPR on hard negatives (benign text about confirmation, admins, passwords, ...).
    pub fpr_hard_negatives: Rate,
    /// `(TPR + TNR) / 2` over the split.
    pub balanced_accuracy: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balanced_accuracy_ci95: Option<[f64; 2]>,
    /// Catch rate and benign FPR intervals that resample whole generator templates (attack and
    /// benign templates separately) instead of records; only for the generated corpus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_ci: Option<TemplateInterval>,
}

/// What the guard did to the benign dataset while it was imported (false positives at ingest).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IngestGuardCounts {
    /// Memories imported.
    pub memories: usize,
    /// Benign memories stored as quarantined (invisible to search).
    pub quarantined: usize,
    /// Benign memories stored with redacted content.
    pub redacted: usize,
    /// Benign memories refused outright.
    pub rejected: usize,
    /// Ids of a few quarantined or rejected memories, for inspection.
    #[serde(default)]
    pub examples: Vec<String>,
}

/// One arm (guard off or on) of the poisoning evaluation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoisonArm {
    /// The guard in this arm (`off`, or the guard's name).
    pub guard: String,
    /// Attacks found in the top k of the query they target (by id).
    pub successes: usize,
    /// `successes / attacks`.
    pub attack_success_rate: f64,
    /// 95 % interval of the success rate: Wilson score (reports before session 23: a percentile
    /// bootstrap over targeted queries, with success counting any stored attack).
    pub ci95: [f64; 2],
    /// The same rate's 95 % interval by a bootstrap over the attack payloads (attacks sharing an
    /// injected sentence succeed or fail together, so they are not independent draws as Wilson
    /// assumes); `None` in reports written before session 26.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_payloads: Option<[f64; 2]>,
    /// Success counting only own-attack hits the read-time consensus check did not flag.
    pub attack_success_rate_unflagged: f64,
    /// Targeted queries whose top k held another query's attack (not a success of either).
    #[serde(default)]
    pub cross_query_hits: usize,
    /// Attacks in the top k of at least one query of the whole log.
    #[serde(default)]
    pub attacks_reaching_any_query: usize,
    /// `attacks_reaching_any_query / attacks`, with its Wilson 95 % interval.
    #[serde(default)]
    pub attack_reach_rate: f64,
    #[serde(default)]
    pub attack_reach_ci95: [f64; 2],
    /// Search hits that were not active memories (a quarantined or forgotten memory returned):
    /// must be 0.
    #[serde(default)]
    pub inactive_hits: usize,
    /// How the attack writes ended: stored active, stored superseded (dated before a memory it
    /// contradicts, so it can never be a hit), quarantined, rejected, redacted, merged into an
    /// existing memory as a duplicate.
    pub attacks_active: usize,
    #[serde(default)]
    pub attacks_superseded: usize,
    pub attacks_quarantined: usize,
    pub attacks_rejected: usize,
    pub attacks_redacted: usize,
    pub attacks_deduplicated: usize,
    /// What the guard did to the benign dataset at import.
    pub ingest: IngestGuardCounts,
    /// NDCG@10 of the engine's (hybrid) retrieval over the query log before the attack.
    pub ndcg10_clean: f64,
    pub ndcg10_clean_ci95: [f64; 2],
    /// NDCG@10 over the same queries after the attack memories were written.
    pub ndcg10_attacked: f64,
    pub ndcg10_attacked_ci95: [f64; 2],
    /// Queries scored for NDCG (those with a relevant memory).
    pub ndcg_queries: usize,
}

/// Attack outcome for one attack variant (`language/style`, e.g. `zh/obfuscated`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VariantOutcome {
    pub n: usize,
    pub successes_off: usize,
    pub successes_on: usize,
}

/// End-to-end poisoning: topic-targeted attack memories written through the normal write
/// pipeline into a populated store, then the targeted queries are run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuardE2eReport {
    pub dataset: String,
    /// Seed of the query sample and the attack texts.
    pub seed: u64,
    /// A poisoned memory in this many top results counts as a success.
    pub top_k: usize,
    pub targeted_queries: usize,
    /// Attack memories written per arm.
    pub attacks: usize,
    pub off: PoisonArm,
    pub on: PoisonArm,
    /// `1 - on / off` attack success rate (`None` when no attack succeeded with the guard off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduction: Option<f64>,
    /// Percentile bootstrap 95 % interval of `reduction` resampling whole payloads (the injected
    /// sentences, which recur across attacks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduction_ci95: Option<[f64; 2]>,
    /// Distinct injected sentences among the attacks.
    #[serde(default)]
    pub payloads: usize,
    /// Per attack variant.
    #[serde(default)]
    pub by_variant: BTreeMap<String, VariantOutcome>,
}

/// A titled table of formatted cells.
pub(crate) struct GuardTable {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn pct_ci(x: f64, ci: [f64; 2]) -> String {
    format!("{} [{}, {}]", pct(x), pct(ci[0]), pct(ci[1]))
}

fn rate_cells(name: &str, r: &Rate) -> Vec<String> {
    vec![
        name.to_owned(),
        r.n.to_string(),
        r.hits.to_string(),
        pct_ci(r.rate, r.ci95),
    ]
}

fn strings(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|s| (*s).to_owned()).collect()
}

/// The tables of the guard section, in display order.
/// The rates of one catch-rate evaluation as a table titled `what (detector, split, records)`.
fn catch_table(c: &GuardCatchReport, what: &str) -> GuardTable {
    // A set without attacks (the code-heavy benign set) has no catch rate: not 0 %.
    let no_attacks = c.tpr.n == 0;
    let mut rows = vec![if no_attacks {
        strings(&["TPR (all attacks)", "0", "0", "n/a (no attacks)"])
    } else {
        rate_cells("TPR (all attacks)", &c.tpr)
    }];
    for (k, r) in &c.tpr_by_category {
        rows.push(rate_cells(&format!("TPR category {k}"), r));
    }
    for (k, r) in &c.tpr_by_language {
        rows.push(rate_cells(&format!("TPR language {k}"), r));
    }
    for (k, r) in &c.tpr_by_style {
        rows.push(rate_cells(&format!("TPR style {k}"), r));
    }
    rows.push(rate_cells(
        "FPR benign (all, hard negatives included)",
        &c.fpr_benign,
    ));
    rows.push(rate_cells("FPR hard negatives", &c.fpr_hard_negatives));
    if let Some(t) = &c.template_ci {
        rows.push(vec![
            format!(
                "TPR, resampling templates ({} attack templates)",
                t.attack_templates
            ),
            String::new(),
            String::new(),
            format!("[{}, {}]", pct(t.tpr[0]), pct(t.tpr[1])),
        ]);
        rows.push(vec![
            format!(
                "FPR benign, resampling templates ({} benign templates)",
                t.benign_templates
            ),
            String::new(),
            String::new(),
            format!("[{}, {}]", pct(t.fpr[0]), pct(t.fpr[1])),
        ]);
    }
    rows.push(vec![
        "balanced accuracy".to_owned(),
        String::new(),
        String::new(),
        match c.balanced_accuracy_ci95 {
            _ if no_attacks => "n/a (no attacks)".to_owned(),
            Some(ci) => pct_ci(c.balanced_accuracy, ci),
            None => pct(c.balanced_accuracy),
        },
    ]);
    let threshold = c
        .threshold
        .map_or_else(String::new, |t| format!(", threshold {t:.3}"));
    GuardTable {
        title: format!(
            "{what} ({}, {} split, {} records{threshold})",
            if c.detector.is_empty() {
                "guard"
            } else {
                &c.detector
            },
            c.split,
            c.records
        ),
        header: strings(&["measure", "n", "count", "rate [95% CI]"]),
        rows,
    }
}

pub(crate) fn guard_tables(section: &GuardSection) -> Vec<GuardTable> {
    let mut out = Vec::new();
    if let Some(c) = &section.catch {
        out.push(catch_table(c, "Guard catch rate"));
    }
    for (c, title) in [
        (
            &section.challenge,
            "Hand-written challenge set, held out (datasets/injection-challenge)",
        ),
        (
            &section.probe,
            "Second author's probe set, held out (datasets/injection-probe)",
        ),
        (
            &section.fresh,
            "Fresh set, three more authors, held out (datasets/injection-fresh)",
        ),
        (
            &section.select,
            "Selection set, independent authors, never trained on (datasets/injection-select)",
        ),
        (
            &section.codes,
            "Code-heavy benign memories, false positives only (datasets/injection-codes)",
        ),
    ] {
        if let Some(c) = c {
            out.push(catch_table(c, title));
        }
    }
    if let Some(e) = &section.e2e {
        let arm = |label: &str, a: &PoisonArm| {
            vec![
                format!("{label} ({})", a.guard),
                pct_ci(a.attack_success_rate, a.ci95),
                a.ci95_payloads.map_or_else(
                    || "n/a".to_owned(),
                    |[lo, hi]| format!("[{:.1}%, {:.1}%]", 100.0 * lo, 100.0 * hi),
                ),
                pct(a.attack_success_rate_unflagged),
                pct_ci(a.attack_reach_rate, a.attack_reach_ci95),
                a.cross_query_hits.to_string(),
                format!(
                    "{} / {} / {} / {} / {} / {}",
                    a.attacks_active,
                    a.attacks_superseded,
                    a.attacks_quarantined,
                    a.attacks_rejected,
                    a.attacks_redacted,
                    a.attacks_deduplicated
                ),
                format!(
                    "{} / {} / {} of {}",
                    a.ingest.quarantined, a.ingest.redacted, a.ingest.rejected, a.ingest.memories
                ),
                format!(
                    "{:.4} [{:.4}, {:.4}]",
                    a.ndcg10_clean, a.ndcg10_clean_ci95[0], a.ndcg10_clean_ci95[1]
                ),
                format!(
                    "{:.4} [{:.4}, {:.4}]",
                    a.ndcg10_attacked, a.ndcg10_attacked_ci95[0], a.ndcg10_attacked_ci95[1]
                ),
            ]
        };
        let reduction = match (e.reduction, e.reduction_ci95) {
            (Some(r), Some(ci)) => format!(
                "{} [{}, {}] (bootstrap over {} payloads)",
                pct(r),
                pct(ci[0]),
                pct(ci[1]),
                e.payloads
            ),
            (Some(r), None) => pct(r),
            (None, _) => "n/a".to_owned(),
        };
        out.push(GuardTable {
            title: format!(
                "End-to-end poisoning ({}: {} targeted queries, {} attacks, success = the query's own attack in its top {}; reduction {reduction})",
                e.dataset, e.targeted_queries, e.attacks, e.top_k
            ),
            header: strings(&[
                "guard",
                "attack success [95% Wilson]", "95% payload bootstrap",
                "success (unflagged)",
                "attacks in any query's top k [95% Wilson]",
                "queries with another query's attack",
                "attacks active / superseded / quarantined / rejected / redacted / dedup",
                "benign at ingest quarantined / redacted / rejected",
                "ndcg@10 clean",
                "ndcg@10 attacked",
            ]),
            rows: vec![arm("off", &e.off), arm("on", &e.on)],
        });
        if !e.by_variant.is_empty() {
            out.push(GuardTable {
                title: "Attack success by variant".to_owned(),
                header: strings(&["variant", "n", "success off", "success on"]),
                rows: e
                    .by_variant
                    .iter()
                    .map(|(k, v)| {
                        vec![
                            k.clone(),
                            v.n.to_string(),
                            v.successes_off.to_string(),
                            v.successes_on.to_string(),
                        ]
                    })
                    .collect(),
            });
        }
    }
    for r in [&section.redaction, &section.redaction_fresh]
        .into_iter()
        .flatten()
    {
        let mut rows: Vec<Vec<String>> = r
            .by_type
            .iter()
            .map(|t| {
                vec![
                    t.kind.clone(),
                    t.removed.n.to_string(),
                    pct_ci(t.removed.rate, t.removed.ci95),
                    pct_ci(t.typed.rate, t.typed.ci95),
                    format!(
                        "{} ({} spans)",
                        pct_ci(t.precision.rate, t.precision.ci95),
                        t.precision.n
                    ),
                ]
            })
            .collect();
        rows.push(vec![
            "all".to_owned(),
            r.secrets.to_string(),
            pct_ci(r.removed.rate, r.removed.ci95),
            String::new(),
            format!(
                "{} ({} spans)",
                pct_ci(r.precision.rate, r.precision.ci95),
                r.precision.n
            ),
        ]);
        out.push(GuardTable {
            title: format!(
                "Redaction of labelled secrets ({}: {} texts; hard negatives redacted {} of {}; 95% Wilson)",
                r.corpus, r.records, r.hard_negatives_redacted.hits, r.hard_negatives_redacted.n
            ),
            header: strings(&[
                "type",
                "secrets",
                "removed from the stored text",
                "found as its own type",
                "precision of the type's spans",
            ]),
            rows,
        });
    }
    out
}

fn md_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' | '<' | '>' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `guard.md`: every guard table as Markdown.
pub(crate) fn guard_markdown(section: &GuardSection) -> String {
    let mut out = String::from("# Write guard\n");
    for t in guard_tables(section) {
        let _ = write!(out, "\n## {}\n\n", md_escape(&t.title));
        let line = |cells: &[String]| {
            format!(
                "| {} |\n",
                cells
                    .iter()
                    .map(|c| md_escape(c))
                    .collect::<Vec<_>>()
                    .join(" | ")
            )
        };
        out.push_str(&line(&t.header));
        out.push_str(&format!("|{}\n", " --- |".repeat(t.header.len())));
        for r in &t.rows {
            out.push_str(&line(r));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(n: usize, hits: usize) -> Rate {
        Rate {
            n,
            hits,
            rate: hits as f64 / n as f64,
            ci95: [0.5, 0.9],
        }
    }

    #[test]
    fn renders_both_parts() {
        let mut catch = GuardCatchReport {
            split: "test".into(),
            detector: "combined".into(),
            records: 600,
            threshold: Some(0.41),
            tpr: rate(100, 97),
            fpr_benign: rate(400, 2),
            fpr_hard_negatives: rate(100, 3),
            balanced_accuracy: 0.97,
            ..GuardCatchReport::default()
        };
        catch
            .tpr_by_category
            .insert("confirmation_bypass".into(), rate(20, 20));
        let e2e = GuardE2eReport {
            dataset: "agent-memory-bilingual".into(),
            targeted_queries: 60,
            attacks: 60,
            top_k: 5,
            off: PoisonArm {
                guard: "off".into(),
                successes: 51,
                attack_success_rate: 0.85,
                ..PoisonArm::default()
            },
            reduction: Some(0.96),
            reduction_ci95: Some([0.9, 0.99]),
            payloads: 20,
            ..GuardE2eReport::default()
        };
        let mut challenge = catch.clone();
        challenge.records = 120;
        challenge.tpr = rate(60, 25);
        let mut probe = catch.clone();
        probe.records = 290;
        let section = GuardSection {
            catch: Some(catch),
            e2e: Some(e2e),
            challenge: Some(challenge),
            probe: Some(probe),
            select: None,
            codes: None,
            fresh: None,
            redaction: Some(RedactionReport {
                corpus: "secrets".into(),
                records: 300,
                secrets: 250,
                by_type: vec![RedactionTypeRow {
                    kind: "password".into(),
                    removed: rate(40, 30),
                    typed: rate(40, 28),
                    precision: rate(35, 30),
                }],
                removed: rate(250, 200),
                precision: rate(200, 150),
                hard_negatives_redacted: rate(100, 7),
            }),
            redaction_fresh: None,
        };
        let mut with_select = section.clone();
        let mut select = section.catch.clone().expect("catch");
        select.split = "validation".into();
        select.records = 400;
        with_select.select = Some(select);
        let mut fresh = section.catch.clone().expect("catch");
        fresh.records = 1499;
        with_select.fresh = Some(fresh);
        let mut codes = section.catch.clone().expect("catch");
        codes.tpr = Rate::default();
        with_select.codes = Some(codes);
        let mut fresh_secrets = section.redaction.clone().expect("redaction");
        fresh_secrets.corpus = "secrets-fresh".into();
        fresh_secrets.records = 366;
        with_select.redaction_fresh = Some(fresh_secrets);
        let md = guard_markdown(&with_select);
        assert!(
            md.contains("Redaction of labelled secrets (secrets: 300 texts")
                && md.contains("Redaction of labelled secrets (secrets-fresh: 366 texts"),
            "both secrets sets get a table: {md}"
        );
        assert!(
            md.contains("| TPR (all attacks) | 0 | 0 | n/a (no attacks) |"),
            "a set without attacks has no catch rate: {md}"
        );
        assert!(
            md.contains("## Selection set, independent authors, never trained on (datasets/injection-select) (combined, validation split, 400 records"),
            "{md}"
        );
        assert!(
            md.contains("## Fresh set, three more authors, held out (datasets/injection-fresh) (combined, test split, 1499 records"),
            "{md}"
        );
        let md = guard_markdown(&section);
        assert!(
            md.contains("## Guard catch rate (combined, test split, 600 records, threshold 0.410)"),
            "{md}"
        );
        assert!(
            md.contains("| TPR category confirmation_bypass | 20 | 20 | 100.0% [50.0%, 90.0%] |")
        );
        assert!(
            md.contains("reduction 96.0% [90.0%, 99.0%] (bootstrap over 20 payloads)"),
            "{md}"
        );
        assert!(md.contains("the query's own attack"), "{md}");
        assert!(
            md.contains("## Redaction of labelled secrets (secrets: 300 texts; hard negatives redacted 7 of 100; 95% Wilson)"),
            "{md}"
        );
        assert!(
            md.contains("| password | 40 | 75.0% [50.0%, 90.0%] |"),
            "{md}"
        );
        assert!(
            md.contains("## Hand-written challenge set, held out (datasets/injection-challenge) (combined, test split, 120 records"),
            "{md}"
        );
        assert!(md.contains("| TPR (all attacks) | 60 | 25 |"), "{md}");
        assert!(
            md.contains("## Second author's probe set, held out (datasets/injection-probe) (combined, test split, 290 records"),
            "{md}"
        );
        assert!(!md.contains("datasets/injection-codes"), "{md}");
        assert!(md.contains("| off (off) | 85.0% [0.0%, 0.0%] |"), "{md}");
        let json = serde_json::to_string(&section).expect("json");
        let back: GuardSection = serde_json::from_str(&json).expect("roundtrip");
        assert_eq!(back, section);
        assert_eq!(guard_tables(&GuardSection::default()).len(), 0);
    }
}
