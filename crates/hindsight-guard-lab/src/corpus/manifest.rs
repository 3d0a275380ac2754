//! The guard's dataset manifest (`datasets/guard/manifest.toml`): every labelled set with its
//! role (which splits train the classifier, which choose its thresholds, which the report
//! scores), whether it is held out, and where it came from.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{CorpusRecord, Split, load_conversations, load_corpus};
use hindsight_guard::GuardError;

/// The manifest's default place, relative to the repository root.
pub const DEFAULT_MANIFEST: &str = "datasets/guard/manifest.toml";

/// How a set's file is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetFormat {
    /// `corpus.jsonl` of [`CorpusRecord`]s.
    Corpus,
    /// Dialogue turns, split by dialogue group ([`load_conversations`]).
    Conversations,
    /// Labelled secrets for the redaction evaluation ([`crate::load_secrets`]).
    Secrets,
}

/// One labelled set.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardSet {
    pub name: String,
    /// Relative to the repository root (the manifest's `../..`).
    pub path: PathBuf,
    pub format: SetFormat,
    /// Splits the classifier is fitted on.
    #[serde(default)]
    pub train: Vec<String>,
    /// Splits its thresholds are chosen on.
    #[serde(default)]
    pub validation: Vec<String>,
    /// Splits the evaluation scores (`all` for a set without splits).
    #[serde(default)]
    pub report: Vec<String>,
    /// Nothing was chosen while looking at the reported splits.
    pub held_out: bool,
    /// The set lives outside the repository and may be absent.
    #[serde(default)]
    pub optional: bool,
    pub provenance: String,
}

/// The manifest.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardManifest {
    #[serde(rename = "set")]
    pub sets: Vec<GuardSet>,
    /// The repository root the paths are relative to.
    #[serde(skip)]
    pub root: PathBuf,
}

/// A set's records with the role of each split resolved.
#[derive(Clone, Debug)]
pub struct LoadedSet {
    pub set: GuardSet,
    pub records: Vec<CorpusRecord>,
    /// Lines that did not load (line, message).
    pub issues: Vec<(usize, String)>,
}

impl GuardSet {
    fn parse_splits(&self, names: &[String]) -> Result<Vec<Split>, GuardError> {
        names
            .iter()
            .filter(|n| n.as_str() != "all")
            .map(|n| {
                Split::parse(n).ok_or_else(|| {
                    GuardError::Invalid(format!("set {}: unknown split {n:?}", self.name))
                })
            })
            .collect()
    }

    /// The splits the classifier is fitted on.
    pub fn train_splits(&self) -> Result<Vec<Split>, GuardError> {
        self.parse_splits(&self.train)
    }

    /// The splits its thresholds are chosen on.
    pub fn validation_splits(&self) -> Result<Vec<Split>, GuardError> {
        self.parse_splits(&self.validation)
    }

    /// The splits the evaluation scores.
    pub fn report_splits(&self) -> Result<Vec<Split>, GuardError> {
        self.parse_splits(&self.report)
    }
}

impl GuardManifest {
    /// Reads the manifest at `path`; its root is the directory two levels up
    /// (`datasets/guard/manifest.toml` → the repository).
    pub fn load(path: &Path) -> Result<GuardManifest, GuardError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| GuardError::io(format!("reading {}", path.display()), e))?;
        let mut m: GuardManifest = toml::from_str(&text)
            .map_err(|e| GuardError::Invalid(format!("{}: {e}", path.display())))?;
        m.root = path
            .parent()
            .and_then(Path::parent)
            .and_then(Path::parent)
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let mut names = std::collections::BTreeSet::new();
        for s in &m.sets {
            if !names.insert(s.name.clone()) {
                return Err(GuardError::Invalid(format!(
                    "{}: set {} listed twice",
                    path.display(),
                    s.name
                )));
            }
            s.train_splits()?;
            s.validation_splits()?;
            s.report_splits()?;
        }
        Ok(m)
    }

    /// Where a set's file or directory is.
    pub fn path_of(&self, set: &GuardSet) -> PathBuf {
        self.root.join(&set.path)
    }

    /// Loads every set of a record format (corpus, conversations) that `wanted` selects. An
    /// optional set that is absent is skipped with a loud notice on stderr; a missing set that
    /// is not optional is an error.
    pub fn load_sets(
        &self,
        wanted: impl Fn(&GuardSet) -> bool,
    ) -> Result<Vec<LoadedSet>, GuardError> {
        let mut out = Vec::new();
        for set in self.sets.iter().filter(|s| wanted(s)) {
            let path = self.path_of(set);
            if set.optional && !path.exists() {
                eprintln!(
                    "!!! SKIPPED guard set {}: {} is absent (it lives outside the repository); results leave it out",
                    set.name,
                    path.display()
                );
                continue;
            }
            let (records, issues) = match set.format {
                SetFormat::Corpus => load_corpus(&path)?,
                SetFormat::Conversations => load_conversations(&path)?,
                SetFormat::Secrets => continue,
            };
            out.push(LoadedSet {
                set: set.clone(),
                records,
                issues: issues.into_iter().map(|i| (i.line, i.message)).collect(),
            });
        }
        Ok(out)
    }

    /// Every set's training and validation records, each record's split set to its role
    /// (`Train` to fit, `Validation` to choose thresholds); nothing else.
    pub fn training_records(&self) -> Result<Vec<CorpusRecord>, GuardError> {
        let sets = self.load_sets(|s| !s.train.is_empty() || !s.validation.is_empty())?;
        let mut out = Vec::new();
        for loaded in sets {
            let (train, validation) = (loaded.set.train_splits()?, loaded.set.validation_splits()?);
            for mut r in loaded.records {
                r.split = if train.contains(&r.split) {
                    Split::Train
                } else if validation.contains(&r.split) {
                    Split::Validation
                } else {
                    continue;
                };
                out.push(r);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_manifest_loads_and_names_existing_sets() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let m = GuardManifest::load(&root.join(DEFAULT_MANIFEST)).expect("manifest loads");
        assert!(
            m.sets
                .iter()
                .any(|s| s.held_out && s.format == SetFormat::Corpus)
        );
        for s in &m.sets {
            assert!(
                s.optional || m.path_of(s).exists(),
                "{} is missing at {}",
                s.name,
                m.path_of(s).display()
            );
            // A held-out set is never trained on nor used to choose thresholds.
            if s.held_out {
                assert!(s.train.is_empty() && s.validation.is_empty(), "{}", s.name);
            }
        }
    }
}
