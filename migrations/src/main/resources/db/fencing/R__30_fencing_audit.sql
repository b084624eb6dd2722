-- Fenceline: the rejection audit, the break-glass log and the validation of fencing.settings.
-- Repeatable migration: the one current definition of these functions. Flyway re-applies it whenever it changes
-- (after every versioned migration), so edit the function here, never in an applied V migration.
--
-- INVARIANTS of the audit (what a DBA may rely on):
--  * fencing.rejected_write holds only claims the database could check against its own state when they were made:
--    the resource exists, the offered term is really stale / conflicting / too far ahead of the mark (per reason),
--    db_user and application_name are the rejected session's own (session_user: the login role, whatever SET ROLE
--    or SECURITY DEFINER / foreign-key actions changed current_user to). Callers cannot choose source, db_user,
--    application_name or highest_accepted. Application roles have no INSERT on the table.
--  * A trigger-mode rejection aborts its transaction, so its row is committed elsewhere: through ONE dblink
--    connection per backend (named 'fencing_audit', opened on the first rejection and reused), logged in as the
--    least-privileged role fencing_auditor_writer through the foreign server fencing_audit_loopback (this database,
--    pinned by fencing.configure_audit_writer(), which only the owner may run). A dead connection is reopened once.
--  * Every trigger-mode rejection bumps the sequence of its reason BEFORE the row is sent: nextval() survives the
--    rollback, so fencing.rejection_counts shows rejections whose row could not be committed. Those rows are also
--    written to the server log as one WARNING line with every field ("fencing: rejected write not audited").
--  * The row is committed in THIS database of THIS server or not at all: an audit connection is used only after its far
--    end showed this backend (its pid holding this transaction's virtual transaction id in pg_locks), checked once
--    when the connection is opened. One reaching another server (the old primary, still running after a failover) is
--    closed unused and the next target is tried.
--  * A cancel (statement_timeout, pg_cancel_backend) never commits the stale write and never sends a row twice.
--    Processed before the audit began: the statement ends with 57014, no count, no row (nothing counted it yet).
--    Processed during the audit: caught once and the audit finished (row and count), the statement ends with the
--    fence's error. Only a second cancel, or an audit connection that cannot say whether the row was committed, ends
--    the statement with 57014 after the count: then the row is there or trigger_not_audited shows it, with no WARNING.

-- The reasons a rejection may carry (fencing.rejected_write.reason; later versions may add to the table's CHECK).
CREATE OR REPLACE FUNCTION fencing.rejection_reasons()
RETURNS text[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$ SELECT ARRAY['stale_term', 'no_term', 'term_conflict', 'invalid_term', 'term_jump', 'unscoped_term',
                     'break_glass_refused', 'not_allowed', 'advance_isolation', 'invalid_leader_id'] $fn$;
REVOKE ALL ON FUNCTION fencing.rejection_reasons() FROM PUBLIC;

-- Checks a rejection claim against the database's state right now. Returns the current mark, the reason to record
-- (a 'stale_term' claim for the very term of the mark held by another leader is recorded as 'term_conflict') and,
-- when the claim is not true, why (then nothing may be recorded).
-- The mark only moves up, so a stale / conflicting term stays so; the session settings (fencing.term,
-- fencing.resource) are the rejected statement's own, because the audit runs in the rejected session.
CREATE OR REPLACE FUNCTION fencing.check_rejection_claim(
    p_resource text, p_offered_term bigint, p_leader_id text, p_table_name text, p_operation text, p_reason text,
    p_from_trigger boolean,
    OUT mark bigint, OUT reason text, OUT refusal text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_holder    text;
  v_term_text text := btrim(coalesce(current_setting('fencing.term', true), ''));
  v_scope     text := nullif(btrim(coalesce(current_setting('fencing.resource', true), '')), '');
  v_jump      numeric;
  v_valid     boolean;
BEGIN
  reason := coalesce(p_reason, 'stale_term');
  SELECT m.highest_accepted, m.leader_id INTO mark, v_holder FROM fencing.high_water_mark m WHERE m.resource = p_resource;
  IF NOT FOUND THEN
    refusal := format('resource %s is not registered', coalesce(quote_literal(left(p_resource, 80)), 'NULL'));
    RETURN;
  END IF;
  IF NOT reason = ANY (fencing.rejection_reasons()) THEN
    refusal := format('reason %s is not one of %s', quote_literal(left(reason, 40)), array_to_string(fencing.rejection_reasons(), ', '));
    RETURN;
  END IF;
  -- The writer reports only refusals of its term (recorded as stale_term or term_conflict); every other reason is
  -- the trigger's own observation, not to be claimed by a caller.
  IF NOT p_from_trigger AND reason NOT IN ('stale_term', 'term_conflict') THEN
    refusal := format('reason %s is recorded by the trigger only', quote_literal(reason));
    RETURN;
  END IF;
  IF p_from_trigger THEN
    -- The trigger names the table it guards (schema.table, quoted as format('%I.%I') quotes) and the statement.
    IF p_table_name IS NULL THEN
      IF p_operation IS DISTINCT FROM 'ENTER' THEN
        refusal := format('operation %s without a table (only ENTER may have none)', coalesce(quote_literal(left(p_operation, 40)), 'NULL'));
        RETURN;
      END IF;
    ELSIF p_operation IS NULL OR p_operation NOT IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE') THEN
      refusal := format('operation %s is not INSERT, UPDATE, DELETE or TRUNCATE', coalesce(quote_literal(left(p_operation, 40)), 'NULL'));
      RETURN;
    ELSIF NOT EXISTS (SELECT 1 FROM fencing.protected_table p
                        JOIN pg_class c ON c.oid = p.tbl JOIN pg_namespace n ON n.oid = c.relnamespace
                       WHERE p.resource = p_resource AND format('%I.%I', n.nspname, c.relname) = p_table_name) THEN
      refusal := format('table %s is not protected for resource %s', quote_literal(left(p_table_name, 300)), p_resource);
      RETURN;
    END IF;
  END IF;

  IF p_from_trigger AND reason = 'stale_term' AND p_offered_term IS NOT NULL AND p_offered_term >= mark
     AND current_setting('transaction_isolation') <> 'read committed'
     AND fencing.mark_moved_since_snapshot(p_resource) THEN
    mark := NULL;   -- newer than this snapshot shows: the audit connection records the mark it reads
  END IF;

  IF reason = 'stale_term' AND p_offered_term IS NOT NULL AND p_offered_term = mark
     AND p_leader_id IS NOT NULL AND v_holder IS NOT NULL AND p_leader_id <> v_holder THEN
    reason := 'term_conflict';   -- the writer reports every refusal of its term as stale; say which one it was
  END IF;

  CASE reason
    WHEN 'stale_term' THEN
      IF p_offered_term IS NULL OR (mark IS NOT NULL AND p_offered_term >= mark) THEN
        refusal := format('term %s is not stale: the highest accepted term of %s is %s', coalesce(p_offered_term::text, 'NULL'), p_resource, mark);
      END IF;
    WHEN 'term_conflict' THEN
      IF p_offered_term IS DISTINCT FROM mark OR p_leader_id IS NULL OR v_holder IS NULL OR p_leader_id = v_holder THEN
        refusal := format('no conflict: term %s of leader %s against the mark %s of leader %s',
                          coalesce(p_offered_term::text, 'NULL'), coalesce(quote_literal(left(p_leader_id, 80)), 'NULL'),
                          mark, coalesce(quote_literal(left(v_holder, 80)), 'NULL'));
      END IF;
    WHEN 'no_term' THEN
      IF p_offered_term IS NOT NULL OR (v_term_text <> '' AND (v_scope IS NULL OR v_scope = p_resource)) THEN
        refusal := format('this session carries fencing.term %s for resource %s', quote_literal(left(v_term_text, 40)), p_resource);
      END IF;
    WHEN 'invalid_term' THEN
      v_valid := v_term_text ~ '^[0-9]{1,19}$' AND v_term_text::numeric BETWEEN 1 AND 9223372036854775807;
      IF p_offered_term IS NOT NULL OR v_term_text = '' OR v_valid THEN
        refusal := format('fencing.term %s of this session is not an invalid term', quote_literal(left(v_term_text, 40)));
      END IF;
    WHEN 'term_jump' THEN
      v_jump := coalesce((SELECT s.value FROM fencing.settings s WHERE s.name = 'max_term_jump'), '1000000')::numeric;
      IF p_offered_term IS NULL OR p_offered_term::numeric - mark <= v_jump THEN
        refusal := format('term %s is not more than max_term_jump %s above the mark %s', coalesce(p_offered_term::text, 'NULL'), v_jump, mark);
      END IF;
    WHEN 'unscoped_term' THEN
      IF p_offered_term IS NULL OR p_offered_term <= mark OR v_scope = p_resource THEN
        refusal := format('term %s with fencing.resource %s does not need a scope for resource %s (mark %s)',
                          coalesce(p_offered_term::text, 'NULL'), coalesce(quote_literal(v_scope), 'unset'), p_resource, mark);
      END IF;
    WHEN 'break_glass_refused' THEN
      IF nullif(btrim(coalesce(current_setting('fencing.break_glass', true), '')), '') IS NULL
         OR pg_has_role(session_user, 'fencing_break_glass', 'MEMBER') THEN
        refusal := format('session user %s did not ask for break-glass, or may', session_user);
      END IF;
    WHEN 'not_allowed' THEN
      IF p_offered_term IS NULL OR pg_has_role(session_user, 'fencing_app', 'MEMBER') THEN
        refusal := format('session user %s offered no term, or is a member of fencing_app', session_user);
      END IF;
    WHEN 'advance_isolation' THEN
      IF p_offered_term IS NULL OR p_offered_term <= mark OR current_setting('transaction_isolation') = 'read committed' THEN
        refusal := format('term %s would not advance the mark %s of %s, or this transaction is READ COMMITTED',
                          coalesce(p_offered_term::text, 'NULL'), mark, p_resource);
      END IF;
    WHEN 'invalid_leader_id' THEN
      IF coalesce(length(p_leader_id), 0) <= 200 THEN
        refusal := format('leader id of %s characters is not too long (at most 200)', coalesce(length(p_leader_id), 0));
      END IF;
  END CASE;
END
$fn$;
REVOKE ALL ON FUNCTION fencing.check_rejection_claim(text, bigint, text, text, text, text, boolean) FROM PUBLIC;

-- The writer's audit (fencing-jdbc calls it in its own autocommit statement after a refusal). The signature is kept
-- for existing callers; p_highest_accepted, p_source, p_db_user and p_application_name are no longer trusted: the
-- row gets the current mark, source 'writer' and the session's own user and application name.
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
  v_claim     record;
BEGIN
  IF p_resource IS NULL OR length(p_resource) > 200 THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003', MESSAGE = 'fencing.record_rejection: resource must be given (at most 200 characters)';
  END IF;
  v_claim := fencing.check_rejection_claim(p_resource, p_offered_term, p_leader_id, p_table_name, p_operation, p_reason, false);
  IF v_claim.refusal IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing.record_rejection: not recorded, the claim is not true: %s', v_claim.refusal),
      HINT = 'Only rejections the database can confirm are audited (a term below the mark, or the mark''s term held by another leader).';
  END IF;
  -- The table and the operation are the writer's description of what it was writing: kept only as far as the
  -- database can check them (a table of that name, unquoted so case-folded, schema-qualified or not, protected for
  -- the resource; an operation that is one upper-case word), else recorded as NULL, so that no application login can
  -- put a table or a verb of its choosing into the audit.
  IF p_table_name IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM fencing.protected_table p
         JOIN pg_class c ON c.oid = p.tbl JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE p.resource = p_resource AND lower(p_table_name) IN (c.relname::text, n.nspname || '.' || c.relname)) THEN
    p_table_name := NULL;
  END IF;
  IF p_operation !~ '^[A-Z][A-Z_]{0,31}$' THEN
    p_operation := NULL;
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
  VALUES (p_resource, p_offered_term, v_claim.mark, left(p_leader_id, 200), left(p_table_name, 300), left(p_operation, 32),
          left(p_business_key, 500), v_payload, v_truncated, v_claim.reason, 'writer',
          session_user, current_setting('application_name'))
  RETURNING id INTO v_id;
  RETURN v_id;
END
$fn$;
COMMENT ON FUNCTION fencing.record_rejection(text, bigint, bigint, text, text, text, text, jsonb, text, text, text, text) IS
  'The writer''s audit: appends one row to fencing.rejected_write if the claim is true now (resource registered, term stale or held by another leader). highest_accepted, source, db_user and application_name come from the database, not the caller; table_name and operation are kept only when the table is protected for the resource and the operation is one upper-case word (else NULL). Payloads over payload_max_bytes are replaced by a stub with payload_truncated = true. FL003 when the claim is not true.';

-- The remote end of the trigger's audit: runs in the audit connection (as fencing_auditor_writer, or as the owner
-- on the superuser fallback) and appends the row the rejected session checked and sent. Executable by nobody else.
CREATE OR REPLACE FUNCTION fencing.append_trigger_rejection(
    p_resource text, p_offered_term bigint, p_highest_accepted bigint, p_leader_id text, p_table_name text,
    p_operation text, p_reason text, p_db_user text, p_application_name text)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_id bigint;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM fencing.high_water_mark WHERE resource = p_resource) THEN
    RAISE EXCEPTION USING ERRCODE = 'FL004', MESSAGE = format('fencing.append_trigger_rejection: unknown resource %s', quote_literal(left(p_resource, 80)));
  END IF;
  INSERT INTO fencing.rejected_write (resource, offered_term, highest_accepted, leader_id, table_name, operation,
                                      reason, source, db_user, application_name)
  VALUES (p_resource, p_offered_term,
          coalesce(p_highest_accepted, (SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = p_resource)),
          left(p_leader_id, 200), left(p_table_name, 300),
          left(p_operation, 32), p_reason, 'trigger', left(p_db_user, 63), left(p_application_name, 64))
  RETURNING id INTO v_id;
  RETURN v_id;
END
$fn$;
REVOKE ALL ON FUNCTION fencing.append_trigger_rejection(text, bigint, bigint, text, text, text, text, text, text) FROM PUBLIC;
DO $do$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'fencing_auditor_writer') THEN
    GRANT EXECUTE ON FUNCTION fencing.append_trigger_rejection(text, bigint, bigint, text, text, text, text, text, text)
      TO fencing_auditor_writer;
  END IF;
