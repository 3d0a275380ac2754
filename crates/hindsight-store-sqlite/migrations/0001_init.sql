-- hindsight embedded store, schema v1.
-- Times are INTEGER nanoseconds since the Unix epoch (UTC): exact round trip, cheap range scans.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);

-- `rowid` is the key of the derived indexes (vector + keyword). AUTOINCREMENT: never reused
-- after a purge, so a stale index entry can never point at a different memory.
CREATE TABLE memories (
    rowid            INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    namespace        TEXT NOT NULL,
    kind             TEXT NOT NULL,
    content          TEXT NOT NULL,
    tags             TEXT NOT NULL DEFAULT '[]',
    context          TEXT NOT NULL DEFAULT '',
    entities         TEXT NOT NULL DEFAULT '{}',
    importance       REAL NOT NULL,
    source           TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    last_accessed_at INTEGER NOT NULL,
    access_count     INTEGER NOT NULL DEFAULT 0,
    usefulness       REAL NOT NULL DEFAULT 0,
    status           TEXT NOT NULL,
    status_reason    TEXT,
    superseded_by    TEXT,
    task_id          TEXT,
    task_type        TEXT,
    outcome          TEXT,
    embedding_model  TEXT NOT NULL,
    vector           BLOB NOT NULL
);

CREATE INDEX memories_ns_id ON memories (namespace, id);
CREATE INDEX memories_ns_created ON memories (namespace, created_at);

-- One row per entity of a memory, for the structured path's exact (case-insensitive) match.
CREATE TABLE memory_entities (
    memory_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
    key   TEXT NOT NULL,
    value TEXT NOT NULL COLLATE NOCASE,
    PRIMARY KEY (memory_rowid, key)
) WITHOUT ROWID;

CREATE INDEX memory_entities_value ON memory_entities (value);
CREATE INDEX memory_entities_key_value ON memory_entities (key, value);

CREATE TABLE audit_log (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    at        INTEGER NOT NULL,
    action    TEXT NOT NULL
);

-- `generation` counts writes that change indexed text; the keyword index records the generation it
-- reflects and is rebuilt when they differ.
INSERT INTO meta (key, value) VALUES ('schema_version', '1'), ('generation', '0');
