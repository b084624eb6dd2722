-- Fenceline: entering a session or a transaction at a term, and advancing the mark.
-- Repeatable migration: the one current definition of these functions. Flyway re-applies it whenever it changes
-- (after every versioned migration), so edit the function here, never in an applied V migration.
--
-- SAFETY ARGUMENT (the whole design in one place; see also fencing-jdbc's package-info and model/):
--  * Every resource has a row in fencing.high_water_mark (the mark) with a lock_key. The mark only moves up, only in
--    fencing.advance(), only while the advancing transaction holds the EXCLUSIVE transaction-level advisory lock
--    (1178946115, lock_key) and a row lock on the mark row.
--  * A write to a protected table is allowed on the fast path when the setting fencing.entered_<lock_key> is t and
--    the transaction's fencing.term is empty or t. Only fencing.enter_at() sets that setting, right after taking the
--    SHARED advisory lock and reading mark = t with a snapshot taken after the lock was granted, in one of two scopes:
--      session scope (fencing.enter, direct connections): the setting lives as long as the backend; the backend is
--        REGISTERED in fencing.entered_session in the same transaction, which also holds a FOR SHARE lock on the
--        mark row until it ends.
--      transaction scope (fencing.enter_transaction, and the guard's own entering): the setting and the
--        transaction-level shared lock end with the transaction. No client can release a transaction-level
--        advisory lock early, and a PREPARED transaction keeps it. Nothing is left on a pooled server session.
--  * The advisory-lock space is open to every login. An advance locks fencing_private.advancing in SHARE mode (nobody
--    else can: a schema only the owner may use) before it tries the key, never queues for the key, and holds both
--    until its transaction ends. A backend that holds the key exclusively without that lock, or is queued for it, is
--    squatting: the advance, and an entering that finds the key taken, terminate it (fencing.clear_fence_squatters).
--    A PREPARED transaction holding the key cannot be terminated: advances fail with FL005 naming it, and enterings
--    wait until their lock_timeout (docs/fencing.md, threat model).
--  * An advance, before it moves the mark, (1) takes the exclusive lock, terminating every other backend that holds
--    the shared lock; (2) locks the mark row, so entering transactions still open have ended; (3) terminates every
--    live backend registered for the resource, whatever locks it released, and waits until each has exited;
--    (4) waits until no PREPARED transaction holds a write lock on a protected table of the resource or the
--    resource's advisory lock. Terminating a backend aborts its open transaction; one that already reached commit
--    committed before the backend exited, i.e. before the advance commits. Every wait is bounded by what is left
--    of advance_timeout; past it FL005 and nothing changed. (With fencing.warm_up naming the current transaction, the
--    writer's warm-up, an advance only reads and raises FL012 before step 1: no lock, no termination, no change.)
--  * Hence, while a backend is alive with fencing.entered_<key> = t (either scope), the mark equals t. A transaction
--    carrying term t commits only from such a backend (or, prepared, before the next advance), so no transaction of
--    term t commits after a transaction of a higher term committed for the same resource.
--  * Out of scope (documented non-goals): superusers and table owners (they can disable triggers), and forging the
--    session setting fencing.entered_<key> by hand.
--
-- SQLSTATEs raised by the fencing functions (class FL):
--   FL001 stale term (offered < highest accepted), or the same term from another leader
--   FL002 write on a protected table without a term          FL003 invalid argument (term, resource, setting)
--   FL004 unknown resource (not registered)                  FL005 advance timed out (older sessions, a locked mark
--                                                                  row or a prepared transaction still hold the fence)
--   FL006 protect/unprotect refused                          FL007 break-glass requested outside fencing_break_glass
--   FL008 native guard unavailable                           FL009 term jump larger than max_term_jump
--   FL010 fencing.term would advance a resource that fencing.resource does not name
--   FL011 an advance asked for outside READ COMMITTED
--   FL012 an advance asked for while fencing.warm_up names this transaction (the writer's warm-up: read-only)
--   FL013 the transaction the writer is about to commit is not the one it began (its work ended that one itself)
--   55P03 (lock_not_available) protect_table/unprotect_table could not get its lock within lock_timeout
--   42501 a term offered by a session user outside fencing_app
--
-- Advisory-lock namespace: 'FENC' as an int4. pg_locks shows it as classid = 1178946115, objid = lock_key, objsubid = 2.

-- The one format of a rejection's DETAIL (the writer parses it back: WriterEngine.DETAIL).
CREATE OR REPLACE FUNCTION fencing.rejection_detail(p_resource text, p_offered bigint, p_mark bigint, p_audited boolean, p_table text)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
  SELECT format('resource=%s offered_term=%s highest_accepted=%s audited=%s table=%s',
                p_resource, coalesce(p_offered::text, ''), coalesce(p_mark::text, ''), p_audited, coalesce(p_table, ''))
$fn$;

-- Every rejection of a write goes through here: audited once (autonomously: the transaction is about to abort), then
-- raised with the common DETAIL.
CREATE OR REPLACE FUNCTION fencing.reject(p_sqlstate text, p_reason text, p_resource text, p_offered bigint, p_leader_id text,
                                          p_table text, p_operation text, p_message text, p_hint text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_audited boolean;
  v_mark    bigint;
BEGIN
  v_audited := fencing.audit_autonomously(p_resource, p_offered, p_leader_id, p_table, coalesce(p_operation, 'ENTER'), p_reason);
  SELECT highest_accepted INTO v_mark FROM fencing.high_water_mark WHERE resource = p_resource;
  RAISE EXCEPTION USING ERRCODE = p_sqlstate, MESSAGE = p_message,
    DETAIL = fencing.rejection_detail(p_resource, p_offered, v_mark, v_audited, p_table),
    HINT = coalesce(p_hint, '');
END
$fn$;

DROP FUNCTION IF EXISTS fencing.reject_term_conflict(text, bigint, text, text);   -- superseded: now names the table

-- One term, one leader. Terms are unique per coordinator, but a coordinator rebuilt from nothing can issue a term
-- number again (to a second leader, while the first still believes it holds it). The mark remembers who advanced
-- it; a different leader offering the same term is rejected like a stale one, so (term, leader) is unique in the
-- database whatever the coordinator forgot. Writers that give no leader id opt out of this check.
CREATE OR REPLACE FUNCTION fencing.reject_term_conflict(p_resource text, p_term bigint, p_leader_id text, p_holder text,
                                                        p_table text DEFAULT NULL, p_operation text DEFAULT 'ENTER')
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  PERFORM fencing.reject('FL001', 'term_conflict', p_resource, p_term, p_leader_id, p_table, p_operation,
    format('fencing: term %s for resource %s is already held by leader %s; leader %s cannot use it too (did the coordinator lose its history? raise its term floor above %s)',
           p_term, p_resource, p_holder, p_leader_id, p_term));
END
$fn$;

-- The leader id a term is accepted with is stored with the mark (high_water_mark.leader_id, at most 200 characters).
CREATE OR REPLACE FUNCTION fencing.leader_id_fits(p_leader_id text)
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$ SELECT coalesce(length(p_leader_id) <= 200, true) $fn$;

-- FL003 naming the property, the limit and the length when the leader id cannot be accepted.
CREATE OR REPLACE FUNCTION fencing.check_leader_id(p_leader_id text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  IF NOT fencing.leader_id_fits(p_leader_id) THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing: leader_id (fencing.leader_id, or the leader id argument) is %s characters long, at most 200 are allowed',
                       length(p_leader_id));
  END IF;
END
$fn$;

-- Plans: PL/pgSQL keeps a statement's plan for the server session, a LANGUAGE sql function with SET plans it at every
-- call; and pg_stat_activity is a view joining pg_database and pg_authid, while the advance needs only pid and
-- backend_start, which pg_stat_get_activity() returns as they are (the same rows: the view's joins are outer joins).
-- Measured on a new leader's first advance in a warmed server session: about 5 ms less (docs/benchmarks.md).

-- Does this backend hold the resource's shared advisory lock (pg_locks cannot tell session from transaction level)?
-- Used only to never take a second session lock; who is entered is decided by the setting and the registry.
CREATE OR REPLACE FUNCTION fencing.holds_share(p_key bigint)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  RETURN EXISTS (SELECT 1 FROM pg_locks l
                  WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.classid = 1178946115::oid
                    AND l.objid = p_key::oid AND l.objsubid = 2 AND l.mode = 'ShareLock' AND l.granted);
END
$fn$;

-- The empty temporary table every session entering touches (see mark_entered), created on this session if absent. The
-- one definition of it: mark_entered calls it, and so does the writer's warm start, ahead of a new leader's first
-- entering (it is the largest single step of that entering on a loaded machine: catalog writes and a new file). Runs
-- as its caller: it does nothing a role with TEMP on the database could not do itself.
CREATE OR REPLACE FUNCTION fencing.session_entering_table()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_rel pg_catalog.pg_class%ROWTYPE;
BEGIN
  SELECT c.* INTO v_rel FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass('pg_temp.fencing_session_entering');
  IF NOT FOUND THEN
    CREATE TEMPORARY TABLE fencing_session_entering (resource text);
    RETURN;
  END IF;
  -- The session's temporary schema belongs to whoever logged in, and mark_entered reads this relation with the
  -- fencing schema owner's rights: a view, rules, row-level security or another table access method of the
  -- application's would run its code as the owner (e.g. lowering the mark). Only a plain heap table is read.
  IF v_rel.relkind <> 'r' OR v_rel.relhasrules OR v_rel.relrowsecurity
     OR v_rel.relam IS DISTINCT FROM (SELECT a.oid FROM pg_catalog.pg_am a WHERE a.amname = 'heap') THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing: pg_temp.fencing_session_entering is not a plain temporary table (relkind %s, rules %s, row-level security %s); a session entering reads it',
                       v_rel.relkind, v_rel.relhasrules, v_rel.relrowsecurity),
      HINT = 'DROP it in this session (it is the fencing library''s), then enter again.';
  END IF;
END
$fn$;

-- Marks this backend entered for the resource at the term, in the given scope (the last step of every entering).
CREATE OR REPLACE FUNCTION fencing.mark_entered(p_resource text, p_key bigint, p_term bigint, p_transaction_scoped boolean)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  IF p_transaction_scoped THEN
    PERFORM pg_advisory_xact_lock_shared(1178946115, p_key::integer);    -- ours already, or granted at once
    PERFORM set_config('fencing.entered_' || p_key, p_term::text, true);
  ELSE
    -- A session entering must never be prepared: PREPARE keeps the session setting like a commit, while ROLLBACK
    -- PREPARED drops the registration, leaving an entered backend nobody knows of. PostgreSQL refuses to PREPARE a
    -- transaction that touched a temporary table, and no client can take that back (unlike a lock it can release),
    -- so the entering touches one. (The writer's warm start creates it ahead, in session scope only.)
    PERFORM fencing.session_entering_table();
    PERFORM 1 FROM ONLY pg_temp.fencing_session_entering LIMIT 1;    -- ONLY: no inheritance child of the session's
    PERFORM pg_stat_clear_snapshot();
    INSERT INTO fencing.entered_session AS e (resource, pid, backend_start, term)
    VALUES (p_resource, pg_backend_pid(), (SELECT a.backend_start FROM pg_stat_get_activity(pg_backend_pid()) a), p_term)
    ON CONFLICT (resource, pid) DO UPDATE SET backend_start = excluded.backend_start, term = excluded.term, entered_at = clock_timestamp();
    PERFORM set_config('fencing.entered_' || p_key, p_term::text, false);
  END IF;
END
$fn$;

-- The value of fencing.warm_up that makes an advance in this transaction a warm-up: the transaction's start in
-- microseconds. A value left on a server session by an earlier transaction (a session-level SET, e.g. by another
-- client of a transaction pooler) names no later transaction and is ignored, so nobody can make a session refuse
-- advances.
CREATE OR REPLACE FUNCTION fencing.warm_up_token()
RETURNS text
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
  SELECT (extract(epoch FROM now()) * 1000000)::bigint::text
$fn$;
COMMENT ON FUNCTION fencing.warm_up_token() IS
  'The value of fencing.warm_up (SET LOCAL) that makes an advance in this transaction read its path only and refuse with FL012.';

-- Moves the mark of p_resource up to p_term (called by enter_at with the mark read below p_term). Returns p_term, or
-- the higher mark when another advance got there first (stale). Every wait is bounded by advance_timeout.
DROP FUNCTION IF EXISTS fencing.clear_fence_squatters(bigint);   -- superseded
DROP FUNCTION IF EXISTS fencing.clear_fence_squatters(bigint, boolean);

-- Terminates every backend that holds the resource's key exclusively without being an advance (no SHARE lock on
-- fencing_private.advancing in the same read of pg_locks), or is queued for it exclusively (an advance never queues:
-- it only tries). Returns how many were signalled. Squatters are looked for twice, 20 ms apart, and those of the
-- second look are terminated: an advance ending releases its locks one by one, and is not taken for a squatter unless
-- both looks catch it so (microseconds each). Not only the backends seen twice: squatters can hand the key on among
-- themselves (a release grants it to the next one queued), so that no backend is seen twice. A superuser's backend cannot be terminated by the owner and is
-- left alone (administrators are out of scope); a prepared transaction has no backend (the advance's FL005 names it).
CREATE OR REPLACE FUNCTION fencing.clear_fence_squatters(p_key bigint)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_db       oid := (SELECT oid FROM pg_database WHERE datname = current_database());
  v_marker   oid := 'fencing_private.advancing'::regclass;
  v_suspects integer[];
  v_pid      integer;
  v_killed   integer := 0;
BEGIN
  FOR v_round IN 1..2 LOOP
    -- One read: the key and the mark (SHARE is never a fast-path lock) both sit in the main lock table, which pg_locks
    -- reads whole under all its partition locks.
    WITH locks AS MATERIALIZED (SELECT * FROM pg_locks)
    SELECT array_agg(DISTINCT k.pid) INTO v_suspects FROM locks k
     WHERE k.locktype = 'advisory' AND k.database = v_db AND k.classid = 1178946115::oid AND k.objid = p_key::oid
       AND k.objsubid = 2 AND k.mode = 'ExclusiveLock' AND k.pid IS NOT NULL AND k.pid <> pg_backend_pid()
       AND (NOT k.granted
            OR NOT EXISTS (SELECT 1 FROM locks a
                            WHERE a.locktype = 'relation' AND a.database = v_db AND a.relation = v_marker
                              AND a.pid = k.pid AND a.mode = 'ShareLock' AND a.granted));
    IF v_suspects IS NULL THEN
      RETURN 0;
    END IF;
    IF v_round = 1 THEN
      PERFORM pg_sleep(0.02);
    END IF;
  END LOOP;                              -- v_suspects: the second look's
  FOREACH v_pid IN ARRAY v_suspects LOOP
    BEGIN
      IF pg_terminate_backend(v_pid) THEN
        v_killed := v_killed + 1;
        RAISE LOG 'fencing: terminated backend % holding or awaiting fence lock key % exclusively without advancing', v_pid, p_key;
      END IF;
    EXCEPTION WHEN insufficient_privilege THEN
      NULL;
    END;
  END LOOP;
  RETURN v_killed;
END
$fn$;

-- Takes the resource's shared fence lock (session- or transaction-level), waiting only for a real advance: squatters
-- in the way are terminated (clear_fence_squatters). It waits in steps of at most 200 ms and looks for squatters
-- between them, within the caller's lock_timeout (then 55P03, as a plain lock wait would end); while it is queued, a
-- squatter cannot hand the key to another one without letting it in first.
CREATE OR REPLACE FUNCTION fencing.take_fence_share(p_key bigint, p_session boolean)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_saved    text := current_setting('lock_timeout');
  v_deadline timestamptz := CASE WHEN current_setting('lock_timeout')::interval = interval '0' THEN NULL
                                 ELSE clock_timestamp() + current_setting('lock_timeout')::interval END;
  v_taken    boolean := false;
BEGIN
  LOOP
    BEGIN
      PERFORM set_config('lock_timeout', CASE WHEN v_deadline IS NULL THEN 200
        ELSE greatest(1, least(200, (extract(epoch FROM v_deadline - clock_timestamp()) * 1000)::bigint)) END::text, true);
      IF p_session THEN
        PERFORM pg_advisory_lock_shared(1178946115, p_key::integer);
      ELSE
        PERFORM pg_advisory_xact_lock_shared(1178946115, p_key::integer);   -- kept: the block ends normally
      END IF;
      v_taken := true;
    EXCEPTION WHEN lock_not_available THEN
      NULL;                                  -- the block is undone, lock_timeout with it
    END;
    PERFORM set_config('lock_timeout', v_saved, true);
    EXIT WHEN v_taken;
    IF v_deadline IS NOT NULL AND clock_timestamp() >= v_deadline THEN
      RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
        MESSAGE = format('fencing: the fence lock of key %s stayed taken past lock_timeout %s (an advance in flight, or a prepared transaction holding it: see pg_locks and pg_prepared_xacts)',
                         p_key, v_saved);
    END IF;
    PERFORM fencing.clear_fence_squatters(p_key);
  END LOOP;
END
$fn$;

CREATE OR REPLACE FUNCTION fencing.advance(p_resource text, p_key bigint, p_term bigint, p_leader_id text,
                                           p_table text, p_operation text)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  c_ns        constant integer := 1178946115;
  v_timeout   interval := coalesce((SELECT value::interval FROM fencing.settings WHERE name = 'advance_timeout'), interval '5 seconds');
  v_deadline  timestamptz := clock_timestamp() + v_timeout;
  v_old_lt    text := current_setting('lock_timeout');
  v_db        oid := (SELECT oid FROM pg_database WHERE datname = current_database());
  v_mark      bigint;
  v_holder    text;
  v_pid       integer;
  v_killed    integer := 0;
  v_waiting   integer[];
  v_prepared  text;
  v_left_ms   bigint;
BEGIN
  -- 0. A warm-up (fencing.warm_up = fencing.warm_up_token(), set by the writer's warm start in a transaction it rolls
  --    back): a new leader's
  --    first advance runs in a server session that has never compiled these functions nor read the catalogs they
  --    read, which costs more than the advance itself. Read what steps 1-5 read, lock and change nothing, terminate
  --    no one, and fail (FL012) so that no caller can mistake it for an advance. This branch returns before step 1.
  IF coalesce(current_setting('fencing.warm_up', true), '') <> ''
     AND current_setting('fencing.warm_up', true) = fencing.warm_up_token() THEN
    PERFORM 1 FROM pg_locks l
     WHERE l.locktype = 'advisory' AND l.database = v_db AND l.classid = c_ns::oid AND l.objid = p_key::oid
       AND l.objsubid = 2 AND l.granted AND l.pid IS DISTINCT FROM pg_backend_pid();
    SELECT highest_accepted, leader_id INTO v_mark, v_holder FROM fencing.high_water_mark WHERE resource = p_resource;
    PERFORM pg_stat_clear_snapshot();
    PERFORM e.pid FROM fencing.entered_session e JOIN pg_stat_get_activity(NULL) a ON a.pid = e.pid
      WHERE e.resource = p_resource AND e.pid <> pg_backend_pid()
        AND (e.backend_start IS NULL OR a.backend_start IS NULL OR a.backend_start = e.backend_start);
    v_prepared := fencing.prepared_holding(p_resource, p_key, true);
    PERFORM 1 FROM fencing.term_history h WHERE h.resource = p_resource AND h.term = p_term;
    RAISE EXCEPTION USING ERRCODE = 'FL012',
      MESSAGE = format('fencing: %s was not advanced to term %s: fencing.warm_up names this transaction (a warm-up only reads the advance''s path)',
                       p_resource, p_term),
      HINT = 'Reset fencing.warm_up to advance.';
  END IF;

  -- 1. The exclusive lock: no other backend holds the shared one (session- or transaction-level) once we have it.
  --    First the mark of an advance in flight, which nobody else can take (V8__fencing_advancing.sql). A lock on the
  --    whole table (a DBA's VACUUM FULL, LOCK TABLE) is waited for within advance_timeout, whatever the caller's
  --    lock_timeout (none in psql or behind a pooler).
  v_left_ms := greatest(1, (extract(epoch FROM v_deadline - clock_timestamp()) * 1000)::bigint);
  PERFORM set_config('lock_timeout', v_left_ms::text, true);
  BEGIN
    -- SHARE, not a weaker mode: weak relation locks are kept in each backend's fast-path slots, which pg_locks reads
    -- apart from the main lock table, so one read could show this backend holding the key but not this lock.
    LOCK TABLE fencing_private.advancing IN SHARE MODE;
  EXCEPTION WHEN lock_not_available THEN
    RAISE EXCEPTION USING ERRCODE = 'FL005',
      MESSAGE = format('fencing: cannot advance %s to term %s: fencing_private.advancing stayed locked by another transaction after advance_timeout %s',
                       p_resource, p_term, v_timeout),
      HINT = 'A VACUUM FULL, ALTER TABLE or LOCK TABLE on fencing_private.advancing holds or awaits a conflicting lock; see pg_locks.';
  END;
  PERFORM set_config('lock_timeout', v_old_lt, true);
  LOOP
    EXIT WHEN pg_try_advisory_xact_lock(c_ns, p_key::integer);
    IF clock_timestamp() >= v_deadline THEN
      v_prepared := fencing.prepared_holding(p_resource, p_key, false);
      RAISE EXCEPTION USING ERRCODE = 'FL005',
        MESSAGE = format('fencing: cannot advance %s to term %s: %s still hold the fence after advance_timeout %s', p_resource, p_term,
                         CASE WHEN v_prepared IS NULL THEN 'sessions of older terms' ELSE format('prepared transaction(s) %s', v_prepared) END, v_timeout),
        HINT = CASE WHEN v_prepared IS NULL THEN 'See fencing.entered_sessions; raise fencing.settings advance_timeout if backends need longer to exit.'
                    ELSE 'A prepared transaction of an older term must be resolved first: COMMIT PREPARED or ROLLBACK PREPARED it (its transaction manager normally does).' END;
    END IF;
    -- Whoever holds or awaits the key exclusively without being an advance is squatting: terminated (not counted in
    -- term_history: not a session of an older term).
    PERFORM fencing.clear_fence_squatters(p_key);
    -- While another advance is in flight (it holds the exclusive lock and the mark), wait for it instead of
    -- interfering. A squatter on its way out, a prepared one or a superuser's is not one: shared holders are
    -- terminated meanwhile (FL005 names prepared holders at the deadline).
    IF NOT EXISTS (SELECT 1 FROM pg_locks l
                    WHERE l.locktype = 'advisory' AND l.database = v_db AND l.classid = c_ns::oid AND l.objid = p_key::oid
                      AND l.objsubid = 2 AND l.mode = 'ExclusiveLock' AND l.granted AND l.pid IS DISTINCT FROM pg_backend_pid()
                      AND EXISTS (SELECT 1 FROM pg_locks a
                                   WHERE a.locktype = 'relation' AND a.database = v_db AND a.pid = l.pid
                                     AND a.relation = 'fencing_private.advancing'::regclass AND a.mode = 'ShareLock'
                                     AND a.granted)) THEN
      IF (SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = p_resource) >= p_term THEN
        RETURN (SELECT highest_accepted FROM fencing.high_water_mark WHERE resource = p_resource);   -- someone got there first
      END IF;
      FOR v_pid IN
        SELECT l.pid FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.database = v_db AND l.classid = c_ns::oid AND l.objid = p_key::oid
           AND l.objsubid = 2 AND l.mode = 'ShareLock' AND l.granted AND l.pid <> pg_backend_pid()
      LOOP
        v_killed := v_killed + fencing.terminate_backend(v_pid, p_resource, p_term);
      END LOOP;
    END IF;
    PERFORM pg_sleep(0.005);
  END LOOP;

  -- 2. The mark row: entering transactions still open (they hold FOR SHARE until they end) must end first.
  v_left_ms := greatest(1, (extract(epoch FROM v_deadline - clock_timestamp()) * 1000)::bigint);
  PERFORM set_config('lock_timeout', v_left_ms::text, true);
  BEGIN
    SELECT highest_accepted, leader_id INTO v_mark, v_holder FROM fencing.high_water_mark WHERE resource = p_resource FOR NO KEY UPDATE;
  EXCEPTION WHEN lock_not_available THEN
    v_prepared := (SELECT string_agg(gid, ', ') FROM pg_prepared_xacts WHERE database = current_database());
    RAISE EXCEPTION USING ERRCODE = 'FL005',
      MESSAGE = format('fencing: cannot advance %s to term %s: the mark row stayed locked by another transaction after advance_timeout %s%s',
                       p_resource, p_term, v_timeout, CASE WHEN v_prepared IS NULL THEN '' ELSE format(' (prepared transactions in this database: %s)', v_prepared) END),
      HINT = 'An entering transaction is still open (e.g. REPEATABLE READ, or prepared); see pg_stat_activity / pg_prepared_xacts.';
  END;
  PERFORM set_config('lock_timeout', v_old_lt, true);
  IF v_mark > p_term THEN
    RETURN v_mark;                                 -- stale after all
  END IF;
  IF v_mark = p_term THEN
    IF v_holder IS DISTINCT FROM p_leader_id AND v_holder IS NOT NULL AND p_leader_id IS NOT NULL THEN
      PERFORM fencing.reject_term_conflict(p_resource, p_term, p_leader_id, v_holder, p_table, p_operation);
    END IF;
    RETURN p_term;                                 -- another advance reached our term: enter at it
  END IF;

  -- 3. Every registered backend of the resource, whatever advisory locks it released; then wait until each is gone.
  --    pg_stat_activity is a snapshot for the rest of the transaction once read: take a fresh one.
  PERFORM pg_stat_clear_snapshot();
  FOR v_pid IN
    SELECT e.pid FROM fencing.entered_session e JOIN pg_stat_get_activity(NULL) a ON a.pid = e.pid
     WHERE e.resource = p_resource AND e.pid <> pg_backend_pid()
       AND (e.backend_start IS NULL OR a.backend_start IS NULL OR a.backend_start = e.backend_start)
  LOOP
    v_killed := v_killed + fencing.terminate_backend(v_pid, p_resource, p_term);
    v_waiting := v_waiting || v_pid;
  END LOOP;
  WHILE v_waiting IS NOT NULL LOOP
    PERFORM pg_stat_clear_snapshot();            -- pg_stat_activity is otherwise a snapshot for the whole transaction
    v_waiting := (SELECT array_agg(a.pid) FROM pg_stat_get_activity(NULL) a WHERE a.pid = ANY (v_waiting));
    EXIT WHEN v_waiting IS NULL;
    IF clock_timestamp() >= v_deadline THEN
      RAISE EXCEPTION USING ERRCODE = 'FL005',
        MESSAGE = format('fencing: cannot advance %s to term %s: backend(s) %s of older terms did not exit within advance_timeout %s',
                         p_resource, p_term, array_to_string(v_waiting, ', '), v_timeout);
    END IF;
    PERFORM pg_sleep(0.005);
  END LOOP;

  -- 4. Prepared transactions keep their locks but have no backend to terminate: one that wrote a protected table of
  --    the resource (or entered it) must be resolved before the mark moves. ROLLBACK PREPARED cannot run inside a
  --    transaction, so wait; a prepared older-term transaction that commits before the advance breaks nothing.
  LOOP
    v_prepared := fencing.prepared_holding(p_resource, p_key, true);
    EXIT WHEN v_prepared IS NULL;
    IF clock_timestamp() >= v_deadline THEN
      RAISE EXCEPTION USING ERRCODE = 'FL005',
        MESSAGE = format('fencing: cannot advance %s to term %s: prepared transaction(s) %s of an older term still hold writes to its protected tables after advance_timeout %s',
                         p_resource, p_term, v_prepared, v_timeout),
        HINT = 'COMMIT PREPARED or ROLLBACK PREPARED them (their transaction manager normally does), then retry.';
    END IF;
    PERFORM pg_sleep(0.005);
  END LOOP;

  -- 5. Move the mark. Registrations of older terms are void now: their backends are gone.
  UPDATE fencing.high_water_mark SET highest_accepted = p_term, leader_id = p_leader_id, updated_at = clock_timestamp()
   WHERE resource = p_resource;
  INSERT INTO fencing.term_history (resource, term, previous_term, leader_id, terminated_sessions, application_name)
  VALUES (p_resource, p_term, v_mark, p_leader_id, v_killed, current_setting('application_name'));
  DELETE FROM fencing.entered_session WHERE resource = p_resource AND pid <> pg_backend_pid();
  -- This backend's own session entering (at an older term) is void too. A transaction-scoped entering ends with the
  -- transaction and would bring the session value back: clear it for the session, and the registration with it.
  PERFORM set_config('fencing.entered_' || p_key, '', false);
  DELETE FROM fencing.entered_session WHERE resource = p_resource AND pid = pg_backend_pid();
  RETURN p_term;
END
$fn$;

-- Prepared transactions (no backend: pid IS NULL in pg_locks; found through their transactionid lock) that hold the
-- resource's advisory lock or, with p_writes, a write lock on one of its protected tables. Their gids, or NULL.
CREATE OR REPLACE FUNCTION fencing.prepared_holding(p_resource text, p_key bigint, p_writes boolean)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  -- None prepared at all, the usual case: no need to plan the join below (about 2 ms at a server session's first
  -- advance, 1 ms at each later one, measured). Sound for step 4's wait: once step 3 is done no backend of an older
  -- term is left to prepare anything, so the set the join looks for can only shrink.
  IF NOT EXISTS (SELECT 1 FROM pg_prepared_xact()) THEN
    RETURN NULL;
  END IF;
  RETURN (SELECT string_agg(DISTINCT x.gid, ', ' ORDER BY x.gid)
    FROM pg_locks l
    JOIN pg_locks t ON t.locktype = 'transactionid' AND t.pid IS NULL AND t.virtualtransaction = l.virtualtransaction
    JOIN pg_prepared_xacts x ON x.transaction = t.transactionid
   WHERE l.pid IS NULL AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND ((l.locktype = 'advisory' AND l.classid = 1178946115::oid AND l.objid = p_key::oid AND l.objsubid = 2)
       OR (p_writes AND l.locktype = 'relation'
           AND l.mode IN ('RowExclusiveLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')
           AND l.relation IN (SELECT p.tbl::oid FROM fencing.protected_table p WHERE p.resource = p_resource))));
END
$fn$;

-- Terminates one backend of an older term for an advance; returns 1 when signalled.
CREATE OR REPLACE FUNCTION fencing.terminate_backend(p_pid integer, p_resource text, p_term bigint)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  RETURN CASE WHEN pg_terminate_backend(p_pid) THEN 1 ELSE 0 END;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE EXCEPTION USING ERRCODE = 'FL005',
    MESSAGE = format('fencing: cannot advance %s to term %s: not allowed to terminate backend %s of an older term (%s)', p_resource, p_term, p_pid, SQLERRM),
    HINT = 'The owner of the fencing functions must be a superuser or a member of pg_signal_backend and pg_read_all_stats (and the application roles must not be superusers).';
END
$fn$;

-- The one implementation of entering. Returns p_term when accepted (advancing the mark if p_term is newer), or the
-- higher accepted term when stale (nothing changed: the caller rejects and audits). p_may_advance = false: the term
-- may enter at the current mark but not move it (a fencing.term that fencing.resource does not scope to this resource).
CREATE OR REPLACE FUNCTION fencing.enter_at(p_resource text, p_term bigint, p_leader_id text, p_transaction_scoped boolean,
                                            p_may_advance boolean DEFAULT true, p_table text DEFAULT NULL,
                                            p_operation text DEFAULT 'ENTER')
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
  v_holder   text;
  v_entered  bigint;
  v_holding  boolean;
  v_jump     bigint;
  v_strict   boolean := current_setting('transaction_isolation') <> 'read committed';
BEGIN
  PERFORM fencing.check_resource_name(p_resource);
  IF p_term IS NULL OR p_term <= 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing: invalid term %s for resource %s: a term must be a positive bigint', coalesce(p_term::text, 'NULL'), p_resource);
  END IF;
  -- The leader id's length is checked only where it would be accepted (below): a stale, conflicting, unscoped or
  -- too far jumping term is rejected and audited as such whatever the id (the audit row keeps its first 200 characters).
  SELECT lock_key INTO v_key FROM fencing.high_water_mark WHERE resource = p_resource;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'FL004',
      MESSAGE = format('fencing: unknown resource %s; register it first with SELECT fencing.register_resource(%L)', p_resource, p_resource);
  END IF;

  -- Entered already (either scope): while this backend lives, the mark equals that term.
  v_entered := nullif(current_setting('fencing.entered_' || v_key, true), '')::bigint;
  IF v_entered = p_term THEN
    RETURN p_term;
  ELSIF v_entered > p_term THEN
    RETURN v_entered;                                                  -- stale
  END IF;

  IF v_entered IS NULL THEN
    IF p_transaction_scoped THEN
      PERFORM fencing.take_fence_share(v_key, false);   -- held until the transaction ends, whatever happens
      v_holding := true;
    ELSE
      v_holding := fencing.holds_share(v_key);
      IF NOT v_holding THEN
        PERFORM fencing.take_fence_share(v_key, true);
      END IF;
    END IF;
    -- A new statement: under READ COMMITTED a fresh snapshot, taken after the lock was granted. Session scope locks
    -- the row until this transaction ends (an advance waits for it); REPEATABLE READ / SERIALIZABLE turn an advance
    -- committed after the snapshot into a serialization failure.
    IF v_strict OR NOT p_transaction_scoped THEN
      SELECT highest_accepted, leader_id INTO v_mark, v_holder FROM fencing.high_water_mark WHERE resource = p_resource FOR SHARE;
    ELSE
      SELECT highest_accepted, leader_id INTO v_mark, v_holder FROM fencing.high_water_mark WHERE resource = p_resource;
    END IF;
    IF v_mark = p_term THEN
      IF (v_holder IS DISTINCT FROM p_leader_id AND v_holder IS NOT NULL AND p_leader_id IS NOT NULL)
         OR NOT fencing.leader_id_fits(p_leader_id) THEN
        IF NOT p_transaction_scoped AND NOT v_holding THEN
          PERFORM pg_advisory_unlock_shared(c_ns, v_key::integer);   -- a session lock survives the abort below
        END IF;
        IF v_holder IS DISTINCT FROM p_leader_id AND v_holder IS NOT NULL AND p_leader_id IS NOT NULL THEN
          PERFORM fencing.reject_term_conflict(p_resource, p_term, p_leader_id, v_holder, p_table, p_operation);
        END IF;
        PERFORM fencing.check_leader_id(p_leader_id);                -- too long, and the term is the mark's: FL003
      END IF;
      PERFORM fencing.mark_entered(p_resource, v_key, p_term, p_transaction_scoped);
      RETURN p_term;
    END IF;
    IF NOT p_transaction_scoped AND NOT v_holding THEN
      -- Give the session lock back: nothing is entered, so nothing claims it (and an advancer must not wait for us).
      PERFORM pg_advisory_unlock_shared(c_ns, v_key::integer);
    END IF;
    IF v_mark > p_term THEN
      RETURN v_mark;                                                   -- stale
    END IF;
  ELSE
    SELECT highest_accepted INTO v_mark FROM fencing.high_water_mark WHERE resource = p_resource;
  END IF;

  -- p_term is newer than the mark.
  IF NOT p_may_advance THEN
    PERFORM fencing.reject('FL010', 'unscoped_term', p_resource, p_term, p_leader_id, p_table, p_operation,
      format('fencing: fencing.term %s would advance resource %s from %s, but fencing.resource does not name it; a transaction''s term applies to one resource',
             p_term, p_resource, v_mark),
      format('SET LOCAL fencing.resource = %L in the transaction (or call fencing.enter(%L, %s, <leader>)) to advance it.', p_resource, p_resource, p_term));
  END IF;
  IF v_strict THEN
    -- The advance must see every entering that committed while it waited (the registry, read after the mark-row lock);
    -- a REPEATABLE READ / SERIALIZABLE snapshot taken before the wait would miss them.
    RAISE EXCEPTION USING ERRCODE = 'FL011',
      MESSAGE = format('fencing: cannot advance %s to term %s in a %s transaction: an advance runs under READ COMMITTED',
                       p_resource, p_term, upper(current_setting('transaction_isolation'))),
      HINT = 'Enter the new term in its own READ COMMITTED transaction first (the writer does), then run this transaction.';
  END IF;
  v_jump := coalesce((SELECT value::bigint FROM fencing.settings WHERE name = 'max_term_jump'), 1000000);
  IF p_term - v_mark > v_jump THEN
    PERFORM fencing.reject('FL009', 'term_jump', p_resource, p_term, p_leader_id, p_table, p_operation,
      format('fencing: term %s for resource %s is %s above the highest accepted term %s; max_term_jump is %s', p_term, p_resource, p_term - v_mark, v_mark, v_jump),
      'Terms from the election move by small steps. If this jump is intended, an administrator raises fencing.settings max_term_jump.');
  END IF;
  PERFORM fencing.check_leader_id(p_leader_id);                       -- the advance stores it with the mark
  v_mark := fencing.advance(p_resource, v_key, p_term, p_leader_id, p_table, p_operation);
  IF v_mark = p_term THEN
    PERFORM fencing.mark_entered(p_resource, v_key, p_term, p_transaction_scoped);
    IF NOT p_transaction_scoped AND NOT fencing.holds_share(v_key) THEN
      PERFORM pg_advisory_lock_shared(c_ns, v_key::integer);       -- we hold the exclusive one: granted at once
    END IF;
  END IF;
  RETURN v_mark;
END
$fn$;

CREATE OR REPLACE FUNCTION fencing.enter(p_resource text, p_term bigint, p_leader_id text DEFAULT NULL)
RETURNS bigint
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$ SELECT fencing.enter_at(p_resource, p_term, p_leader_id, false) $fn$;
COMMENT ON FUNCTION fencing.enter(text, bigint, text) IS
  'Enters this session (until it ends) for the resource at the term. Returns the term when accepted (advancing the mark if the term is newer), or the higher accepted term when stale (nothing changed: the caller rejects and audits). Raises FL003 (bad input), FL004 (unknown resource), FL005 (advance timed out), FL009 (term jump too large). Not behind a transaction pooler: use enter_transaction there.';

-- Transaction scope runs once per transaction behind a pooler, so its common case (the mark equals the term) is kept
-- lean: no SECURITY DEFINER and no SET clause (each costs a search-path recomputation per call), every name and
-- operator schema-qualified (the caller's search_path must not matter), and nothing a fencing_app role could not do
-- itself (read the mark, take the shared lock, set the setting). Every other case goes to enter_at(). The lock is
-- taken in one statement and the mark read in the next: under READ COMMITTED that read has a snapshot taken after the
-- lock was granted, i.e. after any advance that held the exclusive lock has committed.
CREATE OR REPLACE FUNCTION fencing.enter_transaction(p_resource text, p_term bigint, p_leader_id text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
AS $fn$
DECLARE
  v_key bigint;
  v_set text;
BEGIN
  -- Only a valid term takes the fast path: a resource nobody advanced yet has mark 0, and term 0 must not enter it
  -- (enter_at refuses terms below 1 with FL003).
  SELECT m.lock_key INTO v_key FROM fencing.high_water_mark m
   WHERE m.resource OPERATOR(pg_catalog.=) p_resource AND p_term OPERATOR(pg_catalog.>) 0
     AND pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.=) 'read committed';
  IF v_key IS NOT NULL THEN
    -- Taken at once unless an advance, or a squatter take_fence_share clears, holds the key.
    IF NOT pg_catalog.pg_try_advisory_xact_lock_shared(1178946115, v_key::integer) THEN
      PERFORM fencing.take_fence_share(v_key, false);
    END IF;
    -- A new statement, so a new snapshot: taken after the lock was granted.
    SELECT pg_catalog.set_config('fencing.entered_' OPERATOR(pg_catalog.||) v_key::text, p_term::text, true) INTO v_set
      FROM fencing.high_water_mark m
     WHERE m.resource OPERATOR(pg_catalog.=) p_resource AND m.highest_accepted OPERATOR(pg_catalog.=) p_term
       AND (m.leader_id IS NULL OR p_leader_id IS NULL OR m.leader_id OPERATOR(pg_catalog.=) p_leader_id);
    IF v_set IS NOT NULL THEN
      RETURN p_term;
    END IF;
  END IF;
  RETURN fencing.enter_at(p_resource, p_term, p_leader_id, true);
END
$fn$;
COMMENT ON FUNCTION fencing.enter_transaction(text, bigint, text) IS
  'Enters this transaction only (nothing is left on the session afterwards: safe behind PgBouncer transaction pooling). Same results and errors as fencing.enter().';

-- The writer's last statement before its COMMIT, sent in the same message, so that the COMMIT runs only if this
-- returns: the transaction must still be the one the writer began. A transaction's start (transaction_timestamp()) is
-- fixed when it starts and taken anew by the next one on the backend, whatever ended the first (COMMIT AND CHAIN,
-- COMMIT then BEGIN, a commit through a connection the writer does not guard), so the start the writer read in its
-- own first statement identifies its transaction. Raises FL013 otherwise. Runs as its caller and only reads its
-- caller's own transaction start; lean like enter_transaction (no SET clause, every name schema-qualified).
CREATE OR REPLACE FUNCTION fencing.check_writers_transaction(p_started timestamptz)
RETURNS void
LANGUAGE plpgsql
VOLATILE
AS $fn$
BEGIN
  IF p_started IS NULL OR pg_catalog.transaction_timestamp() OPERATOR(pg_catalog.<>) p_started THEN
    RAISE EXCEPTION USING ERRCODE = 'FL013',
      MESSAGE = pg_catalog.format('fencing: the transaction about to commit (started %s) is not the one the writer began (started %s): the work ended that one itself',
                                  pg_catalog.transaction_timestamp(), p_started);
  END IF;
END
$fn$;

REVOKE EXECUTE ON FUNCTION fencing.rejection_detail(text, bigint, bigint, boolean, text),
  fencing.leader_id_fits(text),
  fencing.check_leader_id(text),
  fencing.reject(text, text, text, bigint, text, text, text, text, text),
  fencing.reject_term_conflict(text, bigint, text, text, text, text),
  fencing.holds_share(bigint),
  fencing.mark_entered(text, bigint, bigint, boolean),
  fencing.session_entering_table(),
  fencing.check_writers_transaction(timestamptz),
  fencing.advance(text, bigint, bigint, text, text, text),
  fencing.terminate_backend(integer, text, bigint),
  fencing.clear_fence_squatters(bigint),
  fencing.take_fence_share(bigint, boolean),
  fencing.prepared_holding(text, bigint, boolean),
  fencing.enter_at(text, bigint, text, boolean, boolean, text, text),
  fencing.enter_transaction(text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fencing.enter_transaction(text, bigint, text) TO fencing_app;
-- enter_transaction() runs as its caller: it takes the fence lock through take_fence_share() when the key is taken.
GRANT EXECUTE ON FUNCTION fencing.take_fence_share(bigint, boolean) TO fencing_app;
REVOKE EXECUTE ON FUNCTION fencing.warm_up_token() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fencing.warm_up_token() TO fencing_app;
-- enter_transaction() runs as its caller and hands every case but the common one to enter_at().
GRANT EXECUTE ON FUNCTION fencing.enter_at(text, bigint, text, boolean, boolean, text, text) TO fencing_app;
-- Both run as their caller and do nothing it could not do itself: the writer's warm start and its check before COMMIT.
GRANT EXECUTE ON FUNCTION fencing.session_entering_table(), fencing.check_writers_transaction(timestamptz) TO fencing_app;
