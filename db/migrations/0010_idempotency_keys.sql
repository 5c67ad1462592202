-- Kiln schema 10: the Idempotency-Key of a create (POST /rollouts, POST /workflow-runs), written
-- in the transaction that creates the object, so a retried request finds what the first one
-- made, on any replica, even when kilnd died before it could answer (issue 19).
CREATE TABLE idempotency_keys (
  key         text PRIMARY KEY,
  scope       text NOT NULL,          -- rollout | workflow_run
  fingerprint text NOT NULL,          -- sha256 of the request: a reuse with another body is refused
  object_id   text NOT NULL,
  created_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
