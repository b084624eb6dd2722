-- Fenceline: resource-side fencing, the baseline: every table, sequence, role and grant on them. Functions, views and
-- triggers are defined once each, in the repeatable R__ migrations that Flyway applies after this file.
--
-- Nothing is kept per server session: a transaction enters a resource at its term by taking the resource's fence lock
-- (a transaction-level advisory lock) and reading the mark (R__20_fencing_enter.sql has the safety argument).
--
-- Every statement is written to be harmless when run again (IF NOT EXISTS / ON CONFLICT DO NOTHING), so a
-- hand re-run of this file is a no-op. Flyway itself records the version in fencing.fencing_schema_history and never
-- runs it twice. (This baseline replaced the eight migrations of the development versions; a database migrated by one
-- of those is not upgraded in place: see CHANGELOG.md.)

-- Schema fencing itself is created by Flyway (FencingMigrations: schemas=fencing, createSchemas=true). When running
-- this file by hand, CREATE SCHEMA fencing first.

COMMENT ON SCHEMA fencing IS
  'Fenceline resource-side fencing: per-resource high-water marks, term history, rejection audit. Owned by the migration role; applications use the functions.';

-- Per-resource advisory-lock ids. Two-int4 advisory locks (namespace, lock_key) keep clear of the bigint space
-- applications use, so lock_key must fit an int4.
CREATE SEQUENCE IF NOT EXISTS fencing.lock_key_seq AS integer START WITH 1 MINVALUE 1 MAXVALUE 2147483647 NO CYCLE;

CREATE TABLE IF NOT EXISTS fencing.high_water_mark (
  resource          text        PRIMARY KEY
                    CONSTRAINT high_water_mark_resource_syntax CHECK (resource ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,62}$'),
  highest_accepted  bigint      NOT NULL DEFAULT 0 CONSTRAINT high_water_mark_term_not_negative CHECK (highest_accepted >= 0),
  leader_id         text        CONSTRAINT high_water_mark_leader_id_length CHECK (length(leader_id) <= 200),
  updated_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
  lock_key          bigint      NOT NULL UNIQUE DEFAULT nextval('fencing.lock_key_seq')
                    CONSTRAINT high_water_mark_lock_key_int4 CHECK (lock_key BETWEEN 1 AND 2147483647)
);
COMMENT ON TABLE fencing.high_water_mark IS
  'One row per fenced resource: the highest term PostgreSQL has accepted. Only fencing.advance() moves it, upwards only.';
COMMENT ON COLUMN fencing.high_water_mark.lock_key IS
  'Second key of the fence lock: the transaction-level advisory lock (1178946115, lock_key), held shared by every transaction entered at the current term and exclusively by an advance.';

CREATE TABLE IF NOT EXISTS fencing.term_history (
  id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  resource         text        NOT NULL REFERENCES fencing.high_water_mark (resource),
  term             bigint      NOT NULL,
  previous_term    bigint      NOT NULL,
  leader_id        text,
  terminated_sessions integer  NOT NULL DEFAULT 0,
  db_user          text        NOT NULL DEFAULT session_user,
  application_name text,
  accepted_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT term_history_advances CHECK (term > previous_term)
);
CREATE UNIQUE INDEX IF NOT EXISTS term_history_resource_term ON fencing.term_history (resource, term);
COMMENT ON TABLE fencing.term_history IS 'One row per advance of a high-water mark, written in the advancing transaction.';

