-- Kiln schema 12: a revoked token is announced to every kilnd replica at once (LISTEN
-- kiln_tokens, orchestrator/db/pg_notify.h), so a replica drops it from its token cache within
-- milliseconds; the once-a-second revocation feed (0006) stays as the fallback.
CREATE FUNCTION kiln_notify_token_revoked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('kiln_tokens', NEW.id);
  RETURN NEW;
END;
$$;

CREATE TRIGGER tokens_revoked_notify
  AFTER UPDATE OF revoked_at ON tokens
  FOR EACH ROW WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL)
  EXECUTE FUNCTION kiln_notify_token_revoked();
