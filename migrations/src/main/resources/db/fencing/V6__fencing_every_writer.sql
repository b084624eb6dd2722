-- Fenceline: the fence holds against every writer PostgreSQL allows (schema part; functions are in the R__ files).
--
-- Why each object exists:
--  * fencing.entered_session: a session entered at a term is REGISTERED here by fencing.enter(). An advance
--    terminates every registered live backend of the resource, whatever advisory locks it holds: any role can
--    release its own session advisory locks (pg_advisory_unlock_all(), pools and ORMs do on connection return), so
--    "holds the shared lock" cannot be the only record of who is entered.
--  * fencing.protected_table.parent: partitions and inheritance children are protected with their parent (a
--    statement trigger on the parent does not fire for writes straight into a partition); parent says from where.
--  * more rejection reasons, and the max_term_jump setting (one raw write must not be able to lock a resource out
--    by moving its mark to the largest bigint).

CREATE TABLE IF NOT EXISTS fencing.entered_session (
  resource      text        NOT NULL,
  pid           integer     NOT NULL,
  backend_start timestamptz,                 -- NULL when the owner cannot read it (no pg_read_all_stats)
  term          bigint      NOT NULL,
  entered_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT entered_session_pk PRIMARY KEY (resource, pid)
);
COMMENT ON TABLE fencing.entered_session IS
  'Backends entered for a resource by fencing.enter() (session scope). The next advance terminates each live one, even if it released its advisory lock.';

ALTER TABLE fencing.protected_table ADD COLUMN IF NOT EXISTS parent regclass;
COMMENT ON COLUMN fencing.protected_table.parent IS
  'NULL when protected by protect_table() itself; otherwise the protected table this partition or inheritance child is protected with.';

ALTER TABLE fencing.rejected_write DROP CONSTRAINT IF EXISTS rejected_write_reason;
ALTER TABLE fencing.rejected_write ADD CONSTRAINT rejected_write_reason CHECK (reason IN (
  'stale_term',           -- a term older than the highest accepted
  'no_term',              -- a write to a protected table without a term (and not entered)
  'term_conflict',        -- the highest accepted term, offered by a different leader
  'invalid_term',         -- fencing.term is not a positive bigint
  'term_jump',            -- a newer term further above the mark than max_term_jump
  'unscoped_term',        -- fencing.term would advance a resource that fencing.resource does not name
  'break_glass_refused',  -- break-glass asked for by a session user outside fencing_break_glass
  'not_allowed'));        -- a term offered by a session user outside fencing_app
COMMENT ON COLUMN fencing.rejected_write.reason IS
  'stale_term, no_term, term_conflict, invalid_term, term_jump, unscoped_term, break_glass_refused or not_allowed (see the CHECK constraint).';

INSERT INTO fencing.settings (name, value, description) VALUES
  ('max_term_jump', '1000000',
   'Largest step (new term minus the highest accepted) one advance may take; a larger one is rejected (FL009) and audited. Election terms move by small steps.')
ON CONFLICT (name) DO NOTHING;

REVOKE ALL ON fencing.entered_session FROM PUBLIC;
GRANT SELECT ON fencing.entered_session TO fencing_auditor, fencing_admin;
-- Registration of protected tables goes through protect_table()/unprotect_table() only (they check the trigger), so
-- that no table is listed as protected without its trigger.
REVOKE INSERT, DELETE ON fencing.protected_table FROM fencing_admin;
