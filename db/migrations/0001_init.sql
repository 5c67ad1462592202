-- Kiln schema 1: the fleet inventory, host lifecycle history, tokens and the audit log.
-- Ids are the fleet's own names (pod "prn-b01-p0001", host "prn-b01-p0001-h01"), compared
-- bytewise (COLLATE "C") so keyset pagination is stable and index-friendly.

CREATE TABLE sites (
  id          text COLLATE "C" PRIMARY KEY,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE buildings (
  id          text COLLATE "C" PRIMARY KEY,
  site_id     text COLLATE "C" NOT NULL REFERENCES sites(id),
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX buildings_site ON buildings (site_id);

-- One NVL72 NVLink domain. `state` summarises its hosts (kept by the store in the same
-- transaction as every host transition): in_service | degraded | maintenance | incoming |
-- down | retired.
CREATE TABLE pods (
  id           text COLLATE "C" PRIMARY KEY,
  building_id  text COLLATE "C" NOT NULL REFERENCES buildings(id),
  site_id      text COLLATE "C" NOT NULL REFERENCES sites(id),
  platform     text NOT NULL CHECK (platform IN ('catalina', 'clemente', 'san_miguel')),
  labels       jsonb NOT NULL DEFAULT '{}',
  state        text NOT NULL DEFAULT 'in_service',
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pods_building ON pods (building_id, id);
CREATE INDEX pods_site ON pods (site_id, id);
CREATE INDEX pods_platform ON pods (platform, id);
CREATE INDEX pods_state ON pods (state, id);

CREATE TABLE racks (
  id      text COLLATE "C" PRIMARY KEY,
  pod_id  text COLLATE "C" NOT NULL REFERENCES pods(id),
  idx     int NOT NULL
);
CREATE INDEX racks_pod ON racks (pod_id);

-- A compute tray: one host with 4 GPUs. `version` increases with every change of the row.
CREATE TABLE hosts (
  id            text COLLATE "C" PRIMARY KEY,
  pod_id        text COLLATE "C" NOT NULL REFERENCES pods(id),
  rack_id       text COLLATE "C" NOT NULL REFERENCES racks(id),
  building_id   text COLLATE "C" NOT NULL,
  site_id       text COLLATE "C" NOT NULL,
  tray          int NOT NULL,
  spare         boolean NOT NULL,
  state         text NOT NULL CHECK (state IN ('incoming', 'burn_in', 'available', 'allocated',
                  'draining', 'maintenance', 'validating', 'failed', 'repair', 'quarantine',
                  'retired')),
  state_since   timestamptz NOT NULL DEFAULT now(),
  state_reason  text NOT NULL DEFAULT '',
  boot_id       text,
  last_seen     timestamptz,
  version       bigint NOT NULL DEFAULT 0
);
CREATE INDEX hosts_pod ON hosts (pod_id, id);
CREATE INDEX hosts_state ON hosts (state, id);
CREATE INDEX hosts_building ON hosts (building_id, id);
CREATE INDEX hosts_site ON hosts (site_id, id);

CREATE TABLE switch_trays (
  id       text COLLATE "C" PRIMARY KEY,
  pod_id   text COLLATE "C" NOT NULL REFERENCES pods(id),
  rack_id  text COLLATE "C" NOT NULL REFERENCES racks(id),
  tray     int NOT NULL
);
CREATE INDEX switch_trays_pod ON switch_trays (pod_id);

CREATE TABLE gpus (
  id       text COLLATE "C" PRIMARY KEY,
  host_id  text COLLATE "C" NOT NULL REFERENCES hosts(id),
  idx      int NOT NULL,
  serial   text NOT NULL DEFAULT '',
  uuid     text NOT NULL DEFAULT ''
);
CREATE INDEX gpus_host ON gpus (host_id);

-- Firmware and driver versions of hosts (gpu_vbios, hmc_bundle, nic, bmc, sbios, driver) and
-- switch trays (nvswitch).
CREATE TABLE components (
  target_id   text COLLATE "C" NOT NULL,
  pod_id      text COLLATE "C" NOT NULL REFERENCES pods(id),
  kind        text NOT NULL,
  version     text NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (target_id, kind)
);
CREATE INDEX components_pod ON components (pod_id);

-- Every host state change, with who and why. Also the source of GPU-hours in service.
CREATE TABLE host_events (
  id          bigserial PRIMARY KEY,
  host_id     text COLLATE "C" NOT NULL REFERENCES hosts(id),
  at          timestamptz NOT NULL DEFAULT now(),
  action      text NOT NULL,
  from_state  text,
  to_state    text NOT NULL,
  actor       text NOT NULL,
  reason      text NOT NULL DEFAULT ''
);
CREATE INDEX host_events_host ON host_events (host_id, id);
CREATE INDEX host_events_at ON host_events (at);

-- API tokens: the secret is stored only as its SHA-256.
CREATE TABLE tokens (
  id           text COLLATE "C" PRIMARY KEY,
  secret_hash  text NOT NULL,
  role         text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin', 'agent')),
  name         text NOT NULL,
  host_id      text COLLATE "C",
  created_at   timestamptz NOT NULL DEFAULT now(),
  created_by   text NOT NULL,
  revoked_at   timestamptz,
  CHECK ((role = 'agent') = (host_id IS NOT NULL))
);

-- Every mutation: who, what, when, why.
CREATE TABLE audit_log (
  id       bigserial PRIMARY KEY,
  at       timestamptz NOT NULL DEFAULT now(),
  actor    text NOT NULL,
  action   text NOT NULL,
  target   text NOT NULL,
  details  jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_at ON audit_log (at);
