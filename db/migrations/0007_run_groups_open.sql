-- Kiln schema 7: the controller asks every 200 ms which running runs have no open group left
-- (orchestrator/db/pg_run_store.cc finalizeRuns). Through run_groups_wakeup that walked every
-- open group of every run, and the dead versions each report leaves behind: 20-106 ms per pass
-- while a 10,008-host run was under way. Per run it is one index probe.
CREATE INDEX run_groups_open ON run_groups (run_id) WHERE NOT done;
