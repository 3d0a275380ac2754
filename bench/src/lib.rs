//! The criterion benchmarks of hindsight live in `bench/benches/` (`cargo bench -p hindsight-bench`).
//!
//! Benchmarks live in their own package so that `cargo test` never times anything: speed targets
//! are measured here, never asserted in unit tests.
