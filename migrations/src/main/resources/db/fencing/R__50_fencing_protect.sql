-- Fenceline: protecting and unprotecting tables, with their partitions and inheritance children.
-- Repeatable migration: the one current definition of these functions. Flyway re-applies it whenever it changes
-- (after every versioned migration), so edit the function here, never in an applied V migration.
--
-- Invariants:
--  * A table is listed in fencing.protected_table only while it has the fencing_guard trigger for that resource:
--    rows are written only by register_protected()/unregister_protected(), which check the trigger.
--  * Every partition and inheritance child of a protected table is protected too (a statement trigger on the parent
--    does not fire for writes straight into a child): protect_table() protects the existing ones, the event trigger
--    fencing_protect_new_children the ones created or attached later, in the same transaction as that DDL.
--    Event triggers need a superuser; without them protect_table() refuses tables that have or can have children
--    through partitioning (FL006), and fencing.unprotected_children lists any child left unprotected.
--  * Dropping a protected table removes its row (event trigger fencing_forget_dropped_tables).
--  * The trigger fires for every operation (INSERT, UPDATE, DELETE, TRUNCATE), whatever protect_table was given: a
--    transaction that carries a term for the resource is fenced on all of them. The operations protect_table leaves
--    out (so that another service may keep creating rows the leader settles) are the trigger's third argument, and
--    only a transaction that carries NO term for the resource may do them without one; TRUNCATE is never left out.
--    fencing.fenced_operations reads the trigger, nowhere else. An INSERT ... ON CONFLICT DO UPDATE fires the UPDATE
--    trigger too. Children get their parent's operations, also a child protected before it was attached.
--  * protect_table() adds a nullable fencing_term bigint column (catalog-only, no rewrite) unless the table has one,
--    and its result says so: 'protected (added column fencing_term bigint)'. The column records which term wrote a
--    row; the guard never reads it, so a write that leaves it NULL is fenced all the same.

-- Registers p_tbl as protected for p_resource, refusing when the table has no fencing_guard trigger for it.
CREATE OR REPLACE FUNCTION fencing.register_protected(p_tbl regclass, p_resource text, p_parent regclass)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger t
                  WHERE t.tgrelid = p_tbl AND t.tgname = 'fencing_guard' AND NOT t.tgisinternal AND t.tgenabled <> 'D'
                    AND t.tgfoid = 'fencing.guard()'::regprocedure AND t.tgnargs IN (2, 3)
                    AND split_part(encode(t.tgargs, 'escape'), '\000', 2) = p_resource) THEN
    RAISE EXCEPTION USING ERRCODE = 'FL006',
      MESSAGE = format('fencing: %s cannot be registered as protected for resource %s: it has no enabled fencing_guard trigger for that resource', p_tbl, p_resource),
      HINT = 'Use fencing.protect_table(), which creates the trigger and registers the table.';
  END IF;
  INSERT INTO fencing.protected_table (tbl, resource, parent) VALUES (p_tbl, p_resource, p_parent)
  ON CONFLICT (tbl) DO NOTHING;
END
$fn$;

CREATE OR REPLACE FUNCTION fencing.unregister_protected(p_tbl regclass)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = p_tbl AND t.tgname = 'fencing_guard' AND NOT t.tgisinternal) THEN
    RAISE EXCEPTION USING ERRCODE = 'FL006',
      MESSAGE = format('fencing: %s still has its fencing_guard trigger; use fencing.unprotect_table()', p_tbl);
  END IF;
  DELETE FROM fencing.protected_table WHERE tbl = p_tbl;
  RETURN FOUND;
END
$fn$;

-- Are the event triggers that keep children protected installed (and enabled)?
CREATE OR REPLACE FUNCTION fencing.children_protected_automatically()
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
  SELECT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'fencing_protect_new_children' AND evtenabled <> 'D')
$fn$;

