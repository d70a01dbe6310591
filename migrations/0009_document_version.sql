-- The storage version of the document the row points at: the step that replaces it deletes exactly that
-- version, with no listing (a listing's cost grows with the bucket) and no permission beyond deleting it.
ALTER TABLE file_versions ADD COLUMN document_version_id text;
