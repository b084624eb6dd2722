-- Fenceline: entering a session at a term, and advancing the mark.
-- Repeatable migration: the one current definition of these functions. Flyway re-applies it whenever it changes
-- (after every versioned migration), so edit the function here, never in an applied V migration.

-- SAFETY ARGUMENT (the whole design in one place; see also fencing-jdbc's package-info):
--  * Every resource has a row in fencing.high_water_mark with a lock_key. A session that is "entered" for a
--    resource at term t holds the session-level SHARED advisory lock (1178946115, lock_key) and has the session
--    setting fencing.entered_<lock_key> = t. Only fencing.enter() sets that setting, and only right after
--    acquiring the lock and reading the mark = t with a snapshot taken after the lock was granted.
--    Session advisory locks are never released while the setting is non-empty (a rolled-back transaction can
--    revert the setting but never releases the lock), so "setting = t" implies "lock held".
--  * The mark only moves up, only in fencing.enter(), and only while the advancing transaction holds the
--    EXCLUSIVE transaction-level advisory lock on the same key. To get it, the advancer terminates every other
--    backend that holds the shared lock (pg_terminate_backend), i.e. every session entered at an older term.
--    Terminating a backend aborts its open transaction; a transaction that already reached commit is committed
--    before the backend exits and therefore before the advancer's commit. The exclusive lock is released only
--    after the advancing transaction's commit is visible, so a session that then takes the shared lock and reads
--    the mark sees the new term.
--  * Hence, while a session is alive with fencing.entered_<key> = t, the mark equals t, and the statement
--    trigger fencing.guard() can allow the write by reading two settings: no lock, no table read, no extra
--    round trip. A transaction carrying term t can only commit from such a session, so no transaction of term
--    t commits after a transaction of a higher term committed for the same resource.
--  * A paused old leader cannot commit late: its session is terminated by the next advance, bounded by the
--    advance_timeout setting (default 5s); past that the advance fails with FL005 instead of proceeding.
--
-- SQLSTATEs raised here (class FL):
--   FL001 stale term (offered < highest accepted)       FL002 write on a protected table without a term
--   FL003 invalid argument (term, resource, setting)    FL004 unknown resource (not registered)
--   FL005 advance could not terminate older sessions within advance_timeout
--   FL006 protect/unprotect refused (wrong table kind, conflicting registration, column type)
--   FL007 break-glass requested by a role that is not a member of fencing_break_glass
--   55P03 (lock_not_available) protect_table/unprotect_table could not get its lock within lock_timeout

-- One term, one leader. Terms are unique per coordinator, but a coordinator rebuilt from nothing can issue a term
-- number again (to a second leader, while the first still believes it holds it). The mark remembers who advanced
-- it; a different leader offering the same term is rejected like a stale one, so (term, leader) is unique in the
-- database whatever the coordinator forgot. Writers that give no leader id opt out of this check.
CREATE OR REPLACE FUNCTION fencing.reject_term_conflict(p_resource text, p_term bigint, p_leader_id text, p_holder text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_audited boolean;
BEGIN
  v_audited := fencing.audit_autonomously(p_resource, p_term, p_leader_id, NULL, 'ENTER', 'term_conflict');
  RAISE EXCEPTION USING ERRCODE = 'FL001',
    MESSAGE = format('fencing: term %s for resource %s is already held by leader %s; leader %s cannot use it too (did the coordinator lose its history? raise its term floor above %s)',
                     p_term, p_resource, p_holder, p_leader_id, p_term),
    DETAIL = format('resource=%s offered_term=%s highest_accepted=%s audited=%s table=', p_resource, p_term, p_term, v_audited);
END
$fn$;

CREATE OR REPLACE FUNCTION fencing.enter(p_resource text, p_term bigint, p_leader_id text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  c_ns       constant integer := 1178946115;
  v_key      bigint;
  v_mark     bigint;
  v_holder   text;                          -- leader_id recorded with the mark
  v_guc      text;
  v_entered  bigint;
  v_holding  boolean;
  v_strict   boolean := current_setting('transaction_isolation') <> 'read committed';
  v_timeout  interval;
  v_deadline timestamptz;
  v_db       oid;
  v_pid      integer;
  v_killed   integer := 0;
BEGIN
  PERFORM fencing.check_resource_name(p_resource);
  IF p_term IS NULL OR p_term <= 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing: invalid term %s for resource %s: a term must be a positive bigint', coalesce(p_term::text, 'NULL'), p_resource);
  END IF;
  IF length(p_leader_id) > 200 THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing: leader_id is %s characters long, at most 200 are allowed', length(p_leader_id));
  END IF;

  SELECT lock_key INTO v_key FROM fencing.high_water_mark WHERE resource = p_resource;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'FL004',
      MESSAGE = format('fencing: unknown resource %s; register it first with SELECT fencing.register_resource(%L)', p_resource, p_resource);
  END IF;
  v_guc := 'fencing.entered_' || v_key;
  v_entered := nullif(current_setting(v_guc, true), '')::bigint;

  IF v_entered IS NOT NULL THEN
    -- This session holds the shared lock and was validated at v_entered; while it lives, mark = v_entered.
    IF v_entered = p_term THEN
      RETURN p_term;
    ELSIF v_entered > p_term THEN
      RETURN v_entered;                       -- stale: the caller rejects and audits
    END IF;
    v_holding := true;                        -- p_term is newer: advance below, keeping our (non-conflicting) lock
  ELSE
    -- Not entered. A shared lock may still be held from a rolled-back entry; never take a second one.
    v_holding := EXISTS (SELECT 1 FROM pg_locks l
                          WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.classid = c_ns::oid
                            AND l.objid = v_key::oid AND l.objsubid = 2 AND l.mode = 'ShareLock' AND l.granted);
  END IF;

  v_timeout := coalesce((SELECT value::interval FROM fencing.settings WHERE name = 'advance_timeout'), interval '5 seconds');
  v_deadline := clock_timestamp() + v_timeout;
  SELECT oid INTO v_db FROM pg_database WHERE datname = current_database();

  <<attempt>>
  LOOP
    IF v_entered IS NULL THEN
      IF NOT v_holding THEN
        -- Blocks while an advance holds the exclusive lock; granted only after that advance's commit is visible.
        PERFORM pg_advisory_lock_shared(c_ns, v_key::integer);
      END IF;
      -- A new statement: under READ COMMITTED a fresh snapshot, taken after the lock was granted.
      IF v_strict THEN
        -- REPEATABLE READ / SERIALIZABLE: an advance committed after our snapshot raises a serialization failure.
        SELECT highest_accepted, leader_id INTO v_mark, v_holder FROM fencing.high_water_mark WHERE resource = p_resource FOR SHARE;
      ELSE
        SELECT highest_accepted, leader_id INTO v_mark, v_holder FROM fencing.high_water_mark WHERE resource = p_resource;
      END IF;
      IF v_mark = p_term THEN
        IF v_holder IS DISTINCT FROM p_leader_id AND v_holder IS NOT NULL AND p_leader_id IS NOT NULL THEN
          IF NOT v_holding THEN
            PERFORM pg_advisory_unlock_shared(c_ns, v_key::integer);   -- a session lock survives the abort below
          END IF;
          PERFORM fencing.reject_term_conflict(p_resource, p_term, p_leader_id, v_holder);
        END IF;
        PERFORM set_config(v_guc, p_term::text, false);
        RETURN p_term;
      END IF;
      IF NOT v_holding THEN
        -- Give the lock back: the setting is empty, so nothing claims it (and an advancer must not wait for us).
        PERFORM pg_advisory_unlock_shared(c_ns, v_key::integer);
      END IF;
      IF v_mark > p_term THEN
        RETURN v_mark;                        -- stale
      END IF;
    END IF;

    -- ADVANCE to p_term: take the exclusive transaction lock, terminating every other session entered before.
    LOOP
      IF pg_try_advisory_xact_lock(c_ns, v_key::integer) THEN
        -- No other session is entered now. Re-read: another advance may have committed meanwhile.
        SELECT highest_accepted, leader_id INTO v_mark, v_holder FROM fencing.high_water_mark WHERE resource = p_resource FOR UPDATE;
        IF v_mark > p_term THEN
          RETURN v_mark;                      -- stale after all (only possible when we were not entered)
        END IF;
        IF v_mark = p_term AND v_holder IS DISTINCT FROM p_leader_id AND v_holder IS NOT NULL AND p_leader_id IS NOT NULL THEN
          PERFORM fencing.reject_term_conflict(p_resource, p_term, p_leader_id, v_holder);   -- xact lock: released by the abort
        END IF;
        IF v_mark < p_term THEN
          UPDATE fencing.high_water_mark
             SET highest_accepted = p_term, leader_id = p_leader_id, updated_at = clock_timestamp()
           WHERE resource = p_resource;
          INSERT INTO fencing.term_history (resource, term, previous_term, leader_id, terminated_sessions, application_name)
          VALUES (p_resource, p_term, v_mark, p_leader_id, v_killed, current_setting('application_name'));
        END IF;
        IF NOT v_holding THEN
          PERFORM pg_advisory_lock_shared(c_ns, v_key::integer);  -- we hold the exclusive one: granted at once
        END IF;
        PERFORM set_config(v_guc, p_term::text, false);
        RETURN p_term;
      END IF;
      IF clock_timestamp() >= v_deadline THEN
        RAISE EXCEPTION USING ERRCODE = 'FL005',
          MESSAGE = format('fencing: cannot advance %s to term %s: sessions of older terms still hold the fence after advance_timeout %s', p_resource, p_term, v_timeout),
          HINT = 'See fencing.entered_sessions; raise fencing.settings advance_timeout if backends need longer to exit.';
      END IF;
      -- While another advance is in flight (it holds the exclusive lock), wait for it instead of interfering.
      IF NOT EXISTS (SELECT 1 FROM pg_locks l
                      WHERE l.locktype = 'advisory' AND l.database = v_db AND l.classid = c_ns::oid AND l.objid = v_key::oid
                        AND l.objsubid = 2 AND l.mode = 'ExclusiveLock' AND l.granted AND l.pid <> pg_backend_pid()) THEN
        IF v_entered IS NULL
           AND (SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = p_resource) >= p_term THEN
          CONTINUE attempt;                   -- someone else advanced (to our term or beyond): enter normally
        END IF;
        FOR v_pid IN
          SELECT l.pid FROM pg_locks l
           WHERE l.locktype = 'advisory' AND l.database = v_db AND l.classid = c_ns::oid AND l.objid = v_key::oid
             AND l.objsubid = 2 AND l.mode = 'ShareLock' AND l.granted AND l.pid <> pg_backend_pid()
        LOOP
          BEGIN
            IF pg_terminate_backend(v_pid) THEN
              v_killed := v_killed + 1;
            END IF;
          EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION USING ERRCODE = 'FL005',
              MESSAGE = format('fencing: cannot advance %s to term %s: not allowed to terminate backend %s of an older term (%s)', p_resource, p_term, v_pid, SQLERRM),
              HINT = 'The owner of fencing.enter() must be a superuser or a member of pg_signal_backend (and the application roles must not be superusers).';
          END;
        END LOOP;
      END IF;
      PERFORM pg_sleep(0.005);
    END LOOP;
  END LOOP;
END
$fn$;
COMMENT ON FUNCTION fencing.enter(text, bigint, text) IS
  'Enters this session for the resource at the term. Returns the term when accepted (advancing the mark if the term is newer), or the higher accepted term when stale (nothing changed: the caller rejects and audits). Raises FL003 (bad input), FL004 (unknown resource), FL005 (advance timed out).';

