-- Kiln schema 2: workflows, workflow runs, agent assignments, enrolment tokens, agent liveness.

ALTER TABLE tokens DROP CONSTRAINT tokens_role_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_role_check
  CHECK (role IN ('viewer', 'operator', 'admin', 'agent', 'enroll'));

ALTER TABLE hosts ADD COLUMN agent_version text;
ALTER TABLE hosts ADD COLUMN unreachable boolean NOT NULL DEFAULT false;
ALTER TABLE hosts ADD COLUMN inventory_at timestamptz;
ALTER TABLE hosts ADD COLUMN repairs int NOT NULL DEFAULT 0;

-- Every version of every workflow, by content hash; a run pins the exact version it started with.
CREATE TABLE workflow_versions (
  name        text NOT NULL,
  hash        text NOT NULL,
  yaml        text NOT NULL,
  source      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  created_by  text NOT NULL,
  PRIMARY KEY (name, hash)
);
-- The version new runs of a workflow use.
CREATE TABLE workflows (
  name        text PRIMARY KEY,
  hash        text NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (name, hash) REFERENCES workflow_versions (name, hash)
);

CREATE SEQUENCE workflow_run_seq;
CREATE TABLE workflow_runs (
  id             text PRIMARY KEY,
  workflow       text NOT NULL,
  workflow_hash  text NOT NULL,
  scope          text NOT NULL,
  purpose        text NOT NULL,
  params         jsonb NOT NULL,
  state          text NOT NULL CHECK (state IN ('running', 'passed', 'failed', 'cancelled')),
  created_by     text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  finished_at    timestamptz,
  summary        jsonb NOT NULL DEFAULT '{}',
  FOREIGN KEY (workflow, workflow_hash) REFERENCES workflow_versions (name, hash)
);
CREATE INDEX workflow_runs_state ON workflow_runs (state, id);
CREATE INDEX workflow_runs_created ON workflow_runs (created_at);

-- One group of a run: a pod (pod scope) or a host (host scope); state is the engine's JSON.
CREATE TABLE run_groups (
  run_id       text NOT NULL REFERENCES workflow_runs (id),
  group_key    text NOT NULL,
  state        jsonb NOT NULL,
  done         boolean NOT NULL DEFAULT false,
  next_wakeup  timestamptz,
  PRIMARY KEY (run_id, group_key)
);
CREATE INDEX run_groups_wakeup ON run_groups (next_wakeup) WHERE NOT done;
CREATE TABLE run_hosts (
  run_id   text NOT NULL REFERENCES workflow_runs (id),
  host_id  text COLLATE "C" NOT NULL REFERENCES hosts (id),
  group_key text NOT NULL,
  PRIMARY KEY (run_id, host_id)
);
CREATE INDEX run_hosts_host ON run_hosts (host_id);

-- A step for one host's agent. `lease` grows each time the step is handed out; a report with
-- an older lease is refused.
CREATE TABLE assignments (
  id                text PRIMARY KEY,
  run_id            text NOT NULL REFERENCES workflow_runs (id),
  group_key         text NOT NULL,
  host_id           text COLLATE "C" NOT NULL REFERENCES hosts (id),
  step_id           text NOT NULL,
  attempt           int NOT NULL,
  type              text NOT NULL,
  argv              jsonb NOT NULL,
  timeout_ms        bigint NOT NULL,
  parse             text NOT NULL,
  inventory_after   boolean NOT NULL,
  state             text NOT NULL CHECK (state IN ('pending', 'dispatched', 'done', 'lost', 'cancelled')),
  lease             int NOT NULL DEFAULT 0,
  created_at        timestamptz NOT NULL DEFAULT now(),
  dispatched_at     timestamptz,
  lease_expires_at  timestamptz,
  finished_at       timestamptz,
  result            jsonb
);
CREATE INDEX assignments_host_open ON assignments (host_id, created_at) WHERE state IN ('pending', 'dispatched');
CREATE INDEX assignments_lease ON assignments (lease_expires_at) WHERE state = 'dispatched';
CREATE INDEX assignments_run ON assignments (run_id);
