//! Integration tests of `hindsight-engine`, linked into one test binary (each integration-test
//! binary links the whole dependency graph; one per crate keeps CI's disk and link time small).

mod conversation;
mod guard;
mod pipeline;
mod working_conformance;
