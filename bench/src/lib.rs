//! Shared fixtures for the criterion benchmarks in `bench/benches/`.
//!
//! Benchmarks live in their own package so that `cargo test` never times anything: speed targets
//! are measured here (and by the load harness), never asserted in unit tests.
