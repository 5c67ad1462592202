-- Kiln schema 8: the documents every step writes (a group's state, 10-21 KB for a host running
-- firmware-upgrade or pre-job-health; a step's result, up to 37 KB with an nvidia-smi tail) are
-- compressed with lz4 instead of pglz. A rollout of 30 pods at once writes ~400 of each a second
-- and PostgreSQL's backends were its busiest processes. Only new values change; a metadata-only
-- ALTER, no table rewrite.
ALTER TABLE run_groups ALTER COLUMN state SET COMPRESSION lz4;
ALTER TABLE assignments ALTER COLUMN result SET COMPRESSION lz4;
