-- Kiln schema 23 (issue 32): steps about a host's BMC run on an out-of-band runner, not on the
-- host's agent. `runner` names it (the pod's management.runner); NULL: the host's own agent.
-- Whoever runs an assignment is its worker, "runner:NAME" or the host id (common/runner_key.h):
-- only that worker's agent token takes or reports it. A runner's agent token is bound to its
-- key in tokens.host_id ("runner:NAME"), which names no host row.
ALTER TABLE assignments ADD COLUMN runner text;
CREATE INDEX assignments_runner_open ON assignments (runner, created_at)
  WHERE runner IS NOT NULL AND state IN ('pending', 'dispatched');
