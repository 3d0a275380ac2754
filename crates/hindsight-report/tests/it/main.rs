//! Integration tests of `hindsight-report`, linked into one test binary.

mod report_smoke;
