-- Kiln schema 21 (issue 31): when each token was last used (each kilnd records the tokens it
-- authenticated, a token at most every 10 minutes, so a fleet's agents polling every few
-- seconds cost a few hundred row updates a second, not thousands). NULL: never seen since.
-- Agent tokens now expire (tokens.expires_at, schema 18) and renew themselves.
ALTER TABLE tokens ADD COLUMN last_used_at timestamptz;
-- Each kilnd's revocation follower also drops tokens that expired since its last look from its
-- cache (Store::tokensRevokedSince), every second: an index, as for revoked_at.
CREATE INDEX tokens_expires ON tokens (expires_at) WHERE expires_at IS NOT NULL;
