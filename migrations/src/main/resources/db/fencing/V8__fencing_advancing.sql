-- Fenceline: what marks an advance in flight.
--
-- The fence's lock (1178946115, lock_key) lives in the advisory-lock space every login may use: a login outside the
-- fencing roles can hold a resource's key exclusively, or queue for it, and would block every entering and look like
-- an advance in flight. An advance (fencing.advance(), R__20_fencing_enter.sql) therefore locks this table in SHARE
-- mode before it tries the key, and holds both until its transaction ends. A backend holding or queued for a key
-- exclusively without this lock is squatting (fencing.clear_fence_squatters).
-- Nobody but the owner may lock this table: it lives in a schema only the owner may use. PostgreSQL locks a table it
-- is told to name before it checks some privileges (parsing a prepared SELECT ... FOR SHARE takes ROW SHARE, CREATE
-- RULE queues ACCESS EXCLUSIVE), but naming it needs USAGE on its schema, which is checked first.
-- The table never holds rows.
CREATE SCHEMA IF NOT EXISTS fencing_private;
REVOKE ALL ON SCHEMA fencing_private FROM PUBLIC;
CREATE TABLE IF NOT EXISTS fencing_private.advancing ();
REVOKE ALL ON fencing_private.advancing FROM PUBLIC;
COMMENT ON TABLE fencing_private.advancing IS
  'Never holds rows: an advance in flight holds a SHARE lock on it, which nobody but the owner can take (see fencing.clear_fence_squatters).';
