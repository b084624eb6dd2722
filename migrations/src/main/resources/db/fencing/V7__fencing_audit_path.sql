-- Fenceline: the trigger audit path that works on the databases people run (password authentication, managed
-- PostgreSQL without a superuser), rejection counters that survive rollback, and the end of the free-form audit
-- connection string.
--
-- Functions live in R__30_fencing_audit.sql (applied after this file): this migration only creates what those
-- functions need and what must exist exactly once.

-- 1. Counters: one sequence per rejection reason. nextval() is never rolled back, so a rejection counted inside the
--    transaction it aborts stays counted even when no audit row could be committed (dblink missing or failing).
--    After a crash a sequence may jump ahead by up to 32 (its WAL pre-logging): a counter can over-count then,
--    never under-count.
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_stale_term    AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_no_term       AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_term_conflict AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_invalid_term  AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_term_jump     AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_unscoped_term AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_break_glass_refused AS bigint MINVALUE 1 NO CYCLE;
CREATE SEQUENCE IF NOT EXISTS fencing.rejections_not_allowed  AS bigint MINVALUE 1 NO CYCLE;
REVOKE ALL ON SEQUENCE fencing.rejections_stale_term, fencing.rejections_no_term, fencing.rejections_term_conflict,
                       fencing.rejections_invalid_term, fencing.rejections_term_jump, fencing.rejections_unscoped_term,
                       fencing.rejections_break_glass_refused, fencing.rejections_not_allowed
  FROM PUBLIC;

-- 2. The dedicated audit login role. The trigger's audit connection logs in as this role (never as the owner or a
--    superuser: it takes an ordinary connection slot, never a reserved one). Its only right is to execute
--    fencing.append_trigger_rejection() (granted in R__30), which appends one audit row. It gets its password from
--    fencing.configure_audit_writer(), run by the schema owner; until then it cannot log in with a password.
--    Roles are cluster-wide: created once, idempotently.
DO $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'fencing_auditor_writer') THEN
    BEGIN
      CREATE ROLE fencing_auditor_writer LOGIN NOINHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION;
    EXCEPTION
      WHEN duplicate_object OR unique_violation THEN
        NULL;   -- created concurrently by a migration of another database in this cluster
      WHEN insufficient_privilege THEN
        RAISE WARNING 'fencing: role fencing_auditor_writer does not exist and % may not create roles; trigger-mode rejections are audited in the server log and fencing.rejection_counts only. Ask an administrator to run CREATE ROLE fencing_auditor_writer LOGIN, then SELECT fencing.configure_audit_writer(''<password>'') as %.',
          current_user, current_user;
    END;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'fencing_auditor_writer') THEN
    GRANT USAGE ON SCHEMA fencing TO fencing_auditor_writer;
  END IF;
END
$do$;

-- 3. The audit target is no longer a setting. A connection string in fencing.settings was used verbatim by a
--    SECURITY DEFINER function, so whoever could update settings chose where (and as whom) the owner connected.
--    The target is now the foreign server fencing_audit_loopback (this database, pinned) and its user mapping,
--    both owned by the schema owner and changed only through fencing.configure_audit_writer().
DELETE FROM fencing.settings WHERE name = 'audit_dblink_connstr';
