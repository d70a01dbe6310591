-- Domain events (issue 34): a transactional outbox. Each change a product cares about is written as an event by a
-- trigger on the row that changed, so the event commits or rolls back with the change itself, whichever code path
-- made it. The relay (shared/services/event_relay.py) publishes them in order and gives each its `position`, the
-- cursor of GET /v1/events; webhooks fan out from the same transaction that marks an event published.
--
-- An event's id is derived from what changed (the type, the resource and its attempt, revision or generation), so a
-- retried change that writes its event again writes the same id, and the primary key keeps one.

-- Each tenant's last published position: positions count one tenant's events only (no gap tells of another
-- tenant's), never go back (a purge leaves them), and the row lock orders relays of one tenant.
CREATE TABLE event_heads (
  tenant_id text   NOT NULL PRIMARY KEY CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  position  bigint NOT NULL CHECK (position >= 0)
);
ALTER TABLE event_heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_heads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON event_heads
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT, UPDATE ON event_heads TO {{app_role}};

CREATE TABLE events (
  tenant_id     text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  event_id      uuid        NOT NULL,
  seq           bigint      GENERATED ALWAYS AS IDENTITY,
  type          text        NOT NULL CHECK (type IN (
                  'file.version.indexed', 'file.version.failed', 'file.version.rejected', 'file.deleted',
                  'file.moved', 'file.metadata.changed', 'export.rendered', 'export.failed',
                  'replacement.pending', 'replacement.approved', 'reindex.finished', 'webhook.disabled')),
  collection_id text        NOT NULL,
  -- Events of one ordering key (a file, an export, a webhook) are published and delivered in `seq` order.
  ordering_key  text        NOT NULL,
  data          jsonb       NOT NULL CHECK (jsonb_typeof(data) = 'object'),
  occurred_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  published_at  timestamptz,
  position      bigint,
  PRIMARY KEY (tenant_id, event_id),
  CONSTRAINT published_has_position CHECK ((published_at IS NULL) = (position IS NULL))
);
CREATE INDEX events_unpublished ON events (tenant_id, seq) WHERE published_at IS NULL;
CREATE UNIQUE INDEX events_by_position ON events (tenant_id, position) WHERE position IS NOT NULL;
CREATE INDEX events_by_age ON events (tenant_id, occurred_at);
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON events
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
-- The application reads events and marks them published; only the triggers below write them (as the owner).
GRANT SELECT, DELETE ON events TO {{app_role}};
GRANT UPDATE (published_at, position) ON events TO {{app_role}};

-- The relay's one cross-tenant question, as tenant_ids_for_sweeps() (0014): which tenants have events to publish.
CREATE POLICY owner_lists_unpublished ON events FOR SELECT TO CURRENT_USER USING (true);
CREATE FUNCTION tenants_with_unpublished_events() RETURNS TABLE (tenant_id text)
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$ SELECT DISTINCT e.tenant_id FROM public.events AS e WHERE e.published_at IS NULL $$;
REVOKE ALL ON FUNCTION tenants_with_unpublished_events() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tenants_with_unpublished_events() TO {{app_role}};

-- Why a version was last queued: a re-index (a new embedding model) ends in reindex.finished, not in a second
-- file.version.indexed; an upload or a rescan ends in file.version.indexed.
ALTER TABLE file_versions
  ADD COLUMN processing_purpose text NOT NULL DEFAULT 'process' CHECK (processing_purpose IN ('process', 'reindex'));

-- One writer of events: the row's tenant (RLS holds: the change is the tenant's own), a stable id, one notification
-- for the local relay (delivered at commit, once per transaction).
CREATE FUNCTION record_event(tenant text, kind text, collection text, ordering text, identity text, body jsonb)
  RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  INSERT INTO public.events (tenant_id, event_id, type, collection_id, ordering_key, data)
    VALUES (tenant, md5(tenant || '/' || kind || '/' || identity)::uuid, kind, collection, ordering, body)
    ON CONFLICT DO NOTHING;
  PERFORM pg_notify('quire_events', tenant);
END $$;
REVOKE ALL ON FUNCTION record_event(text, text, text, text, text, jsonb) FROM PUBLIC;

CREATE FUNCTION file_versions_record_events() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  collection text;
  version_ids jsonb := jsonb_build_object('fileId', NEW.file_id, 'versionId', NEW.version_id,
                                          'attempt', NEW.processing_attempt);
