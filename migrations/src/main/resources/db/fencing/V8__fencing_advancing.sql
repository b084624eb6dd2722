-- Fenceline: what marks an advance in flight.
--
-- The fence's lock (1178946115, lock_key) lives in the advisory-lock space every login may use: a login outside the
-- fencing roles can hold a resource's key exclusively, or queue for it, and would block every entering and look like
-- an advance in flight. An advance (fencing.advance(), R__20_fencing_enter.sql) therefore first locks its key's row
-- here (SELECT ... FOR NO KEY UPDATE, inserting the row the first time), before it tries the key, and keeps that row
-- lock until its transaction ends: while it holds the key, the row's xmax is its transaction id. Nobody but the
-- owner has any privilege on this table, so no other transaction can put its id there (a row lock needs UPDATE; a
-- relation lock would not do: parsing a prepared SELECT ... FOR SHARE takes one without any privilege). A backend
-- holding the key exclusively whose transaction id is not that xmax, or queued for it (an advance only tries it), is
-- not an advance, and is terminated (fencing.clear_fence_squatters).
CREATE TABLE IF NOT EXISTS fencing.advancing (
  lock_key bigint PRIMARY KEY
);
REVOKE ALL ON fencing.advancing FROM PUBLIC;
COMMENT ON TABLE fencing.advancing IS
  'One row per fence key an advance ran for: an advance in flight holds its row locked (xmax = its transaction id), which no application role can do (see fencing.clear_fence_squatters).';
