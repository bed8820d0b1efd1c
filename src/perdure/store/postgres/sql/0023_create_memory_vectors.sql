-- Semantic search over long-term memory: one row per embedded text of an item (path names the
-- field: 'text', 'tags.0', '$' for the whole value), written in the same transaction as the
-- item's put, which replaces them; they go with the item (delete, erase, expiry). vector is
-- dims float32 numbers, little-endian, as on SQLite (pgvector is not required).
-- memory.ttl_seconds keeps a put's time to live so that a read may refresh expires_at
-- (LangGraph's refresh_on_read); NULL for an item without one.

ALTER TABLE perdure.memory
    ADD COLUMN ttl_seconds double precision CHECK (ttl_seconds IS NULL OR ttl_seconds > 0);

CREATE TABLE perdure.memory_vectors (
    tenant_id   text NOT NULL,
    namespace   text COLLATE "C" NOT NULL,
    key         text COLLATE "C" NOT NULL,
    path        text NOT NULL,
    dims        integer NOT NULL CHECK (dims >= 1),
    vector      bytea NOT NULL CHECK (length(vector) = 4 * dims),
    PRIMARY KEY (tenant_id, namespace, key, path),
    FOREIGN KEY (tenant_id, namespace, key) REFERENCES perdure.memory (tenant_id, namespace, key)
        ON DELETE CASCADE
);
