-- Kiln schema 19 (issue 31): the version of each workflow kilnd last loaded from its file in the
-- workflows directory. At start, a file's version becomes current only when the workflow is new
-- or the file differs from this one (a deliberate deploy); an unchanged file leaves a version
-- put through the API current (WorkflowCatalog::loadWorkflowDir). NULL: never loaded from a file.
ALTER TABLE workflows ADD COLUMN file_hash text;
ALTER TABLE workflows ADD CONSTRAINT workflows_file_version
  FOREIGN KEY (name, file_hash) REFERENCES workflow_versions (name, hash);
-- Until now every start made each file's version current, so the newest version that came from
-- a file is the one last loaded: an edit made through the API before this upgrade survives the
-- upgrade's restart too.
UPDATE workflows w SET file_hash = (
  SELECT v.hash FROM workflow_versions v
  WHERE v.name = w.name AND v.source <> 'api'
  ORDER BY v.created_at DESC, v.hash LIMIT 1);
