-- Least privilege. The migration role owns everything in schema fencing; applications get roles:
--   fencing_app          USAGE; SELECT marks/settings/protected tables/current_marks; EXECUTE enter, register_resource,
--                        record_rejection and the trigger's helpers. No INSERT/UPDATE/DELETE/TRUNCATE anywhere in the
--                        schema: the mark moves only through enter(), the audit is appended only through record_rejection().
--   fencing_auditor      USAGE; SELECT on every table and view of the schema. Nothing else.
--   fencing_break_glass  may write protected tables without a term by SET LOCAL fencing.break_glass = '<reason>';
--                        every such statement is logged in fencing.break_glass_log.
--   fencing_admin        protect_table / unprotect_table / register_resource, may change fencing.settings values.
-- Roles are cluster-wide; created once, idempotently. Grant them to your login roles, e.g.
--   GRANT fencing_app TO settlement_service;  GRANT fencing_auditor TO auditor_jane;
DO $do$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['fencing_app', 'fencing_auditor', 'fencing_break_glass', 'fencing_admin'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', r);
      EXCEPTION
        WHEN duplicate_object OR unique_violation THEN
          NULL;   -- created concurrently by a migration of another database in this cluster
        WHEN insufficient_privilege THEN
          RAISE EXCEPTION USING ERRCODE = '42501',
            MESSAGE = format('fencing migrations: role %I does not exist and %I may not create roles', r, current_user),
            HINT = format('Ask an administrator to run CREATE ROLE %I NOLOGIN (and the other fencing_* roles), then migrate again.', r);
      END;
    END IF;
  END LOOP;
END
$do$;

REVOKE ALL ON SCHEMA fencing FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA fencing FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA fencing FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA fencing FROM PUBLIC;

GRANT USAGE ON SCHEMA fencing TO fencing_app, fencing_auditor, fencing_break_glass, fencing_admin;

-- fencing_app
GRANT SELECT ON fencing.high_water_mark, fencing.settings, fencing.protected_table, fencing.current_marks TO fencing_app;
GRANT EXECUTE ON FUNCTION
  fencing.enter(text, bigint, text),
  fencing.register_resource(text),
  fencing.record_rejection(text, bigint, bigint, text, text, text, text, jsonb, text, text, text, text),
  fencing.check_resource_name(text),
  fencing.guard_slow(text, name, name, text, text),
  fencing.audit_autonomously(text, bigint, text, text, text, text)
  TO fencing_app;

-- fencing_auditor: read-only on everything in the schema (tables, history, audit, views).
GRANT SELECT ON ALL TABLES IN SCHEMA fencing TO fencing_auditor;

-- fencing_break_glass: the trigger's helpers it needs on its way through, and the log writer.
GRANT SELECT ON fencing.high_water_mark TO fencing_break_glass;
GRANT EXECUTE ON FUNCTION
  fencing.guard_slow(text, name, name, text, text),
  fencing.log_break_glass(text, text, text, text, text),
  fencing.audit_autonomously(text, bigint, text, text, text, text)
  TO fencing_break_glass;

-- fencing_admin
GRANT SELECT ON ALL TABLES IN SCHEMA fencing TO fencing_admin;
GRANT INSERT, DELETE ON fencing.protected_table TO fencing_admin;
GRANT UPDATE (value) ON fencing.settings TO fencing_admin;
GRANT EXECUTE ON FUNCTION
  fencing.protect_table(regclass, text, text),
  fencing.unprotect_table(regclass, text),
  fencing.register_resource(text),
  fencing.check_resource_name(text)
  TO fencing_admin;
