//! The eval report's guard tables from the manifest's sets: per set, the attacks caught (as the
//! source each record names, and as external text) and the benign texts flagged; per benign
//! source and language, the texts flagged when written by the user, by the agent and from
//! outside. Rates carry Wilson intervals and, where records share a cluster (a generator
//! template, a dialogue), a bootstrap interval that resamples whole clusters.

use std::collections::BTreeMap;

use hindsight_core::Source;
use hindsight_eval::{Rate, cluster_bootstrap_ci, wilson};
use hindsight_guard::{Analysis, Guard, VerdictKind};
use hindsight_report::{BenignSourceRow, ClusteredRate, GuardSetReport};

use crate::corpus::{CorpusRecord, LoadedSet};

/// Resamples of every cluster bootstrap.
const RESAMPLES: usize = 4000;

/// A record's verdicts when written by each source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdicts {
    /// As the source its record names.
    pub own: VerdictKind,
    pub user: VerdictKind,
    pub agent: VerdictKind,
    pub external: VerdictKind,
}

/// Every record's [`Verdicts`]; `embeddings`, when given, holds one vector per record.
pub fn score(
    guard: &Guard,
    records: &[CorpusRecord],
    embeddings: Option<&[Vec<f32>]>,
) -> Vec<Verdicts> {
    records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let a = Analysis::of(&r.text);
            let e = embeddings.and_then(|e| e.get(i)).map(Vec::as_slice);
            let at = |s: Source| guard.decide(&r.text, &a, s, e).verdict;
            Verdicts {
                own: at(r.source),
                user: at(Source::User),
                agent: at(Source::Agent),
                external: at(Source::External),
            }
        })
        .collect()
}

/// The cluster a record shares with others: its dialogue for a conversation turn, its base
/// template for a generated record (`attack/...`, `benign/...`), else the record alone.
fn cluster_of(r: &CorpusRecord) -> &str {
    if r.is_conversational() {
        return &r.template;
    }
    let base = r.template.split('+').next().unwrap_or("");
    if base.starts_with("attack/") || base.starts_with("benign/") {
        base
    } else {
        &r.id
    }
}

/// The rate of `hit` over `cases`, with its cluster bootstrap when clusters hold several cases.
fn clustered<'a>(
    cases: impl Iterator<Item = (&'a CorpusRecord, bool)>,
    seed: u64,
) -> ClusteredRate {
    let mut by: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let (mut n, mut hits) = (0, 0);
    for (r, hit) in cases {
        let c = by.entry(cluster_of(r)).or_default();
        c.0 += usize::from(hit);
        c.1 += 1;
        n += 1;
        hits += usize::from(hit);
    }
    let clusters: Vec<(usize, usize)> = by.into_values().collect();
    let shared = clusters.len() < n;
    ClusteredRate {
        rate: wilson(hits, n),
        clusters: clusters.len(),
        cluster_ci95: shared
            .then(|| cluster_bootstrap_ci(&clusters, RESAMPLES, seed))
            .flatten(),
    }
}

fn rate(cases: impl Iterator<Item = bool>) -> Rate {
    let (mut n, mut k) = (0, 0);
    for hit in cases {
        n += 1;
        k += usize::from(hit);
    }
    wilson(k, n)
}

fn flagged(v: VerdictKind) -> bool {
    v.is_flagged()
}

fn at_least_suspect(v: VerdictKind) -> bool {
    v.is_flagged() || v == VerdictKind::Suspect
}

/// The set's row of the report: only its reported splits count.
pub fn set_report(set: &LoadedSet, verdicts: &[Verdicts]) -> GuardSetReport {
    let reported = set.set.report_splits().unwrap_or_default();
    let all = set.set.report.iter().any(|s| s == "all");
    let rows: Vec<(&CorpusRecord, &Verdicts)> = set
        .records
        .iter()
        .zip(verdicts)
        .filter(|(r, _)| all || reported.contains(&r.split))
        .collect();
    let attacks: Vec<&(&CorpusRecord, &Verdicts)> =
        rows.iter().filter(|(r, _)| r.is_attack()).collect();
    let benign: Vec<&(&CorpusRecord, &Verdicts)> =
        rows.iter().filter(|(r, _)| !r.is_attack()).collect();
    let group = |key: &dyn Fn(&CorpusRecord) -> &str| {
        let mut m: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for (r, v) in &attacks {
            let e = m.entry(key(r).to_owned()).or_default();
            e.0 += usize::from(flagged(v.own));
            e.1 += 1;
        }
        m.into_iter()
            .map(|(k, (hits, n))| (k, wilson(hits, n)))
            .collect::<BTreeMap<_, _>>()
    };
    GuardSetReport {
        name: set.set.name.clone(),
        held_out: set.set.held_out,
        provenance: set.set.provenance.clone(),
        splits: set.set.report.clone(),
        attacks: attacks.len(),
        benign: benign.len(),
        caught: clustered(attacks.iter().map(|(r, v)| (*r, flagged(v.own))), 0x7E57),
        caught_as_external: rate(attacks.iter().map(|(_, v)| flagged(v.external))),
        caught_or_suspect: rate(attacks.iter().map(|(_, v)| at_least_suspect(v.own))),
        caught_by_language: group(&|r| r.language.as_str()),
        caught_by_style: group(&|r| r.style.as_str()),
        caught_by_category: group(&|r| r.category.as_str()),
        false_positives: clustered(benign.iter().map(|(r, v)| (*r, flagged(v.own))), 0xBE9),
        suspect: rate(benign.iter().map(|(_, v)| v.own == VerdictKind::Suspect)),
        hard_negatives: rate(
            benign
                .iter()
                .filter(|(r, _)| r.hard_negative)
                .map(|(_, v)| flagged(v.own)),
        ),
    }
}

