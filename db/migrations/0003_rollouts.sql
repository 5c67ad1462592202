-- Kiln schema 3: bundles, rollouts and their pods and events; runs owned by a rollout.

-- A run started by a controller carries an owner key, so a controller that crashed after
-- starting the run finds it again instead of starting a second one.
ALTER TABLE workflow_runs ADD COLUMN owner text;
CREATE UNIQUE INDEX workflow_runs_owner ON workflow_runs (owner) WHERE owner IS NOT NULL;

CREATE SEQUENCE bundle_seq;
CREATE TABLE bundles (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  version     text NOT NULL,
  spec        jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  created_by  text NOT NULL,
  UNIQUE (name, version)
);

CREATE SEQUENCE rollout_seq;
CREATE TABLE rollouts (
  id                      text PRIMARY KEY,
  bundle_id               text NOT NULL REFERENCES bundles (id),
  selector                jsonb NOT NULL,
  policy                  jsonb NOT NULL,
  plan                    jsonb NOT NULL,
  state                   text NOT NULL CHECK (state IN ('created', 'running', 'paused', 'halted', 'completed',
                            'aborting', 'aborted')),
  halt_reason             text NOT NULL DEFAULT '',
  rollback_of             text REFERENCES rollouts (id),
  created_by              text NOT NULL,
  created_at              timestamptz NOT NULL DEFAULT now(),
  started_at              timestamptz,
  finished_at             timestamptz,
  previous_wave_finished  timestamptz
);
CREATE INDEX rollouts_state ON rollouts (state);

CREATE TABLE rollout_pods (
  rollout_id         text NOT NULL REFERENCES rollouts (id),
  pod_id             text COLLATE "C" NOT NULL REFERENCES pods (id),
  wave               int NOT NULL,
  position           int NOT NULL,
  phase              text NOT NULL CHECK (phase IN ('pending', 'draining', 'upgrading', 'validating', 'succeeded',
                       'failed', 'skipped', 'aborted')),
  waiting_reason     text NOT NULL DEFAULT '',
  message            text NOT NULL DEFAULT '',
  attempt            int NOT NULL DEFAULT 0,
  run_id             text,
  validation_run_id  text,
  before_versions    jsonb,
  started_at         timestamptz,
  finished_at        timestamptz,
  PRIMARY KEY (rollout_id, pod_id)
);
CREATE INDEX rollout_pods_pod ON rollout_pods (pod_id);
CREATE INDEX rollout_pods_phase ON rollout_pods (phase);

CREATE TABLE rollout_events (
  id          bigserial PRIMARY KEY,
  rollout_id  text NOT NULL REFERENCES rollouts (id),
  at          timestamptz NOT NULL DEFAULT now(),
  pod_id      text,
  kind        text NOT NULL,
  message     text NOT NULL
);
CREATE INDEX rollout_events_rollout ON rollout_events (rollout_id, id);
