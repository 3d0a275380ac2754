//! Integration tests of `hindsight-harness`, linked into one test binary (each integration-test
//! binary links the whole dependency graph; one per crate keeps CI's disk and link time small).

mod defaults;
mod end_to_end;
mod poisoning;
mod served_order;
