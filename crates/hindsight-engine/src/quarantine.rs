//! Guard verdicts on the write path and the operator's quarantine: listing, release, discard.
//!
//! A quarantined write is stored (never silently dropped) with status `quarantined`; its
//! provenance — the guard's reason, categories, score and the write's source — is kept in
//! `status_reason` in a fixed, parseable form ([`GuardProvenance`]) so no new column is needed in
//! any backend.

use chrono::{DateTime, Utc};
use hindsight_core::{
    Applied, Error, ErrorKind, GuardDecision, Memory, MemoryId, Namespace, NewMemory, Result,
    Source, Status, StatusChange, WriteBatch,
};
use serde::{Deserialize, Serialize};
use tracing::info;

use crate::engine::{Engine, NamespaceWriteLock, as_new_memory};

/// Provenance of a guard verdict as recorded in a memory's `status_reason`:
/// `guard quarantine: {reason} | categories=a,b | score=0.930 | source=external`
/// (`guard suspect: ...` for an active memory the guard flagged without quarantining it, so it
/// starts with [`hindsight_core::SUSPECT_REASON_PREFIX`]; `guard redact: ...` for a redacted,
/// active memory, without a score).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GuardProvenance {
    /// `quarantine`, `suspect` or `redact`.
    pub verdict: String,
    pub reason: String,
    pub categories: Vec<String>,
    pub score: Option<f32>,
    pub source: Option<Source>,
}

impl GuardProvenance {
    /// The `status_reason` text.
    pub fn render(&self) -> String {
        let mut s = format!(
            "guard {}: {}",
            self.verdict,
            self.reason.replace(" | ", " / ")
        );
        s.push_str(&format!(" | categories={}", self.categories.join(",")));
        if let Some(score) = self.score {
            s.push_str(&format!(" | score={score:.3}"));
        }
        if let Some(source) = self.source {
            s.push_str(&format!(" | source={source}"));
        }
        s
    }

    /// Parses a `status_reason` written by [`GuardProvenance::render`]; `None` for any other text.
    pub fn parse(text: &str) -> Option<GuardProvenance> {
        let rest = text.strip_prefix("guard ")?;
        let (verdict, rest) = rest.split_once(": ")?;
        if verdict.contains(' ') {
            return None;
        }
        let mut parts = rest.split(" | ");
        let reason = parts.next()?.to_owned();
        let mut p = GuardProvenance {
            verdict: verdict.to_owned(),
            reason,
            categories: Vec::new(),
            score: None,
            source: None,
        };
        for part in parts {
            let (k, v) = part.split_once('=')?;
            match k {
                "categories" => {
                    p.categories = v
                        .split(',')
                        .filter(|c| !c.is_empty())
                        .map(str::to_owned)
                        .collect();
                }
                "score" => p.score = v.parse().ok(),
                "source" => p.source = v.parse().ok(),
                _ => {}
            }
        }
        Some(p)
    }
}

/// A guard decision resolved into what gets stored.
#[derive(Debug)]
pub(crate) struct Verdict {
    pub content: String,
    pub context: String,
    pub status: Status,
    pub reason: Option<String>,
    /// The content or context differs from the caller's: the vector must be recomputed.
    pub redacted: bool,
}

impl Verdict {
    /// `status` is what an allowed write gets (active for `store_memory`, the record's own
    /// status for an import). A reject is an `ErrorKind::Rejected` error.
    pub fn resolve(new: &NewMemory, decision: &GuardDecision, status: Status) -> Result<Verdict> {
        Ok(match decision {
            GuardDecision::Allow => Verdict {
                content: new.content.clone(),
                context: new.context.clone(),
                status,
                reason: None,
                redacted: false,
            },
            GuardDecision::Redact {
                content,
                categories,
                context,
            } => {
                let context = context.clone().unwrap_or_else(|| new.context.clone());
                Verdict {
                    redacted: *content != new.content || context != new.context,
                    content: content.clone(),
                    context,
                    status,
                    reason: Some(
                        GuardProvenance {
                            verdict: "redact".into(),
                            reason: "sensitive data replaced before storage".into(),
                            categories: categories.clone(),
                            score: None,
                            source: Some(new.source),
                        }
                        .render(),
                    ),
                }
            }
            GuardDecision::Suspect {
                reason,
                categories,
                score,
                redacted,
            } => Verdict {
                content: redacted
                    .as_ref()
                    .map_or_else(|| new.content.clone(), |r| r.content.clone()),
                context: redacted
                    .as_ref()
                    .map_or_else(|| new.context.clone(), |r| r.context.clone()),
                status,
                reason: Some(
                    GuardProvenance {
                        verdict: "suspect".into(),
                        reason: reason.clone(),
                        categories: categories.clone(),
                        score: Some(*score),
                        source: Some(new.source),
                    }
                    .render(),
                ),
                redacted: redacted
                    .as_ref()
                    .is_some_and(|r| r.content != new.content || r.context != new.context),
            },
            GuardDecision::Quarantine {
                reason,
                categories,
                score,
                redacted,
            } => Verdict {
                content: redacted
                    .as_ref()
                    .map_or_else(|| new.content.clone(), |r| r.content.clone()),
                context: redacted
                    .as_ref()
                    .map_or_else(|| new.context.clone(), |r| r.context.clone()),
                status: Status::Quarantined,
                reason: Some(
                    GuardProvenance {
                        verdict: "quarantine".into(),
                        reason: reason.clone(),
                        categories: categories.clone(),
                        score: Some(*score),
                        source: Some(new.source),
                    }
                    .render(),
                ),
                redacted: redacted
                    .as_ref()
                    .is_some_and(|r| r.content != new.content || r.context != new.context),
            },
            GuardDecision::Reject {
                reason,
                categories,
                score,
            } => {
                return Err(Error::new(
                    ErrorKind::Rejected,
                    format!(
                        "write rejected by the guard: {reason} [{}] (score {score:.3}, source {})",
                        categories.join(", "),
                        new.source
                    ),
                ));
            }
        })
    }