CREATE TABLE IF NOT EXISTS fencing.rejected_write (
  id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  resource          text        NOT NULL,
  offered_term      bigint,
  highest_accepted  bigint,
  leader_id         text,
  table_name        text,
  operation         text,
  business_key      text,
  payload           jsonb,
  payload_truncated boolean     NOT NULL DEFAULT false,
  reason            text        NOT NULL DEFAULT 'stale_term'
                    CONSTRAINT rejected_write_reason CHECK (reason IN (
                      'stale_term',           -- a term older than the highest accepted
                      'no_term',              -- a write to a protected table without a term
                      'term_conflict',        -- the highest accepted term, offered by a different leader
                      'invalid_term',         -- fencing.term is not a positive bigint
                      'term_jump',            -- a newer term further above the mark than max_term_jump
                      'unscoped_term',        -- fencing.term would advance a resource that fencing.resource does not name
                      'break_glass_refused',  -- break-glass asked for by a session user outside fencing_break_glass
                      'not_allowed')),        -- a term offered by a session user outside fencing_app
  source            text        NOT NULL DEFAULT 'writer'
                    CONSTRAINT rejected_write_source CHECK (source IN ('writer', 'trigger')),
  db_user           text        NOT NULL DEFAULT session_user,
  application_name  text,
  rejected_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS rejected_write_resource_time ON fencing.rejected_write (resource, rejected_at);
CREATE INDEX IF NOT EXISTS rejected_write_time ON fencing.rejected_write (rejected_at);
COMMENT ON TABLE fencing.rejected_write IS
  'One row per rejected fenced write, committed outside the rejected transaction (writer: a new transaction; trigger: dblink).';
COMMENT ON COLUMN fencing.rejected_write.payload IS
  'Caller-supplied JSON, at most fencing.settings payload_max_bytes; larger payloads are replaced by a stub and payload_truncated = true.';

CREATE TABLE IF NOT EXISTS fencing.settings (
  name        text PRIMARY KEY,
  value       text NOT NULL,
  description text NOT NULL
);
INSERT INTO fencing.settings (name, value, description) VALUES
  ('advance_timeout', '5s',
   'Upper bound for an advance of the mark to end the transactions of older terms (interval). Past it the advance raises FL005.'),
  ('payload_max_bytes', '8192',
   'Largest payload (bytes of its jsonb text) record_rejection() stores; larger ones are replaced by a stub and flagged.'),
  ('max_term_jump', '1000000',
   'Largest step (new term minus the highest accepted) one advance may take; a larger one is rejected (FL009) and audited. Election terms move by small steps.')
ON CONFLICT (name) DO NOTHING;
COMMENT ON TABLE fencing.settings IS 'Tunables of the fencing functions; owner/fencing_admin may update values.';

CREATE TABLE IF NOT EXISTS fencing.protected_table (
  tbl          regclass    PRIMARY KEY,
  resource     text        NOT NULL REFERENCES fencing.high_water_mark (resource),
  parent       regclass,
  protected_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  protected_by text        NOT NULL DEFAULT session_user
);
COMMENT ON TABLE fencing.protected_table IS 'Tables whose writes are fenced by the statement trigger fencing_guard.';
COMMENT ON COLUMN fencing.protected_table.parent IS
  'NULL when protected by protect_table() itself; otherwise the protected table this partition or inheritance child is protected with.';

CREATE TABLE IF NOT EXISTS fencing.break_glass_log (
  id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  resource         text        NOT NULL,
  table_name       text        NOT NULL,
  operation        text        NOT NULL,
  reason           text        NOT NULL,
  db_user          text        NOT NULL,
  session_user_name text       NOT NULL DEFAULT session_user,
  application_name text,
  transaction_id   bigint,
  logged_at        timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE fencing.break_glass_log IS
  'Writes to protected tables allowed by SET LOCAL fencing.break_glass = ''<reason>'' (members of fencing_break_glass), logged in the same transaction.';

-- Rejection counters: one sequence per reason. nextval() is never rolled back, so a rejection counted inside the
-- transaction it aborts stays counted even when no audit row could be committed (dblink missing or failing). After a
-- crash a sequence may jump ahead by up to 32 (its WAL pre-logging): a counter can over-count then, never under-count.
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_stale_term    AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_no_term       AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_term_conflict AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_invalid_term  AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_term_jump     AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_unscoped_term AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_break_glass_refused AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_not_allowed   AS bigint MINVALUE 1 NO CYCLE;

-- Trigger-mode rejections abort their transaction, so their audit row is committed elsewhere: dblink back into this
-- database. Installed when this role may; otherwise fencing.audit_autonomously() falls back to a WARNING in the server
-- log (every field included) and the counters above.
DO $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'dblink') THEN
    BEGIN
      CREATE EXTENSION IF NOT EXISTS dblink WITH SCHEMA fencing;
    EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported OR object_not_in_prerequisite_state THEN
      RAISE WARNING 'fencing: dblink could not be installed (%); trigger-mode rejections will be logged as server WARNINGs instead of fencing.rejected_write rows. Install it later with CREATE EXTENSION dblink WITH SCHEMA fencing.', SQLERRM;
    END;
  END IF;
END
$do$;

-- Roles. Roles are cluster-wide: created once, idempotently. Grant them to your login roles, e.g.
--   GRANT fencing_app TO settlement_service;  GRANT fencing_auditor TO auditor_jane;
--   fencing_app          writes protected tables with a term (term authority: it may advance a mark); SELECT on the
--                        marks; EXECUTE on enter, register_resource and record_rejection. No INSERT/UPDATE/DELETE
--                        anywhere in the schema: the mark moves only through the fence, the audit only through
--                        record_rejection() and the trigger.
--   fencing_auditor      SELECT on every table and view of the schema. Nothing else.
--   fencing_break_glass  may write protected tables without a term by SET LOCAL fencing.break_glass = '<reason>';
--                        every such statement is logged in fencing.break_glass_log.
--   fencing_admin        protect_table / unprotect_table / register_resource; may change fencing.settings values.
--   fencing_auditor_writer  the login of the trigger's audit connection: its only right is to execute
--                        fencing.append_trigger_rejection(); it gets a password from fencing.configure_audit_writer().
DO $do$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['fencing_app', 'fencing_auditor', 'fencing_break_glass', 'fencing_admin', 'fencing_auditor_writer'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
      BEGIN
        IF r = 'fencing_auditor_writer' THEN
          CREATE ROLE fencing_auditor_writer LOGIN NOINHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION;
        ELSE
          EXECUTE format('CREATE ROLE %I NOLOGIN', r);
        END IF;
      EXCEPTION
        WHEN duplicate_object OR unique_violation THEN
          NULL;   -- created concurrently by a migration of another database in this cluster
        WHEN insufficient_privilege THEN
          IF r = 'fencing_auditor_writer' THEN
            RAISE WARNING 'fencing: role fencing_auditor_writer does not exist and % may not create roles; trigger-mode rejections are audited in the server log and fencing.rejection_counts only. Ask an administrator to run CREATE ROLE fencing_auditor_writer LOGIN, then SELECT fencing.configure_audit_writer(''<password>'') as %.',
              current_user, current_user;
          ELSE
            RAISE EXCEPTION USING ERRCODE = '42501',
              MESSAGE = format('fencing migrations: role %I does not exist and %I may not create roles', r, current_user),
              HINT = format('Ask an administrator to run CREATE ROLE %I NOLOGIN (and the other fencing_* roles), then migrate again.', r);
          END IF;
      END;
    END IF;
  END LOOP;
END
$do$;

-- Least privilege. Nobody but the fencing roles may even name an object of this schema: PostgreSQL takes some table
-- locks before it checks privileges on the table (parsing a prepared SELECT ... FOR SHARE, CREATE RULE queuing ACCESS
-- EXCLUSIVE), but it checks USAGE on the schema first. The guard runs as the owner, so writers outside these roles
-- still fire it and are rejected (FL002) and audited.
REVOKE ALL ON SCHEMA fencing FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA fencing FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA fencing FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA fencing FROM PUBLIC;   -- dblink's; every R__ file ends with the same line
DO $do$
BEGIN
  GRANT USAGE ON SCHEMA fencing TO fencing_app, fencing_auditor, fencing_break_glass, fencing_admin;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'fencing_auditor_writer') THEN
    GRANT USAGE ON SCHEMA fencing TO fencing_auditor_writer;
  END IF;
END
$do$;
GRANT SELECT ON fencing.high_water_mark, fencing.settings, fencing.protected_table TO fencing_app;
GRANT SELECT ON ALL TABLES IN SCHEMA fencing TO fencing_auditor, fencing_admin;
GRANT SELECT ON fencing.high_water_mark TO fencing_break_glass;
GRANT UPDATE (value) ON fencing.settings TO fencing_admin;