END
$do$;

-- Quotes a value for a libpq connection string.
CREATE OR REPLACE FUNCTION fencing.conninfo_quote(p_value text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $fn$ SELECT '''' || replace(replace(p_value, '\', '\\'), '''', '\''') || '''' $fn$;

-- Why dblink must not carry the audit in this database, or NULL when it may: dblink missing, or its query or connect
-- functions executable by PUBLIC / fencing_app / fencing_break_glass (they could then send their own SQL over this
-- backend's open audit connection, as fencing_auditor_writer; or, since named connections belong to the backend and
-- not to a role, open one named fencing_audit to a database of their choosing, which the audit would then reuse).
CREATE OR REPLACE FUNCTION fencing.audit_dblink_refusal()
RETURNS text
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_nsp     oid;
  v_exposed text;
BEGIN
  SELECT e.extnamespace INTO v_nsp FROM pg_extension e WHERE e.extname = 'dblink';
  IF v_nsp IS NULL THEN
    RETURN 'dblink is not installed';
  END IF;
  SELECT string_agg(DISTINCT p.oid::regprocedure::text, ', ') INTO v_exposed
    FROM pg_proc p
   WHERE p.pronamespace = v_nsp
     AND p.proname IN ('dblink', 'dblink_exec', 'dblink_send_query', 'dblink_open', 'dblink_fetch', 'dblink_get_result',
                       'dblink_connect', 'dblink_connect_u')
     AND (has_function_privilege('public', p.oid, 'EXECUTE')
          OR has_function_privilege('fencing_app', p.oid, 'EXECUTE')
          OR has_function_privilege('fencing_break_glass', p.oid, 'EXECUTE')
          -- the login of this session, directly or through any role it belongs to: it could have opened the
          -- connection named fencing_audit itself, or send its own statements over the audit's. Superusers, dblink's
          -- owner and the fencing schema's owner are out of scope (they could disable the trigger as well; the
          -- schema owner is granted dblink where another role installed it, e.g. on managed PostgreSQL).
          OR (has_function_privilege(session_user, p.oid, 'EXECUTE')
              AND NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = session_user)
              AND NOT pg_has_role(session_user, p.proowner, 'MEMBER')
              AND NOT pg_has_role(session_user, (SELECT n.nspowner FROM pg_namespace n WHERE n.nspname = 'fencing'), 'MEMBER')));
  IF v_exposed IS NOT NULL THEN
    RETURN format('dblink functions are executable by PUBLIC, an application role or this session''s login %s (%s); run REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA %I FROM PUBLIC, and revoke any grant of them to application logins, as the role that installed dblink',
                  quote_ident(session_user), v_exposed, v_nsp::regnamespace);
  END IF;
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION fencing.audit_dblink_refusal() FROM PUBLIC;

