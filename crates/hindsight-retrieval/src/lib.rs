//! Retrieval logic as pure functions over ranked lists.
//!
//! A search runs in three steps; this crate owns the two that need no IO:
//!
//! 1. [`understand`] turns query text and the query time into a [`QueryUnderstanding`]: identifier
//!    tokens (order numbers, ticket ids), a time window from relative expressions in English and
//!    Chinese ("last week", "上周", "三个月前"), and kind hints ("what failed"). Its
//!    [`hindsight_core::StructuredQuery`] feeds the structured path.
//! 2. (IO, in the engine) each path of a [`hindsight_core::Store`] returns its ranked [`PathHits`].
//! 3. [`fuse`] combines the per-path lists with a [`FusionMethod`] (weighted sum after per-path
//!    [`Normalization`], reciprocal rank fusion, CombMNZ), and [`rank`] multiplies each fused score
//!    by the [`RankingFactors`] (time decay, importance, access boost, source trust, usefulness),
//!    each of which can be switched off for ablations. Every [`RankedHit`] keeps its per-path
//!    ranks and scores and its factor breakdown, so a result can always be explained.
//!
//! [`PathHits`]: hindsight_core::PathHits

mod fusion;
mod query;
mod ranking;

pub use fusion::{
    FusedHit, FusionMethod, Normalization, PathContribution, PathWeights, fuse, normalize,
    served_order, tied_ranks,
};
pub use query::{QueryUnderstanding, extract_identifiers, parse_time_range, understand};
pub use ranking::{FactorBreakdown, RankedHit, RankingFactors, rank};
