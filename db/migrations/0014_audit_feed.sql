-- Kiln schema 14: the audit feed (GET /api/v1/audit) reads newest first by id, filtered by
-- actor, target or an action prefix ("rollout."); each filter has an index that ends in id so
-- a page is a short index range scan rather than a walk over the whole log.
CREATE INDEX audit_log_actor_id ON audit_log (actor, id);
CREATE INDEX audit_log_target_id ON audit_log (target, id);
CREATE INDEX audit_log_action_id ON audit_log (action text_pattern_ops, id);