-- The operations the table's fencing_guard trigger fences for every writer, in a fixed order (NULL: no such trigger):
-- its events, less the ones its third argument leaves to writers without a term.
CREATE OR REPLACE FUNCTION fencing.fenced_operations(p_tbl regclass)
RETURNS text[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
  SELECT ARRAY(SELECT x.o FROM unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE'], ARRAY[4, 16, 8, 32]) WITH ORDINALITY AS x(o, bit, n)
                 WHERE t.tgtype & x.bit <> 0
                   AND NOT x.o = ANY (string_to_array(split_part(encode(t.tgargs, 'escape'), '\000', 3), ','))
                 ORDER BY x.n)
    FROM pg_trigger t WHERE t.tgrelid = p_tbl AND t.tgname = 'fencing_guard' AND NOT t.tgisinternal
$fn$;

-- protect_table's operations checked and put in fencing.fenced_operations' form: NULL means INSERT, UPDATE, DELETE;
-- TRUNCATE is added always (a foreign table has no TRUNCATE trigger: protect_one leaves it out there).
CREATE OR REPLACE FUNCTION fencing.operations_to_fence(p_operations text[])
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_given text[] := (SELECT array_agg(upper(btrim(o))) FROM unnest(coalesce(p_operations, ARRAY['INSERT', 'UPDATE', 'DELETE'])) o);
BEGIN
  IF cardinality(p_operations) = 0
     OR EXISTS (SELECT 1 FROM unnest(v_given) o WHERE o IS NULL OR o NOT IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')) THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing.protect_table: operations must be a non-empty list of INSERT, UPDATE, DELETE, TRUNCATE, was %s',
                       quote_literal(p_operations::text)),
      HINT = 'For example ARRAY[''UPDATE'', ''DELETE''] to leave INSERT to other writers (TRUNCATE is always fenced).';
  END IF;
  RETURN array_remove(ARRAY[CASE WHEN 'INSERT' = ANY (v_given) THEN 'INSERT' END, CASE WHEN 'UPDATE' = ANY (v_given) THEN 'UPDATE' END,
                            CASE WHEN 'DELETE' = ANY (v_given) THEN 'DELETE' END, 'TRUNCATE'], NULL);
END
$fn$;

-- Adds the column and the trigger for p_operations (operations_to_fence's form) to one table (catalog-only, every lock
-- bounded by p_lock_timeout), then registers it. Returns true when something changed.
DROP FUNCTION IF EXISTS fencing.protect_one(regclass, text, regclass, text);
CREATE OR REPLACE FUNCTION fencing.protect_one(p_tbl regclass, p_resource text, p_parent regclass, p_lock_timeout text,
                                               p_operations text[])
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_key      bigint := fencing.register_resource(p_resource);
  v_existing text;
  v_coltype  text;
  v_trigger  boolean;
  v_old_lt   text := current_setting('lock_timeout');
  v_foreign  boolean := (SELECT relkind FROM pg_class WHERE oid = p_tbl) = 'f';
  v_ops      text[] := CASE WHEN v_foreign THEN array_remove(p_operations, 'TRUNCATE') ELSE p_operations END;
  -- Left to writers without a term: the trigger's third argument (none: two arguments, as protect_table always made).
  v_free     text := nullif(array_to_string(ARRAY(SELECT o FROM unnest(ARRAY['INSERT', 'UPDATE', 'DELETE']) o
                                                   WHERE NOT o = ANY (p_operations)), ','), '');
  v_events   text[] := CASE WHEN v_foreign THEN ARRAY['INSERT', 'UPDATE', 'DELETE'] ELSE ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE'] END;
  v_args     text := v_key || '\000' || p_resource || '\000' || coalesce(v_free || '\000', '');
  v_grantee  text;
BEGIN
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
  -- A trigger of an earlier version (other arguments) counts as missing: it is replaced below.
  v_trigger := EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = p_tbl AND t.tgname = 'fencing_guard' AND NOT t.tgisinternal
                         AND encode(t.tgargs, 'escape') = v_args
                         AND t.tgtype & 60 = CASE WHEN v_foreign THEN 28 ELSE 60 END);   -- INSERT|DELETE|UPDATE|TRUNCATE bits
  IF v_existing IS NOT NULL AND v_coltype IS NOT NULL AND v_trigger THEN
    RETURN false;                              -- idempotent: no lock taken, nothing altered
  END IF;
  -- A nullable column without default (a per-row default would cost ~1 us per inserted row; the writer stamps the
  -- term itself), then the statement trigger. Each needs a short strong lock: bounded by lock_timeout.
  EXECUTE format('SET LOCAL lock_timeout = %L', btrim(p_lock_timeout));
  BEGIN
    IF v_coltype IS NULL THEN
      EXECUTE format('ALTER TABLE %s ADD COLUMN fencing_term bigint', p_tbl);   -- children inherit it
    END IF;
    IF NOT v_trigger THEN
      -- Arguments: the resource's lock_key (the fence lock's second key), the resource and, when some are left out,
      -- the operations writers without a term may do. A foreign table (a foreign partition) gets the same trigger:
      -- PostgreSQL fires statement triggers on foreign tables too (but has no TRUNCATE trigger for them).
      EXECUTE format('CREATE OR REPLACE TRIGGER fencing_guard BEFORE %s ON %s '
                     'FOR EACH STATEMENT EXECUTE FUNCTION fencing.guard(%L, %L%s)',
                     array_to_string(v_events, ' OR '), p_tbl, v_key::text, p_resource,
                     CASE WHEN v_free IS NULL THEN '' ELSE format(', %L', v_free) END);
    END IF;
  EXCEPTION WHEN lock_not_available THEN
    RAISE EXCEPTION USING ERRCODE = '55P03',
      MESSAGE = format('fencing.protect_table(%s): could not lock the table within lock_timeout %s because another session holds a conflicting lock; nothing was changed', p_tbl, btrim(p_lock_timeout)),
      HINT = 'Retry when the table is less busy (see pg_locks / pg_stat_activity), or pass a longer lock_timeout.';
  END;
  PERFORM set_config('lock_timeout', v_old_lt, true);
  IF v_foreign THEN
    -- PostgreSQL has no TRUNCATE trigger on a foreign table, and a TRUNCATE straight at it (postgres_fdw truncates
    -- the far end) would pass unfenced: nobody but its owner keeps the right to (default privileges included).
    FOR v_grantee IN SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END
                       FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
                      WHERE c.oid = p_tbl AND a.privilege_type = 'TRUNCATE' AND a.grantee <> c.relowner LOOP
      EXECUTE format('REVOKE TRUNCATE ON %s FROM %s', p_tbl, v_grantee);
    END LOOP;
  END IF;
  PERFORM fencing.register_protected(p_tbl, p_resource, p_parent);
  RETURN true;
