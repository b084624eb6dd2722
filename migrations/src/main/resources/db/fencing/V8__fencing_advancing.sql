-- Fenceline: what marks an advance in flight.
--
-- The fence's lock (1178946115, lock_key) lives in the advisory-lock space every login may use: a login outside the
-- fencing roles can hold a resource's key exclusively, or queue for it, and would block every entering and look like
-- an advance in flight. An advance (fencing.advance(), R__20_fencing_enter.sql) therefore locks this table in ROW SHARE
-- mode before it tries the exclusive key, and keeps that lock until its transaction ends. No application role can
-- lock this table (LOCK TABLE in ROW SHARE mode and SELECT ... FOR SHARE need UPDATE, DELETE or TRUNCATE on it, and
-- nobody but the owner has any privilege on it), and an advance never queues for the key (it only tries it): so a
-- backend holding the key exclusively without this lock, or queued for it, is not an advance, and is terminated.
-- The table holds no rows; its column only keeps the table ordinary for tools that list tables.
CREATE TABLE IF NOT EXISTS fencing.advancing (
  never_written boolean
);
REVOKE ALL ON fencing.advancing FROM PUBLIC;
COMMENT ON TABLE fencing.advancing IS
  'Never holds rows: an advance in flight holds a ROW SHARE lock on it, which no application role can take (see fencing.clear_fence_squatters).';