-- Where this backend's audit connection goes: the foreign server fencing_audit_loopback when the owner has a user
-- mapping for it (fencing.configure_audit_writer()); else, for a superuser owner, this database over the local
-- socket as the owner (needs a trust or peer line for it there); else NULL (server log and counters only).
-- Never a connection string anybody but the owner can influence.
CREATE OR REPLACE FUNCTION fencing.audit_connection_target()
RETURNS text
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_socket text;
BEGIN
  IF EXISTS (SELECT 1 FROM pg_user_mappings WHERE srvname = 'fencing_audit_loopback' AND usename = current_user) THEN
    RETURN 'fencing_audit_loopback';
  END IF;
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    -- Readable by superusers (and pg_read_all_settings) only.
    v_socket := nullif(btrim(split_part(current_setting('unix_socket_directories'), ',', 1)), '');
    RETURN format('dbname=%s user=%s port=%s host=%s application_name=fencing_audit connect_timeout=5',
                  fencing.conninfo_quote(current_database()), fencing.conninfo_quote(current_user),
                  fencing.conninfo_quote(current_setting('port')), fencing.conninfo_quote(coalesce(v_socket, '127.0.0.1')));
  END IF;
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION fencing.audit_connection_target() FROM PUBLIC;

-- The audit writer's login aimed at THIS server, whatever the foreign server names: the address this backend's client
-- reached it at and its port, this database, the credentials of the owner's user mapping for fencing_audit_loopback.
-- After a failover the foreign server still names the old primary; a backend of the promoted server reaches itself
-- here. NULL without a user mapping, for a backend on the local socket (no address to name), or when the foreign
-- server already names this address and port. Built from server facts and the owner's own mapping only.
CREATE OR REPLACE FUNCTION fencing.audit_self_target()
RETURNS text
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_options text[];
  v_server  text[];
  v_user    text;
  v_password text;
  v_host    text := host(inet_server_addr());
  v_port    text := current_setting('port');
