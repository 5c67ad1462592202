-- Kiln schema 11: the Slurm driver's drain ledger (issue 12). A row is written before kilnd asks
-- Slurm to drain a node and removed only after Slurm resumed it, so a kilnd killed while nodes
-- are drained resumes exactly the nodes it drained after a restart, and never one an operator
-- drained (a node whose Slurm reason is no longer the row's is someone else's: the row goes).
CREATE TABLE scheduler_drains (
  node        text COLLATE "C" PRIMARY KEY,
  host_id     text COLLATE "C" NOT NULL,
  reason      text NOT NULL,
  drained_at  timestamptz NOT NULL DEFAULT now()
);
