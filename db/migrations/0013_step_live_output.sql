-- Kiln schema 13 (issue 18): the live output of running steps. kiln-agent sends what a step
-- printed about once a second while it runs (POST /assignments/{id}/output); any kilnd replica
-- serves it to the console (GET /assignments/{id}/output?stdout_since=&stderr_since=). One row
-- per assignment, updated in place: the last 64 KiB of each stream and the stream offsets they
-- start and end at (orchestrator/runs/live_output.h).
--
-- UNLOGGED: a write per running step per second goes without WAL. A crash of PostgreSQL empties
-- the table and a standby does not have it; that loses only the view of output that is still
-- being written, and the step's result (assignments.result) keeps its tails anyway. No foreign
-- key: rows of finished assignments are swept by kilnd (orchestrator/db/pg_live_output.cc).
CREATE UNLOGGED TABLE step_live_output (
  assignment_id  text PRIMARY KEY,
  stdout         text NOT NULL DEFAULT '',
  stdout_start   bigint NOT NULL DEFAULT 0,
  stdout_end     bigint NOT NULL DEFAULT 0,
  stderr         text NOT NULL DEFAULT '',
  stderr_start   bigint NOT NULL DEFAULT 0,
  stderr_end     bigint NOT NULL DEFAULT 0,
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX step_live_output_updated ON step_live_output (updated_at);
