-- Fenceline: resource-side fencing, schema objects.
--
-- Every statement is written to be harmless when run again (IF NOT EXISTS / ON CONFLICT DO NOTHING), so a
-- hand re-run of this file is a no-op. Flyway
-- itself records the version in fencing.fencing_schema_history and never runs it twice.

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
  'One row per fenced resource: the highest term PostgreSQL has accepted. Only fencing.enter() moves it, upwards only.';
COMMENT ON COLUMN fencing.high_water_mark.lock_key IS
  'Second key of the advisory lock (1178946115, lock_key) that sessions entered at the current term hold in shared mode.';

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
                    CONSTRAINT rejected_write_reason CHECK (reason IN ('stale_term', 'no_term', 'term_conflict')),
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
   'Upper bound for an advance of the mark to terminate the sessions of older terms (interval). Past it enter() raises FL005.'),
  ('payload_max_bytes', '8192',
   'Largest payload (bytes of its jsonb text) record_rejection() stores; larger ones are replaced by a stub and flagged.'),
  ('audit_dblink_connstr', '',
   'libpq connection string the trigger uses to commit audit rows autonomously via dblink. Empty: this database on this server, as the function owner.')
ON CONFLICT (name) DO NOTHING;
COMMENT ON TABLE fencing.settings IS 'Tunables of the fencing functions; owner/fencing_admin may update values.';

CREATE TABLE IF NOT EXISTS fencing.protected_table (
  tbl          regclass    PRIMARY KEY,
  resource     text        NOT NULL REFERENCES fencing.high_water_mark (resource),
  protected_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  protected_by text        NOT NULL DEFAULT session_user
);
COMMENT ON TABLE fencing.protected_table IS 'Tables whose writes are fenced by the statement trigger fencing_guard.';

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
