-- Kind hints ("what warnings do I have") read the newest memories of a kind; without this index
-- SQLite walks (namespace, created_at) over the whole namespace to find a rare kind.
CREATE INDEX memories_ns_kind_created ON memories (namespace, kind, created_at);
