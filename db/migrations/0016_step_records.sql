-- Kiln schema 16 (issue 15): the step records of a run in an insert-only log. A group's state
-- used to embed every record of every host (the pod of a pod-scope run: 18 hosts x every step
-- so far, tens of KB of JSON), parsed, rewritten and recompressed with every report of the
-- pod. Now a report appends its records here and the state keeps only what the engine reads
-- later (orchestrator/runs/engine.h: HostRun::history, leader_outcomes); views join the log
-- back in by run, in insertion order.
--
-- `record` is the engine's JSON of a StepRecord (runs::toJson), stored as json (text, no
-- conversion to jsonb on the hot path; only views read it back). No foreign key to
-- workflow_runs: every insert would take a KEY SHARE lock on the run's row, and the reports of
-- one run's hundreds of pods would share it through multixacts. Runs are never deleted.
-- A state written before this schema keeps its embedded records until its next write, which
-- moves them here (runs::groupFromJson reads both).
CREATE TABLE run_step_records (
  id         bigint GENERATED ALWAYS AS IDENTITY,
  run_id     text NOT NULL,
  group_key  text NOT NULL,
  host_id    text NOT NULL,
  record     json NOT NULL
);
CREATE INDEX run_step_records_run ON run_step_records (run_id, id);