    /// Keeps the content (and so the vector) of an earlier verdict, e.g. the redacted text when
    /// a lesson later quarantines the write.
    pub fn keep_content(mut self, earlier: Verdict) -> Verdict {
        self.content = earlier.content;
        self.context = earlier.context;
        self.redacted = earlier.redacted;
        self
    }
}

/// How a discarded quarantined memory's `status_reason` starts (`revert` refuses those).
pub(crate) const DISCARDED: &str = "discarded from quarantine by operator";

/// Whether an operator discarded `m` from quarantine (such a memory is never returned or
/// reverted).
pub(crate) fn is_discarded(m: &Memory) -> bool {
    m.status == Status::Forgotten
        && m.status_reason
            .as_deref()
            .is_some_and(|r| r.starts_with(DISCARDED))
}

/// The guard's provenance of a quarantined memory, kept in the reason of its release or discard.
fn was(m: &Memory) -> String {
    m.status_reason
        .as_deref()
        .map(|r| format!(" (was: {r})"))
        .unwrap_or_default()
}

/// One entry of the quarantine listing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuarantinedMemory {
    pub memory: Memory,
    /// Parsed from `status_reason`; `None` when the memory was quarantined by other means.
    pub provenance: Option<GuardProvenance>,
}

/// Result of releasing a memory from quarantine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReleaseOutcome {
    /// The released memory after the transition (active, or forgotten when it duplicated an
    /// active memory).
    pub memory: Memory,
    /// The active near-duplicate it was merged into (that memory's access was refreshed).
    pub duplicate_of: Option<MemoryId>,
    /// Older memories it contradicted (now superseded by it).
    pub superseded: Vec<MemoryId>,
    /// Similar memories it supplements.
    pub related: Vec<MemoryId>,
}

impl Engine {
    /// Lists up to `limit` quarantined memories of `ns` (id order) with their guard provenance.
    pub async fn quarantined(
        &self,
        ns: &Namespace,
        limit: usize,
    ) -> Result<Vec<QuarantinedMemory>> {
        let mut out = Vec::new();
        let mut after: Option<MemoryId> = None;
        const PAGE: usize = 500;
        while out.len() < limit {
            let page = self.store.scan(ns, after.as_ref(), PAGE).await?;
            let Some(last) = page.last() else { break };
            after = Some(last.id.clone());
            let n = page.len();
            for m in page {
                if m.status == Status::Quarantined && out.len() < limit {
                    out.push(QuarantinedMemory {
                        provenance: m.status_reason.as_deref().and_then(GuardProvenance::parse),
                        memory: m,
                    });
                }
            }
            if n < PAGE {
                break;
            }
        }
        Ok(out)
    }

    /// Forgets a memory only if it is still quarantined: one released meanwhile (by another
    /// process) stays released, and the caller gets a `Conflict`.
    async fn forget_quarantined(
        &self,
        lock: NamespaceWriteLock,
        ns: &Namespace,
        id: &MemoryId,
        reason: String,
    ) -> Result<Memory> {
        let change =
            StatusChange::new(id.clone(), Status::Quarantined, Status::Forgotten).reason(reason);
        self.apply_held(lock, ns, WriteBatch::statuses(vec![change]))
            .await
            .and_then(Applied::single)
    }

    async fn get_quarantined(&self, ns: &Namespace, id: &MemoryId) -> Result<Memory> {
        let m = self.existing(ns, id).await?;
        if m.status != Status::Quarantined {
            return Err(Error::invalid(
                "id",
                format!("memory {id} is {}, not quarantined", m.status),
            ));
        }
        Ok(m)
    }