BEGIN
  SELECT m.umoptions, s.srvoptions INTO v_options, v_server
    FROM pg_user_mappings m JOIN pg_foreign_server s ON s.oid = m.srvid
   WHERE m.srvname = 'fencing_audit_loopback' AND m.usename = current_user;
  IF NOT FOUND OR v_host IS NULL THEN
    RETURN NULL;
  END IF;
  IF ('host=' || v_host) = ANY (coalesce(v_server, ARRAY[]::text[])) AND ('port=' || v_port) = ANY (coalesce(v_server, ARRAY[]::text[])) THEN
    RETURN NULL;                                   -- the foreign server is this server already
  END IF;
  SELECT substr(o, 6) INTO v_user FROM unnest(v_options) o WHERE o LIKE 'user=%';
  SELECT substr(o, 10) INTO v_password FROM unnest(v_options) o WHERE o LIKE 'password=%';
  IF v_user IS NULL OR v_password IS NULL THEN
    RETURN NULL;
  END IF;
  RETURN format('host=%s port=%s dbname=%s user=%s password=%s application_name=fencing_audit connect_timeout=5',
                fencing.conninfo_quote(v_host), fencing.conninfo_quote(v_port), fencing.conninfo_quote(current_database()),
                fencing.conninfo_quote(v_user), fencing.conninfo_quote(v_password));
END
$fn$;
REVOKE ALL ON FUNCTION fencing.audit_self_target() FROM PUBLIC;

