-- Kiln schema 5: hosts in service per UTC day, building and platform, kept by triggers on
-- host_events, so the reliability report reads days x buildings x platforms rows instead of
-- the whole host state history.
--
-- A host is in service in 'available' and 'allocated'. Each host_events row moves its host's
-- (building, platform) count of hosts in service by
--   delta = (to_state in service) - (from_state in service)      (a NULL from_state is not)
-- i.e. -1, 0 or +1. This equals the change from the host's previous event because every
-- writer keeps from_state = that event's to_state: applyTransition reads hosts.state FOR
-- UPDATE and writes it and the event in one transaction, and is the only code that changes
-- hosts.state; the fleet import writes a new host's first event (from_state NULL) with the
-- host; the agent gateway's 'reachable'/'unreachable' rows have from_state = to_state (0).
--
-- For the UTC day of each row:
--   net_hosts    += delta
--   tail_host_us += delta x (microseconds from the row's `at` to the end of its day)
-- With L(D) = the sum of net_hosts over the days before D (the level at D's start), the
-- host-seconds in service of the whole day D are L(D) x 86400 + tail_host_us(D) / 1e6.
-- tail_host_us is an integer of microseconds (timestamptz's resolution), not float seconds,
-- so that adding and removing rows cancels exactly and the table kept by the triggers equals
-- a rebuild bit for bit.
--
-- host_events is append-only in kilnd (nothing in kilnd updates or deletes its rows). The
-- triggers still follow UPDATE, DELETE and TRUNCATE, so a fix made by hand (or the
-- benchmark's backdating of import events) keeps the table right. A statement's rows are
-- folded into one upsert, in (day, building, platform) order, so two multi-row statements do
-- not lock rows in opposite orders (two transactions that each write several buildings in
-- separate statements still could deadlock, and one would be cancelled; kilnd writes one
-- host per statement, and a transaction's hosts are one pod's or one workflow group's). The
-- row of a (day, building, platform) stays locked until its transaction ends: transitions of
-- one building and platform on one day serialise at their commits (kilnd's transactions are
-- short).

CREATE TABLE service_days (
  day           date NOT NULL,
  building_id   text COLLATE "C" NOT NULL,
  platform      text NOT NULL,
  net_hosts     bigint NOT NULL,
  tail_host_us  bigint NOT NULL,
  PRIMARY KEY (day, building_id, platform)
);

CREATE FUNCTION kiln_service_delta(from_state text, to_state text) RETURNS int
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN (coalesce(to_state IN ('available', 'allocated'), false))::int
       - (coalesce(from_state IN ('available', 'allocated'), false))::int;

-- The upsert that folds `changes` (a query of host_id, at, from_state, to_state, sign) into
-- service_days: the one text the triggers and the rebuild run. The tail goes through a double
-- (date_part) rather than numeric (extract), which is slower; at most 86,400 s with
-- microseconds is exact in a double, and round() gives the integer back.
CREATE FUNCTION kiln_service_days_upsert(changes text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN 'INSERT INTO service_days AS s (day, building_id, platform, net_hosts, tail_host_us)'
      || ' SELECT c.day, p.building_id, p.platform, sum(c.delta),'
      || '   sum(c.delta * round(date_part(''epoch'', c.day + interval ''1 day'' - c.utc) * 1000000)::bigint)'
      || ' FROM (SELECT host_id, at AT TIME ZONE ''UTC'' AS utc, (at AT TIME ZONE ''UTC'')::date AS day,'
      || '     sign * kiln_service_delta(from_state, to_state) AS delta FROM (' || changes || ') x) c'
      || '   JOIN hosts h ON h.id = c.host_id JOIN pods p ON p.id = h.pod_id'
      || ' WHERE c.delta <> 0'
      || ' GROUP BY c.day, p.building_id, p.platform ORDER BY c.day, p.building_id, p.platform'
      || ' ON CONFLICT (day, building_id, platform) DO UPDATE'
      || '   SET net_hosts = s.net_hosts + excluded.net_hosts, tail_host_us = s.tail_host_us + excluded.tail_host_us';

-- One trigger function per event, each running that upsert as a static statement written out
-- here from the text: PL/pgSQL keeps a static statement's plan, where EXECUTE plans it again
-- every time (measured: +0.35-0.5 ms per single-row INSERT with EXECUTE, +0.015-0.06 ms static).
DO $$
DECLARE
  op record;
BEGIN
  FOR op IN SELECT * FROM (VALUES
      ('insert', 'SELECT host_id, at, from_state, to_state, 1 AS sign FROM new_rows'),
      ('update', 'SELECT host_id, at, from_state, to_state, 1 AS sign FROM new_rows'
                 ' UNION ALL SELECT host_id, at, from_state, to_state, -1 FROM old_rows'),
      ('delete', 'SELECT host_id, at, from_state, to_state, -1 AS sign FROM old_rows')) AS v (event, changes)
  LOOP
    EXECUTE format('CREATE FUNCTION kiln_service_days_on_%s() RETURNS trigger LANGUAGE plpgsql AS %L', op.event,
                   'BEGIN ' || kiln_service_days_upsert(op.changes) || '; RETURN NULL; END');
  END LOOP;
END
$$;

CREATE FUNCTION kiln_service_days_on_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM service_days;
  RETURN NULL;
END
$$;

-- PostgreSQL allows transition tables only on single-event triggers: one trigger per event.
CREATE TRIGGER host_events_service_days_insert AFTER INSERT ON host_events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kiln_service_days_on_insert();
CREATE TRIGGER host_events_service_days_update AFTER UPDATE ON host_events
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION kiln_service_days_on_update();
CREATE TRIGGER host_events_service_days_delete AFTER DELETE ON host_events
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION kiln_service_days_on_delete();
CREATE TRIGGER host_events_service_days_truncate AFTER TRUNCATE ON host_events
  FOR EACH STATEMENT EXECUTE FUNCTION kiln_service_days_on_truncate();

-- Recomputes service_days from host_events (writers of host_events wait meanwhile).
CREATE FUNCTION kiln_rebuild_service_days() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE host_events IN SHARE MODE;
  DELETE FROM service_days;
  EXECUTE kiln_service_days_upsert('SELECT host_id, at, from_state, to_state, 1 AS sign FROM host_events');
END
$$;

SELECT kiln_rebuild_service_days();

-- The lemon list counts 'repair' events per host in the report's window.
CREATE INDEX host_events_repair ON host_events (at) INCLUDE (host_id) WHERE action = 'repair';
