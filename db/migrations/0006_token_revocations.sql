-- Kiln schema 6: every kilnd replica asks about once a second which tokens were revoked
-- lately (orchestrator/api/api.cc followRevocations), so its token cache can keep a token for
-- minutes and still drop a revoked one within seconds.
CREATE INDEX tokens_revoked ON tokens (revoked_at) WHERE revoked_at IS NOT NULL;
