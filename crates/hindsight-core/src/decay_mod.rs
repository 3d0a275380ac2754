//! Time decay: pure functions of age and half-life.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::memory::MemoryKind;

/// Half-life in days per memory kind. Defaults follow the design: episodic 30 d, semantic 90 d,
/// warning 60 d (working memory expires by TTL, its half-life is nominal).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecayConfig {
    pub working_days: f64,
    pub episodic_days: f64,
    pub semantic_days: f64,
    pub warning_days: f64,
}

impl Default for DecayConfig {
    fn default() -> Self {
        DecayConfig {
            working_days: 1.0,
            episodic_days: 30.0,
            semantic_days: 90.0,
            warning_days: 60.0,
        }
    }
}

impl DecayConfig {
    pub fn half_life(&self, kind: MemoryKind) -> f64 {
        match kind {
            MemoryKind::Working => self.working_days,
            MemoryKind::Episodic => self.episodic_days,
            MemoryKind::Semantic => self.semantic_days,
            MemoryKind::Warning => self.warning_days,
        }
    }

    /// Same half-life for every kind (used by the half-life sweep).
    pub fn uniform(days: f64) -> Self {
        DecayConfig {
            working_days: days,
            episodic_days: days,
            semantic_days: days,
            warning_days: days,
        }
    }
}

/// Age in fractional days; memories from the future (clock skew, replayed logs) have age 0.
pub fn age_days(created_at: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    let ms = (now - created_at).num_milliseconds();
    (ms.max(0) as f64) / 86_400_000.0
}

/// `0.5^(age/half_life)`: 1 at age 0, 1/2 at one half-life. A non-positive or non-finite
/// half-life disables decay (factor 1).
pub fn decay_factor(age_days: f64, half_life_days: f64) -> f64 {
    if !(half_life_days.is_finite() && half_life_days > 0.0) {
        return 1.0;
    }
    0.5f64.powf(age_days.max(0.0) / half_life_days)
}

/// The design's standalone decay score:
/// `importance * 0.5^(days/half_life) * min(1, 0.5 + 0.1*access_count)`.
pub fn design_decay_score(
    importance: f64,
    age_days: f64,
    half_life_days: f64,
    access_count: u64,
) -> f64 {
    importance * decay_factor(age_days, half_life_days) * (0.5 + 0.1 * access_count as f64).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn defaults_match_design() {
        let d = DecayConfig::default();
        assert_eq!(d.half_life(MemoryKind::Episodic), 30.0);
        assert_eq!(d.half_life(MemoryKind::Semantic), 90.0);
        assert_eq!(d.half_life(MemoryKind::Warning), 60.0);
    }

    #[test]
    fn future_memories_do_not_grow() {
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .expect("valid")
            .to_utc();
        let later = DateTime::parse_from_rfc3339("2026-01-03T00:00:00Z")
            .expect("valid")
            .to_utc();
        assert_eq!(age_days(later, now), 0.0);
        assert_eq!(age_days(now, later), 2.0);
    }

    #[test]
    fn design_score_caps_access_boost() {
        assert!((design_decay_score(1.0, 0.0, 30.0, 0) - 0.5).abs() < 1e-12);
        assert!((design_decay_score(1.0, 0.0, 30.0, 50) - 1.0).abs() < 1e-12);
    }

    proptest! {
        #[test]
        fn half_life_halves_the_factor(age in 0.0f64..1000.0, hl in 0.5f64..400.0) {
            let a = decay_factor(age, hl);
            let b = decay_factor(age + hl, hl);
            prop_assert!((b - a / 2.0).abs() <= 1e-9 * a.max(1e-300));
        }

        #[test]
        fn decay_is_monotone_and_bounded(a1 in 0.0f64..1000.0, a2 in 0.0f64..1000.0, hl in 0.5f64..400.0) {
            let (lo, hi) = if a1 <= a2 { (a1, a2) } else { (a2, a1) };
            let (f_lo, f_hi) = (decay_factor(lo, hl), decay_factor(hi, hl));
            prop_assert!(f_hi <= f_lo);
            prop_assert!(f_lo <= 1.0 && f_hi >= 0.0);
        }
    }
}
