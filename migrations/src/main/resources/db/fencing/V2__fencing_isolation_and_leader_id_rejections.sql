-- Fenceline: two refusals of a write that were raised but not audited are audited now, each under a reason of its
-- own: a newer term that cannot advance the mark because the transaction is not READ COMMITTED (FL011), and a
-- leader id longer than the 200 characters the mark stores (FL003). A versioned migration because the reasons are a
-- CHECK constraint of fencing.rejected_write and each reason has its counter (the functions that use them are in the
-- repeatable migrations, which Flyway applies after this one).
ALTER TABLE fencing.rejected_write DROP CONSTRAINT rejected_write_reason;
ALTER TABLE fencing.rejected_write ADD CONSTRAINT rejected_write_reason CHECK (reason IN (
  'stale_term',           -- a term older than the highest accepted
  'no_term',              -- a write to a protected table without a term
  'term_conflict',        -- the highest accepted term, offered by a different leader
  'invalid_term',         -- fencing.term is not a positive bigint
  'term_jump',            -- a newer term further above the mark than max_term_jump
  'unscoped_term',        -- fencing.term would advance a resource that fencing.resource does not name
  'break_glass_refused',  -- break-glass asked for by a session user outside fencing_break_glass
  'not_allowed',          -- a term offered by a session user outside fencing_app
  'advance_isolation',    -- a newer term in a transaction that is not READ COMMITTED (an advance must see the present)
  'invalid_leader_id'));  -- a leader id longer than 200 characters

CREATE SEQUENCE IF NOT EXISTS fencing.rejections_advance_isolation AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_invalid_leader_id AS bigint MINVALUE 1 NO CYCLE;
