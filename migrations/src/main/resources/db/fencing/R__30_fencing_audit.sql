-- Fenceline: the rejection audit and the break-glass log.
-- Repeatable migration: the one current definition of these functions. Flyway re-applies it whenever it changes
-- (after every versioned migration), so edit the function here, never in an applied V migration.

CREATE OR REPLACE FUNCTION fencing.record_rejection(
    p_resource         text,
    p_offered_term     bigint,
    p_highest_accepted bigint,
    p_leader_id        text,
    p_table_name       text,
    p_operation        text,
    p_business_key     text,
    p_payload          jsonb,
    p_reason           text DEFAULT 'stale_term',
    p_source           text DEFAULT 'writer',
    p_db_user          text DEFAULT NULL,
    p_application_name text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_max       integer := coalesce((SELECT value::integer FROM fencing.settings WHERE name = 'payload_max_bytes'), 8192);
  v_payload   jsonb := p_payload;
  v_truncated boolean := false;
  v_bytes     integer;
  v_id        bigint;
  v_trusted   boolean := session_user = current_user;   -- the owner itself (the dblink audit path)
BEGIN
  IF p_resource IS NULL OR length(p_resource) > 200 THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003', MESSAGE = 'fencing.record_rejection: resource must be given (at most 200 characters)';
  END IF;
  IF p_payload IS NOT NULL THEN
    v_bytes := octet_length(p_payload::text);
    IF v_bytes > v_max THEN
      v_payload := jsonb_build_object('truncated', true, 'original_bytes', v_bytes, 'max_bytes', v_max);
      v_truncated := true;
    END IF;
  END IF;
  INSERT INTO fencing.rejected_write (resource, offered_term, highest_accepted, leader_id, table_name, operation,
                                      business_key, payload, payload_truncated, reason, source, db_user, application_name)
  VALUES (p_resource, p_offered_term, p_highest_accepted, left(p_leader_id, 200), left(p_table_name, 300), left(p_operation, 32),
          left(p_business_key, 500), v_payload, v_truncated, coalesce(p_reason, 'stale_term'), coalesce(p_source, 'writer'),
          CASE WHEN v_trusted THEN coalesce(p_db_user, session_user) ELSE session_user END,
          CASE WHEN v_trusted THEN coalesce(p_application_name, current_setting('application_name'))
               ELSE current_setting('application_name') END)
  RETURNING id INTO v_id;
  RETURN v_id;
END
$fn$;
COMMENT ON FUNCTION fencing.record_rejection(text, bigint, bigint, text, text, text, text, jsonb, text, text, text, text) IS
  'Appends one row to fencing.rejected_write (the only way application roles write the audit). Payloads over payload_max_bytes are replaced by a stub with payload_truncated = true.';

-- Quotes a value for a libpq connection string.
CREATE OR REPLACE FUNCTION fencing.conninfo_quote(p_value text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $fn$ SELECT '''' || replace(replace(p_value, '\', '\\'), '''', '\''') || '''' $fn$;

-- Commits an audit row outside the current (about to be aborted) transaction: dblink back into this database.
-- Returns true when the row was committed; otherwise writes a WARNING with every field to the server log.
CREATE OR REPLACE FUNCTION fencing.audit_autonomously(
    p_resource text, p_offered_term bigint, p_leader_id text, p_table_name text, p_operation text, p_reason text)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_schema text;
  v_conn   text;
  v_mark   bigint;
  v_sql    text;
BEGIN
  SELECT highest_accepted INTO v_mark FROM fencing.high_water_mark WHERE resource = p_resource;
  v_sql := format('SELECT fencing.record_rejection(%L, %s, %s, %L, %L, %L, NULL, NULL, %L, %L, %L, %L)',
                  p_resource, coalesce(p_offered_term::text, 'NULL'), coalesce(v_mark::text, 'NULL'), p_leader_id,
                  p_table_name, p_operation, p_reason, 'trigger', session_user, current_setting('application_name'));
  SELECT n.nspname INTO v_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink';
  IF v_schema IS NULL THEN
    RAISE WARNING 'fencing: rejected write not audited in fencing.rejected_write (dblink is not installed): %', v_sql;
    RETURN false;
  END IF;
  v_conn := nullif((SELECT value FROM fencing.settings WHERE name = 'audit_dblink_connstr'), '');
  IF v_conn IS NULL THEN
    v_conn := format('dbname=%s user=%s port=%s host=%s application_name=fencing_audit connect_timeout=5',
                     fencing.conninfo_quote(current_database()), fencing.conninfo_quote(current_user),
                     fencing.conninfo_quote(current_setting('port')),
                     fencing.conninfo_quote(coalesce(host(inet_server_addr()),
                                                     nullif(trim(split_part(current_setting('unix_socket_directories'), ',', 1)), ''),
                                                     '127.0.0.1')));
  END IF;
  BEGIN
    EXECUTE format('SELECT t.id FROM %I.dblink($1, $2) AS t(id bigint)', v_schema) USING v_conn, v_sql;
    RETURN true;
  EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'fencing: rejected write not audited in fencing.rejected_write (dblink failed: %): %', SQLERRM, v_sql;
    RETURN false;
  END;
END
$fn$;

CREATE OR REPLACE FUNCTION fencing.log_break_glass(p_resource text, p_table_name text, p_operation text, p_reason text, p_db_user text)
RETURNS void
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
  INSERT INTO fencing.break_glass_log (resource, table_name, operation, reason, db_user, application_name, transaction_id)
  VALUES (p_resource, p_table_name, p_operation, left(p_reason, 1000), p_db_user, current_setting('application_name'),
          txid_current());
$fn$;