BEGIN
  SELECT f.collection_id INTO collection FROM public.files AS f
    WHERE f.tenant_id = NEW.tenant_id AND f.file_id = NEW.file_id;
  IF NEW.state = 'rejected' AND OLD.state IS DISTINCT FROM 'rejected' THEN
    PERFORM public.record_event(NEW.tenant_id, 'file.version.rejected', collection, NEW.file_id::text,
      NEW.version_id::text, version_ids - 'attempt' || jsonb_build_object('rejectionReason', NEW.rejection_reason));
  END IF;
  -- A file is deleted when its last live version starts leaving (all of them do, in one statement; row triggers
  -- run after it, so each sees none left and the stable id keeps one event).
  IF NEW.state = 'deleting' AND OLD.state IN ('pending', 'stored', 'rejected') AND NOT EXISTS (
       SELECT 1 FROM public.file_versions AS v WHERE v.tenant_id = NEW.tenant_id AND v.file_id = NEW.file_id
         AND v.state IN ('pending', 'stored', 'rejected')) THEN
    PERFORM public.record_event(NEW.tenant_id, 'file.deleted', collection, NEW.file_id::text, NEW.file_id::text,
      jsonb_build_object('fileId', NEW.file_id));
  END IF;
  IF NEW.state = 'stored' AND NEW.processing_state IS DISTINCT FROM OLD.processing_state THEN
    -- queued → indexed is a re-index whose workflow could not be asked, put back as it was: no change to tell.
    IF NEW.processing_state = 'indexed' AND OLD.processing_state <> 'queued' THEN
      PERFORM public.record_event(NEW.tenant_id,
        CASE WHEN NEW.processing_purpose = 'reindex' THEN 'reindex.finished' ELSE 'file.version.indexed' END,
        collection, NEW.file_id::text, NEW.version_id::text || '/' || NEW.processing_attempt,
        version_ids || jsonb_build_object('chunkCount', NEW.chunk_count,
                                          'embeddedChunkCount', NEW.embedded_chunk_count,
                                          'embeddingModel', NEW.embedding_model));
    ELSIF NEW.processing_state = 'failed' THEN
      PERFORM public.record_event(NEW.tenant_id, 'file.version.failed', collection, NEW.file_id::text,
        NEW.version_id::text || '/' || NEW.processing_attempt,
        version_ids || jsonb_build_object('failureReason', NEW.failure_reason));
    END IF;
  END IF;
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION file_versions_record_events() FROM PUBLIC;
CREATE TRIGGER file_versions_events AFTER UPDATE ON file_versions
  FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.processing_state IS DISTINCT FROM NEW.processing_state)
  EXECUTE FUNCTION file_versions_record_events();

-- A move is told to each side in its own words: the collection it left and the one it joined each get an event
-- naming only themselves, so a reader of one never learns the other's name.
CREATE FUNCTION files_record_events() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  IF NEW.collection_id IS DISTINCT FROM OLD.collection_id THEN
    PERFORM public.record_event(NEW.tenant_id, 'file.moved', OLD.collection_id, NEW.file_id::text,
      NEW.file_id::text || '/out/' || txid_current(),
      jsonb_build_object('fileId', NEW.file_id, 'direction', 'out'));
    PERFORM public.record_event(NEW.tenant_id, 'file.moved', NEW.collection_id, NEW.file_id::text,
      NEW.file_id::text || '/in/' || txid_current(),
      jsonb_build_object('fileId', NEW.file_id, 'direction', 'in'));
  END IF;
  IF NEW.metadata_revision IS DISTINCT FROM OLD.metadata_revision THEN
    PERFORM public.record_event(NEW.tenant_id, 'file.metadata.changed', NEW.collection_id, NEW.file_id::text,
      NEW.file_id::text || '/' || NEW.metadata_revision,
      jsonb_build_object('fileId', NEW.file_id, 'metadataRevision', NEW.metadata_revision));
  END IF;
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION files_record_events() FROM PUBLIC;
CREATE TRIGGER files_events AFTER UPDATE ON files
  FOR EACH ROW
  WHEN (OLD.collection_id IS DISTINCT FROM NEW.collection_id OR OLD.metadata_revision IS DISTINCT FROM NEW.metadata_revision)
  EXECUTE FUNCTION files_record_events();

CREATE FUNCTION exports_record_events() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  IF NEW.state IN ('rendered', 'failed') THEN
    PERFORM public.record_event(NEW.tenant_id, 'export.' || NEW.state, NEW.collection_id, NEW.export_id::text,
      NEW.export_id::text || '/' || NEW.generation,
      jsonb_strip_nulls(jsonb_build_object(
        'exportId', NEW.export_id, 'kind', NEW.kind, 'format', NEW.format, 'generation', NEW.generation,
        'fileId', NEW.file_id, 'pageCount', NEW.page_count, 'byteSize', NEW.byte_size,
        'failureReason', NEW.failure_reason, 'retryable', CASE WHEN NEW.state = 'failed' THEN NEW.failure_retryable END)));
  END IF;
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION exports_record_events() FROM PUBLIC;
CREATE TRIGGER exports_events AFTER UPDATE ON exports
  FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
  EXECUTE FUNCTION exports_record_events();

