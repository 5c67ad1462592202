-- Kiln schema 9: a group's state (10-21 KB of JSON, ~2.5 KB with lz4) is rewritten with every
-- report of its host. Stored out of line (the default EXTENDED), each rewrite also wrote new
-- TOAST chunks and their index entries and left the old ones dead; MAIN keeps the compressed
-- value in the row while it fits in a page. A fill factor of 70 leaves room on the page for
-- the next version of the row (a HOT update: no index entry when no indexed column changed).
-- Both apply to rows written from now on: metadata-only, no table rewrite.
ALTER TABLE run_groups ALTER COLUMN state SET STORAGE MAIN;
ALTER TABLE run_groups SET (fillfactor = 70);
