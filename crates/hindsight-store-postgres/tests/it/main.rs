//! Integration tests of `hindsight-store-postgres`, linked into one test binary (each integration-test
//! binary links the whole dependency graph; one per crate keeps CI's disk and link time small).

mod bm25;
mod common;
mod conformance;
mod store;
