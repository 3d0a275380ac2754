//! Final ranking: fused score times switchable factors (decay, importance, access, trust, usefulness).

use chrono::{DateTime, Utc};
use hindsight_core::{DecayConfig, Memory, MemoryKind, TrustWeights, decay};
use serde::{Deserialize, Serialize};

use crate::fusion::FusedHit;
use crate::query::QueryUnderstanding;

/// The factors multiplied into the fused score. Each can be switched off (factor 1) so the eval
/// harness can ablate it.
///
/// - decay: `(1 - w) + w * 0.5^(age / half_life(kind))`, age from `created_at` to the query's
///   `now`, with `w = decay_weight`, or `past_decay_weight` when the query refers to the past
///   ([`crate::QueryUnderstanding::past_reference`]: the event asked about is old by nature), and
///   0 for an episodic memory unless `episodic_decay` (an event does not go stale; a fact or a
///   preference does). With `w = 1` this is plain exponential decay; 0.5 lets old memories sink
///   to half weight but never vanish.
/// - importance: `1 - importance_weight * (1 - importance)`.
/// - access: `1 + access_weight * ln(1 + access_count)`.
/// - trust: `1 - trust_strength * (1 - trust(source))` with trust user 1.0 / agent 0.7 / external 0.5.
/// - usefulness: `1 + usefulness_weight * tanh(usefulness)`.
/// - suspect: `suspect_weight` for a memory the write guard flagged as suspect
///   ([`Memory::is_suspect`]) when the query asks what to do
///   ([`crate::QueryUnderstanding::directive`]); 1 otherwise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RankingFactors {
    pub decay: Option<DecayConfig>,
    pub decay_weight: f64,
    /// The decay weight for queries that refer to the past.
    pub past_decay_weight: f64,
    /// Whether episodic memories (events) decay at all.
    pub episodic_decay: bool,
    pub importance: bool,
    pub importance_weight: f64,
    pub access_boost: bool,
    pub access_weight: f64,
    pub trust: Option<TrustWeights>,
    pub trust_strength: f64,
    pub usefulness: bool,
    pub usefulness_weight: f64,
    /// In (0, 1]; 1 switches the factor off.
    pub suspect_weight: f64,
}

impl Default for RankingFactors {
    fn default() -> Self {
        RankingFactors {
            decay: Some(DecayConfig::default()),
            decay_weight: 0.5,
            past_decay_weight: 0.0,
            episodic_decay: true,
            importance: true,
            importance_weight: 0.5,
            access_boost: true,
            access_weight: 0.1,
            trust: Some(TrustWeights::default()),
            trust_strength: 0.5,
            usefulness: true,
            usefulness_weight: 0.2,
            suspect_weight: 0.5,
        }
    }
}

impl RankingFactors {
    /// Every factor off: the final score is the fused score.
    pub fn none() -> Self {
        RankingFactors {
            decay: None,
            importance: false,
            access_boost: false,
            trust: None,
            usefulness: false,
            suspect_weight: 1.0,
            ..Self::default()
        }
    }

    /// The factor breakdown for one memory at query time `now`, for a query understood as `q`.
    pub fn breakdown(
        &self,
        m: &Memory,
        now: DateTime<Utc>,
        q: &QueryUnderstanding,
    ) -> FactorBreakdown {
        let decay = self.decay.map_or(1.0, |cfg| {
            let w = if m.kind == MemoryKind::Episodic && !self.episodic_decay {
                0.0
            } else if q.past_reference {
                self.past_decay_weight
            } else {
                self.decay_weight
            };
            let f = decay::decay_factor(decay::age_days(m.created_at, now), cfg.half_life(m.kind));
            (1.0 - w) + w * f
        });
        let importance = if self.importance {
            1.0 - self.importance_weight * (1.0 - f64::from(m.importance).clamp(0.0, 1.0))
        } else {
            1.0
        };
        let access = if self.access_boost {
            1.0 + self.access_weight * (m.access_count as f64).ln_1p()
        } else {
            1.0
        };
        let trust = self.trust.map_or(1.0, |t| {
            1.0 - self.trust_strength * (1.0 - f64::from(t.weight(m.source)))
        });
        let usefulness = if self.usefulness {
            1.0 + self.usefulness_weight * f64::from(m.usefulness).tanh()
        } else {
            1.0
        };
        let suspect = if q.directive && m.is_suspect() {
            self.suspect_weight.clamp(f64::MIN_POSITIVE, 1.0)
        } else {
            1.0
        };
        FactorBreakdown {
            decay,
            importance,
            access,
            trust,
            usefulness,
            suspect,
        }
    }
}

/// Each factor's value for one hit (1 when switched off).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactorBreakdown {
    pub decay: f64,
    pub importance: f64,
    pub access: f64,
    pub trust: f64,
    pub usefulness: f64,
    /// The suspect factor (1 unless the memory is suspect and the query asks what to do).
    #[serde(default = "one")]
    pub suspect: f64,
}

fn one() -> f64 {
    1.0
}

impl FactorBreakdown {
    pub fn product(&self) -> f64 {
        self.decay * self.importance * self.access * self.trust * self.usefulness * self.suspect
    }
}

/// A hit after final ranking, with everything needed to explain it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankedHit {
    pub fused: FusedHit,
    pub factors: FactorBreakdown,
    pub score: f64,
}

