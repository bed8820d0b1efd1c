-- Semantic search over long-term memory: one row per embedded text of an item (path names the
-- field: 'text', 'tags.0', '$' for the whole value), written in the same transaction as the
-- item's put, which replaces them; they go with the item (delete, erase, expiry). vector is
-- dims float32 numbers, little-endian (the layout sqlite-vec reads too).
-- memory.ttl_seconds keeps a put's time to live so that a read may refresh expires_at
-- (LangGraph's refresh_on_read); NULL for an item without one.

ALTER TABLE memory ADD COLUMN ttl_seconds REAL CHECK (ttl_seconds IS NULL OR ttl_seconds > 0);

CREATE TABLE memory_vectors (
    tenant_id   TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    key         TEXT NOT NULL,
    path        TEXT NOT NULL,
    dims        INTEGER NOT NULL CHECK (dims >= 1),
    vector      BLOB NOT NULL CHECK (length(vector) = 4 * dims),
    PRIMARY KEY (tenant_id, namespace, key, path),
    FOREIGN KEY (tenant_id, namespace, key) REFERENCES memory (tenant_id, namespace, key)
        ON DELETE CASCADE
);
