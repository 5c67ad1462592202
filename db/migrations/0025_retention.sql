-- Kiln schema 25 (issue 33): retention (orchestrator/retention/retention.h). Finished runs,
-- host events, rollout events of finished rollouts, idempotency keys and (once exported) audit
-- records are deleted once older than their rule, in small batches by the leader.

-- Finished runs, oldest first: the retention sweep's walk.
CREATE INDEX workflow_runs_finished ON workflow_runs (finished_at) WHERE state <> 'running';

-- How far back each kind was pruned (the newest cutoff a sweep deleted under): what a reader of
-- the history can rely on, and what kiln_rebuild_service_days checks below.
CREATE TABLE retention_horizon (
  kind    text PRIMARY KEY,
  before  timestamptz NOT NULL
);

-- Pruned host events must not move the hosts-in-service rollup (schema 5): they are history the
-- rollup already holds. Their DELETE, made by the sweep with kiln.pruning = 'on' (SET LOCAL, in
-- its own transaction), is skipped by the delete trigger; any other DELETE (a fix by hand) is
-- still followed.
DO $$
BEGIN
  EXECUTE format('CREATE OR REPLACE FUNCTION kiln_service_days_on_delete() RETURNS trigger LANGUAGE plpgsql AS %L',
                 'BEGIN IF current_setting(''kiln.pruning'', true) = ''on'' THEN RETURN NULL; END IF; '
                 || kiln_service_rollup_upsert('SELECT host_id, at, from_state, to_state, -1 AS sign FROM old_rows')
                 || '; RETURN NULL; END');
END
$$;

-- A rebuild from host_events after they were pruned would forget every host whose last move is
-- older than the horizon (it would count it out of service): refused.
CREATE OR REPLACE FUNCTION kiln_rebuild_service_days() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  horizon timestamptz;
BEGIN
  SELECT before INTO horizon FROM retention_horizon WHERE kind = 'host_events';
  IF horizon IS NOT NULL THEN
    RAISE EXCEPTION 'host events before % were pruned: service_days cannot be rebuilt from host_events', horizon;
  END IF;
  LOCK TABLE host_events IN SHARE MODE;
  DELETE FROM service_days;
  DELETE FROM service_hours;
  EXECUTE kiln_service_rollup_upsert('SELECT host_id, at, from_state, to_state, 1 AS sign FROM host_events');
END
$$;
