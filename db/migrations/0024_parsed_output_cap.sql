-- Kiln schema 24 (issue 35): a step's stdout_when_parsed, carried by its assignments. The bytes
-- of stdout an agent sends back when the tool exited 0 and its output parsed (the parsed
-- document is what the checks read); NULL: the whole tail, as before. Added nullable without a
-- default: no table rewrite, and a kilnd of the previous schema keeps inserting rows without it.
ALTER TABLE assignments ADD COLUMN parsed_output_cap integer;
