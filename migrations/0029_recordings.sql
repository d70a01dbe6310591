-- Recordings (issue 35): what transcription did for a version, kept on its row as OCR's is (so a listing can flag
-- a low-confidence transcript without fetching the document), and the failures a recording can end in.
ALTER TABLE file_versions
  ADD COLUMN transcription_state      text     CHECK (transcription_state IN ('recognized', 'unavailable', 'failed')),
  ADD COLUMN transcription_engine     text     CHECK (length(transcription_engine) <= 200),
  ADD COLUMN transcription_detail     text     CHECK (length(transcription_detail) <= 2000),
  ADD COLUMN transcription_confidence real     CHECK (transcription_confidence BETWEEN 0 AND 1),
  ADD COLUMN transcription_language   text     CHECK (length(transcription_language) <= 35),
  -- What the container says (the probe), before any decoding.
  ADD COLUMN duration_seconds         double precision CHECK (duration_seconds >= 0);

-- Seconds of recording a speech engine transcribed (Transcribe bills by the second): metered and limited per day.
ALTER TABLE usage_records ADD COLUMN seconds bigint NOT NULL DEFAULT 0 CHECK (seconds >= 0);

ALTER TABLE file_versions DROP CONSTRAINT file_versions_failure_reason_check;
ALTER TABLE file_versions ADD CONSTRAINT file_versions_failure_reason_check
  CHECK (failure_reason IN ('unsupported-type', 'too-large', 'too-many-pages', 'timed-out', 'encrypted',
                            'no-text-layer', 'malformed', 'ocr-failed', 'no-text-found', 'spend-limit',
                            'bytes-missing', 'not-transcribable', 'no-speech-found', 'transcription-failed',
                            'no-transcription'));
