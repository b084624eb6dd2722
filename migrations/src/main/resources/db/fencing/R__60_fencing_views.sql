-- Fenceline: views for DBAs.
-- Repeatable migration: the one current definition of these functions. Flyway re-applies it whenever it changes
-- (after every versioned migration), so edit the function here, never in an applied V migration.

-- DBA views.
CREATE OR REPLACE VIEW fencing.current_marks AS
SELECT m.resource,
       m.highest_accepted,
       m.leader_id,
       m.updated_at,
       m.lock_key,
       (SELECT count(*) FROM fencing.protected_table p WHERE p.resource = m.resource) AS protected_tables,
       (SELECT max(r.rejected_at) FROM fencing.rejected_write r WHERE r.resource = m.resource) AS last_rejected_at
  FROM fencing.high_water_mark m;

CREATE OR REPLACE VIEW fencing.recent_rejections AS
SELECT r.id, r.rejected_at, r.resource, r.offered_term, r.highest_accepted, r.leader_id, r.table_name, r.operation,
       r.business_key, r.reason, r.source, r.db_user, r.application_name, r.payload_truncated
  FROM fencing.rejected_write r
 WHERE r.rejected_at > now() - interval '24 hours'
 ORDER BY r.rejected_at DESC;

CREATE OR REPLACE VIEW fencing.rejections_daily AS
SELECT date_trunc('day', r.rejected_at) AS day,
       r.resource,
       r.leader_id,
       r.reason,
       count(*)                AS rejections,
       min(r.offered_term)     AS min_offered_term,
       max(r.highest_accepted) AS max_highest_accepted,
       max(r.rejected_at)      AS last_rejected_at
  FROM fencing.rejected_write r
 GROUP BY 1, 2, 3, 4;

-- Sessions entered for a resource: registered by fencing.enter() (session scope), or holding the resource's shared
-- advisory lock (an entering in progress, or transaction scope). An advance terminates all of them.
CREATE OR REPLACE VIEW fencing.entered_sessions AS
SELECT m.resource, a.pid, a.usename, a.application_name, a.client_addr, a.state, a.xact_start, a.state_change
  FROM pg_locks l
  JOIN fencing.high_water_mark m ON l.objid = m.lock_key::oid
  LEFT JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.classid = 1178946115::oid AND l.objsubid = 2 AND l.mode = 'ShareLock' AND l.granted
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
UNION
SELECT e.resource, a.pid, a.usename, a.application_name, a.client_addr, a.state, a.xact_start, a.state_change
  FROM fencing.entered_session e
  JOIN pg_stat_activity a ON a.pid = e.pid AND (e.backend_start IS NULL OR a.backend_start IS NULL OR a.backend_start = e.backend_start);