-- A condition, to send to the far end of an audit connection, that is true only in THIS database of THIS server, while
-- this backend's transaction runs: pg_locks there lists this backend's pid holding this transaction's own virtual
-- transaction id (pg_locks shows pid and virtualxid of every backend to every role; pg_stat_activity hides
-- backend_start of other roles' sessions, so the audit writer could not check that). Another server with the same
-- data (the old primary after a failover, still running) has no backend with this pid in this transaction. Computed
-- here, from this backend's own facts, and evaluated there by the audit writer: the session cannot choose either side.
CREATE OR REPLACE FUNCTION fencing.audit_here_condition()
RETURNS text
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
SELECT format('pg_catalog.current_database() = %L AND pg_catalog.pg_postmaster_start_time() = %L'
              ' AND EXISTS (SELECT 1 FROM pg_catalog.pg_locks'
              ' WHERE locktype = %L AND mode = %L AND granted AND pid = %s AND virtualxid = %L)',
              current_database(), pg_postmaster_start_time(), 'virtualxid', 'ExclusiveLock', pg_backend_pid(),
              (SELECT l.virtualxid FROM pg_locks l
                WHERE l.locktype = 'virtualxid' AND l.mode = 'ExclusiveLock' AND l.granted AND l.pid = pg_backend_pid() LIMIT 1))
$fn$;
REVOKE ALL ON FUNCTION fencing.audit_here_condition() FROM PUBLIC;

-- Commits an audit row outside the current (about to be aborted) transaction, through this backend's persistent
-- audit connection. Returns true when the row was committed; otherwise writes one WARNING line with every field to
-- the server log. Either way the reason's counter (a sequence) has been bumped, unless the claim is not true.
-- Called by the guard (as the writing role) and by enter() (as the owner): the claim is checked either way.
-- A connection is used only once fencing.audit_here_condition() held at its far end, checked once when this function
-- opens it (a kept connection was opened and checked here, by this backend: nobody else can open one while
-- audit_dblink_refusal() is NULL): one that reaches another server is closed unused and the next target is tried;
-- one a cancel caught between opening and checking is closed too.
-- A cancel (statement_timeout, pg_cancel_backend) processed in here is caught once and the audit is finished all the
-- same; the statement then ends with the fence's error, not 57014. dblink's calls block, so a cancel arriving during
-- one is processed after it returns: whether the row was committed is then asked of the audit connection, which
-- remembers the token of the last statement it committed (fencing_audit.sent, a session setting of that connection:
-- rolled back with a failed statement). Committed: done. Not committed: sent again. No answer: the cancel is passed
-- on (57014); the row is then committed or missing, never sent twice, and a missing one shows in the counter.
-- A second cancel is passed on too.
CREATE OR REPLACE FUNCTION fencing.audit_autonomously(
    p_resource text, p_offered_term bigint, p_leader_id text, p_table_name text, p_operation text, p_reason text)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  c_conn    constant text := 'fencing_audit';
  c_elsewhere constant text := 'the audit connection reached another server, not this one (the foreign server fencing_audit_loopback names another server; after a failover, the old primary)';
  v_claim   record;
  v_schema  text;
  v_target  text;
  v_why     text;
  v_sql     text;
  v_fields  text;
  v_id      bigint;
  v_open    boolean;
  v_connects integer;
  v_refusal text;
  v_sent    boolean := false;
  v_token   text := gen_random_uuid()::text;
  v_seen    text;
  v_unknown boolean;
  v_counted boolean := false;
  v_unchecked boolean := false;
  v_here    boolean;
  v_configured_failed boolean := false;
BEGIN
  FOR v_round IN 1..2 LOOP   -- the second round only after a cancel caught before the row was committed
    BEGIN
      IF v_fields IS NULL THEN
        v_claim := fencing.check_rejection_claim(p_resource, p_offered_term, p_leader_id, p_table_name, p_operation, p_reason, true);
        v_fields := format('resource=%s offered_term=%s highest_accepted=%s leader_id=%s table=%s operation=%s reason=%s db_user=%s application_name=%s rejected_at=%s',
                           quote_nullable(p_resource), coalesce(p_offered_term::text, 'NULL'), coalesce(v_claim.mark::text, 'NULL'),
                           quote_nullable(p_leader_id), quote_nullable(p_table_name), quote_nullable(p_operation),
                           quote_nullable(v_claim.reason), quote_literal(session_user), quote_literal(current_setting('application_name')),
                           clock_timestamp());
      END IF;
      IF v_claim.refusal IS NOT NULL THEN
        RAISE WARNING 'fencing: audit claim refused, not recorded (%): %', v_claim.refusal, v_fields;
        RETURN false;
      END IF;
      IF NOT v_counted THEN
        -- One assignment, which PL/pgSQL evaluates as a simple expression without the executor's interrupt checks
        -- around it: a PERFORM would leave the end of its statement between the bump and the flag, and a cancel
        -- processed there would count the rejection twice in the next round.
        v_counted := nextval(format('fencing.%I', 'rejections_' || v_claim.reason)::regclass) > 0;
      END IF;
      IF v_sql IS NULL THEN
        SELECT n.nspname INTO v_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink';
        IF v_schema IS NULL THEN
          v_why := 'dblink is not installed';
          EXIT;
        END IF;
        -- Checked before a kept connection is reused too: whoever could open one named fencing_audit could have.
        v_refusal := fencing.audit_dblink_refusal();
        -- One remote statement: the row, and this rejection's token in the audit connection's session.
        v_sql := format('SELECT fencing.append_trigger_rejection(%L, %s, %s, %L, %L, %L, %L, %L, %L),'
                        ' pg_catalog.set_config(%L, %L, false)',
                        p_resource, coalesce(p_offered_term::text, 'NULL'), coalesce(v_claim.mark::text, 'NULL'), p_leader_id,
                        p_table_name, p_operation, v_claim.reason, session_user, current_setting('application_name'),
                        'fencing_audit.sent', v_token);
      END IF;
      EXECUTE format('SELECT %L = ANY (coalesce(%I.dblink_get_connections(), ARRAY[]::text[]))', c_conn, v_schema) INTO v_open;
      -- A configured target that failed or reached another server in the first round is not tried again after a
      -- cancel: connecting is not interrupted by one, and a hung target (a stopped old primary) costs connect_timeout.
      -- Without a second target, the configured one is tried again: a cancel that landed while it was being opened
      -- says nothing about it, and giving up would lose the row to the rejected session's own statement_timeout.
      v_connects := CASE WHEN v_configured_failed AND fencing.audit_self_target() IS NOT NULL THEN 1 ELSE 0 END;
      -- Up to three attempts: the kept connection may have died since its last use (server restart, idle timeout, a
      -- DBA terminating it); then a new one to the configured target; then, when that fails too or reaches another
      -- server (after a failover it names the old primary), one to this server's own address (audit_self_target()).
      FOR v_attempt IN 1..3 LOOP
        BEGIN
          IF v_refusal IS NOT NULL THEN
            v_why := v_refusal;
            EXIT;
          END IF;
          IF NOT v_open THEN
            IF v_connects = 0 THEN
              v_target := fencing.audit_connection_target();
              IF v_target IS NULL THEN
                v_why := format('no audit writer configured (run SELECT fencing.configure_audit_writer(...) as %s) and %s is not a superuser',
                                current_user, current_user);
                EXIT;
              END IF;
            ELSIF v_connects = 1 THEN
              v_target := fencing.audit_self_target();
              EXIT WHEN v_target IS NULL;
            ELSE
              EXIT;
            END IF;
            v_connects := v_connects + 1;
            v_unchecked := true;
            -- Counted as failed until it has connected and passed the check: a cancel is processed when the connect
            -- returns, possibly before this block's handler could note a failure.
            v_configured_failed := v_configured_failed OR v_connects = 1;
            EXECUTE format('SELECT %I.dblink_connect(%L, $1)', v_schema, c_conn) USING v_target;
            v_open := true;
            EXECUTE format('SELECT t.here FROM %I.dblink(%L, $1) AS t(here boolean)', v_schema, c_conn)
              USING 'SELECT ' || fencing.audit_here_condition() INTO v_here;
            IF NOT v_here THEN
              v_why := concat_ws('; ', v_why, c_elsewhere);
              EXECUTE format('SELECT %I.dblink_disconnect(%L)', v_schema, c_conn);
              v_open := false;
              v_unchecked := false;
              CONTINUE;
            END IF;
            v_unchecked := false;
            IF v_connects = 1 THEN
              v_configured_failed := false;
            END IF;
          END IF;
          v_sent := true;
          EXECUTE format('SELECT t.id FROM %I.dblink(%L, $1) AS t(id bigint, sent text)', v_schema, c_conn) USING v_sql INTO v_id;
          RETURN true;   -- v_sent stays true until here: a cancel on the way cannot make the row be sent again
        EXCEPTION WHEN OTHERS THEN   -- not query_canceled: OTHERS does not catch it
          v_sent := false;
          v_why := concat_ws('; ', v_why, format('dblink failed: %s', SQLERRM));
          IF v_open THEN
            BEGIN
              EXECUTE format('SELECT %I.dblink_disconnect(%L)', v_schema, c_conn);
            EXCEPTION WHEN OTHERS THEN
              NULL;   -- already gone
            END;
            v_open := false;
          END IF;
          v_unchecked := false;   -- only now: a cancel before the disconnect still finds it set
        END;
      END LOOP;
      EXIT;
    EXCEPTION WHEN query_canceled THEN
      v_unknown := v_round = 2;
      v_seen := NULL;
      IF v_sent AND NOT v_unknown THEN
        BEGIN
          EXECUTE format('SELECT t.v FROM %I.dblink(%L, %L) AS t(v text)', v_schema, c_conn,
                         'SELECT pg_catalog.current_setting(''fencing_audit.sent'', true)') INTO v_seen;
        EXCEPTION WHEN OTHERS THEN
          v_unknown := true;
        END;
        IF NOT v_unknown AND v_seen = v_token THEN
          RETURN true;                   -- committed before the cancel was processed
        END IF;
      END IF;
      IF v_unknown OR v_unchecked THEN
        -- Not checked yet, or a connection that cannot say (or canceled again): closed, whatever state the cancel
        -- left it in; the next round, or the next rejection, opens a new one.
        BEGIN
          EXECUTE format('SELECT %I.dblink_disconnect(%L)', v_schema, c_conn);
        EXCEPTION WHEN OTHERS THEN
          NULL;
        END;
        v_unchecked := false;
      END IF;
      IF v_unknown THEN
        RAISE;                           -- committed or missing (counted), never sent twice: the statement ends canceled
      END IF;
      v_sent := false;                   -- not committed: the next round sends it
    END;
  END LOOP;
  RAISE WARNING 'fencing: rejected write not audited in fencing.rejected_write (%): %', v_why, v_fields;
  RETURN false;
END
$fn$;

-- Sets up (or re-points) the trigger's audit path. Only the schema owner (and superusers) may execute it: it decides
-- where the owner's audit connection goes. The target is always this database; host and port name this server
-- (default: the address this session reached it at, else 127.0.0.1, and its port).
-- p_password NULL: a random password is generated and set on fencing_auditor_writer (needs CREATEROLE); nobody needs
-- to know it. Given: it is set too when allowed, otherwise it must already be the role's password (set by an
-- administrator). Several databases of one cluster share the role: give each the same password.
-- Takes effect when the calling transaction commits (a new login cannot see an uncommitted password); then
-- SELECT fencing.audit_path() checks it.
CREATE OR REPLACE FUNCTION fencing.configure_audit_writer(p_password text DEFAULT NULL, p_host text DEFAULT NULL, p_port integer DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_owner    text := current_user;   -- SECURITY DEFINER: the owner of the fencing functions
  v_password text := coalesce(p_password, replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));
  v_host     text := coalesce(nullif(btrim(p_host), ''), host(inet_server_addr()), '127.0.0.1');
  v_port     integer := coalesce(p_port, current_setting('port')::integer);
  v_refusal  text := fencing.audit_dblink_refusal();
  v_schema   text;
  v_note     text := '';
