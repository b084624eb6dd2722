-- Fenceline: the fencing functions.
--
-- SAFETY ARGUMENT (the whole design in one place; see also fencing-jdbc's package-info):
--  * Every resource has a row in fencing.high_water_mark with a lock_key. A session that is "entered" for a
--    resource at term t holds the session-level SHARED advisory lock (1178946115, lock_key) and has the session
--    setting fencing.entered_<lock_key> = t. Only fencing.enter() sets that setting, and only right after
--    acquiring the lock and reading the mark = t with a snapshot taken after the lock was granted.
--    Session advisory locks are never released while the setting is non-empty (a rolled-back transaction can
--    revert the setting but never releases the lock), so "setting = t" implies "lock held".
--  * The mark only moves up, only in fencing.enter(), and only while the advancing transaction holds the
--    EXCLUSIVE transaction-level advisory lock on the same key. To get it, the advancer terminates every other
--    backend that holds the shared lock (pg_terminate_backend), i.e. every session entered at an older term.
--    Terminating a backend aborts its open transaction; a transaction that already reached commit is committed
--    before the backend exits and therefore before the advancer's commit. The exclusive lock is released only
--    after the advancing transaction's commit is visible, so a session that then takes the shared lock and reads
--    the mark sees the new term.
--  * Hence, while a session is alive with fencing.entered_<key> = t, the mark equals t, and the statement
--    trigger fencing.guard() can allow the write by reading two settings: no lock, no table read, no extra
--    round trip. A transaction carrying term t can only commit from such a session, so no transaction of term
--    t commits after a transaction of a higher term committed for the same resource.
--  * A paused old leader cannot commit late: its session is terminated by the next advance, bounded by the
--    advance_timeout setting (default 5s); past that the advance fails with FL005 instead of proceeding.
--
-- SQLSTATEs raised here (class FL):
--   FL001 stale term (offered < highest accepted)       FL002 write on a protected table without a term
--   FL003 invalid argument (term, resource, setting)    FL004 unknown resource (not registered)
--   FL005 advance could not terminate older sessions within advance_timeout
--   FL006 protect/unprotect refused (wrong table kind, conflicting registration, column type)
--   FL007 break-glass requested by a role that is not a member of fencing_break_glass
--   55P03 (lock_not_available) protect_table/unprotect_table could not get its lock within lock_timeout

-- Advisory-lock namespace: 'FENC' as an int4. pg_locks shows it as classid = 1178946115, objid = lock_key, objsubid = 2.

CREATE OR REPLACE FUNCTION fencing.check_resource_name(p_resource text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  IF p_resource IS NULL OR p_resource !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,62}$' THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing: invalid resource name %s: expected 1 to 63 characters of [A-Za-z0-9._:-] starting with a letter or digit',
                       coalesce(quote_literal(left(p_resource, 80)), 'NULL'));
  END IF;
END
$fn$;

CREATE OR REPLACE FUNCTION fencing.register_resource(p_resource text)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_key bigint;
BEGIN
  PERFORM fencing.check_resource_name(p_resource);
  SELECT lock_key INTO v_key FROM fencing.high_water_mark WHERE resource = p_resource;
  IF FOUND THEN
    RETURN v_key;
  END IF;
  INSERT INTO fencing.high_water_mark (resource, highest_accepted) VALUES (p_resource, 0)
    ON CONFLICT (resource) DO NOTHING;
  SELECT lock_key INTO v_key FROM fencing.high_water_mark WHERE resource = p_resource;
  RETURN v_key;
END
$fn$;
COMMENT ON FUNCTION fencing.register_resource(text) IS
  'Creates the high-water mark (at 0) for a resource if missing; returns its lock_key. Idempotent.';

