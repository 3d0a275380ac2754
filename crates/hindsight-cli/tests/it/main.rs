//! Integration tests of `hindsight-cli`, linked into one test binary (each integration-test
//! binary links the whole dependency graph; one per crate keeps CI's disk and link time small).

mod cli;
mod crash;
mod mcp_python;
