-- The native guard: an optional C implementation of fencing.guard() (migrations/native/fenceline_guard.c).
--
-- Why: the fence's hot path is a comparison of two settings, yet as PL/pgSQL the statement trigger costs tens of
-- microseconds of server CPU per transaction (PL/pgSQL sets up each expression again in every transaction). That was
-- the whole measured cost of fencing. The C function makes the same decision in well under a microsecond and hands
-- every other case to the same fencing.guard_slow(), so behaviour is identical; the trigger contract tests run
-- against both implementations.
--
-- Switching is a CREATE OR REPLACE of fencing.guard() itself: every protected table's trigger follows at once, no
-- table is locked, grants stay. The C language is untrusted, so only a superuser can switch to the native guard; the
-- library must be in the server's dynamic_library_path (migrations/native/build.sh --install puts it in $libdir).
-- This migration switches when it can and otherwise leaves the PL/pgSQL guard in place with a NOTICE.
--
-- SQLSTATE FL008: the native guard could not be installed (library missing or not loadable, or not a superuser).

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

-- The PL/pgSQL guard, as created by V2 (kept here so that a switch back is one call).
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
    IF pg_catalog.current_setting(TG_ARGV[0], true) <> ''
       AND COALESCE(pg_catalog.current_setting('fencing.term', true), '') IN ('', pg_catalog.current_setting(TG_ARGV[0], true)) THEN
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

REVOKE EXECUTE ON FUNCTION fencing.use_native_guard(text), fencing.use_plpgsql_guard() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fencing.guard_implementation() TO fencing_app, fencing_auditor, fencing_admin;

DO $do$
BEGIN
  IF fencing.guard_implementation() <> 'native' THEN
    BEGIN
      PERFORM fencing.use_native_guard();
      RAISE NOTICE 'fencing: fencing.guard() is now the native (C) guard';
    EXCEPTION WHEN sqlstate 'FL008' THEN
      RAISE NOTICE 'fencing: fencing.guard() stays PL/pgSQL: %', SQLERRM;
    END;
  END IF;
END
$do$;
