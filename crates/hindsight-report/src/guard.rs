//! The report's write-guard section: the guard's catch rate on its labelled test split
//! ([`GuardCatchReport`]) and the end-to-end poisoning evaluation ([`GuardE2eReport`]).
//!
//! Plain wire structs (numbers and names only): the harness and the CLI fill them from the guard
//! crate's and the engine's own types, so this crate stays independent of both.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hindsight_eval::Rate;
use serde::{Deserialize, Serialize};

/// The optional `guard` section of a [`crate::Summary`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuardSection {
    /// The guard the numbers are for: its model and thresholds.
    #[serde(default)]
    pub model: GuardModelInfo,
    /// Detection on every labelled set the guard's manifest reports, in manifest order.
    #[serde(default)]
    pub sets: Vec<GuardSetReport>,
    /// False positives on benign texts, per set, source and language, each text scored as
    /// written by the user, by the agent and as external text.
    #[serde(default)]
    pub benign_sources: Vec<BenignSourceRow>,
    /// Attack success with the guard off vs on, through the real write and read pipelines, one
    /// per evaluated dataset.
    #[serde(default)]
    pub e2e: Vec<GuardE2eReport>,
    /// Redaction of labelled secrets, per secrets set the manifest reports.
    #[serde(default)]
    pub redaction: Vec<RedactionReport>,
}

/// Which guard was measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuardModelInfo {
    /// The head that decided (`full+ngram`, or `lexical+ngram` without embeddings).
    pub head: String,
    /// The embedding model the classifier saw (empty: none).
    pub embedding_model: String,
    /// The quarantine threshold before trust scaling.
    pub quarantine_threshold: f64,
    /// The suspect band's lower end before trust scaling, when the model has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspect_threshold: Option<f64>,
}

/// A rate with its Wilson interval ([`Rate::ci95`]) and a percentile bootstrap interval that
/// resamples whole clusters (generator templates, dialogues), when records share one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusteredRate {
    #[serde(flatten)]
    pub rate: Rate,
    /// Distinct clusters among the `n` cases (`n` when no two share one).
    pub clusters: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ci95: Option<[f64; 2]>,
}

/// Detection on one labelled set's reported splits.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuardSetReport {
    pub name: String,
    /// Nothing was chosen while looking at these splits: a headline number.
    pub held_out: bool,
    pub provenance: String,
    pub splits: Vec<String>,
    pub attacks: usize,
    pub benign: usize,
    /// Attacks quarantined or rejected, each scored as the source its record names.
    pub caught: ClusteredRate,
    /// The same attacks, every one scored as external text.
    pub caught_as_external: Rate,
    /// Attacks at least flagged suspect (scored as their own source).
    pub caught_or_suspect: Rate,
    #[serde(default)]
    pub caught_by_language: BTreeMap<String, Rate>,
    #[serde(default)]
    pub caught_by_style: BTreeMap<String, Rate>,
    #[serde(default)]
    pub caught_by_category: BTreeMap<String, Rate>,
    /// Benign texts quarantined or rejected, each at its own source.
    pub false_positives: ClusteredRate,
    /// Benign texts flagged suspect (kept and searchable).
    pub suspect: Rate,
    pub hard_negatives: Rate,
}

/// False positives on one source of benign text (a set, or a real source within it) in one
/// language.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BenignSourceRow {
    pub set: String,
    /// The origin within the set (a real corpus's name), or the set itself.
    pub source: String,
    pub language: String,
    pub held_out: bool,
    /// Turns of dialogues (clustered by dialogue) rather than written memories.
    pub conversation: bool,
    /// Quarantined or rejected when written by the user, by the agent, from outside.
    pub as_user: ClusteredRate,
    pub as_agent: ClusteredRate,
    pub as_external: ClusteredRate,
    /// Flagged suspect (kept) when written by the user / from outside.
    pub suspect_as_user: Rate,
    pub suspect_as_external: Rate,
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

