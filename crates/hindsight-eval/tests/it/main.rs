//! Integration tests of `hindsight-eval`, linked into one test binary (each integration-test
//! binary links the whole dependency graph; one per crate keeps CI's disk and link time small).

mod metric_props;
mod trec_eval_parity;
