//! Redis working memory for hindsight: [`RedisWorkingMemory`] implements
//! [`hindsight_core::WorkingMemory`] so several server processes share session scratch state.
//!
//! Layout (all keys of one session share the hash tag `{ns:session}`, so a Redis Cluster keeps them
//! in one slot; `:`, `%`, `{`, `}` inside names are percent-encoded so distinct names never collide):
//!
//! - `PREFIX:{ns:session}:k:KEY` — a string holding the JSON entry (value, `expires_at`), written
//!   with `SET … PX ttl` so Redis itself expires it (per-key TTL; an expired key is never returned).
//! - `PREFIX:{ns:session}:idx` — a set of the session's keys, so `get_all` and clearing a session
//!   need no `KEYS`/`SCAN`. Members whose entry expired are dropped lazily on `get_all`; the set
//!   itself expires with its longest-lived entry (or never, when an entry has no TTL).
//!
//! Writes are single Lua scripts (`EVAL`), so an entry and its index membership change together.
//! Nothing here rewrites large values or scans the keyspace, which keeps the append-only file
//! (`appendonly yes`) small and its rewrites cheap.

mod memory;

pub use memory::RedisWorkingMemory;