BEGIN
  IF v_refusal IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003', MESSAGE = format('fencing.configure_audit_writer: %s', v_refusal),
      HINT = 'Install dblink in schema fencing (CREATE EXTENSION dblink WITH SCHEMA fencing), revoke its functions from PUBLIC, grant them and USAGE ON FOREIGN DATA WRAPPER dblink_fdw to the schema owner.';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'fencing_auditor_writer') THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003', MESSAGE = 'fencing.configure_audit_writer: role fencing_auditor_writer does not exist',
      HINT = 'CREATE ROLE fencing_auditor_writer LOGIN (as a role with CREATEROLE), then run the migrations again (they grant it what it needs).';
  END IF;
  IF length(v_password) < 16 THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing.configure_audit_writer: the password must have at least 16 characters, it has %s', length(v_password));
  END IF;
  IF v_host !~ '^[A-Za-z0-9._:/-]{1,255}$' THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing.configure_audit_writer: host %s is not a host name, address or socket folder (1 to 255 characters of [A-Za-z0-9._:/-])', quote_literal(left(v_host, 80)));
  END IF;
  IF v_port NOT BETWEEN 1 AND 65535 THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003', MESSAGE = format('fencing.configure_audit_writer: port must be between 1 and 65535, was %s', v_port);
  END IF;
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = 'fencing_auditor_writer')
     OR pg_has_role('fencing_auditor_writer', v_owner, 'MEMBER') THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing.configure_audit_writer: fencing_auditor_writer must be an ordinary role (not a superuser, not a member of %s)', v_owner);
  END IF;

  BEGIN
    EXECUTE format('ALTER ROLE fencing_auditor_writer LOGIN PASSWORD %L', v_password);
    -- Each backend that rejected a write keeps one audit connection; one idle for 5 minutes is closed by the server
    -- (the next rejection of that backend reopens it), so idle audit connections stay bounded by recent rejections.
    ALTER ROLE fencing_auditor_writer SET idle_session_timeout = '5min';
  EXCEPTION WHEN insufficient_privilege THEN
    IF p_password IS NULL THEN
      RAISE EXCEPTION USING ERRCODE = 'FL003',
        MESSAGE = format('fencing.configure_audit_writer: %s may not set the password of fencing_auditor_writer (%s)', v_owner, SQLERRM),
        HINT = 'Have an administrator run ALTER ROLE fencing_auditor_writer LOGIN PASSWORD ''...'', then pass that password here.';
    END IF;
    v_note := ' (password not changed: it must already be the role''s password)';
  END;

  DROP SERVER IF EXISTS fencing_audit_loopback CASCADE;   -- and its user mappings
  EXECUTE format('CREATE SERVER fencing_audit_loopback FOREIGN DATA WRAPPER dblink_fdw OPTIONS (host %L, port %L, dbname %L, application_name %L, connect_timeout %L)',
                 v_host, v_port::text, current_database(), 'fencing_audit', '5');
  EXECUTE format('CREATE USER MAPPING FOR %I SERVER fencing_audit_loopback OPTIONS (user %L, password %L)',
                 v_owner, 'fencing_auditor_writer', v_password);
  COMMENT ON SERVER fencing_audit_loopback IS
    'Where trigger-mode rejections are audited: this database, as fencing_auditor_writer. Set by fencing.configure_audit_writer().';

  -- This backend's open audit connection (if any) used the old settings.
  SELECT n.nspname INTO v_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink';
  BEGIN
    EXECUTE format('SELECT %I.dblink_disconnect(%L)', v_schema, 'fencing_audit');
  EXCEPTION WHEN OTHERS THEN
    NULL;   -- none open
  END;
  RETURN format('audit writer: fencing_auditor_writer at %s:%s, database %s%s; takes effect at commit, then check with SELECT fencing.audit_path()',
                v_host, v_port, current_database(), v_note);
END
$fn$;
REVOKE ALL ON FUNCTION fencing.configure_audit_writer(text, text, integer) FROM PUBLIC;

