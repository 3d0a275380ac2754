//! Integration tests of `hindsight-dataset`, linked into one test binary (each integration-test
//! binary links the whole dependency graph; one per crate keeps CI's disk and link time small).

mod chat_generator;
mod generator;
mod importers;
mod loader;
