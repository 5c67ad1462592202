-- Kiln schema 5: hosts in service per UTC day (service_days) and per hour (service_hours), by
-- building and platform, kept by triggers on host_events, so the reliability report reads
-- days x buildings x platforms rows (and the hours of a window's partial days, the raw events of
-- its partial hours) instead of the whole host state history.
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
-- For the UTC day (and the hour) of each row:
--   net_hosts    += delta
--   tail_host_us += delta x (microseconds from the row's `at` to the end of its day / hour)
-- With L(D) = the sum of net_hosts over the days before D (the level at D's start), the
-- host-seconds in service of the whole day D are L(D) x 86400 + tail_host_us(D) / 1e6; an
-- hour H of D likewise, from L(D) plus the net_hosts of D's hours before H.
-- tail_host_us is an integer of microseconds (timestamptz's resolution), not float seconds,
-- so that adding and removing rows cancels exactly and the tables kept by the triggers equal
-- a rebuild bit for bit.
--
-- host_events is append-only in kilnd (nothing in kilnd updates or deletes its rows). The
-- triggers still follow UPDATE, DELETE and TRUNCATE, so a fix made by hand (or the
-- benchmark's backdating of import events) keeps the tables right. A statement's rows are
-- folded into one upsert per table, in key order, so two multi-row statements do not lock rows
-- in opposite orders (two transactions that each write several buildings in separate
-- statements still could deadlock, and one would be cancelled; kilnd writes one host per
-- statement, and a transaction's hosts are one pod's or one workflow group's). A row stays
-- locked until its transaction ends: transitions of one building and platform on one day
-- serialise at their commits (kilnd's transactions are short).

CREATE TABLE service_days (
  day           date NOT NULL,
  building_id   text COLLATE "C" NOT NULL,
  platform      text NOT NULL,
  net_hosts     bigint NOT NULL,
  tail_host_us  bigint NOT NULL,
  PRIMARY KEY (day, building_id, platform)
);

CREATE TABLE service_hours (
  hour          timestamptz NOT NULL,
  building_id   text COLLATE "C" NOT NULL,
  platform      text NOT NULL,
  net_hosts     bigint NOT NULL,
  tail_host_us  bigint NOT NULL,
  PRIMARY KEY (hour, building_id, platform)
);

CREATE FUNCTION kiln_service_delta(from_state text, to_state text) RETURNS int
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN (coalesce(to_state IN ('available', 'allocated'), false))::int
       - (coalesce(from_state IN ('available', 'allocated'), false))::int;

-- Microseconds from `utc` to `period_end` (both UTC timestamps), through a double (date_part)
-- rather than numeric (extract), which is slower: up to a day in microseconds is exact in a
-- double, and round() gives the integer back.
CREATE FUNCTION kiln_us_until(period_end timestamp, utc timestamp) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN round(date_part('epoch', period_end - utc) * 1000000)::bigint;

-- The statement that folds `changes` (a query of host_id, at, from_state, to_state, sign) into
-- service_days and service_hours: the one text the triggers and the rebuild run. The events
-- are joined to their pods once (c) for both tables; every trigger statement has this one
-- shape, so each runs the two upserts in the same order.
CREATE FUNCTION kiln_service_rollup_upsert(changes text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN 'WITH c AS MATERIALIZED (SELECT e.utc, date_trunc(''day'', e.utc) AS day, date_trunc(''hour'', e.utc) AS hour,'
      || '     e.delta, p.building_id, p.platform'
      || '   FROM (SELECT host_id, at AT TIME ZONE ''UTC'' AS utc, sign * kiln_service_delta(from_state, to_state) AS delta'
      || '     FROM (' || changes || ') x) e'
      || '   JOIN hosts h ON h.id = e.host_id JOIN pods p ON p.id = h.pod_id WHERE e.delta <> 0),'
      || ' days AS (INSERT INTO service_days AS s (day, building_id, platform, net_hosts, tail_host_us)'
      || '   SELECT day::date, building_id, platform, sum(delta), sum(delta * kiln_us_until(day + interval ''1 day'', utc))'
      || '   FROM c GROUP BY day, building_id, platform ORDER BY day, building_id, platform'
      || '   ON CONFLICT (day, building_id, platform) DO UPDATE'
      || '   SET net_hosts = s.net_hosts + excluded.net_hosts, tail_host_us = s.tail_host_us + excluded.tail_host_us)'
      || ' INSERT INTO service_hours AS s (hour, building_id, platform, net_hosts, tail_host_us)'
      || ' SELECT hour AT TIME ZONE ''UTC'', building_id, platform, sum(delta), sum(delta * kiln_us_until(hour + interval ''1 hour'', utc))'
      || ' FROM c GROUP BY hour, building_id, platform ORDER BY hour, building_id, platform'
      || ' ON CONFLICT (hour, building_id, platform) DO UPDATE'
      || ' SET net_hosts = s.net_hosts + excluded.net_hosts, tail_host_us = s.tail_host_us + excluded.tail_host_us';

-- One trigger function per event, each running that statement as static SQL written out
-- here from the text: PL/pgSQL keeps a static statement's plan, where EXECUTE plans it again
-- every time (measured: +0.35-0.5 ms per single-row INSERT with EXECUTE, +0.02-0.09 ms static
-- with both tables).
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
                   'BEGIN ' || kiln_service_rollup_upsert(op.changes) || '; RETURN NULL; END');
  END LOOP;
END
$$;

CREATE FUNCTION kiln_service_days_on_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM service_days;
  DELETE FROM service_hours;
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

-- Recomputes service_days and service_hours from host_events (writers of host_events wait
-- meanwhile).
CREATE FUNCTION kiln_rebuild_service_days() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE host_events IN SHARE MODE;
  DELETE FROM service_days;
  DELETE FROM service_hours;
  EXECUTE kiln_service_rollup_upsert('SELECT host_id, at, from_state, to_state, 1 AS sign FROM host_events');
END
$$;

SELECT kiln_rebuild_service_days();

-- The lemon list counts 'repair' events per host in the report's window.
CREATE INDEX host_events_repair ON host_events (at) INCLUDE (host_id) WHERE action = 'repair';
