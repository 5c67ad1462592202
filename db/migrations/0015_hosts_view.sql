-- Issue 18, the console's hosts view: GET /hosts sorted by state_since (keyset on (state_since, id))
-- and the header search's host id prefix in any case (lower(id) LIKE 'prefix%': the ids are
-- COLLATE "C", so a plain btree on lower(id) serves the prefix as a range).
CREATE INDEX hosts_state_since ON hosts (state_since, id);
CREATE INDEX hosts_lower_id ON hosts (lower(id));