/// The origin of a benign record within its set: the real corpus of a turn loaded from real
/// dialogues (template `conversation/<source>/<dialogue>`), else the set's name.
fn origin<'a>(set: &'a str, r: &'a CorpusRecord) -> &'a str {
    match r.template.strip_prefix("conversation/") {
        Some(rest) if r.is_conversational() => rest.split('/').next().unwrap_or(set),
        _ => set,
    }
}

/// The set's benign rows of the report, one per (origin, language), over its reported splits.
pub fn benign_rows(set: &LoadedSet, verdicts: &[Verdicts]) -> Vec<BenignSourceRow> {
    let reported = set.set.report_splits().unwrap_or_default();
    let mut groups: BTreeMap<(String, String), Vec<(&CorpusRecord, &Verdicts)>> = BTreeMap::new();
    for (r, v) in set.records.iter().zip(verdicts) {
        if r.is_attack() || !reported.contains(&r.split) {
            continue;
        }
        groups
            .entry((origin(&set.set.name, r).to_owned(), r.language.clone()))
            .or_default()
            .push((r, v));
    }
    groups
        .into_iter()
        .map(|((source, language), rows)| {
            let as_source = |pick: fn(&Verdicts) -> VerdictKind, seed: u64| {
                clustered(rows.iter().map(|(r, v)| (*r, flagged(pick(v)))), seed)
            };
            BenignSourceRow {
                set: set.set.name.clone(),
                source,
                language,
                held_out: set.set.held_out,
                conversation: rows.iter().all(|(r, _)| r.is_conversational()),
                as_user: as_source(|v| v.user, 0x05E1),
                as_agent: as_source(|v| v.agent, 0x05E2),
                as_external: as_source(|v| v.external, 0x05E3),
                suspect_as_user: rate(rows.iter().map(|(_, v)| v.user == VerdictKind::Suspect)),
                suspect_as_external: rate(
                    rows.iter().map(|(_, v)| v.external == VerdictKind::Suspect),
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::{GuardSet, Label, SetFormat, Split};

    fn record(id: &str, attack: bool, style: &str, template: &str, split: Split) -> CorpusRecord {
        CorpusRecord {
            id: id.into(),
            text: id.into(),
            label: if attack { Label::Attack } else { Label::Benign },
            category: if attack { "policy_override" } else { "benign" }.into(),
            language: "en".into(),
            style: style.into(),
            hard_negative: false,
            source: Source::External,
            split,
            template: template.into(),
            sensitive: Vec::new(),
            secrets: Vec::new(),
        }
    }

    fn verdicts(own: VerdictKind, user: VerdictKind, external: VerdictKind) -> Verdicts {
        Verdicts {
            own,
            user,
            agent: user,
            external,
        }
    }

    #[test]
    fn rows_count_reported_splits_per_source_and_cluster_dialogues() {
        use VerdictKind::*;
        let records = vec![
            record("a1", true, "direct", "x/attack", Split::Test),
            record("a2", true, "direct", "x/attack", Split::Test),
            record("a3", true, "direct", "x/attack", Split::Train),
            record(
                "c1",
                false,
                "conversation",
                "conversation/mb/u1",
                Split::Test,
            ),
            record(
                "c2",
                false,
                "conversation",
                "conversation/mb/u1",
                Split::Test,
            ),
            record(
                "c3",
                false,
                "conversation",
                "conversation/tm/d9",
                Split::Test,
            ),
        ];
        let v = vec![
            verdicts(Quarantine, Quarantine, Quarantine),
            verdicts(Suspect, Suspect, Quarantine),
            verdicts(Allow, Allow, Allow),
            verdicts(Allow, Allow, Quarantine),
            verdicts(Allow, Suspect, Allow),
            verdicts(Allow, Allow, Allow),
        ];
        let set = LoadedSet {
            set: GuardSet {
                name: "s".into(),
                path: "p".into(),
                format: SetFormat::Corpus,
                train: vec!["train".into()],
                validation: Vec::new(),
                report: vec!["test".into()],
                held_out: false,
                optional: false,
                provenance: String::new(),
            },
            records,
            issues: Vec::new(),
        };
        let r = set_report(&set, &v);
        assert_eq!(
            (r.attacks, r.benign),
            (2, 3),
            "the train split is not reported"
        );
        assert_eq!((r.caught.rate.hits, r.caught_as_external.hits), (1, 2));
        assert_eq!(r.caught_or_suspect.hits, 2);
        assert_eq!(
            r.caught.clusters, 2,
            "hand-written records are their own clusters"
        );
        assert_eq!(r.caught.cluster_ci95, None);
        let rows = benign_rows(&set, &v);
        let sources: Vec<&str> = rows.iter().map(|b| b.source.as_str()).collect();
        assert_eq!(sources, ["mb", "tm"]);
        let mb = &rows[0];
        assert!(mb.conversation);
        assert_eq!((mb.as_user.rate.hits, mb.as_external.rate.hits), (0, 1));
        assert_eq!((mb.as_external.rate.n, mb.as_external.clusters), (2, 1));
        assert!(
            mb.as_external.cluster_ci95.is_some(),
            "one dialogue holds both turns"
        );
        assert_eq!(mb.suspect_as_user.hits, 1);
    }
}
