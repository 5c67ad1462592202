-- Kiln schema 22 (issue 32): each pod's management endpoints, as the fleet file gives them:
-- templates for its compute trays' and NVLink switch trays' BMCs, the protocol, and the name of
-- the credential the out-of-band runners hold (core/management.h). Never a secret. '{}': none.
ALTER TABLE pods ADD COLUMN management jsonb NOT NULL DEFAULT '{}';
