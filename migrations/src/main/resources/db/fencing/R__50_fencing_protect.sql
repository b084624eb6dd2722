-- Fenceline: protecting and unprotecting tables.
-- Repeatable migration: the one current definition of these functions. Flyway re-applies it whenever it changes
-- (after every versioned migration), so edit the function here, never in an applied V migration.

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