-- Which path trigger-mode audits take from this backend, checked by opening a connection now: a target that fails,
-- or that reaches another server (fencing.audit_here_condition() false there), is not where audits go.
CREATE OR REPLACE FUNCTION fencing.audit_path()
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_refusal text := fencing.audit_dblink_refusal();
  v_target  text;
  v_schema  text;
  v_probe   text;
  v_user    text;
  v_here    boolean;
  v_failed  text;
  v_self    text;
BEGIN
  IF v_refusal IS NOT NULL THEN
    RETURN format('server log and fencing.rejection_counts only: %s', v_refusal);
  END IF;
  v_target := fencing.audit_connection_target();
  IF v_target IS NULL THEN
    RETURN format('server log and fencing.rejection_counts only: no audit writer configured and the owner %s is not a superuser', current_user);
  END IF;
  SELECT n.nspname INTO v_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink';
  v_probe := format('SELECT current_user::text, %s', fencing.audit_here_condition());
  BEGIN
    EXECUTE format('SELECT t.u, t.here FROM %I.dblink($1, %L) AS t(u text, here boolean)', v_schema, v_probe)
      USING v_target INTO v_user, v_here;
    IF NOT v_here THEN
      v_failed := 'reaches another server, not this one';
    END IF;
  EXCEPTION WHEN OTHERS THEN
    v_failed := format('fails: %s', SQLERRM);
  END;
  IF v_failed IS NULL THEN
    RETURN format('dblink as %s (%s)', v_user,
                  CASE WHEN v_target = 'fencing_audit_loopback' THEN 'foreign server fencing_audit_loopback'
                       ELSE 'superuser owner over the local socket' END);
  END IF;
  v_self := fencing.audit_self_target();
  IF v_self IS NULL THEN
    RETURN format('server log and fencing.rejection_counts only: the audit connection %s', v_failed);
  END IF;
  BEGIN
    EXECUTE format('SELECT t.u, t.here FROM %I.dblink($1, %L) AS t(u text, here boolean)', v_schema, v_probe)
      USING v_self INTO v_user, v_here;
    IF NOT v_here THEN
      RAISE EXCEPTION 'it reaches another server, not this one';
    END IF;
  EXCEPTION WHEN OTHERS THEN
    RETURN format('server log and fencing.rejection_counts only: the audit connection %s; and to this server''s own address %s:%s: %s',
                  v_failed, host(inet_server_addr()), current_setting('port'), SQLERRM);
  END;
  RETURN format('dblink as %s (this server''s own address %s:%s: the foreign server fencing_audit_loopback %s; re-point it with SELECT fencing.configure_audit_writer())',
                v_user, host(inet_server_addr()), current_setting('port'), v_failed);
END
$fn$;
REVOKE ALL ON FUNCTION fencing.audit_path() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fencing.audit_path() TO fencing_admin, fencing_auditor;

-- The break-glass log, written in the transaction of the write it allows. Kept signature; p_db_user is checked, not
-- trusted: it must be a role the session's login user can act as (itself, or a role it is a member of, i.e. may
-- SET ROLE to) that is a member of fencing_break_glass, and break-glass must really be requested in this session.
-- The reason logged is the session's fencing.break_glass, whatever p_reason says.
CREATE OR REPLACE FUNCTION fencing.log_break_glass(p_resource text, p_table_name text, p_operation text, p_reason text, p_db_user text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_reason text := nullif(btrim(current_setting('fencing.break_glass', true)), '');
  v_user   text := coalesce(p_db_user, session_user);
BEGIN
  IF v_reason IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'FL007',
      MESSAGE = 'fencing.log_break_glass: this session did not request break-glass (SET LOCAL fencing.break_glass = ''<reason>'')';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = v_user)
     OR NOT pg_has_role(session_user, v_user, 'MEMBER')
     OR NOT pg_has_role(v_user, 'fencing_break_glass', 'MEMBER') THEN
    RAISE EXCEPTION USING ERRCODE = 'FL007',
      MESSAGE = format('fencing.log_break_glass: %s cannot log break-glass as %s (it must be a role the session user can act as, and a member of fencing_break_glass)',
                       session_user, quote_literal(left(v_user, 80)));
  END IF;
  IF NOT EXISTS (SELECT 1 FROM fencing.protected_table p
                   JOIN pg_class c ON c.oid = p.tbl JOIN pg_namespace n ON n.oid = c.relnamespace
                  WHERE p.resource = p_resource AND format('%I.%I', n.nspname, c.relname) = p_table_name)
     OR p_operation IS NULL OR p_operation NOT IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE') THEN
    RAISE EXCEPTION USING ERRCODE = 'FL007',
      MESSAGE = format('fencing.log_break_glass: %s on %s is not a write to a table protected for resource %s',
                       coalesce(quote_literal(left(p_operation, 40)), 'NULL'), coalesce(quote_literal(left(p_table_name, 300)), 'NULL'),
                       coalesce(quote_literal(left(p_resource, 80)), 'NULL'));
  END IF;
  INSERT INTO fencing.break_glass_log (resource, table_name, operation, reason, db_user, application_name, transaction_id)
  VALUES (p_resource, p_table_name, p_operation, left(v_reason, 1000), v_user, current_setting('application_name'),
          txid_current());
END
$fn$;

-- fencing.settings: every value is checked when written; a bad value is refused, never stored (one typo in
-- advance_timeout would otherwise make every write fail). Names this file does not know are left to their owners.
CREATE OR REPLACE FUNCTION fencing.check_setting()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_value    text := btrim(NEW.value);
  v_interval interval;
