//! Hard filters (every path honours them) and soft structured signals (scored by the structured path).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::memory::{Memory, MemoryId, MemoryKind, Namespace, Outcome, Status, TaskType};
use crate::store::{PathHit, PathHits};

/// Half-open time interval `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeRange {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

impl TimeRange {
    pub fn contains(&self, t: DateTime<Utc>) -> bool {
        self.start <= t && t < self.end
    }

    /// The bounds as nanoseconds since the epoch, the stores' time encoding, saturating: a bound
    /// before 1677 or after 2262 (what i64 nanoseconds can hold, so no stored time lies there)
    /// becomes `i64::MIN` / `i64::MAX`. A filter "created before X" with an open start
    /// (`DateTime::MIN_UTC`) thus matches everything before X rather than failing.
    pub fn nanos_bounds(&self) -> (i64, i64) {
        (saturating_nanos(self.start), saturating_nanos(self.end))
    }
}

/// `t` as nanoseconds since the epoch, the stores' time encoding, or an `invalid` error naming
/// `field` when `t` lies outside what i64 nanoseconds hold (1677-09-21 to 2262-04-11).
pub fn storable_nanos(field: &str, t: DateTime<Utc>) -> crate::Result<i64> {
    t.timestamp_nanos_opt().ok_or_else(|| {
        crate::Error::invalid(
            field,
            format!("{t} is outside the storable range (1677-2262)"),
        )
    })
}

fn saturating_nanos(t: DateTime<Utc>) -> i64 {
    t.timestamp_nanos_opt().unwrap_or(if t.timestamp() < 0 {
        i64::MIN
    } else {
        i64::MAX
    })
}

/// Hard constraints applied by every retrieval path. An empty list means "any".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Filter {
    pub kinds: Vec<MemoryKind>,
    /// The memory must carry every one of these tags.
    pub tags: Vec<String>,
    /// The memory must carry none of these tags (the engine keeps its guard lessons out of
    /// ordinary retrieval with it).
    pub exclude_tags: Vec<String>,
    /// Each entity must be present with exactly this value.
    pub entities: BTreeMap<String, String>,
    pub outcomes: Vec<Outcome>,
    pub task_types: Vec<TaskType>,
    /// Statuses to include; empty means active only (superseded/deprecated/quarantined/forgotten
    /// are hidden by default).
    pub statuses: Vec<Status>,
    pub created: Option<TimeRange>,
}

impl Filter {
    /// Statuses this filter admits.
    pub fn effective_statuses(&self) -> &[Status] {
        if self.statuses.is_empty() {
            &[Status::Active]
        } else {
            &self.statuses
        }
    }

    /// The reference semantics of the filter. Backends that filter in SQL must agree with it
    /// (the conformance suite checks).
    pub fn matches(&self, m: &Memory) -> bool {
        (self.kinds.is_empty() || self.kinds.contains(&m.kind))
            && self.tags.iter().all(|t| m.tags.iter().any(|mt| mt == t))
            && !self
                .exclude_tags
                .iter()
                .any(|t| m.tags.iter().any(|mt| mt == t))
            && self
                .entities
                .iter()
                .all(|(k, v)| m.entities.get(k) == Some(v))
            && (self.outcomes.is_empty() || m.outcome.is_some_and(|o| self.outcomes.contains(&o)))
            && (self.task_types.is_empty()
                || m.task_type.is_some_and(|t| self.task_types.contains(&t)))
            && self.effective_statuses().contains(&m.status)
            && self.created.is_none_or(|r| r.contains(m.created_at))
    }
}

/// Soft signals extracted from a query (ids, relative times, tag and kind hints) that the
/// structured path scores. A memory found by the structured path matched at least one signal,
/// and one of the selective ones (identifier, entity, time) when the query has any.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StructuredQuery {
    /// Identifier-like tokens from the query (order numbers, ticket ids) matched exactly against
    /// entity values.
    pub identifiers: Vec<String>,
    /// Explicit `key = value` entity constraints, matched exactly.
    pub entities: BTreeMap<String, String>,
    /// A time window mentioned in the query ("last week"), matched against `created_at`.
    pub time_range: Option<TimeRange>,
    /// Tags named in the query.
    pub tags: Vec<String>,
    /// Kinds hinted by the query ("what failed" -> warning).
    pub kinds: Vec<MemoryKind>,
}

/// Weights of the structured signals. An identifier or entity match is the strongest evidence.
pub mod weights {
    pub const ENTITY: f32 = 1.0;
    pub const TIME: f32 = 0.5;
    pub const TAG: f32 = 0.25;
    pub const KIND: f32 = 0.25;
}

impl StructuredQuery {
    pub fn is_empty(&self) -> bool {
        self.identifiers.is_empty()
            && self.entities.is_empty()
            && self.time_range.is_none()
            && self.tags.is_empty()
            && self.kinds.is_empty()
    }

    /// True when a memory can only be found through entities / time (the "selective" signals);
    /// tag and kind hints alone are too broad to enumerate a namespace by.
    pub fn has_selective_signal(&self) -> bool {
        self.has_entity_signal() || self.time_range.is_some()
    }

    /// An identifier or an entity to match (the strongest signals; see [`weights::ENTITY`]).
    pub fn has_entity_signal(&self) -> bool {
        !self.identifiers.is_empty() || !self.entities.is_empty()
    }

    /// The structured path's hits from a backend's candidates: those in `ns` that pass `filter`
    /// and score above 0, best first (ties: newer first, then id ascending), at most `k`. Every
    /// backend ranks its candidates with this, so the path orders hits the same everywhere.
    pub fn rank(
        &self,
        ns: &Namespace,
        filter: &Filter,
        candidates: impl IntoIterator<Item = Memory>,
        k: usize,
    ) -> PathHits {
        Self::top_k(
            candidates
                .into_iter()
                .filter(|m| m.namespace == *ns && filter.matches(m))
                .map(|m| (self.score(&m), m.created_at, m.id)),
            k,
        )
    }

