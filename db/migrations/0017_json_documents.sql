-- Kiln schema 17 (issue 15): a step's result and a group's state are json, not jsonb. Every
-- report writes both, and nothing looks inside them in SQL (kilnd reads them whole, as text):
-- jsonb parsed each into its binary form and sorted every object's keys on the way in (in a
-- profile of a rollout's validation burst, PostgreSQL's busiest symbols), json keeps the text
-- as kilnd sends it. A type change rewrites both tables once, at the upgrade; the storage
-- settings of schemas 8 and 9 (lz4, MAIN) are set again for the new type.
ALTER TABLE assignments ALTER COLUMN result TYPE json USING result::json;
ALTER TABLE run_groups ALTER COLUMN state TYPE json USING state::json;
ALTER TABLE assignments ALTER COLUMN result SET COMPRESSION lz4;
ALTER TABLE run_groups ALTER COLUMN state SET COMPRESSION lz4;
ALTER TABLE run_groups ALTER COLUMN state SET STORAGE MAIN;
