-- Kiln schema 20 (issue 31): the artifacts an assignment's step needs, as the agent protocol
-- sends them ([{"url", "sha256", "checksums", "signature"}], common/agent_protocol.h
-- ArtifactRef). The agent fetches and checks each one before the step runs and puts its verified
-- local path where argv holds the artifact's placeholder. NULL: none. An assignment of type
-- 'stage' fetches its artifacts and runs nothing.
ALTER TABLE assignments ADD COLUMN artifacts jsonb;
