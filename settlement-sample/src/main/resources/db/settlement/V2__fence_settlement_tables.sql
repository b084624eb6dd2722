-- Fence both tables for resource `settlement`: adds the nullable `fencing_term` column (catalog-only)
-- and the statement-level guard trigger. Every INSERT/UPDATE/DELETE on them must now carry the
-- current term of resource `settlement` (the worker does, through the fenced writer).
SELECT fencing.register_resource('settlement');
SELECT fencing.protect_table('settlement.payment'::regclass, 'settlement');
SELECT fencing.protect_table('settlement.settlement_batch'::regclass, 'settlement');
