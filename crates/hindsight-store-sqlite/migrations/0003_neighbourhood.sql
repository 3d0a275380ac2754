-- A turn's conversational neighbourhood (the turns before it in its conversation), indexed and
-- embedded with it; derived by the engine when the memory is stored.
ALTER TABLE memories ADD COLUMN neighbourhood TEXT NOT NULL DEFAULT '';
