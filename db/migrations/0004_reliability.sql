-- Kiln schema 4: the reliability ledger. An interruption is a job stopped by the fleet;
-- `candidate` rows are recorded by Kiln itself (a host failed while allocated) for triage.

CREATE TABLE interruptions (
  id           text PRIMARY KEY,
  at           timestamptz NOT NULL,
  job          text NOT NULL DEFAULT '',
  job_gpus     int,
  pod          text,
  cause        text NOT NULL,
  owner        text NOT NULL DEFAULT '',
  description  text NOT NULL DEFAULT '',
  candidate    boolean NOT NULL DEFAULT false,
  created_by   text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX interruptions_at ON interruptions (at);

CREATE TABLE interruption_hosts (
  interruption_id  text NOT NULL REFERENCES interruptions (id),
  host_id          text COLLATE "C" NOT NULL REFERENCES hosts (id),
  PRIMARY KEY (interruption_id, host_id)
);
CREATE INDEX interruption_hosts_host ON interruption_hosts (host_id);

CREATE SEQUENCE interruption_candidate_seq;
