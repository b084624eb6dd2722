-- Fenceline: resource names and registration.
-- Repeatable migration: the one current definition of these functions. Flyway re-applies it whenever it changes
-- (after every versioned migration), so edit the function here, never in an applied V migration.

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

REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA fencing FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fencing.register_resource(text), fencing.check_resource_name(text) TO fencing_app, fencing_admin;
