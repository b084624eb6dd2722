-- The sample application's own schema, applied by Boot's Flyway after the starter's fencing migrations
-- (protect_table below only exists once those ran).
-- request: what there is to settle (written by anyone, unfenced). settlement: written only by the leader's
-- fenced task; protected for resource 'sample', so PostgreSQL rejects a write carrying an older term.
CREATE TABLE request (id bigint PRIMARY KEY, amount bigint NOT NULL);
CREATE TABLE settlement (request_id bigint PRIMARY KEY REFERENCES request (id), settled_by text NOT NULL);
SELECT fencing.protect_table('settlement'::regclass, 'sample');
