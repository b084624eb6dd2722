-- Fenceline: the statement trigger on protected tables (slow path; the fast path's PL/pgSQL and C bodies).
-- Repeatable migration: the one current definition of these functions. Flyway re-applies it whenever it changes
-- (after every versioned migration), so edit the function here, never in an applied V migration.

-- The slow path of the guard: break-glass, entering with the transaction's fencing.term (advancing the mark when the
-- term is newer), or rejection. Every rejection is audited once (fencing.reject). SECURITY DEFINER, so that writes
-- reaching a protected table through a foreign-key cascade (which runs as the table's owner) are decided like any
-- other; who may do what is decided by the SESSION user (the login that asked for the write), never by current_user.
--
-- The transaction's term: fencing.term, for the resource named by fencing.resource. With fencing.resource naming
-- another resource, fencing.term does not apply here. Without fencing.resource, fencing.term may enter a resource at
-- its current mark but never advance it (FL010): one setting must not move the marks of every resource the
-- transaction touches.
CREATE OR REPLACE FUNCTION fencing.guard_slow(p_resource text, p_schema name, p_table name, p_operation text, p_offered text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_table   text := format('%I.%I', p_schema, p_table);
  v_break   text := nullif(btrim(current_setting('fencing.break_glass', true)), '');
  v_leader  text := nullif(current_setting('fencing.leader_id', true), '');
  v_scope   text := nullif(btrim(current_setting('fencing.resource', true)), '');
  v_term    bigint;
  v_mark    bigint;
BEGIN
  IF pg_trigger_depth() = 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = 'fencing.guard_slow() is the slow path of the fencing_guard trigger and cannot be called directly',
      HINT = 'To enter a transaction at a term, call fencing.enter(resource, term, leader_id).';
  END IF;
  IF v_scope IS NOT NULL AND v_scope <> p_resource THEN
    p_offered := NULL;                           -- the transaction's term belongs to another resource
  END IF;
  -- An operation the table leaves to writers without a term (protect_table's operations), in a transaction that
  -- carries no term for this resource. One that carries a term is fenced on every operation.
  IF (p_offered IS NULL OR btrim(p_offered) = '')
     AND NOT p_operation = ANY (fencing.fenced_operations(format('%I.%I', p_schema, p_table)::regclass)) THEN
    RETURN;
  END IF;
  IF v_break IS NOT NULL THEN
    IF NOT pg_has_role(session_user, 'fencing_break_glass', 'MEMBER') THEN
      PERFORM fencing.reject('FL007', 'break_glass_refused', p_resource, NULL, v_leader, v_table, p_operation,
        format('fencing: break-glass write to %s refused: session user %s is not a member of fencing_break_glass', v_table, session_user));
    END IF;
    PERFORM fencing.log_break_glass(p_resource, v_table, p_operation, v_break, session_user);
    RETURN;
  END IF;

  IF p_offered IS NULL OR btrim(p_offered) = '' THEN
    SELECT highest_accepted INTO v_mark FROM fencing.high_water_mark WHERE resource = p_resource;
    PERFORM fencing.reject('FL002', 'no_term', p_resource, NULL, v_leader, v_table, p_operation,
      format('fencing: %s on %s rejected: the transaction carries no fencing term for resource %s (highest accepted %s)',
             p_operation, v_table, p_resource, coalesce(v_mark::text, 'unknown')),
      format('Write through the FencedWriter, or SET LOCAL fencing.term = ''<term>'' (and fencing.resource = %L) in the transaction.', p_resource));
  END IF;

  IF NOT (CASE WHEN btrim(p_offered) ~ '^[0-9]{1,19}$' THEN btrim(p_offered)::numeric BETWEEN 1 AND 9223372036854775807 ELSE false END) THEN
    PERFORM fencing.reject('FL003', 'invalid_term', p_resource, NULL, v_leader, v_table, p_operation,
      format('fencing: %s on %s rejected: fencing.term %s is not a term (a positive bigint, decimal digits only)',
             p_operation, v_table, quote_literal(left(p_offered, 40))));
  END IF;
  v_term := btrim(p_offered)::bigint;
  IF NOT pg_has_role(session_user, 'fencing_app', 'MEMBER') THEN
    PERFORM fencing.reject('42501', 'not_allowed', p_resource, v_term, v_leader, v_table, p_operation,
      format('fencing: %s on %s rejected: session user %s is not a member of fencing_app, so it cannot write with a fencing term',
             p_operation, v_table, session_user));
  END IF;
  v_mark := fencing.enter_at(p_resource, v_term, v_leader, v_scope IS NOT NULL AND v_scope = p_resource, v_table, p_operation);
  IF v_mark = v_term THEN
    RETURN;
  END IF;
  PERFORM fencing.reject('FL001', 'stale_term', p_resource, v_term, v_leader, v_table, p_operation,
    format('fencing: stale term %s for resource %s rejected on %s (highest accepted %s)', v_term, p_resource, v_table, v_mark));
END
$fn$;

CREATE OR REPLACE FUNCTION fencing.guard_implementation()
RETURNS text
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
  SELECT CASE l.lanname WHEN 'c' THEN 'native' ELSE l.lanname END
    FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
   WHERE p.oid = to_regprocedure('fencing.guard()')
$fn$;
COMMENT ON FUNCTION fencing.guard_implementation() IS
  'Which implementation fencing.guard() currently has: native (C, migrations/native) or plpgsql.';

CREATE OR REPLACE FUNCTION fencing.use_native_guard(p_library text DEFAULT 'fenceline_guard')
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  IF p_library IS NULL OR p_library !~ '^[A-Za-z0-9_$./-]{1,200}$' THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing.use_native_guard: library %s is not a library name or path (1 to 200 characters of [A-Za-z0-9_$./-])',
                       coalesce(quote_literal(left(p_library, 80)), 'NULL'));
  END IF;
  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    RAISE EXCEPTION USING ERRCODE = 'FL008',
      MESSAGE = format('fencing.use_native_guard: role %s is not a superuser; only a superuser can create a C-language function', current_user),
      HINT = 'Run it as a superuser, or keep the PL/pgSQL guard (same behaviour, more CPU per transaction).';
  END IF;
  BEGIN
    EXECUTE format('CREATE OR REPLACE FUNCTION fencing.guard() RETURNS trigger LANGUAGE c SECURITY DEFINER AS %L, %L', p_library, 'fenceline_guard');
    EXECUTE format('CREATE OR REPLACE FUNCTION fencing.begin_write(p_resource text, p_term bigint, p_leader_id text, '
                   'p_statement_timeout_ms integer, p_lock_timeout_ms integer, p_idle_timeout_ms integer) '
                   'RETURNS bigint LANGUAGE c VOLATILE AS %L, %L', p_library, 'fenceline_begin_write');
    EXECUTE format('CREATE OR REPLACE FUNCTION fencing.check_writers_transaction() RETURNS void LANGUAGE c VOLATILE AS %L, %L',
                   p_library, 'fenceline_check_writers_transaction');
  EXCEPTION WHEN OTHERS THEN
    RAISE EXCEPTION USING ERRCODE = 'FL008',
      MESSAGE = format('fencing.use_native_guard: cannot load %s (%s); fencing.guard() is unchanged (%s)',
                       p_library, SQLERRM, fencing.guard_implementation()),
      HINT = format('Build and install it for this server (PostgreSQL %s) with migrations/native/build.sh --install, or pass the full path of fenceline_guard.so.',
                    current_setting('server_version'));
  END;
  RETURN 'native';
END
$fn$;
COMMENT ON FUNCTION fencing.use_native_guard(text) IS
  'Switches fencing.guard() to the C implementation (superuser; the library must be loadable). Raises FL008 and changes nothing otherwise.';

-- The PL/pgSQL guard: its only definition (the body inside). TG_ARGV[0] = the resource's lock_key, TG_ARGV[1] = the
-- resource (set by protect_table). Its common case — a term for this resource under READ COMMITTED, no break-glass,
-- the fence lock free — enters here: the fence lock, then (a new statement, so a snapshot taken after the lock was
-- granted) the mark equal to the term. It keeps no state: every firing enters again (re-taking a lock this transaction holds is cheap).
-- Everything else goes to guard_slow(), which decides exactly as the native guard's slow path.
CREATE OR REPLACE FUNCTION fencing.use_plpgsql_guard()
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  -- SECURITY DEFINER with its own search_path: type names (in declarations and casts) are looked up in pg_temp first
  -- unless it is named last, and a login's temporary domain called "text" would otherwise run its CHECK as the owner.
  CREATE OR REPLACE FUNCTION fencing.guard()
  RETURNS trigger
  LANGUAGE plpgsql
  SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $guard$
  DECLARE
    v_term   pg_catalog.text := pg_catalog.current_setting('fencing.term', true);
    v_leader pg_catalog.text := pg_catalog.current_setting('fencing.leader_id', true);
    v_locked pg_catalog.bool;
  BEGIN
    -- Not granted at once: an advance or a squatter holds the key; guard_slow waits for the one, ends the other.
    IF v_term OPERATOR(pg_catalog.~) '^[1-9][0-9]{0,17}$'
       AND COALESCE(pg_catalog.current_setting('fencing.break_glass', true), '') OPERATOR(pg_catalog.=) ''
       AND COALESCE(pg_catalog.current_setting('fencing.resource', true), '') OPERATOR(pg_catalog.=) ANY (ARRAY['', TG_ARGV[1]])
       AND pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.=) 'read committed'
       AND COALESCE(pg_catalog.length(v_leader), 0) OPERATOR(pg_catalog.<=) 200
       AND pg_catalog.pg_has_role(session_user, 'fencing_app', 'MEMBER') THEN
      -- The fence lock in a block of its own: a lock taken through SQL belongs to the running portal, and a cursor
      -- (or a suspended portal) that wrote and later fails inside a savepoint would release it at the savepoint's
      -- rollback while its earlier rows stay. A lock taken in a subtransaction passes, when the block ends, to the
      -- (sub)transaction around it, which is what holds the rows.
      BEGIN
        v_locked := pg_catalog.pg_try_advisory_xact_lock_shared(1178946115, TG_ARGV[0]::pg_catalog.int4);
      EXCEPTION WHEN OTHERS THEN
        RAISE;
      END;
      -- The mark in a statement of its own, after the lock was granted: under READ COMMITTED its snapshot is taken
      -- now. Read in the statement that took the lock, the snapshot would predate the lock, and an advance that
      -- committed in between would go unseen.
      IF v_locked AND EXISTS (SELECT 1 FROM fencing.high_water_mark m
                  WHERE m.lock_key OPERATOR(pg_catalog.=) TG_ARGV[0]::pg_catalog.int8
                    AND m.highest_accepted OPERATOR(pg_catalog.=) v_term::pg_catalog.int8
                    AND (m.leader_id IS NULL OR COALESCE(v_leader, '') OPERATOR(pg_catalog.=) ''
                         OR m.leader_id OPERATOR(pg_catalog.=) v_leader)) THEN
        RETURN NULL;
      END IF;
    END IF;
    -- An operation left to writers without a term (third argument), in a transaction without any term: allowed
    -- (looked at only here, off the common case's path).
    IF TG_NARGS OPERATOR(pg_catalog.>) 2 AND COALESCE(v_term, '') OPERATOR(pg_catalog.=) ''
       AND TG_OP OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array(TG_ARGV[2], ',')) THEN
      RETURN NULL;
    END IF;
    PERFORM fencing.guard_slow(TG_ARGV[1], TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP, v_term);
    RETURN NULL;
  END
  $guard$;

  -- The writer's first statement and its check before COMMIT (contract in migrations/native/fenceline_guard.c):
  -- settings local to the transaction; the transaction it began is recorded in a local setting too (its start as
  -- microseconds, an exact integer whatever extra_float_digits a session carries), which ends with it. Invoker's rights: fencing_app reads the mark.
  CREATE OR REPLACE FUNCTION fencing.begin_write(p_resource text, p_term bigint, p_leader_id text,
    p_statement_timeout_ms integer, p_lock_timeout_ms integer, p_idle_timeout_ms integer)
  RETURNS bigint
  LANGUAGE plpgsql
  VOLATILE
  AS $begin$
  -- Types and operators schema-qualified: the caller's search_path (which another client of a pooled server session
  -- may have set, with temporary types first) must not choose them.
  DECLARE
    v_mark pg_catalog.int8;
    v_key  pg_catalog.int8;
  BEGIN
    IF p_resource IS NULL OR p_term IS NULL OR p_term OPERATOR(pg_catalog.<) 1 THEN
      RAISE EXCEPTION USING ERRCODE = 'FL003',
        MESSAGE = pg_catalog.format('fencing.begin_write: resource and term are required, and the term must be at least 1 (was %s)', coalesce(p_term::pg_catalog.text, 'NULL'));
    END IF;
    IF pg_catalog.octet_length(p_leader_id) OPERATOR(pg_catalog.>) 200 THEN
      RAISE EXCEPTION USING ERRCODE = 'FL003',
        MESSAGE = pg_catalog.format('fencing.begin_write: leader_id must be at most 200 bytes, was %s', pg_catalog.octet_length(p_leader_id));
    END IF;
    IF p_statement_timeout_ms IS NULL OR p_statement_timeout_ms OPERATOR(pg_catalog.<) 0 OR p_lock_timeout_ms IS NULL
       OR p_lock_timeout_ms OPERATOR(pg_catalog.<) 0 OR p_idle_timeout_ms IS NULL OR p_idle_timeout_ms OPERATOR(pg_catalog.<) 0 THEN
      RAISE EXCEPTION USING ERRCODE = 'FL003',
        MESSAGE = pg_catalog.format('fencing.begin_write: statement_timeout_ms, lock_timeout_ms and idle_timeout_ms must be 0 (none) or a positive number of milliseconds, were %s, %s, %s',
                                    coalesce(p_statement_timeout_ms::pg_catalog.text, 'NULL'), coalesce(p_lock_timeout_ms::pg_catalog.text, 'NULL'),
                                    coalesce(p_idle_timeout_ms::pg_catalog.text, 'NULL'));
    END IF;
    IF pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.<>) 'read committed'
       OR pg_catalog.current_setting('transaction_read_only') OPERATOR(pg_catalog.<>) 'off' THEN
      RAISE EXCEPTION USING ERRCODE = 'FL014',
        MESSAGE = pg_catalog.format('fencing.begin_write: the transaction is %s%s; the writer''s work runs READ COMMITTED, READ WRITE',
                                    pg_catalog.upper(pg_catalog.current_setting('transaction_isolation')),
                                    CASE WHEN pg_catalog.current_setting('transaction_read_only') OPERATOR(pg_catalog.=) 'on' THEN ', READ ONLY' ELSE '' END),
        HINT = 'Begin the transaction with SET TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE (the session''s default_transaction_isolation or default_transaction_read_only says otherwise).';
    END IF;
    -- one expression (one column, no FROM): PL/pgSQL evaluates it without the executor
    PERFORM pg_catalog.concat(pg_catalog.set_config('statement_timeout', p_statement_timeout_ms::pg_catalog.text, true),
            pg_catalog.set_config('lock_timeout', p_lock_timeout_ms::pg_catalog.text, true),
            pg_catalog.set_config('idle_in_transaction_session_timeout', p_idle_timeout_ms::pg_catalog.text, true),
            pg_catalog.set_config('fencing.term', p_term::pg_catalog.text, true),
            pg_catalog.set_config('fencing.resource', p_resource, true),
            pg_catalog.set_config('fencing.leader_id', coalesce(p_leader_id, ''), true),
            pg_catalog.set_config('fencing.break_glass', '', true),
            pg_catalog.set_config('fencing.writers_transaction',
                                  (EXTRACT(epoch FROM pg_catalog.transaction_timestamp()) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8::pg_catalog.text, true));
    SELECT m.highest_accepted, m.lock_key INTO v_mark, v_key FROM fencing.high_water_mark m
     WHERE m.resource OPERATOR(pg_catalog.=) p_resource;
    -- At the mark's term: the fence lock now (the guard still enters at every write), so that the next term's
    -- advance ends this transaction even while its work has only locked rows and not written yet. Liveness only.
    IF v_mark OPERATOR(pg_catalog.=) p_term AND pg_catalog.pg_has_role(session_user, 'fencing_app', 'MEMBER') THEN
      PERFORM pg_catalog.pg_try_advisory_xact_lock_shared(1178946115, v_key::pg_catalog.int4);
    END IF;
    RETURN v_mark;
  END
  $begin$;

  CREATE OR REPLACE FUNCTION fencing.check_writers_transaction()
  RETURNS void
  LANGUAGE plpgsql
  VOLATILE
  AS $check$
  BEGIN
    IF NOT coalesce(pg_catalog.current_setting('fencing.writers_transaction', true) OPERATOR(pg_catalog.=)
       (EXTRACT(epoch FROM pg_catalog.transaction_timestamp()) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8::pg_catalog.text, false) THEN
      RAISE EXCEPTION USING ERRCODE = 'FL013',
        MESSAGE = 'fencing: the transaction about to commit is not the one the writer began: the work ended that one itself';
    END IF;
  END
  $check$;
  RETURN 'plpgsql';
END
$fn$;
COMMENT ON FUNCTION fencing.use_plpgsql_guard() IS
  'Switches fencing.guard() back to the PL/pgSQL implementation (e.g. before moving the database to a server without the native library).';

DROP FUNCTION IF EXISTS fencing.check_writers_transaction(timestamptz);

-- A new schema gets the native guard when this role can load it (a superuser, the library on the server's
-- dynamic_library_path), the PL/pgSQL one otherwise; later runs keep whichever it has, refreshed to the current body.
-- Either runs as the owner. EXECUTE on it stays revoked from PUBLIC: only the owner attaches it (protect_table);
-- firing a trigger needs no right on its function.
DO $do$
BEGIN
  IF fencing.guard_implementation() IS DISTINCT FROM 'plpgsql' THEN
    BEGIN
      PERFORM fencing.use_native_guard();
      RAISE NOTICE 'fencing: fencing.guard() is the native (C) guard';
    EXCEPTION WHEN sqlstate 'FL008' THEN
      RAISE NOTICE 'fencing: fencing.guard() is PL/pgSQL: %', SQLERRM;
      PERFORM fencing.use_plpgsql_guard();
    END;
  ELSE
    PERFORM fencing.use_plpgsql_guard();
  END IF;
END
$do$;
COMMENT ON FUNCTION fencing.guard() IS
  'Statement trigger on protected tables: enters the transaction at fencing.term (taking the fence lock, advancing the mark when the term is newer and fencing.resource names the resource), honours audited break-glass, or rejects (FL001/FL002/...) and audits via dblink.';

COMMENT ON FUNCTION fencing.begin_write(text, bigint, text, integer, integer, integer) IS
  'The fenced writer''s first statement: sets the transaction''s timeouts and fencing settings (local to it), records the transaction, returns the resource''s mark (NULL: unknown resource). FL014 unless READ COMMITTED, READ WRITE; FL003 on bad input.';
COMMENT ON FUNCTION fencing.check_writers_transaction() IS
  'Sent with the fenced writer''s COMMIT: FL013 unless the transaction is the one fencing.begin_write began.';

REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA fencing FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fencing.guard_implementation() TO fencing_app, fencing_auditor, fencing_admin;
GRANT EXECUTE ON FUNCTION fencing.begin_write(text, bigint, text, integer, integer, integer),
  fencing.check_writers_transaction() TO fencing_app;
