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

-- Which tables are protected for which resource, and which of their operations are fenced.
CREATE OR REPLACE VIEW fencing.protected_operations AS
SELECT p.tbl, p.resource, p.parent, fencing.fenced_operations(p.tbl) AS operations
  FROM fencing.protected_table p;

REVOKE ALL ON fencing.current_marks, fencing.recent_rejections, fencing.rejections_daily FROM PUBLIC;
REVOKE ALL ON fencing.protected_operations FROM PUBLIC;
GRANT SELECT ON fencing.protected_operations TO fencing_app, fencing_auditor, fencing_admin;
GRANT SELECT ON fencing.current_marks TO fencing_app, fencing_auditor, fencing_admin;
GRANT SELECT ON fencing.recent_rejections, fencing.rejections_daily TO fencing_auditor, fencing_admin;
