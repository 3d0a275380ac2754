//! Integration tests of `hindsight-embed`, linked into one test binary (each integration-test
//! binary links the whole dependency graph; one per crate keeps CI's disk and link time small).

mod http_embedder;
mod minilm_reference;