CREATE FUNCTION file_replacements_record_events() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$
BEGIN
  IF NEW.state = 'pending' AND TG_OP = 'INSERT' THEN
    PERFORM public.record_event(NEW.tenant_id, 'replacement.pending', NEW.collection_id, NEW.file_id::text,
      NEW.replacement_id::text, jsonb_build_object('replacementId', NEW.replacement_id, 'fileId', NEW.file_id,
        'baseVersionId', NEW.base_version_id, 'expiresAt', NEW.expires_at));
  ELSIF NEW.state = 'approved' AND OLD.state IS DISTINCT FROM 'approved' THEN
    PERFORM public.record_event(NEW.tenant_id, 'replacement.approved', NEW.collection_id, NEW.file_id::text,
      NEW.replacement_id::text, jsonb_build_object('replacementId', NEW.replacement_id, 'fileId', NEW.file_id,
        'versionId', NEW.new_version_id));
  END IF;
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION file_replacements_record_events() FROM PUBLIC;
CREATE TRIGGER file_replacements_events AFTER INSERT OR UPDATE ON file_replacements
  FOR EACH ROW EXECUTE FUNCTION file_replacements_record_events();

-- Webhooks: a collection admin's endpoint, with its signing secret (and, for 24 hours after a rotation, the previous
-- one: both sign), and its deliveries, each the exact body sent (a replay sends it again, under the same id).
CREATE TABLE webhooks (
  tenant_id                  text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  webhook_id                 uuid        NOT NULL,
  url                        text        NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  event_types                text[]      NOT NULL CHECK (cardinality(event_types) BETWEEN 1 AND 32),
  collection_ids             text[]      NOT NULL CHECK (cardinality(collection_ids) BETWEEN 1 AND 100),
  description                text        NOT NULL DEFAULT '' CHECK (length(description) <= 500),
  secret                     text        NOT NULL,
  previous_secret            text,
  previous_secret_expires_at timestamptz,
  state                      text        NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled')),
  disabled_reason            text        CHECK (length(disabled_reason) <= 500),
  -- Since when every delivery has failed (NULL once one succeeds): three days of it disables the endpoint.
  failing_since              timestamptz,
  created_by                 text        NOT NULL,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  updated_at                 timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, webhook_id),
  CONSTRAINT disabled_has_reason CHECK ((state = 'disabled') = (disabled_reason IS NOT NULL)),
  CONSTRAINT previous_secret_expires CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL))
);
CREATE INDEX webhooks_by_collection ON webhooks USING gin (collection_ids);
ALTER TABLE webhooks ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhooks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON webhooks
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON webhooks TO {{app_role}};

CREATE TABLE webhook_deliveries (
  tenant_id       text        NOT NULL,
  delivery_id     uuid        NOT NULL,
  webhook_id      uuid        NOT NULL,
  message_id      text        NOT NULL CHECK (length(message_id) BETWEEN 1 AND 64),
  event_type      text        NOT NULL,
  ordering_key    text        NOT NULL,
  event_seq       bigint      NOT NULL,
  body            jsonb       NOT NULL,
  state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  -- Retries stop RETRY_WINDOW after this: when the delivery was made, or last replayed.
  retry_from      timestamptz NOT NULL DEFAULT now(),
  leased_until    timestamptz,
  last_status     integer,
  last_error      text        CHECK (length(last_error) <= 1000),
  created_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz,
  PRIMARY KEY (tenant_id, delivery_id),
  UNIQUE (tenant_id, webhook_id, message_id),
  FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, webhook_id) ON DELETE CASCADE
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (tenant_id, next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_in_order ON webhook_deliveries (tenant_id, webhook_id, ordering_key, event_seq)
  WHERE state = 'pending';
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (tenant_id, webhook_id, created_at DESC);
ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON webhook_deliveries
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_deliveries TO {{app_role}};

CREATE POLICY owner_lists_due ON webhook_deliveries FOR SELECT TO CURRENT_USER USING (true);
CREATE FUNCTION tenants_with_due_deliveries() RETURNS TABLE (tenant_id text)
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$ SELECT DISTINCT d.tenant_id FROM public.webhook_deliveries AS d
        WHERE d.state = 'pending' AND d.next_attempt_at <= now() $$;
REVOKE ALL ON FUNCTION tenants_with_due_deliveries() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tenants_with_due_deliveries() TO {{app_role}};

-- An endpoint disabled after days of failures is told to the product as an event, in each of its collections.
CREATE FUNCTION webhooks_record_events() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$
DECLARE
  collection text;
BEGIN
  IF NEW.state = 'disabled' AND OLD.state = 'active' THEN
    FOREACH collection IN ARRAY NEW.collection_ids LOOP
      PERFORM public.record_event(NEW.tenant_id, 'webhook.disabled', collection, NEW.webhook_id::text,
        NEW.webhook_id::text || '/' || NEW.updated_at, jsonb_build_object('webhookId', NEW.webhook_id,
          'reason', NEW.disabled_reason));
    END LOOP;
  END IF;
  RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION webhooks_record_events() FROM PUBLIC;
CREATE TRIGGER webhooks_events AFTER UPDATE ON webhooks
  FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
  EXECUTE FUNCTION webhooks_record_events();
