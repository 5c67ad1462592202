-- Kiln schema 18 (issue 31): enrolment tokens bound to one host, single use and short-lived;
-- token expiry; the pre-job check's narrow role.

ALTER TABLE tokens DROP CONSTRAINT tokens_role_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_role_check
  CHECK (role IN ('viewer', 'operator', 'admin', 'agent', 'enroll', 'prejob'));

-- Agent tokens act for their host; an enrolment token may be bound to one (POST
-- /hosts/{id}/enrolment-tokens) or fleet-wide (POST /tokens); no other token names a host.
ALTER TABLE tokens DROP CONSTRAINT tokens_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_host_check
  CHECK (CASE role WHEN 'agent' THEN host_id IS NOT NULL WHEN 'enroll' THEN true ELSE host_id IS NULL END);

-- A token past expires_at authenticates nothing (none: it does not expire).
ALTER TABLE tokens ADD COLUMN expires_at timestamptz;
-- A host's enrolment token is spent by its first registration (and revoked with it).
ALTER TABLE tokens ADD COLUMN used_at timestamptz;
-- A host's enrolment token issued to replace the host's live agent (an operator's re-enrolment).
ALTER TABLE tokens ADD COLUMN reenroll boolean NOT NULL DEFAULT false;

-- Registration asks whether the host has a live agent token.
CREATE INDEX tokens_host_live ON tokens (host_id) WHERE revoked_at IS NULL AND host_id IS NOT NULL;