END
$fn$;

-- Descendants (partitions, inheritance children, recursively) with their direct parent, parents first.
CREATE OR REPLACE FUNCTION fencing.descendants(p_tbl regclass)
RETURNS TABLE (child regclass, parent regclass)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
  WITH RECURSIVE d(child, parent, depth) AS (
    SELECT i.inhrelid, i.inhparent, 1 FROM pg_inherits i WHERE i.inhparent = p_tbl
    UNION ALL
    SELECT i.inhrelid, i.inhparent, d.depth + 1 FROM pg_inherits i JOIN d ON i.inhparent = d.child WHERE d.depth < 100)
  SELECT child::regclass, parent::regclass FROM d ORDER BY depth, child
$fn$;

DROP FUNCTION IF EXISTS fencing.protect_table(regclass, text, text);
CREATE OR REPLACE FUNCTION fencing.protect_table(p_tbl regclass, p_resource text, p_lock_timeout text DEFAULT '2s',
                                                 p_operations text[] DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_kind     "char";
  v_schema   name;
  v_changed  boolean;
  v_had_col  boolean;
  v_ops      text[] := fencing.operations_to_fence(p_operations);
  d          record;
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
  IF (v_kind = 'p' OR EXISTS (SELECT 1 FROM pg_inherits WHERE inhparent = p_tbl)) AND NOT fencing.children_protected_automatically() THEN
    RAISE EXCEPTION USING ERRCODE = 'FL006',
      MESSAGE = format('fencing.protect_table: %s has (or, partitioned, will have) partitions or child tables, and the event trigger fencing_protect_new_children that protects children created or attached later is not installed; nothing was changed', p_tbl),
      HINT = 'A superuser applies the fencing migrations (or runs SELECT fencing.install_event_triggers()); on a server without event triggers protect each child with protect_table and check fencing.unprotected_children.';
  END IF;
  v_had_col := EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = p_tbl AND a.attname = 'fencing_term' AND NOT a.attisdropped);
  v_changed := fencing.protect_one(p_tbl, p_resource, NULL, p_lock_timeout, v_ops);
  FOR d IN SELECT * FROM fencing.descendants(p_tbl) LOOP
    v_changed := fencing.protect_one(d.child, p_resource, d.parent, p_lock_timeout, v_ops) OR v_changed;
  END LOOP;
  RETURN CASE WHEN NOT v_changed THEN 'unchanged'
              WHEN v_had_col THEN 'protected'
              ELSE 'protected (added column fencing_term bigint)' END;
