-- tick: one row per run of the scheduled task, fenced for resource 'ticks'.
CREATE TABLE tick (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp());
SELECT fencing.protect_table('tick'::regclass, 'ticks');