-- One term, one leader. Terms are unique per coordinator, but a coordinator rebuilt from nothing can issue a term
-- number again (to a second leader, while the first still believes it holds it). The mark remembers who advanced
-- it; a different leader offering the same term is rejected like a stale one, so (term, leader) is unique in the
-- database whatever the coordinator forgot. Writers that give no leader id opt out of this check.
CREATE OR REPLACE FUNCTION fencing.reject_term_conflict(p_resource text, p_term bigint, p_leader_id text, p_holder text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_audited boolean;
BEGIN
  v_audited := fencing.audit_autonomously(p_resource, p_term, p_leader_id, NULL, 'ENTER', 'term_conflict');
  RAISE EXCEPTION USING ERRCODE = 'FL001',
    MESSAGE = format('fencing: term %s for resource %s is already held by leader %s; leader %s cannot use it too (did the coordinator lose its history? raise its term floor above %s)',
                     p_term, p_resource, p_holder, p_leader_id, p_term),
    DETAIL = format('resource=%s offered_term=%s highest_accepted=%s audited=%s table=', p_resource, p_term, p_term, v_audited);
END
$fn$;

CREATE OR REPLACE FUNCTION fencing.enter(p_resource text, p_term bigint, p_leader_id text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  c_ns       constant integer := 1178946115;
  v_key      bigint;
  v_mark     bigint;
  v_holder   text;                          -- leader_id recorded with the mark
  v_guc      text;
  v_entered  bigint;
  v_holding  boolean;
  v_strict   boolean := current_setting('transaction_isolation') <> 'read committed';
  v_timeout  interval;
  v_deadline timestamptz;
  v_db       oid;
  v_pid      integer;
  v_killed   integer := 0;
BEGIN
  PERFORM fencing.check_resource_name(p_resource);
  IF p_term IS NULL OR p_term <= 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing: invalid term %s for resource %s: a term must be a positive bigint', coalesce(p_term::text, 'NULL'), p_resource);
  END IF;
  IF length(p_leader_id) > 200 THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing: leader_id is %s characters long, at most 200 are allowed', length(p_leader_id));
  END IF;

  SELECT lock_key INTO v_key FROM fencing.high_water_mark WHERE resource = p_resource;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'FL004',
      MESSAGE = format('fencing: unknown resource %s; register it first with SELECT fencing.register_resource(%L)', p_resource, p_resource);
  END IF;
  v_guc := 'fencing.entered_' || v_key;
  v_entered := nullif(current_setting(v_guc, true), '')::bigint;

  IF v_entered IS NOT NULL THEN
    -- This session holds the shared lock and was validated at v_entered; while it lives, mark = v_entered.
    IF v_entered = p_term THEN
      RETURN p_term;
    ELSIF v_entered > p_term THEN
      RETURN v_entered;                       -- stale: the caller rejects and audits
    END IF;
    v_holding := true;                        -- p_term is newer: advance below, keeping our (non-conflicting) lock
  ELSE
    -- Not entered. A shared lock may still be held from a rolled-back entry; never take a second one.
    v_holding := EXISTS (SELECT 1 FROM pg_locks l
                          WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.classid = c_ns::oid
                            AND l.objid = v_key::oid AND l.objsubid = 2 AND l.mode = 'ShareLock' AND l.granted);
  END IF;

  v_timeout := coalesce((SELECT value::interval FROM fencing.settings WHERE name = 'advance_timeout'), interval '5 seconds');
  v_deadline := clock_timestamp() + v_timeout;
  SELECT oid INTO v_db FROM pg_database WHERE datname = current_database();

  <<attempt>>
  LOOP
    IF v_entered IS NULL THEN
      IF NOT v_holding THEN
        -- Blocks while an advance holds the exclusive lock; granted only after that advance's commit is visible.
        PERFORM pg_advisory_lock_shared(c_ns, v_key::integer);
      END IF;
      -- A new statement: under READ COMMITTED a fresh snapshot, taken after the lock was granted.
      IF v_strict THEN
        -- REPEATABLE READ / SERIALIZABLE: an advance committed after our snapshot raises a serialization failure.
        SELECT highest_accepted, leader_id INTO v_mark, v_holder FROM fencing.high_water_mark WHERE resource = p_resource FOR SHARE;
      ELSE
        SELECT highest_accepted, leader_id INTO v_mark, v_holder FROM fencing.high_water_mark WHERE resource = p_resource;
      END IF;
      IF v_mark = p_term THEN
        IF v_holder IS DISTINCT FROM p_leader_id AND v_holder IS NOT NULL AND p_leader_id IS NOT NULL THEN
          IF NOT v_holding THEN
            PERFORM pg_advisory_unlock_shared(c_ns, v_key::integer);   -- a session lock survives the abort below
          END IF;
          PERFORM fencing.reject_term_conflict(p_resource, p_term, p_leader_id, v_holder);
        END IF;
        PERFORM set_config(v_guc, p_term::text, false);
        RETURN p_term;
      END IF;
      IF NOT v_holding THEN
        -- Give the lock back: the setting is empty, so nothing claims it (and an advancer must not wait for us).
        PERFORM pg_advisory_unlock_shared(c_ns, v_key::integer);
      END IF;
      IF v_mark > p_term THEN
        RETURN v_mark;                        -- stale
      END IF;
    END IF;

    -- ADVANCE to p_term: take the exclusive transaction lock, terminating every other session entered before.
    LOOP
      IF pg_try_advisory_xact_lock(c_ns, v_key::integer) THEN
        -- No other session is entered now. Re-read: another advance may have committed meanwhile.
        SELECT highest_accepted, leader_id INTO v_mark, v_holder FROM fencing.high_water_mark WHERE resource = p_resource FOR UPDATE;
        IF v_mark > p_term THEN
          RETURN v_mark;                      -- stale after all (only possible when we were not entered)
        END IF;
        IF v_mark = p_term AND v_holder IS DISTINCT FROM p_leader_id AND v_holder IS NOT NULL AND p_leader_id IS NOT NULL THEN
          PERFORM fencing.reject_term_conflict(p_resource, p_term, p_leader_id, v_holder);   -- xact lock: released by the abort
        END IF;
        IF v_mark < p_term THEN
          UPDATE fencing.high_water_mark
             SET highest_accepted = p_term, leader_id = p_leader_id, updated_at = clock_timestamp()
           WHERE resource = p_resource;
          INSERT INTO fencing.term_history (resource, term, previous_term, leader_id, terminated_sessions, application_name)
          VALUES (p_resource, p_term, v_mark, p_leader_id, v_killed, current_setting('application_name'));
        END IF;
        IF NOT v_holding THEN
          PERFORM pg_advisory_lock_shared(c_ns, v_key::integer);  -- we hold the exclusive one: granted at once
        END IF;
        PERFORM set_config(v_guc, p_term::text, false);
        RETURN p_term;
      END IF;
      IF clock_timestamp() >= v_deadline THEN
        RAISE EXCEPTION USING ERRCODE = 'FL005',
          MESSAGE = format('fencing: cannot advance %s to term %s: sessions of older terms still hold the fence after advance_timeout %s', p_resource, p_term, v_timeout),
          HINT = 'See fencing.entered_sessions; raise fencing.settings advance_timeout if backends need longer to exit.';
      END IF;
      -- While another advance is in flight (it holds the exclusive lock), wait for it instead of interfering.
      IF NOT EXISTS (SELECT 1 FROM pg_locks l
                      WHERE l.locktype = 'advisory' AND l.database = v_db AND l.classid = c_ns::oid AND l.objid = v_key::oid
                        AND l.objsubid = 2 AND l.mode = 'ExclusiveLock' AND l.granted AND l.pid <> pg_backend_pid()) THEN
        IF v_entered IS NULL
           AND (SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = p_resource) >= p_term THEN
          CONTINUE attempt;                   -- someone else advanced (to our term or beyond): enter normally
        END IF;
        FOR v_pid IN
          SELECT l.pid FROM pg_locks l
           WHERE l.locktype = 'advisory' AND l.database = v_db AND l.classid = c_ns::oid AND l.objid = v_key::oid
             AND l.objsubid = 2 AND l.mode = 'ShareLock' AND l.granted AND l.pid <> pg_backend_pid()
        LOOP
          BEGIN
            IF pg_terminate_backend(v_pid) THEN
              v_killed := v_killed + 1;
            END IF;
          EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION USING ERRCODE = 'FL005',
              MESSAGE = format('fencing: cannot advance %s to term %s: not allowed to terminate backend %s of an older term (%s)', p_resource, p_term, v_pid, SQLERRM),
              HINT = 'The owner of fencing.enter() must be a superuser or a member of pg_signal_backend (and the application roles must not be superusers).';
          END;
        END LOOP;
      END IF;
      PERFORM pg_sleep(0.005);
    END LOOP;
  END LOOP;
END
$fn$;
COMMENT ON FUNCTION fencing.enter(text, bigint, text) IS
  'Enters this session for the resource at the term. Returns the term when accepted (advancing the mark if the term is newer), or the higher accepted term when stale (nothing changed: the caller rejects and audits). Raises FL003 (bad input), FL004 (unknown resource), FL005 (advance timed out).';

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

-- The slow path of the guard: break-glass, explicit fencing.term, or rejection. Runs as the invoker, so the
-- EXECUTE grants on enter() decide who may advance a mark.
CREATE OR REPLACE FUNCTION fencing.guard_slow(p_resource text, p_schema name, p_table name, p_operation text, p_offered text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_table   text := format('%I.%I', p_schema, p_table);
  v_break   text := nullif(btrim(current_setting('fencing.break_glass', true)), '');
  v_leader  text := nullif(current_setting('fencing.leader_id', true), '');
  v_term    bigint;
  v_mark    bigint;
  v_audited boolean;
BEGIN
  IF v_break IS NOT NULL THEN
    IF NOT pg_has_role(current_user, 'fencing_break_glass', 'MEMBER') THEN
      RAISE EXCEPTION USING ERRCODE = 'FL007',
        MESSAGE = format('fencing: break-glass write to %s refused: role %s is not a member of fencing_break_glass', v_table, current_user);
    END IF;
    PERFORM fencing.log_break_glass(p_resource, v_table, p_operation, v_break, current_user);
    RETURN;
  END IF;

  IF p_offered IS NULL OR btrim(p_offered) = '' THEN
    v_audited := fencing.audit_autonomously(p_resource, NULL, v_leader, v_table, p_operation, 'no_term');
    SELECT highest_accepted INTO v_mark FROM fencing.high_water_mark WHERE resource = p_resource;
    RAISE EXCEPTION USING ERRCODE = 'FL002',
      MESSAGE = format('fencing: %s on %s rejected: the transaction carries no fencing term for resource %s (highest accepted %s)',
                       p_operation, v_table, p_resource, coalesce(v_mark::text, 'unknown')),
      DETAIL = format('resource=%s offered_term= highest_accepted=%s audited=%s table=%s', p_resource, coalesce(v_mark::text, ''), v_audited, v_table),
      HINT = 'Write through the FencedWriter, or SET LOCAL fencing.term = ''<term>'' in the transaction.';
  END IF;

  BEGIN
    v_term := btrim(p_offered)::bigint;
  EXCEPTION WHEN OTHERS THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing: %s on %s rejected: fencing.term %s is not a number', p_operation, v_table, quote_literal(left(p_offered, 40)));
  END;
  v_mark := fencing.enter(p_resource, v_term, v_leader);
  IF v_mark = v_term THEN
    RETURN;
  END IF;
  v_audited := fencing.audit_autonomously(p_resource, v_term, v_leader, v_table, p_operation, 'stale_term');
  RAISE EXCEPTION USING ERRCODE = 'FL001',
    MESSAGE = format('fencing: stale term %s for resource %s rejected on %s (highest accepted %s)', v_term, p_resource, v_table, v_mark),
    DETAIL = format('resource=%s offered_term=%s highest_accepted=%s audited=%s table=%s', p_resource, v_term, v_mark, v_audited, v_table);
END
$fn$;

-- The statement-level BEFORE trigger on protected tables. Fast path: ONE expression over two settings, no lock, no
-- read (PL/pgSQL pays a per-transaction set-up per expression, so the fast path is kept to a single one).
-- TG_ARGV[0] = 'fencing.entered_<lock_key>', TG_ARGV[1] = resource (set by protect_table).
CREATE OR REPLACE FUNCTION fencing.guard()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
  IF pg_catalog.current_setting(TG_ARGV[0], true) <> ''
     AND COALESCE(pg_catalog.current_setting('fencing.term', true), '') IN ('', pg_catalog.current_setting(TG_ARGV[0], true)) THEN
    RETURN NULL;
  END IF;
  PERFORM fencing.guard_slow(TG_ARGV[1], TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP, pg_catalog.current_setting('fencing.term', true));
  RETURN NULL;
END
$fn$;
COMMENT ON FUNCTION fencing.guard() IS
  'Statement trigger on protected tables: allows writes of sessions entered at the current term (fencing.term empty or equal); otherwise enters with fencing.term, honours audited break-glass, or rejects (FL001/FL002) and audits via dblink.';

CREATE OR REPLACE FUNCTION fencing.protect_table(p_tbl regclass, p_resource text, p_lock_timeout text DEFAULT '2s')
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_key        bigint;
  v_kind       "char";
  v_schema     name;
  v_existing   text;
  v_coltype    text;
  v_trigger    boolean;
  v_old_lt     text := current_setting('lock_timeout');
BEGIN
  IF p_tbl IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003', MESSAGE = 'fencing.protect_table: table must not be null';
  END IF;
  PERFORM fencing.check_resource_name(p_resource);
  IF p_lock_timeout IS NULL OR p_lock_timeout !~ '^\s*[0-9]+\s*(ms|s|min)?\s*$' THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing.protect_table: lock_timeout %s is not a duration such as 500ms, 2s or 1min', coalesce(quote_literal(p_lock_timeout), 'NULL'));
  END IF;
  SELECT c.relkind, n.nspname INTO v_kind, v_schema FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = p_tbl;
  IF v_kind NOT IN ('r', 'p') OR v_schema = 'fencing' THEN
    RAISE EXCEPTION USING ERRCODE = 'FL006',
      MESSAGE = format('fencing.protect_table: %s is not an ordinary or partitioned table outside schema fencing', p_tbl);
  END IF;
  v_key := fencing.register_resource(p_resource);

  SELECT resource INTO v_existing FROM fencing.protected_table WHERE tbl = p_tbl;
  IF v_existing IS NOT NULL AND v_existing <> p_resource THEN
    RAISE EXCEPTION USING ERRCODE = 'FL006',
      MESSAGE = format('fencing.protect_table: %s is already protected for resource %s; call fencing.unprotect_table(%L) first', p_tbl, v_existing, p_tbl::text);
  END IF;
  SELECT format_type(a.atttypid, a.atttypmod) INTO v_coltype
    FROM pg_attribute a WHERE a.attrelid = p_tbl AND a.attname = 'fencing_term' AND NOT a.attisdropped;
  IF v_coltype IS NOT NULL AND v_coltype <> 'bigint' THEN
    RAISE EXCEPTION USING ERRCODE = 'FL006',
      MESSAGE = format('fencing.protect_table: %s already has a column fencing_term of type %s (bigint expected)', p_tbl, v_coltype);
  END IF;
  v_trigger := EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = p_tbl AND t.tgname = 'fencing_guard' AND NOT t.tgisinternal);

  IF v_existing IS NOT NULL AND v_coltype IS NOT NULL AND v_trigger THEN
    RETURN 'unchanged';                        -- idempotent: no lock taken, nothing altered
  END IF;

  -- Catalog-only changes (no rewrite, no scan): a nullable column without default (a per-row default would cost
  -- ~1 us per inserted row; the writer stamps the term itself), then the statement trigger. Each needs a short
  -- strong lock: bounded by lock_timeout.
  EXECUTE format('SET LOCAL lock_timeout = %L', btrim(p_lock_timeout));
  BEGIN
    IF v_coltype IS NULL THEN
      EXECUTE format('ALTER TABLE %s ADD COLUMN fencing_term bigint', p_tbl);
    END IF;
    IF NOT v_trigger THEN
      EXECUTE format('CREATE TRIGGER fencing_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s '
                     'FOR EACH STATEMENT EXECUTE FUNCTION fencing.guard(%L, %L)', p_tbl, 'fencing.entered_' || v_key, p_resource);
    END IF;
  EXCEPTION WHEN lock_not_available THEN
    RAISE EXCEPTION USING ERRCODE = '55P03',
      MESSAGE = format('fencing.protect_table(%s): could not lock the table within lock_timeout %s because another session holds a conflicting lock; nothing was changed', p_tbl, btrim(p_lock_timeout)),
      HINT = 'Retry when the table is less busy (see pg_locks / pg_stat_activity), or pass a longer lock_timeout.';
  END;
  PERFORM set_config('lock_timeout', v_old_lt, true);
  INSERT INTO fencing.protected_table (tbl, resource) VALUES (p_tbl, p_resource) ON CONFLICT (tbl) DO NOTHING;
  RETURN 'protected';
END
$fn$;
COMMENT ON FUNCTION fencing.protect_table(regclass, text, text) IS
  'Retrofits fencing onto an existing table: adds nullable fencing_term (catalog-only) and the fencing_guard statement trigger; registers the table for the resource. Idempotent; every lock bounded by lock_timeout (default 2s).';

CREATE OR REPLACE FUNCTION fencing.unprotect_table(p_tbl regclass, p_lock_timeout text DEFAULT '2s')
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_old_lt  text := current_setting('lock_timeout');
  v_def     text;
  v_changed boolean := false;
BEGIN
  IF p_tbl IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003', MESSAGE = 'fencing.unprotect_table: table must not be null';
  END IF;
  IF p_lock_timeout IS NULL OR p_lock_timeout !~ '^\s*[0-9]+\s*(ms|s|min)?\s*$' THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing.unprotect_table: lock_timeout %s is not a duration such as 500ms, 2s or 1min', coalesce(quote_literal(p_lock_timeout), 'NULL'));
  END IF;
  SELECT pg_get_expr(d.adbin, d.adrelid) INTO v_def
    FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE a.attrelid = p_tbl AND a.attname = 'fencing_term' AND NOT a.attisdropped;
  EXECUTE format('SET LOCAL lock_timeout = %L', btrim(p_lock_timeout));
  BEGIN
    IF EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = p_tbl AND t.tgname = 'fencing_guard' AND NOT t.tgisinternal) THEN
      EXECUTE format('DROP TRIGGER fencing_guard ON %s', p_tbl);
      v_changed := true;
    END IF;
    IF v_def LIKE '%fencing.entered_%' THEN
      EXECUTE format('ALTER TABLE %s ALTER COLUMN fencing_term DROP DEFAULT', p_tbl);
      v_changed := true;
    END IF;
  EXCEPTION WHEN lock_not_available THEN
    RAISE EXCEPTION USING ERRCODE = '55P03',
      MESSAGE = format('fencing.unprotect_table(%s): could not lock the table within lock_timeout %s; nothing was changed', p_tbl, btrim(p_lock_timeout));
  END;
  PERFORM set_config('lock_timeout', v_old_lt, true);
  DELETE FROM fencing.protected_table WHERE tbl = p_tbl;
  IF FOUND THEN
    v_changed := true;
  END IF;
  RETURN CASE WHEN v_changed THEN 'unprotected' ELSE 'unchanged' END;
END
$fn$;
COMMENT ON FUNCTION fencing.unprotect_table(regclass, text) IS
  'Removes the fencing trigger and the registration (the column and its data stay). Idempotent.';

-- DBA views.
CREATE OR REPLACE VIEW fencing.current_marks AS
SELECT m.resource,
       m.highest_accepted,
       m.leader_id,
       m.updated_at,
       m.lock_key,
       (SELECT count(*) FROM fencing.protected_table p WHERE p.resource = m.resource) AS protected_tables,
       (SELECT max(r.rejected_at) FROM fencing.rejected_write r WHERE r.resource = m.resource) AS last_rejected_at
  FROM fencing.high_water_mark m;

CREATE OR REPLACE VIEW fencing.recent_rejections AS
SELECT r.id, r.rejected_at, r.resource, r.offered_term, r.highest_accepted, r.leader_id, r.table_name, r.operation,
       r.business_key, r.reason, r.source, r.db_user, r.application_name, r.payload_truncated
  FROM fencing.rejected_write r
 WHERE r.rejected_at > now() - interval '24 hours'
 ORDER BY r.rejected_at DESC;

CREATE OR REPLACE VIEW fencing.rejections_daily AS
SELECT date_trunc('day', r.rejected_at) AS day,
       r.resource,
       r.leader_id,
       r.reason,
       count(*)                AS rejections,
       min(r.offered_term)     AS min_offered_term,
       max(r.highest_accepted) AS max_highest_accepted,
       max(r.rejected_at)      AS last_rejected_at
  FROM fencing.rejected_write r
 GROUP BY 1, 2, 3, 4;

CREATE OR REPLACE VIEW fencing.entered_sessions AS
SELECT m.resource, a.pid, a.usename, a.application_name, a.client_addr, a.state, a.xact_start, a.state_change
  FROM pg_locks l
  JOIN fencing.high_water_mark m ON l.objid = m.lock_key::oid
  LEFT JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.classid = 1178946115::oid AND l.objsubid = 2 AND l.mode = 'ShareLock' AND l.granted
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database());