END
$fn$;
COMMENT ON FUNCTION fencing.protect_table(regclass, text, text, text[]) IS
  'Retrofits fencing onto an existing table and all its partitions / inheritance children: adds nullable fencing_term bigint (catalog-only; the result says when it did) and the fencing_guard statement trigger for the operations (default INSERT, UPDATE, DELETE; TRUNCATE always); registers each table for the resource. Idempotent (called again with other operations, it changes them); every lock bounded by lock_timeout (default 2s).';

CREATE OR REPLACE FUNCTION fencing.unprotect_table(p_tbl regclass, p_lock_timeout text DEFAULT '2s')
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_old_lt  text := current_setting('lock_timeout');
  v_changed boolean := false;
  v_t       regclass;
BEGIN
  IF p_tbl IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003', MESSAGE = 'fencing.unprotect_table: table must not be null';
  END IF;
  IF p_lock_timeout IS NULL OR p_lock_timeout !~ '^\s*[0-9]+\s*(ms|s|min)?\s*$' THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing.unprotect_table: lock_timeout %s is not a duration such as 500ms, 2s or 1min', coalesce(quote_literal(p_lock_timeout), 'NULL'));
  END IF;
  EXECUTE format('SET LOCAL lock_timeout = %L', btrim(p_lock_timeout));
  -- The table and the children protected with it (children first is not needed: each trigger stands alone).
  FOR v_t IN SELECT p_tbl UNION ALL SELECT d.child FROM fencing.descendants(p_tbl) d
              JOIN fencing.protected_table p ON p.tbl = d.child AND p.parent IS NOT NULL LOOP
    BEGIN
      IF EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = v_t AND t.tgname = 'fencing_guard' AND NOT t.tgisinternal) THEN
        EXECUTE format('DROP TRIGGER fencing_guard ON %s', v_t);
        v_changed := true;
      END IF;
    EXCEPTION WHEN lock_not_available THEN
      RAISE EXCEPTION USING ERRCODE = '55P03',
        MESSAGE = format('fencing.unprotect_table(%s): could not lock %s within lock_timeout %s; nothing was changed', p_tbl, v_t, btrim(p_lock_timeout));
    END;
    v_changed := fencing.unregister_protected(v_t) OR v_changed;
  END LOOP;
  PERFORM set_config('lock_timeout', v_old_lt, true);
  RETURN CASE WHEN v_changed THEN 'unprotected' ELSE 'unchanged' END;
END
$fn$;
COMMENT ON FUNCTION fencing.unprotect_table(regclass, text) IS
  'Removes the fencing trigger and the registration of the table and of the children protected with it (the column and its data stay). Idempotent.';

-- ddl_command_end: protect every child (partition created or attached, inheritance child) of a protected table that
-- is not protected yet, in the transaction of the DDL that made it a child. Repeats until nothing is left, so a
-- partitioned table attached with partitions of its own is covered too (bounded by the number of tables).
CREATE OR REPLACE FUNCTION fencing.protect_new_children()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  r       record;
  v_found boolean := true;
  v_round integer := 0;
BEGIN
  WHILE v_found AND v_round < 1000 LOOP
    v_found := false;
    v_round := v_round + 1;
    -- Unprotected children, and children that fence less than a parent (protected on their own before they were
    -- attached, or moved from a parent that fenced less): a child fences at least what each of its parents fences,
    -- so it gets the union of its own operations and the parent's (growing only: two parents cannot take turns).
    FOR r IN SELECT i.inhrelid::regclass AS child, i.inhparent::regclass AS parent, p.resource, q.tbl IS NOT NULL AS known
               FROM pg_inherits i JOIN fencing.protected_table p ON p.tbl = i.inhparent
               LEFT JOIN fencing.protected_table q ON q.tbl = i.inhrelid
              WHERE q.tbl IS NULL
                 OR (q.resource = p.resource
                     AND NOT coalesce(fencing.fenced_operations(i.inhrelid), '{}') || ARRAY['TRUNCATE']   -- none on a foreign table
                             @> coalesce(fencing.fenced_operations(i.inhparent), '{}')) LOOP
      PERFORM fencing.protect_one(r.child, r.resource, r.parent, '10s',
                                  fencing.operations_to_fence(coalesce(fencing.fenced_operations(r.parent), '{}')
                                                              || coalesce(fencing.fenced_operations(r.child), '{}')));
      IF r.known THEN
        UPDATE fencing.protected_table SET parent = r.parent WHERE tbl = r.child;
      END IF;
      v_found := true;
    END LOOP;
  END LOOP;
END
$fn$;