/// Applies the ranking factors to fused hits. `lookup` resolves an id to its memory; hits whose
/// memory is unknown are dropped. Sorted by final score descending, ties by the later
/// `created_at`, then id descending ([`crate::served_order`]).
pub fn rank<'m>(
    fused: Vec<FusedHit>,
    lookup: impl Fn(&hindsight_core::MemoryId) -> Option<&'m Memory>,
    factors: &RankingFactors,
    query: &QueryUnderstanding,
    now: DateTime<Utc>,
) -> Vec<RankedHit> {
    let mut out: Vec<(RankedHit, DateTime<Utc>)> = fused
        .into_iter()
        .filter_map(|f| {
            let m = lookup(&f.id)?;
            let b = factors.breakdown(m, now, query);
            let score = f.score * b.product();
            Some((
                RankedHit {
                    fused: f,
                    factors: b,
                    score,
                },
                m.created_at,
            ))
        })
        .collect();
    out.sort_by(|(a, at), (b, bt)| {
        crate::fusion::served_order(
            (a.score, *at, a.fused.id.as_str()),
            (b.score, *bt, b.fused.id.as_str()),
        )
    });
    out.into_iter().map(|(h, _)| h).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::{MemoryId, MemoryKind, Namespace, Source, Status};

    fn mem(id: &str, created: &str, importance: f32, source: Source, access: u64) -> Memory {
        let t = DateTime::parse_from_rfc3339(created)
            .expect("valid")
            .to_utc();
        Memory {
            id: MemoryId::from(id),
            namespace: Namespace::default(),
            kind: MemoryKind::Episodic,
            content: id.into(),
            tags: vec![],
            context: String::new(),
            entities: Default::default(),
            importance,
            source,
            created_at: t,
            last_accessed_at: t,
            access_count: access,
            usefulness: 0.0,
            status: Status::Active,
            status_reason: None,
            superseded_by: None,
            task_id: None,
            task_type: None,
            outcome: None,
            embedding_model: "test".into(),
            neighbourhood: String::new(),
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-31T00:00:00Z")
            .expect("valid")
            .to_utc()
    }

    #[test]
    fn breakdown_by_hand() {
        let f = RankingFactors::default();
        // 30 days old episodic (half-life 30): decay = 0.5 + 0.5*0.5 = 0.75
        let m = mem("a", "2026-03-01T00:00:00Z", 0.6, Source::External, 3);
        let q = QueryUnderstanding::default();
        let b = f.breakdown(&m, now(), &q);
        assert!((b.decay - 0.75).abs() < 1e-12);
        assert!((b.importance - 0.8).abs() < 1e-6); // 1 - 0.5*0.4
        assert!((b.access - (1.0 + 0.1 * 4f64.ln())).abs() < 1e-12);
        assert!((b.trust - 0.75).abs() < 1e-12); // 1 - 0.5*(1-0.5)
        assert_eq!(b.usefulness, 1.0);
        let off = RankingFactors::none().breakdown(&m, now(), &q);
        assert_eq!(off.product(), 1.0);
    }

    #[test]
    fn a_suspect_memory_is_weighed_down_only_for_directive_queries() {
        let mut m = mem("a", "2026-03-30T00:00:00Z", 0.5, Source::User, 0);
        m.status_reason = Some(format!(
            "{} classifier 0.55 | categories=injection | score=0.550 | source=user",
            hindsight_core::SUSPECT_REASON_PREFIX
        ));
        assert!(m.is_suspect());
        let f = RankingFactors::default();
        let directive = crate::understand("how should I handle refunds?", now());
        let factual = crate::understand("when did Alice start climbing?", now());
        assert!(directive.directive && !factual.directive);
        assert_eq!(f.breakdown(&m, now(), &directive).suspect, 0.5);
        assert_eq!(f.breakdown(&m, now(), &factual).suspect, 1.0);
        m.status_reason = None;
        assert_eq!(f.breakdown(&m, now(), &directive).suspect, 1.0);
        assert_eq!(
            RankingFactors::none()
                .breakdown(&m, now(), &directive)
                .suspect,
            1.0
        );
    }

    #[test]
    fn newer_equal_memory_wins_with_decay_and_not_without() {
        let old = mem("z-old", "2025-12-01T00:00:00Z", 0.5, Source::User, 0);
        let new = mem("a-new", "2026-03-30T00:00:00Z", 0.5, Source::User, 0);
        let fused = |ids: [&str; 2]| {
            ids.iter()
                .map(|i| FusedHit {
                    id: MemoryId::from(*i),
                    score: 1.0,
                    paths: [None; 3],
                })
                .collect::<Vec<_>>()
        };
        let mems = [old.clone(), new.clone()];
        let look = |id: &MemoryId| mems.iter().find(|m| &m.id == id);
        let with = rank(
            fused(["z-old", "a-new"]),
            look,
            &RankingFactors::default(),
            &QueryUnderstanding::default(),
            now(),
        );
        assert_eq!(with[0].fused.id.as_str(), "a-new");
        let without = rank(
            fused(["z-old", "a-new"]),
            look,
            &RankingFactors::none(),
            &QueryUnderstanding::default(),
            now(),
        );
        assert_eq!(without[0].fused.id.as_str(), "a-new"); // a tie goes to the later memory
    }
}
