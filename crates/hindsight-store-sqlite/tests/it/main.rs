//! Integration tests of `hindsight-store-sqlite`, linked into one test binary (each integration-test
//! binary links the whole dependency graph; one per crate keeps CI's disk and link time small).

mod ann_tiers;
mod conformance;
mod store;