-- sql_drop: a dropped table is no longer protected; its row must not count in current_marks.
CREATE OR REPLACE FUNCTION fencing.forget_dropped_tables()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  DELETE FROM fencing.protected_table
   WHERE tbl::oid IN (SELECT o.objid FROM pg_event_trigger_dropped_objects() o WHERE o.object_type IN ('table', 'foreign table'));
END
$fn$;

-- Creates (or re-enables) both event triggers. Only a superuser can; the migration calls it when it runs as one.
CREATE OR REPLACE FUNCTION fencing.install_event_triggers()
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    RAISE EXCEPTION USING ERRCODE = 'FL006',
      MESSAGE = format('fencing.install_event_triggers: role %s is not a superuser; only a superuser can create event triggers', current_user),
      HINT = 'Without them, protect_table refuses partitioned tables and tables with children; protect each child yourself.';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'fencing_protect_new_children') THEN
    CREATE EVENT TRIGGER fencing_protect_new_children ON ddl_command_end
      WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'CREATE FOREIGN TABLE', 'ALTER FOREIGN TABLE', 'CREATE TABLE AS', 'CREATE SCHEMA')
      EXECUTE FUNCTION fencing.protect_new_children();
  ELSIF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'fencing_protect_new_children'
                       AND evttags @> ARRAY['CREATE FOREIGN TABLE', 'CREATE SCHEMA']) THEN
    -- Created by an earlier version, which did not look at foreign tables (partitions can be foreign) or at
    -- CREATE SCHEMA ... CREATE TABLE ... PARTITION OF (one command tag for the schema and its tables).
    DROP EVENT TRIGGER fencing_protect_new_children;
    CREATE EVENT TRIGGER fencing_protect_new_children ON ddl_command_end
      WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'CREATE FOREIGN TABLE', 'ALTER FOREIGN TABLE', 'CREATE TABLE AS', 'CREATE SCHEMA')
      EXECUTE FUNCTION fencing.protect_new_children();
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'fencing_forget_dropped_tables') THEN
    CREATE EVENT TRIGGER fencing_forget_dropped_tables ON sql_drop WHEN TAG IN ('DROP TABLE', 'DROP FOREIGN TABLE', 'DROP SCHEMA', 'DROP OWNED')
      EXECUTE FUNCTION fencing.forget_dropped_tables();
  END IF;
  ALTER EVENT TRIGGER fencing_protect_new_children ENABLE ALWAYS;
  ALTER EVENT TRIGGER fencing_forget_dropped_tables ENABLE ALWAYS;
  RETURN 'installed';
END
$fn$;

DO $do$
BEGIN
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    PERFORM fencing.install_event_triggers();
  ELSE
    RAISE NOTICE 'fencing: not a superuser, so the event triggers that protect partitions created later are not installed; protect_table refuses partitioned tables until a superuser runs SELECT fencing.install_event_triggers()';
  END IF;
END
$do$;

-- Children of protected tables that are not protected themselves (empty while the event triggers are installed).
-- Also children that fence less than their parent.
CREATE OR REPLACE VIEW fencing.unprotected_children AS
SELECT i.inhrelid::regclass AS child, i.inhparent::regclass AS parent, p.resource
  FROM pg_inherits i JOIN fencing.protected_table p ON p.tbl = i.inhparent
 WHERE NOT EXISTS (SELECT 1 FROM fencing.protected_table q WHERE q.tbl = i.inhrelid AND q.resource = p.resource
                      AND coalesce(fencing.fenced_operations(i.inhrelid), '{}') || ARRAY['TRUNCATE']
                          @> coalesce(fencing.fenced_operations(i.inhparent), '{}'));

REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA fencing FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fencing.protect_table(regclass, text, text, text[]), fencing.unprotect_table(regclass, text)
  TO fencing_admin;
GRANT EXECUTE ON FUNCTION fencing.register_protected(regclass, text, regclass), fencing.unregister_protected(regclass),
  fencing.protect_one(regclass, text, regclass, text, text[]), fencing.descendants(regclass),
  fencing.children_protected_automatically(), fencing.operations_to_fence(text[]) TO fencing_admin;
GRANT EXECUTE ON FUNCTION fencing.fenced_operations(regclass) TO fencing_app, fencing_auditor, fencing_admin;
REVOKE ALL ON fencing.unprotected_children FROM PUBLIC;
GRANT SELECT ON fencing.unprotected_children TO fencing_auditor, fencing_admin;
