-- Fenceline: the statement trigger on protected tables (slow path; the fast path's PL/pgSQL and C bodies).
-- Repeatable migration: the one current definition of these functions. Flyway re-applies it whenever it changes
-- (after every versioned migration), so edit the function here, never in an applied V migration.

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

CREATE OR REPLACE FUNCTION fencing.guard_implementation()
RETURNS text
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
  SELECT CASE l.lanname WHEN 'c' THEN 'native' ELSE l.lanname END
    FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
   WHERE p.oid = 'fencing.guard()'::regprocedure
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
    EXECUTE format('CREATE OR REPLACE FUNCTION fencing.guard() RETURNS trigger LANGUAGE c AS %L, %L', p_library, 'fenceline_guard');
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

-- The PL/pgSQL guard: its only definition (the body inside). Fast path: ONE expression over two settings, no lock,
-- no read (PL/pgSQL pays a per-transaction set-up per expression, so the fast path is kept to a single one).
-- TG_ARGV[0] = 'fencing.entered_<lock_key>', TG_ARGV[1] = resource (set by protect_table).
CREATE OR REPLACE FUNCTION fencing.use_plpgsql_guard()
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  CREATE OR REPLACE FUNCTION fencing.guard()
  RETURNS trigger
  LANGUAGE plpgsql
  AS $guard$
  BEGIN
    -- Operators schema-qualified: the guard runs with the caller's search_path (a SET clause would cost every call),
    -- and a caller may have created its own text operators in a schema on that path.
    IF pg_catalog.current_setting(TG_ARGV[0], true) OPERATOR(pg_catalog.<>) ''
       AND COALESCE(pg_catalog.current_setting('fencing.term', true), '')
           OPERATOR(pg_catalog.=) ANY (ARRAY['', pg_catalog.current_setting(TG_ARGV[0], true)]) THEN
      RETURN NULL;
    END IF;
    PERFORM fencing.guard_slow(TG_ARGV[1], TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP, pg_catalog.current_setting('fencing.term', true));
    RETURN NULL;
  END
  $guard$;
  RETURN 'plpgsql';
END
$fn$;
COMMENT ON FUNCTION fencing.use_plpgsql_guard() IS
  'Switches fencing.guard() back to the PL/pgSQL implementation (e.g. before moving the database to a server without the native library).';

-- Whichever implementation fencing.guard() has keeps it; a PL/pgSQL guard is refreshed to the body above.
DO $do$
BEGIN
  IF fencing.guard_implementation() = 'plpgsql' THEN
    PERFORM fencing.use_plpgsql_guard();
  END IF;
END
$do$;
COMMENT ON FUNCTION fencing.guard() IS
  'Statement trigger on protected tables: allows writes of sessions entered at the current term (fencing.term empty or equal); otherwise enters with fencing.term, honours audited break-glass, or rejects (FL001/FL002) and audits via dblink.';