/// One secret type's row of [`RedactionReport`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RedactionTypeRow {
    pub kind: String,
    pub removed: Rate,
    pub typed: Rate,
    pub precision: Rate,
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
    /// 95 % interval of the success rate: Wilson score.
    pub ci95: [f64; 2],
    /// The same rate's 95 % interval by a bootstrap over the attack payloads (attacks sharing an
    /// injected sentence succeed or fail together, so they are not independent draws as Wilson
    /// assumes); `None` in summaries that do not carry it.
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

fn strings(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|s| (*s).to_owned()).collect()
}

fn clustered(r: &ClusteredRate) -> String {
    let mut out = format!(
        "{} ({}/{})",
        pct_ci(r.rate.rate, r.rate.ci95),
        r.rate.hits,
        r.rate.n
    );
    if let Some([lo, hi]) = r.cluster_ci95 {
        let _ = write!(out, "; {} clusters [{}, {}]", r.clusters, pct(lo), pct(hi));
    }
    out
}

fn rate_cell(r: &Rate) -> String {
    if r.n == 0 {
        "n/a".to_owned()
    } else {
        format!("{} ({}/{})", pct_ci(r.rate, r.ci95), r.hits, r.n)
    }
}

fn held_out_label(held_out: bool) -> &'static str {
    if held_out {
        "held out"
    } else {
        "seen in development"
    }
}

