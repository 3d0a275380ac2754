//! One integration-test binary for the crate (every test binary links the whole graph).

mod cli;
