//! The committed guard sets keep the roles the manifest (`datasets/guard/manifest.toml`) gives
//! them: every set on disk is in the manifest, no text that a model is fitted or tuned on appears
//! in a split the evaluation reports, and held-out sets share no text with any other set. A
//! reported number is only worth what these checks keep true.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use hindsight_guard_lab::corpus::{DEFAULT_MANIFEST, GuardManifest, SetFormat, Split};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn manifest() -> GuardManifest {
    GuardManifest::load(&root().join(DEFAULT_MANIFEST)).expect("the manifest loads")
}

/// Whitespace-collapsed, lower-cased: a copy with other spacing or case is still a copy.
fn key(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[test]
fn every_set_on_disk_is_in_the_manifest() {
    let m = manifest();
    let dir = root().join("datasets/guard");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("datasets/guard is readable")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let listed: BTreeSet<String> = m
        .sets
        .iter()
        .filter(|s| s.path.starts_with("datasets/guard"))
        .filter_map(|s| s.path.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    assert_eq!(on_disk, listed, "a set needs a role in the manifest");
}

#[test]
fn no_fitted_or_tuned_text_is_reported_and_held_out_sets_share_nothing() {
    let m = manifest();
    let sets = m
        .load_sets(|s| s.format != SetFormat::Secrets)
        .expect("sets load");
    // Texts a model is fitted on or has its thresholds chosen with.
    let mut used: HashMap<String, String> = HashMap::new();
    for s in &sets {
        assert!(
            s.issues.is_empty(),
            "{}: malformed lines {:?}",
            s.set.name,
            s.issues
        );
        let roles: Vec<Split> = [
            s.set.train_splits().expect("splits"),
            s.set.validation_splits().expect("splits"),
        ]
        .concat();
        for r in s.records.iter().filter(|r| roles.contains(&r.split)) {
            used.entry(key(&r.text))
                .or_insert_with(|| format!("{} {}", s.set.name, r.id));
        }
    }
    let mut crossings = Vec::new();
    let mut held_out: HashMap<String, String> = HashMap::new();
    for s in &sets {
        let reported = s.set.report_splits().expect("splits");
        let mut own = HashSet::new();
        for r in s.records.iter().filter(|r| reported.contains(&r.split)) {
            let k = key(&r.text);
            // Real dialogues repeat short turns ("Yes, that's correct.") across dialogues; their
            // unit is the dialogue, which never straddles splits.
            let same_conversations = s.set.format == SetFormat::Conversations
                && used
                    .get(&k)
                    .is_some_and(|f| f.starts_with(&format!("{} ", s.set.name)));
            if let Some(first) = used.get(&k).filter(|_| !same_conversations) {
                crossings.push(format!(
                    "{} {} is also fitted on as {first}",
                    s.set.name, r.id
                ));
            }
            own.insert(k);
        }
        // A held-out set may repeat its own text, but shares none with another set.
        for r in &s.records {
            let k = key(&r.text);
            match held_out.get(&k) {
                Some(other) if *other != s.set.name => {
                    crossings.push(format!("{} {} is also in {other}", s.set.name, r.id));
                }
                _ => {}
            }
        }
        if s.set.held_out {
            for r in &s.records {
                held_out
                    .entry(key(&r.text))
                    .or_insert_with(|| s.set.name.clone());
            }
        }
    }
    for s in sets.iter().filter(|s| !s.set.held_out) {
        for r in &s.records {
            if let Some(h) = held_out.get(&key(&r.text)) {
                crossings.push(format!("{} {} is also in held-out {h}", s.set.name, r.id));
            }
        }
    }
    assert!(crossings.is_empty(), "texts crossing roles: {crossings:?}");
}

/// The secrets sets keep their roles too: the development set shares no text and no secret
/// value with the evaluated ones, nor do those with each other.
#[test]
fn no_text_or_secret_crosses_the_secrets_sets() {
    let m = manifest();
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut crossings = Vec::new();
    for set in m.sets.iter().filter(|s| s.format == SetFormat::Secrets) {
        let dir = m.path_of(set);
        let (records, issues) = hindsight_guard_lab::load_secrets(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(
            issues.is_empty(),
            "{}: malformed lines {issues:?}",
            set.name
        );
        assert!(!records.is_empty(), "{}: no records", set.name);
        let mut own = HashSet::new();
        for r in &records {
            let mut keys = vec![format!("text:{}", key(&r.text))];
            keys.extend(r.secrets.iter().map(|s| format!("value:{}", s.value)));
            for k in keys {
                if let Some(first) = seen.get(&k) {
                    crossings.push(format!("{} {}: {k} also in {first}", set.name, r.id));
                }
                own.insert(k);
            }
        }
        for k in own {
            seen.insert(k, set.name.clone());
        }
    }
    assert!(
        crossings.is_empty(),
        "shared across secrets sets: {crossings:?}"
    );
}