/// The tables of the guard section, in display order.
pub(crate) fn guard_tables(section: &GuardSection) -> Vec<GuardTable> {
    let mut out = Vec::new();
    if !section.sets.is_empty() {
        let m = &section.model;
        let suspect = m
            .suspect_threshold
            .map_or_else(String::new, |t| format!(", suspect from {t:.3}"));
        out.push(GuardTable {
            title: format!(
                "Attacks caught per set ({} head, quarantine at {:.3}{suspect} before trust scaling; 95% Wilson, and a bootstrap over clusters where records share one)",
                m.head, m.quarantine_threshold
            ),
            header: strings(&[
                "set",
                "role",
                "attacks",
                "caught (quarantine or reject, own source)",
                "caught as external text",
                "caught or suspect",
                "benign",
                "benign quarantined (own source)",
                "benign suspect",
            ]),
            rows: section
                .sets
                .iter()
                .map(|s| {
                    vec![
                        s.name.clone(),
                        held_out_label(s.held_out).to_owned(),
                        s.attacks.to_string(),
                        if s.attacks == 0 {
                            "n/a (no attacks)".to_owned()
                        } else {
                            clustered(&s.caught)
                        },
                        rate_cell(&s.caught_as_external),
                        rate_cell(&s.caught_or_suspect),
                        s.benign.to_string(),
                        if s.benign == 0 {
                            "n/a".to_owned()
                        } else {
                            clustered(&s.false_positives)
                        },
                        rate_cell(&s.suspect),
                    ]
                })
                .collect(),
        });
        let mut rows = Vec::new();
        for s in &section.sets {
            for (what, map) in [
                ("language", &s.caught_by_language),
                ("style", &s.caught_by_style),
                ("category", &s.caught_by_category),
            ] {
                for (k, r) in map {
                    rows.push(vec![s.name.clone(), format!("{what} {k}"), rate_cell(r)]);
                }
            }
        }
        if !rows.is_empty() {
            out.push(GuardTable {
                title: "Attacks caught per set, by language, style and category (own source)"
                    .to_owned(),
                header: strings(&["set", "group", "caught"]),
                rows,
            });
        }
    }
    if !section.benign_sources.is_empty() {
        out.push(GuardTable {
            title: "Benign texts quarantined or rejected, per source and language, as written by each source (95% Wilson; bootstrap over dialogues or templates)".to_owned(),
            header: strings(&[
                "set",
                "source",
                "language",
                "role",
                "as user",
                "as agent",
                "as external",
                "suspect as user",
                "suspect as external",
            ]),
            rows: section
                .benign_sources
                .iter()
                .map(|b| {
                    vec![
                        b.set.clone(),
                        b.source.clone(),
                        b.language.clone(),
                        held_out_label(b.held_out).to_owned(),
                        clustered(&b.as_user),
                        clustered(&b.as_agent),
                        clustered(&b.as_external),
                        rate_cell(&b.suspect_as_user),
                        rate_cell(&b.suspect_as_external),
                    ]
                })
                .collect(),
        });
    }
    for e in &section.e2e {
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
    for r in &section.redaction {
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
    fn renders_sets_sources_poisoning_and_redaction() {
        let clustered = |n, hits, clusters| ClusteredRate {
            rate: rate(n, hits),
            clusters,
            cluster_ci95: Some([0.1, 0.3]),
        };
        let mut set = GuardSetReport {
            name: "heldout-hijack".into(),
            held_out: true,
            provenance: "an author".into(),
            splits: vec!["test".into()],
            attacks: 100,
            benign: 50,
            caught: clustered(100, 90, 100),
            caught_as_external: rate(100, 93),
            caught_or_suspect: rate(100, 97),
            false_positives: clustered(50, 2, 50),
            suspect: rate(50, 1),
            hard_negatives: rate(20, 2),
            ..GuardSetReport::default()
        };
        set.caught_by_language.insert("zh".into(), rate(40, 35));
        let mut codes = set.clone();
        codes.name = "eval-codes".into();
        codes.held_out = false;
        codes.attacks = 0;
        let section = GuardSection {
            model: GuardModelInfo {
                head: "full+ngram".into(),
                embedding_model: "all-MiniLM-L6-v2".into(),
                quarantine_threshold: 0.57,
                suspect_threshold: Some(0.42),
            },
            sets: vec![set, codes],
            benign_sources: vec![BenignSourceRow {
                set: "real-conversations".into(),
                source: "memorybank".into(),
                language: "en".into(),
                held_out: false,
                conversation: true,
                as_user: clustered(256, 0, 3),
                as_agent: clustered(256, 1, 3),
                as_external: clustered(256, 2, 3),
                suspect_as_user: rate(256, 1),
                suspect_as_external: rate(256, 4),
            }],
            e2e: vec![GuardE2eReport {
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
            }],
            redaction: vec![RedactionReport {
                corpus: "redaction-heldout".into(),
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
            }],
        };
        let md = guard_markdown(&section);
        assert!(
            md.contains("quarantine at 0.570, suspect from 0.420 before trust scaling"),
            "{md}"
        );
        assert!(
            md.contains("| heldout-hijack | held out | 100 | 90.0% [50.0%, 90.0%] (90/100); 100 clusters [10.0%, 30.0%] |"),
            "{md}"
        );
        assert!(
            md.contains("| eval-codes | seen in development | 0 | n/a (no attacks) |"),
            "{md}"
        );
        assert!(
            md.contains("| heldout-hijack | language zh | 87.5% [50.0%, 90.0%] (35/40) |"),
            "{md}"
        );
        assert!(
            md.contains("| real-conversations | memorybank | en | seen in development | 0.0% [50.0%, 90.0%] (0/256); 3 clusters [10.0%, 30.0%] |"),
            "{md}"
        );
        assert!(
            md.contains("reduction 96.0% [90.0%, 99.0%] (bootstrap over 20 payloads)"),
            "{md}"
        );
        assert!(
            md.contains("## Redaction of labelled secrets (redaction-heldout: 300 texts; hard negatives redacted 7 of 100; 95% Wilson)"),
            "{md}"
        );
        assert!(
            md.contains("| password | 40 | 75.0% [50.0%, 90.0%] |"),
            "{md}"
        );
        let json = serde_json::to_string(&section).expect("json");
        let back: GuardSection = serde_json::from_str(&json).expect("roundtrip");
        assert_eq!(back, section);
        assert_eq!(guard_tables(&GuardSection::default()).len(), 0);
    }
}
