-- Trigger-mode rejections abort their transaction, so their audit row must be committed elsewhere: dblink back
-- into this database. Install dblink when this role may do so; otherwise fencing.audit_autonomously() falls back
-- to a WARNING in the server log (every field included) and the migration still succeeds.
DO $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'dblink') THEN
    BEGIN
      CREATE EXTENSION IF NOT EXISTS dblink WITH SCHEMA fencing;
    EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported OR object_not_in_prerequisite_state THEN
      RAISE WARNING 'fencing: dblink could not be installed (%); trigger-mode rejections will be logged as server WARNINGs instead of fencing.rejected_write rows. Install it later with CREATE EXTENSION dblink WITH SCHEMA fencing.', SQLERRM;
    END;
  END IF;
END
$do$;
