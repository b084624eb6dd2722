-- Fenceline: what marks an advance in flight.
--
-- The fence's lock (1178946115, lock_key) lives in the advisory-lock space every login may use: a login outside the
-- fencing roles can hold a resource's key exclusively, or queue for it, and would block every entering and look like
-- an advance in flight. An advance (fencing.advance(), R__20_fencing_enter.sql) therefore first locks its key's row
-- here (FOR NO KEY UPDATE, in its own transaction), before it tries the key, and keeps that row lock until its
-- transaction ends. Nobody but the owner has any privilege on this table, so no other transaction can lock a row of
-- it (a row lock needs UPDATE; a relation lock would not do: parsing a prepared SELECT ... FOR SHARE takes one without
-- any privilege). While nobody holds a key's row, nobody is advancing it, and whoever holds or queues for the key
-- exclusively is squatting (fencing.clear_fence_squatters). The rows are created with the resources
-- (R__10_fencing_resources.sql), so that an advance never has to insert one that others cannot see yet.
CREATE TABLE IF NOT EXISTS fencing.advancing (
  lock_key bigint PRIMARY KEY
);
REVOKE ALL ON fencing.advancing FROM PUBLIC;
COMMENT ON TABLE fencing.advancing IS
  'One row per fence key: an advance in flight holds its row locked, which no application role can do (see fencing.clear_fence_squatters).';