    /// An operator releases a quarantined memory: it runs the dedup/conflict step of the write
    /// pipeline (a near-duplicate of an active memory is merged into it and the released copy is
    /// forgotten; contradicted memories are superseded) and becomes active. `operator_note` is
    /// required and recorded in `status_reason`.
    pub async fn release(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        operator_note: &str,
        now: DateTime<Utc>,
    ) -> Result<ReleaseOutcome> {
        if operator_note.trim().is_empty() {
            return Err(Error::invalid(
                "operator_note",
                "a note is required to release a memory from quarantine",
            ));
        }
        hindsight_core::refuse_nul("operator_note", [operator_note])?;
        let _guard = self.lock_writes(ns).await?;
        let m = self.get_quarantined(ns, id).await?;
        let vector =
            self.store.get_vector(ns, id).await?.ok_or_else(|| {
                Error::not_found(format!("vector of memory {id} in namespace {ns}"))
            })?;
        // The same dedup, subject and trust rules as a new write (`Engine::place`).
        let view = as_new_memory(&m);
        let placement = self
            .place(
                &view,
                m.kind,
                &m.content,
                &vector,
                std::slice::from_ref(id),
                false,
            )
            .await?;
        if let Some(top) = &placement.duplicate_of {
            self.store
                .record_access(ns, std::slice::from_ref(top), now)
                .await?;
            let reason = format!(
                "released from quarantine by operator ({operator_note}) as a duplicate of {top}{}",
                was(&m)
            );
            let memory = self.forget_quarantined(_guard, ns, id, reason).await?;
            info!(namespace = %ns, %id, duplicate_of = %top, "released quarantined memory as a duplicate");
            return Ok(ReleaseOutcome {
                memory,
                duplicate_of: Some(top.clone()),
                superseded: Vec::new(),
                related: Vec::new(),
            });
        }
        let (mut superseded, related) = (placement.superseded, placement.related);
        // The operator's release puts it in force, whatever the dates.
        superseded.extend(placement.newer);
        let reason = format!(
            "released from quarantine by operator: {operator_note}{}",
            was(&m)
        );
        // One all-or-nothing change, each part only from the status read (the released memory
        // still quarantined, the ones it contradicts still active): never the released memory
        // active beside a version it contradicts, never a concurrent discard or forget
        // overwritten. The retirements come first (room made before the activation).
        let mut changes = StatusChange::retire_all(
            &superseded,
            id,
            "contradicted by a memory released from quarantine",
        );
        changes.push(
            StatusChange::new(id.clone(), Status::Quarantined, Status::Active).reason(reason),
        );
        let memory = self
            .apply_held(_guard, ns, WriteBatch::statuses(changes))
            .await
            .and_then(Applied::single)?;
        info!(namespace = %ns, %id, superseded = superseded.len(), "released quarantined memory");
        Ok(ReleaseOutcome {
            memory,
            duplicate_of: None,
            superseded,
            related,
        })
    }

    /// An operator discards a quarantined memory: it becomes `forgotten` (purge hard-deletes it
    /// later). `operator_note` is required.
    pub async fn discard(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        operator_note: &str,
    ) -> Result<Memory> {
        if operator_note.trim().is_empty() {
            return Err(Error::invalid(
                "operator_note",
                "a note is required to discard a quarantined memory",
            ));
        }
        hindsight_core::refuse_nul("operator_note", [operator_note])?;
        // Serialised with release (and writes): a discard cannot land inside a release.
        let _guard = self.lock_writes(ns).await?;
        let m = self.get_quarantined(ns, id).await?;
        let reason = format!("{DISCARDED}: {operator_note}{}", was(&m));
        let m = self.forget_quarantined(_guard, ns, id, reason).await?;
        info!(namespace = %ns, %id, "discarded quarantined memory");
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provenance_roundtrips_through_status_reason() {
        let p = GuardProvenance {
            verdict: "quarantine".into(),
            reason: "rule persistent_instruction | classifier 0.93".into(),
            categories: vec![
                "persistent_instruction".into(),
                "confirmation_bypass".into(),
            ],
            score: Some(0.93),
            source: Some(Source::External),
        };
        let text = p.render();
        assert!(text.starts_with("guard quarantine: rule persistent_instruction / classifier"));
        let back = GuardProvenance::parse(&text).expect("parses");
        assert_eq!(back.categories, p.categories);
        assert_eq!(back.source, Some(Source::External));
        assert!((back.score.expect("score") - 0.93).abs() < 1e-3);
        assert_eq!(back.reason, "rule persistent_instruction / classifier 0.93");
        assert_eq!(
            GuardProvenance::parse("contradicted by a newer memory"),
            None
        );
        assert_eq!(GuardProvenance::parse("reverted from forgotten"), None);
    }
}