    /// The ordering of [`StructuredQuery::rank`] over already scored candidates
    /// `(score, created_at, id)`, for a backend that scores from its own copy of the fields
    /// [`StructuredQuery::score_fields`] reads: those scoring above 0, best first (ties: newer
    /// first, then id ascending), at most `k`.
    pub fn top_k(
        scored: impl IntoIterator<Item = (f32, DateTime<Utc>, MemoryId)>,
        k: usize,
    ) -> PathHits {
        let mut scored: Vec<(f32, DateTime<Utc>, MemoryId)> =
            scored.into_iter().filter(|(s, _, _)| *s > 0.0).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
        scored.truncate(k);
        scored
            .into_iter()
            .map(|(score, _, id)| PathHit { id, score })
            .collect()
    }

    /// Score of a memory against the signals; 0 when nothing matches. Pure, shared by all backends:
    /// a backend fetches candidates however it likes and ranks them with this function.
    pub fn score(&self, m: &Memory) -> f32 {
        self.score_fields(m.kind, m.created_at, &m.tags, &m.entities)
    }

    /// [`StructuredQuery::score`] over the only fields it reads, for backends that keep them
    /// outside a [`Memory`].
    pub fn score_fields(
        &self,
        kind: MemoryKind,
        created_at: DateTime<Utc>,
        tags: &[String],
        entities: &BTreeMap<String, String>,
    ) -> f32 {
        let mut s = 0.0;
        let mut entity_hits = 0usize;
        for ident in &self.identifiers {
            if entities.values().any(|v| v.eq_ignore_ascii_case(ident)) {
                entity_hits += 1;
            }
        }
        for (k, v) in &self.entities {
            if entities.get(k).is_some_and(|mv| mv.eq_ignore_ascii_case(v)) {
                entity_hits += 1;
            }
        }
        s += weights::ENTITY * entity_hits as f32;
        let in_window = self.time_range.is_some_and(|r| r.contains(created_at));
        if in_window {
            s += weights::TIME;
        }
        // With an identifier, entity or time signal in the query, a memory must match one of
        // them: tag and kind hints only add to its score (every backend fetches its candidates
        // by the selective signals then, so a hint never enumerates a namespace).
        if self.has_selective_signal() && entity_hits == 0 && !in_window {
            return 0.0;
        }
        s += weights::TAG
            * self
                .tags
                .iter()
                .filter(|t| tags.iter().any(|mt| mt.eq_ignore_ascii_case(t)))
                .count() as f32;
        if self.kinds.contains(&kind) {
            s += weights::KIND;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn nanos_bounds_saturate_outside_what_i64_nanoseconds_hold() {
        let t = |y, m, d| {
            Utc.with_ymd_and_hms(y, m, d, 0, 0, 0)
                .single()
                .expect("valid date")
        };
        let open = TimeRange {
            start: DateTime::<Utc>::MIN_UTC,
            end: DateTime::<Utc>::MAX_UTC,
        };
        assert_eq!(open.nanos_bounds(), (i64::MIN, i64::MAX));
        let inside = TimeRange {
            start: t(1970, 1, 1),
            end: t(2024, 5, 1),
        };
        assert_eq!(inside.nanos_bounds(), (0, 1_714_521_600_000_000_000));
        // Wholly past or wholly future windows stay empty.
        let past = TimeRange {
            start: t(1000, 1, 1),
            end: t(1500, 1, 1),
        };
        assert_eq!(past.nanos_bounds(), (i64::MIN, i64::MIN));
        let future = TimeRange {
            start: t(3000, 1, 1),
            end: t(4000, 1, 1),
        };
        assert_eq!(future.nanos_bounds(), (i64::MAX, i64::MAX));
    }

    #[test]
    fn hints_only_add_to_a_selective_match() {
        let at = Utc
            .with_ymd_and_hms(2026, 1, 2, 0, 0, 0)
            .single()
            .expect("date");
        let tagged = |entity: Option<&str>| {
            let entities: BTreeMap<String, String> = entity
                .map(|v| ("ticket".to_owned(), v.to_owned()))
                .into_iter()
                .collect();
            (vec!["Rollback".to_owned()], entities)
        };
        let hints = StructuredQuery {
            tags: vec!["rollback".into()],
            kinds: vec![MemoryKind::Warning],
            ..StructuredQuery::default()
        };
        let (tags, none) = tagged(None);
        assert_eq!(
            hints.score_fields(MemoryKind::Warning, at, &tags, &none),
            0.5
        );
        let selective = StructuredQuery {
            identifiers: vec!["OPS-9".into()],
            ..hints.clone()
        };
        // The hints alone no longer find it; with the identifier they add to its score.
        assert_eq!(
            selective.score_fields(MemoryKind::Warning, at, &tags, &none),
            0.0
        );
        let (tags, ops) = tagged(Some("ops-9"));
        assert_eq!(
            selective.score_fields(MemoryKind::Warning, at, &tags, &ops),
            1.5
        );
        let window = StructuredQuery {
            time_range: Some(TimeRange {
                start: at,
                end: at + chrono::Duration::days(1),
            }),
            ..hints
        };
        assert_eq!(
            window.score_fields(MemoryKind::Warning, at, &tags, &none),
            1.0
        );
        let later = at + chrono::Duration::days(2);
        assert_eq!(
            window.score_fields(MemoryKind::Warning, later, &tags, &none),
            0.0
        );
    }
}
