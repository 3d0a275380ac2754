//! The shared working-memory conformance suite against the in-process implementation.

use std::sync::Arc;

use hindsight_core::WorkingMemory;
use hindsight_engine::InProcessWorkingMemory;

hindsight_conformance::working_memory_conformance_tests!(|| async move {
    Arc::new(InProcessWorkingMemory::new()) as Arc<dyn WorkingMemory>
});
