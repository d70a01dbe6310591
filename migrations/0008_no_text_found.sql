-- `no-text-found`: OCR read the document and found no words (a photo, a drawing, a blank scan). Apart from
-- `ocr-failed` (the engine could not read it) because what the user should do differs: a picture without
-- words has nothing to search, and rescanning it at a higher resolution would change nothing.
ALTER TABLE file_versions DROP CONSTRAINT file_versions_failure_reason_check;
ALTER TABLE file_versions ADD CONSTRAINT file_versions_failure_reason_check
  CHECK (failure_reason IN ('unsupported-type', 'too-large', 'too-many-pages', 'timed-out', 'encrypted',
                            'no-text-layer', 'malformed', 'ocr-failed', 'no-text-found'));
