//! The committed injection corpora keep their roles: training sets, the selection set and the
//! held-out sets never share a text, held-out sets are all `test` (so `guard train --extra`
//! ignores them) and the selection set is all `validation`. A held-out number is only worth
//! reporting while this holds.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use hindsight_guard::corpus::{CorpusRecord, Split, load_corpus};

fn datasets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets")
}

fn load(name: &str) -> Vec<CorpusRecord> {
    let dir = datasets().join(name);
    let (records, issues) = load_corpus(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    assert!(issues.is_empty(), "{name}: malformed lines {issues:?}");
    assert!(!records.is_empty(), "{name}: no records");
    records
}

/// Whitespace-collapsed, lower-cased: a copy with other spacing or case is still a copy.
fn key(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

const TRAINING: [&str; 5] = [
    "injection",
    "injection-dev",
    "injection-dev4",
    "injection-dev5",
    "injection-dev6",
];
const HELD_OUT: [&str; 4] = [
    "injection-challenge",
    "injection-probe",
    "injection-fresh",
    "injection-codes",
];
const SELECTION: &str = "injection-select";

#[test]
fn every_injection_corpus_has_a_role() {
    let mut on_disk: Vec<String> = std::fs::read_dir(datasets())
        .expect("datasets/ is readable")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("injection"))
        .collect();
    on_disk.sort();
    let mut known: Vec<String> = TRAINING
        .iter()
        .chain(&HELD_OUT)
        .chain(std::iter::once(&SELECTION))
        .map(|s| (*s).to_owned())
        .collect();
    known.sort();
    assert_eq!(
        on_disk, known,
        "a new injection corpus needs a role in this test"
    );
}

#[test]
fn held_out_sets_are_test_only_and_the_selection_set_validation_only() {
    for name in HELD_OUT {
        let off: Vec<String> = load(name)
            .into_iter()
            .filter(|r| r.split != Split::Test)
            .map(|r| r.id)
            .collect();
        assert!(off.is_empty(), "{name}: records outside `test`: {off:?}");
    }
    let select = load(SELECTION);
    assert!(
        select.iter().all(|r| r.split == Split::Validation),
        "{SELECTION}: every record must be `validation`"
    );
}

#[test]
fn no_text_crosses_roles_or_held_out_sets() {
    // The corpus each text was seen in first.
    let mut seen: HashMap<String, String> = HashMap::new();
    for name in TRAINING {
        for r in load(name) {
            seen.entry(key(&r.text)).or_insert_with(|| name.to_owned());
        }
    }
    let mut crossings = Vec::new();
    for name in HELD_OUT.iter().chain(std::iter::once(&SELECTION)) {
        // A set may repeat its own text; only texts seen in an earlier corpus cross.
        let mut own = HashSet::new();
        for r in load(name) {
            let k = key(&r.text);
            if let Some(first) = seen.get(&k) {
                crossings.push(format!("{name} {} also in {first}", r.id));
            }
            own.insert(k);
        }
        for k in own {
            seen.insert(k, (*name).to_owned());
        }
    }
    assert!(
        crossings.is_empty(),
        "texts shared across roles: {crossings:?}"
    );
}

/// The secrets sets keep their roles too: the development set (`secrets-dev`, which detectors
/// are developed on) shares no text and no secret value with the held-out `secrets` and
/// `secrets-fresh`, nor do the two held-out sets with each other.
#[test]
fn no_text_or_secret_crosses_the_secrets_sets() {
    let sets = ["secrets-dev", "secrets", "secrets-fresh"];
    let mut seen: HashMap<String, &str> = HashMap::new();
    let mut crossings = Vec::new();
    for name in sets {
        let dir = datasets().join(name);
        let (records, issues) = hindsight_guard::load_secrets(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(issues.is_empty(), "{name}: malformed lines {issues:?}");
        assert!(!records.is_empty(), "{name}: no records");
        let mut own = HashSet::new();
        for r in &records {
            let mut keys = vec![format!("text:{}", key(&r.text))];
            keys.extend(r.secrets.iter().map(|s| format!("value:{}", s.value)));
            for k in keys {
                if let Some(first) = seen.get(&k) {
                    crossings.push(format!("{name} {}: {k} also in {first}", r.id));
                }
                own.insert(k);
            }
        }
        for k in own {
            seen.insert(k, name);
        }
    }
    assert!(
        crossings.is_empty(),
        "shared across secrets sets: {crossings:?}"
    );
}