BEGIN
  CASE NEW.name
    WHEN 'advance_timeout' THEN
      BEGIN
        v_interval := v_value::interval;
      EXCEPTION WHEN OTHERS THEN
        v_interval := NULL;
      END;
      IF v_interval IS NULL OR v_interval < interval '100 milliseconds' OR v_interval > interval '10 minutes' THEN
        RAISE EXCEPTION USING ERRCODE = 'FL003',
          MESSAGE = format('fencing.settings advance_timeout must be an interval from 100ms to 10min, was %s', quote_literal(left(NEW.value, 80)));
      END IF;
    WHEN 'payload_max_bytes' THEN
      IF v_value !~ '^[0-9]{1,7}$' OR v_value::integer > 1048576 THEN
        RAISE EXCEPTION USING ERRCODE = 'FL003',
          MESSAGE = format('fencing.settings payload_max_bytes must be an integer from 0 to 1048576, was %s', quote_literal(left(NEW.value, 80)));
      END IF;
    WHEN 'max_term_jump' THEN
      IF v_value !~ '^[0-9]{1,19}$' OR v_value::numeric NOT BETWEEN 1 AND 9223372036854775807 THEN
        RAISE EXCEPTION USING ERRCODE = 'FL003',
          MESSAGE = format('fencing.settings max_term_jump must be an integer from 1 to 9223372036854775807, was %s', quote_literal(left(NEW.value, 80)));
      END IF;
    WHEN 'audit_dblink_connstr' THEN
      RAISE EXCEPTION USING ERRCODE = 'FL003',
        MESSAGE = 'fencing.settings audit_dblink_connstr is no longer used: the owner configures the audit path with fencing.configure_audit_writer()';
    ELSE
      NULL;
  END CASE;
  NEW.value := v_value;
  RETURN NEW;
END
$fn$;
REVOKE ALL ON FUNCTION fencing.check_setting() FROM PUBLIC;
CREATE OR REPLACE TRIGGER settings_checked BEFORE INSERT OR UPDATE ON fencing.settings
  FOR EACH ROW EXECUTE FUNCTION fencing.check_setting();
-- Values stored before this check existed: named in the migration output, not changed (a DBA decides).
DO $do$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT name, value FROM fencing.settings LOOP
    BEGIN
      UPDATE fencing.settings SET value = value WHERE name = r.name;
    EXCEPTION WHEN SQLSTATE 'FL003' THEN
      RAISE WARNING 'fencing: stored setting is invalid and must be corrected: %', SQLERRM;
    END;
  END LOOP;
END
$do$;

-- Rejections per reason: counted (every trigger-mode rejection, committed or not: the sequences survive rollback)
-- against audit rows. trigger_not_audited > 0: rows lost (see the server log's "not audited" lines).
-- Counts are since installation; after deleting old audit rows compare differences over a time window instead.
CREATE OR REPLACE VIEW fencing.rejection_counts AS
SELECT c.reason,
       c.trigger_counted,
       coalesce(a.trigger_rows, 0)                                  AS trigger_rows,
       greatest(c.trigger_counted - coalesce(a.trigger_rows, 0), 0) AS trigger_not_audited,
       coalesce(a.writer_rows, 0)                                   AS writer_rows
  FROM (SELECT 'stale_term' AS reason, CASE WHEN is_called THEN last_value ELSE 0 END AS trigger_counted FROM fencing.rejections_stale_term
        UNION ALL SELECT 'no_term', CASE WHEN is_called THEN last_value ELSE 0 END FROM fencing.rejections_no_term
        UNION ALL SELECT 'term_conflict', CASE WHEN is_called THEN last_value ELSE 0 END FROM fencing.rejections_term_conflict
        UNION ALL SELECT 'invalid_term', CASE WHEN is_called THEN last_value ELSE 0 END FROM fencing.rejections_invalid_term
        UNION ALL SELECT 'term_jump', CASE WHEN is_called THEN last_value ELSE 0 END FROM fencing.rejections_term_jump
        UNION ALL SELECT 'unscoped_term', CASE WHEN is_called THEN last_value ELSE 0 END FROM fencing.rejections_unscoped_term
        UNION ALL SELECT 'break_glass_refused', CASE WHEN is_called THEN last_value ELSE 0 END FROM fencing.rejections_break_glass_refused
        UNION ALL SELECT 'not_allowed', CASE WHEN is_called THEN last_value ELSE 0 END FROM fencing.rejections_not_allowed
        UNION ALL SELECT 'advance_isolation', CASE WHEN is_called THEN last_value ELSE 0 END FROM fencing.rejections_advance_isolation
        UNION ALL SELECT 'invalid_leader_id', CASE WHEN is_called THEN last_value ELSE 0 END FROM fencing.rejections_invalid_leader_id) c
  LEFT JOIN (SELECT r.reason,
                    count(*) FILTER (WHERE r.source = 'trigger') AS trigger_rows,
                    count(*) FILTER (WHERE r.source = 'writer')  AS writer_rows
               FROM fencing.rejected_write r GROUP BY r.reason) a ON a.reason = c.reason;
COMMENT ON VIEW fencing.rejection_counts IS
  'Per reason: trigger-mode rejections counted (survives rollback) vs. audit rows; trigger_not_audited > 0 means rows were lost (server log has them).';
GRANT SELECT ON fencing.rejection_counts TO fencing_auditor, fencing_admin;

-- A superuser owner sets the audit writer up by itself once per cluster: when the role has no password yet (the
-- first database migrated), it gets a random one nobody needs to know. Otherwise (later databases, or an owner that
-- is not a superuser) the owner runs fencing.configure_audit_writer(...) itself; until then a superuser owner audits
-- as itself over the local socket, any other owner to the server log and counters only.
DO $do$
BEGIN
  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
     OR fencing.audit_dblink_refusal() IS NOT NULL
     OR EXISTS (SELECT 1 FROM pg_user_mappings WHERE srvname = 'fencing_audit_loopback' AND usename = current_user) THEN
    RETURN;
  END IF;
  -- pg_authid (the only place saying whether a role has a password) is readable by superusers only.
  IF EXISTS (SELECT 1 FROM pg_authid WHERE rolname = 'fencing_auditor_writer' AND rolpassword IS NULL) THEN
    BEGIN
      RAISE NOTICE '%', fencing.configure_audit_writer();
    EXCEPTION WHEN OTHERS THEN
      RAISE WARNING 'fencing: could not set up the audit writer (%); run SELECT fencing.configure_audit_writer(...) as %', SQLERRM, current_user;
    END;
  END IF;
END
$do$;

-- Who may call what here: the writer records its own rejections (record_rejection checks every claim against the
-- database); nothing else that writes the audit is executable by an application role: the trigger's audit runs as
-- the owner, from the guard.
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA fencing FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fencing.record_rejection(text, bigint, bigint, text, text, text, text, jsonb, text, text, text, text) TO fencing_app;
