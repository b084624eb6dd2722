-- Fenceline: entering a transaction at a term, and advancing the mark.
-- Repeatable migration: the one current definition of these functions. Flyway re-applies it whenever it changes
-- (after every versioned migration), so edit the function here, never in an applied V migration.
--
-- SAFETY ARGUMENT (the whole design; docs/fencing.md states it too, model/fence.pml checks it):
--  * Every resource r has a row in fencing.high_water_mark, "the mark", and a lock_key. Its FENCE LOCK is the
--    transaction-level advisory lock K(r) = (1178946115, lock_key). The mark only moves up, only in fencing.advance(),
--    only while the advancing transaction holds K(r) EXCLUSIVELY, which it keeps until it ends.
--  * A transaction ENTERS r at term t (fencing.enter_at(), or the native guard's identical common case) by taking
--    K(r) SHARED and then reading mark = t with a snapshot taken after the lock was granted. A write to a protected
--    table of r is allowed only in a transaction entered at its term (or by an audited break-glass).
--  * A transaction entered at t holds K(r) from before its read of the mark until it ends. An advance to t' > t holds
--    K(r) exclusively from before it moves the mark until its commit is visible (PostgreSQL releases locks after
--    that). The two intervals cannot overlap. Either the t-transaction ended before the advance got K(r) — it
--    committed, if at all, before any transaction at t' — or it got K(r) after the advance committed, read a mark
--    >= t' > t and was rejected. Hence NO TRANSACTION CARRYING TERM t COMMITS AFTER ONE CARRYING A HIGHER TERM
--    COMMITTED, for each resource.
--  * Nothing else is trusted, and nothing outlives the transaction. No client can release a transaction-level
--    advisory lock before its transaction ends (pg_advisory_unlock* release session-level locks only); PREPARE
--    TRANSACTION keeps it (an advance waits for COMMIT/ROLLBACK PREPARED, FL005 names the gid); a savepoint rolled
--    back releases the lock together with the writes made under it (and the native guard forgets that entering).
--    A pooler hands a transaction nothing from an earlier one: the term is transaction-local (SET LOCAL).
--  * Liveness, not safety: an advance ends the transactions that hold K(r) (pg_terminate_backend), including any
--    login squatting on the key, within advance_timeout (then FL005, nothing changed). Concurrent advances of one
--    resource are serialised by a row lock on the mark, which only the owner of these functions can take: while nobody
--    holds it, whoever holds or queues for K(r) exclusively is squatting, and an entering that cannot get K(r) at once
--    terminates it (fencing.take_fence_share). An advance that waits half of advance_timeout for the row lock
--    terminates the exclusive holders of K(r): an advance left open (a frozen leader's first transaction) must not
--    stop every later one. Mistaking an advance for a squatter only aborts that advance. Nothing else keeps the row
--    locked: entering under REPEATABLE READ gives its row lock back at once.
--  * Out of scope (documented non-goals): superusers and table owners (they can disable triggers).
--
-- SQLSTATEs raised by the fencing functions (class FL):
--   FL001 stale term (offered < highest accepted), or the same term from another leader
--   FL002 write on a protected table without a term          FL003 invalid argument (term, resource, setting)
--   FL004 unknown resource (not registered)                  FL005 advance timed out (transactions of older terms,
--                                                                  or a prepared transaction, still hold the fence)
--   FL006 protect/unprotect refused                          FL007 break-glass requested outside fencing_break_glass
--   FL008 native guard unavailable                           FL009 term jump larger than max_term_jump
--   FL010 fencing.term would advance a resource that fencing.resource does not name
--   FL011 an advance asked for outside READ COMMITTED (audited)
--   FL013 the transaction the writer is about to commit is not the one it began (its work ended that one itself)
--   FL014 the writer's transaction is not READ COMMITTED, READ WRITE (a default another client left on the session)
--   55P03 (lock_not_available) protect_table/unprotect_table could not get its lock within lock_timeout
--   42501 a term offered by a session user outside fencing_app
--
-- Advisory-lock namespace: 'FENC' as an int4. pg_locks shows it as classid = 1178946115, objid = lock_key, objsubid = 2.

DROP FUNCTION IF EXISTS fencing.enter_at(text, bigint, text, boolean, boolean, text, text);   -- development versions

-- The one format of a rejection's DETAIL (the writer reads it back: WriterEngine).
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
  IF p_reason = 'stale_term' AND v_mark <= p_offered THEN
    v_mark := NULL;   -- a REPEATABLE READ snapshot older than the mark: unknown here (the audit row has it)
  END IF;
  RAISE EXCEPTION USING ERRCODE = p_sqlstate, MESSAGE = p_message,
    DETAIL = fencing.rejection_detail(p_resource, p_offered, v_mark, v_audited, p_table),
    HINT = coalesce(p_hint, '');
END
$fn$;

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

-- FL003, audited, naming the property, the limit and the length when the leader id cannot be accepted (it is stored
-- with the mark: high_water_mark.leader_id, at most 200 characters; the audit row keeps the first 200).
DROP FUNCTION IF EXISTS fencing.check_leader_id(text);
CREATE OR REPLACE FUNCTION fencing.check_leader_id(p_resource text, p_term bigint, p_leader_id text, p_table text, p_operation text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  IF length(p_leader_id) > 200 THEN
    PERFORM fencing.reject('FL003', 'invalid_leader_id', p_resource, p_term, p_leader_id, p_table, p_operation,
      format('fencing: leader_id (fencing.leader_id, or the leader id argument) is %s characters long, at most 200 are allowed',
             length(p_leader_id)));
  END IF;
END
$fn$;

DROP FUNCTION IF EXISTS fencing.warm_up_token();   -- the warm start advances a resource of its own instead

-- Prepared transactions holding the resource's fence lock (no backend: pid IS NULL in pg_locks; found through their
-- transactionid lock). Their gids, or NULL.
CREATE OR REPLACE FUNCTION fencing.prepared_holding(p_key bigint)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
  SELECT string_agg(DISTINCT x.gid, ', ' ORDER BY x.gid)
    FROM pg_locks l
    JOIN pg_locks t ON t.locktype = 'transactionid' AND t.pid IS NULL AND t.virtualtransaction = l.virtualtransaction
    JOIN pg_prepared_xacts x ON x.transaction = t.transactionid
   WHERE l.pid IS NULL AND l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND l.classid = 1178946115::oid AND l.objid = p_key::oid AND l.objsubid = 2
$fn$;

-- Terminates the other backends holding the resource's fence lock (p_exclusive: in exclusive mode only; p_waiting: the
-- ones queued for it too) and returns their pids. A superuser's backend is left alone (administrators are out of
-- scope): whoever waits for it fails at its deadline. A prepared transaction has no backend (pid NULL).
CREATE OR REPLACE FUNCTION fencing.end_fence_holders(p_key bigint, p_exclusive boolean, p_waiting boolean)
RETURNS integer[]
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_pid   integer;
  v_ended integer[] := ARRAY[]::integer[];
BEGIN
  FOR v_pid IN
    SELECT DISTINCT l.pid FROM pg_locks l
     WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND l.classid = 1178946115::oid AND l.objid = p_key::oid AND l.objsubid = 2 AND l.pid <> pg_backend_pid()
       AND (l.granted OR p_waiting) AND (l.mode = 'ExclusiveLock' OR NOT p_exclusive)
  LOOP
    BEGIN
      IF pg_terminate_backend(v_pid) THEN
        v_ended := v_ended || v_pid;
      END IF;
    EXCEPTION WHEN insufficient_privilege THEN
      NULL;
    END;
  END LOOP;
  RETURN v_ended;
END
$fn$;

-- Moves the mark of p_resource up to p_term, unless another advance reached p_term or beyond first; either way it
-- returns the mark it leaves. Called by enter_at() only. Every wait is bounded by advance_timeout (then FL005 and
-- nothing changed).
DROP FUNCTION IF EXISTS fencing.advance(text, bigint, bigint, text, text, text);
CREATE OR REPLACE FUNCTION fencing.advance(p_resource text, p_key bigint, p_term bigint, p_leader_id text)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_timeout   interval := coalesce((SELECT value::interval FROM fencing.settings WHERE name = 'advance_timeout'), interval '5 seconds');
  v_deadline  timestamptz := clock_timestamp() + v_timeout;
  v_old_lt    text := current_setting('lock_timeout');
  v_mark      bigint;
  v_ended     integer[] := ARRAY[]::integer[];
  v_prepared  text;
BEGIN
  BEGIN   -- a subtransaction: when another advance got there first, its row lock is given back below
    -- 1. One advance of a resource at a time: the mark row, which only the owner of these functions can lock (the
    --    application roles have SELECT only), so no other login can pose as an advance in flight.
    --    An advance whose transaction stays open keeps it: after half of advance_timeout the exclusive holders of the
    --    fence lock are terminated (an advance left open that long belongs to a frozen leader, or will find its term
    --    stale when it retries).
    LOOP
      PERFORM set_config('lock_timeout', least(200, greatest(1, (extract(epoch FROM v_deadline - clock_timestamp()) * 1000)::bigint))::text, true);
      BEGIN
        SELECT highest_accepted INTO v_mark FROM fencing.high_water_mark WHERE resource = p_resource FOR NO KEY UPDATE;
        EXIT;
      EXCEPTION WHEN lock_not_available THEN
        IF clock_timestamp() >= v_deadline THEN
          RAISE EXCEPTION USING ERRCODE = 'FL005',
            MESSAGE = format('fencing: cannot advance %s to term %s: its mark row stayed locked after advance_timeout %s (another advance, or a lock on fencing.high_water_mark)',
                             p_resource, p_term, v_timeout),
            HINT = 'See pg_locks / pg_stat_activity for the transaction holding it.';
        END IF;
        IF clock_timestamp() >= v_deadline - v_timeout / 2 THEN
          v_ended := v_ended || fencing.end_fence_holders(p_key, true, false);
        END IF;
      END;
    END LOOP;
    PERFORM set_config('lock_timeout', v_old_lt, true);
    IF v_mark >= p_term THEN
      RAISE EXCEPTION USING ERRCODE = 'FL0A0';   -- not an error: rolls the row lock back (caught below)
    END IF;

    -- 2. The fence lock, exclusively: every other holder is a transaction of an older term (shared) or a login
    --    squatting on the key (an advance in flight would hold the mark row). Each is terminated: its open
    --    transaction aborts; one already committing finishes before its backend exits, i.e. before we get the lock.
    --    Then we queue for the lock in short steps: while we are queued, newcomers queue behind us instead of
    --    entering, and whoever took the lock between our look and our request is found at the next look.
    LOOP
      v_ended := v_ended || fencing.end_fence_holders(p_key, false, false);
      PERFORM set_config('lock_timeout', least(50, greatest(1, (extract(epoch FROM v_deadline - clock_timestamp()) * 1000)::bigint))::text, true);
      BEGIN
        PERFORM pg_advisory_xact_lock(1178946115, p_key::integer);
        EXIT;
      EXCEPTION WHEN lock_not_available THEN
        IF clock_timestamp() >= v_deadline THEN
          v_prepared := fencing.prepared_holding(p_key);
          RAISE EXCEPTION USING ERRCODE = 'FL005',
            MESSAGE = format('fencing: cannot advance %s to term %s: %s still hold its fence lock after advance_timeout %s', p_resource, p_term,
                             coalesce(format('prepared transaction(s) %s', v_prepared), 'transactions of older terms'), v_timeout),
            HINT = CASE WHEN v_prepared IS NULL
                        THEN 'The owner of the fencing functions must be allowed to terminate them (pg_signal_backend); see fencing.entered_transactions.'
                        ELSE 'A prepared transaction of an older term must be resolved first: COMMIT PREPARED or ROLLBACK PREPARED it (its transaction manager normally does).' END;
        END IF;
      END;
    END LOOP;
    PERFORM set_config('lock_timeout', v_old_lt, true);

    -- 3. Move the mark. The fence lock and the row lock stay held until this transaction ends.
    UPDATE fencing.high_water_mark SET highest_accepted = p_term, leader_id = p_leader_id, updated_at = clock_timestamp()
     WHERE resource = p_resource;
    INSERT INTO fencing.term_history (resource, term, previous_term, leader_id, terminated_sessions, application_name)
    VALUES (p_resource, p_term, v_mark, p_leader_id, (SELECT count(DISTINCT e) FROM unnest(v_ended) e),
            current_setting('application_name'));
    RETURN p_term;
  EXCEPTION WHEN SQLSTATE 'FL0A0' THEN
    RETURN v_mark;
  END;
END
$fn$;

-- The fence lock K(r), shared, for the rest of the transaction. Granted at once unless some backend holds or awaits it
-- exclusively: an advance (its mark row is locked: wait for it) or a squatter — any login may take any advisory
-- lock — which is terminated, so that it can stop no writer. Waits in steps of at most 200 ms, looking again between them, within the caller's
-- lock_timeout (then 55P03, as any lock wait ends); a prepared squatter (no backend) is waited for like an advance.
CREATE OR REPLACE FUNCTION fencing.take_fence_share(p_key bigint)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_old_lt   text := current_setting('lock_timeout');
  v_limit    interval := CASE WHEN current_setting('lock_timeout') = '0' THEN NULL ELSE current_setting('lock_timeout')::interval END;
  v_deadline timestamptz := clock_timestamp() + v_limit;
  v_advance  boolean;
  v_taken    boolean;
BEGIN
  LOOP
    -- In a block of its own, so that the lock belongs to the transaction, not to the running portal (see the guard).
    BEGIN
      v_taken := pg_try_advisory_xact_lock_shared(1178946115, p_key::integer);
    EXCEPTION WHEN OTHERS THEN
      RAISE;
    END;
    EXIT WHEN v_taken;
    -- An advance of this resource in flight holds its mark row (nobody else can lock it): then wait for it.
    BEGIN
      PERFORM 1 FROM fencing.high_water_mark WHERE lock_key = p_key FOR SHARE NOWAIT;
      RAISE EXCEPTION USING ERRCODE = 'FL0A1';   -- not an error: gives the row lock back (caught below)
    EXCEPTION
      WHEN lock_not_available THEN v_advance := true;
      WHEN SQLSTATE 'FL0A1' THEN v_advance := false;
    END;
    IF NOT v_advance THEN
      PERFORM fencing.end_fence_holders(p_key, true, true);
    END IF;
    IF v_deadline IS NOT NULL AND clock_timestamp() >= v_deadline THEN
      RAISE EXCEPTION USING ERRCODE = '55P03',
        MESSAGE = format('fencing: could not take the fence lock (1178946115, %s) within lock_timeout %s: an advance, a prepared transaction or a superuser holds it', p_key, v_old_lt);
    END IF;
    PERFORM set_config('lock_timeout', CASE WHEN v_deadline IS NULL THEN 200
                         ELSE least(200, greatest(1, (extract(epoch FROM v_deadline - clock_timestamp()) * 1000)::bigint)) END::text, true);
    BEGIN
      PERFORM pg_advisory_xact_lock_shared(1178946115, p_key::integer);
      PERFORM set_config('lock_timeout', v_old_lt, true);
      EXIT;
    EXCEPTION WHEN lock_not_available THEN
      PERFORM set_config('lock_timeout', v_old_lt, true);
    END;
  END LOOP;
END
$fn$;

-- Under REPEATABLE READ / SERIALIZABLE: did an advance of p_resource commit after this transaction's snapshot? A row
-- lock on the mark fails with a serialization failure exactly then (only an advance changes the row, always upwards).
-- The lock is given back at once (the block is rolled back either way): held, it would stop the next advance.
CREATE OR REPLACE FUNCTION fencing.mark_moved_since_snapshot(p_resource text)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
  PERFORM 1 FROM fencing.high_water_mark WHERE resource = p_resource FOR SHARE;
  RAISE EXCEPTION USING ERRCODE = 'FL0A2';   -- not an error: rolls the row lock back (caught below)
EXCEPTION
  WHEN SQLSTATE 'FL0A2' THEN
    RETURN false;
  WHEN serialization_failure THEN
    RETURN true;
END
$fn$;

-- The one implementation of entering the current transaction at a term (the native guard's common case is the same
-- two steps in C). Returns p_term when entered (advancing the mark if p_term is newer), or the higher mark when stale
-- (nothing changed: the caller rejects and audits). p_may_advance = false: the term may enter at the current mark but
-- not move it (a fencing.term that fencing.resource does not scope to this resource).
CREATE OR REPLACE FUNCTION fencing.enter_at(p_resource text, p_term bigint, p_leader_id text,
                                            p_may_advance boolean DEFAULT true, p_table text DEFAULT NULL,
                                            p_operation text DEFAULT 'ENTER')
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
  v_key     bigint;
  v_mark    bigint;
  v_holder  text;
  v_jump    bigint;
  v_strict  boolean := current_setting('transaction_isolation') <> 'read committed';
  v_unbounded boolean := current_setting('lock_timeout') = '0';
BEGIN
  PERFORM fencing.check_resource_name(p_resource);
  -- A caller without a lock_timeout (psql, a pooled session) would wait without end for a lock a fencing_app login
  -- holds or queues on the mark's table (a prepared SELECT, CREATE RULE): every wait here is bounded by
  -- advance_timeout instead, until this function returns.
  IF v_unbounded THEN
    PERFORM set_config('lock_timeout', '5s', true);
    PERFORM set_config('lock_timeout', coalesce((SELECT value FROM fencing.settings WHERE name = 'advance_timeout'), '5s'), true);
  END IF;
  IF p_term IS NULL OR p_term <= 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'FL003',
      MESSAGE = format('fencing: invalid term %s for resource %s: a term must be a positive bigint', coalesce(p_term::text, 'NULL'), p_resource);
  END IF;
  -- A read without the lock decides only whether to try advancing (marks only rise: a mark read below p_term may be
  -- stale, one read at or above it is not).
  SELECT lock_key, highest_accepted INTO v_key, v_mark FROM fencing.high_water_mark WHERE resource = p_resource;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'FL004',
      MESSAGE = format('fencing: unknown resource %s; register it first with SELECT fencing.register_resource(%L)', p_resource, p_resource);
  END IF;
  IF v_mark < p_term THEN
    IF NOT p_may_advance THEN
      PERFORM fencing.reject('FL010', 'unscoped_term', p_resource, p_term, p_leader_id, p_table, p_operation,
        format('fencing: fencing.term %s would advance resource %s from %s, but fencing.resource does not name it; a transaction''s term applies to one resource',
               p_term, p_resource, v_mark),
        format('SET LOCAL fencing.resource = %L in the transaction (or call fencing.enter(%L, %s, <leader>)) to advance it.', p_resource, p_resource, p_term));
    END IF;
    IF v_strict THEN
      -- The advance must see a mark and lock holders as of now; a REPEATABLE READ / SERIALIZABLE snapshot taken
      -- before its waits would not.
      PERFORM fencing.reject('FL011', 'advance_isolation', p_resource, p_term, p_leader_id, p_table, p_operation,
        format('fencing: cannot advance %s to term %s in a %s transaction: an advance runs under READ COMMITTED',
               p_resource, p_term, upper(current_setting('transaction_isolation'))),
        'Enter the new term in its own READ COMMITTED transaction first (the writer does), then run this transaction.');
    END IF;
    v_jump := coalesce((SELECT value::bigint FROM fencing.settings WHERE name = 'max_term_jump'), 1000000);
    IF p_term - v_mark > v_jump THEN
      PERFORM fencing.reject('FL009', 'term_jump', p_resource, p_term, p_leader_id, p_table, p_operation,
        format('fencing: term %s for resource %s is %s above the highest accepted term %s; max_term_jump is %s', p_term, p_resource, p_term - v_mark, v_mark, v_jump),
        'Terms from the election move by small steps. If this jump is intended, an administrator raises fencing.settings max_term_jump.');
    END IF;
    PERFORM fencing.check_leader_id(p_resource, p_term, p_leader_id, p_table, p_operation);   -- stored with the mark
    PERFORM fencing.advance(p_resource, v_key, p_term, p_leader_id);
  END IF;

  -- Entering: the fence lock, shared (after our own advance: granted at once), held until the transaction ends.
  PERFORM fencing.take_fence_share(v_key);
  -- Under REPEATABLE READ / SERIALIZABLE the transaction's snapshot may predate the lock: a newer mark committed
  -- since is invisible to it, and the term is stale. Rejected and audited like any stale term.
  IF v_strict AND fencing.mark_moved_since_snapshot(p_resource) THEN
    PERFORM fencing.reject('FL001', 'stale_term', p_resource, p_term, p_leader_id, p_table, p_operation,
      format('fencing: stale term %s for resource %s rejected: a newer term was accepted after this %s transaction took its snapshot',
             p_term, p_resource, upper(current_setting('transaction_isolation'))),
      'Retry in a new transaction: it will see the new mark.');
  END IF;
  -- A new statement: under READ COMMITTED a snapshot taken after the lock was granted; otherwise the snapshot the
  -- line above found current.
  SELECT highest_accepted, leader_id INTO v_mark, v_holder FROM fencing.high_water_mark WHERE resource = p_resource;
  IF v_unbounded THEN
    PERFORM set_config('lock_timeout', '0', true);
  END IF;
  IF v_mark <> p_term THEN
    RETURN v_mark;                                                     -- stale (an advance to p_term leaves it equal)
  END IF;
  -- The leader id's length is checked only where it is accepted: a stale, conflicting, unscoped or too far jumping
  -- term is rejected and audited as such whatever the id (the audit row keeps its first 200 characters).
  IF v_holder IS DISTINCT FROM p_leader_id AND v_holder IS NOT NULL AND p_leader_id IS NOT NULL THEN
    PERFORM fencing.reject_term_conflict(p_resource, p_term, p_leader_id, v_holder, p_table, p_operation);
  END IF;
  PERFORM fencing.check_leader_id(p_resource, p_term, p_leader_id, p_table, p_operation);
  RETURN p_term;
END
$fn$;

DROP FUNCTION IF EXISTS fencing.enter(text, bigint, text);   -- its meaning changed: it enters a transaction now
CREATE FUNCTION fencing.enter(p_resource text, p_term bigint, p_leader_id text DEFAULT NULL)
RETURNS bigint
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$ SELECT fencing.enter_at(p_resource, p_term, p_leader_id) $fn$;
COMMENT ON FUNCTION fencing.enter(text, bigint, text) IS
  'Enters the current transaction (never more) for the resource at the term: takes its fence lock until the transaction ends. Returns the term when accepted (advancing the mark if the term is newer), or the higher accepted term when stale (nothing changed: the caller rejects and audits). Raises FL001 (term held by another leader), FL003 (bad input), FL004 (unknown resource), FL005 (advance timed out), FL009 (term jump too large), FL011 (advance outside READ COMMITTED).';

-- Transactions entered now (holding a resource's fence lock): the ones the next advance of that resource ends.
DROP VIEW IF EXISTS fencing.entered_sessions;
CREATE OR REPLACE VIEW fencing.entered_transactions AS
SELECT m.resource, l.mode = 'ExclusiveLock' AS advancing, a.pid, a.usename, a.application_name, a.client_addr, a.state,
       a.xact_start, a.state_change, l.virtualtransaction
  FROM pg_locks l
  JOIN fencing.high_water_mark m ON l.objid = m.lock_key::oid
  LEFT JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.classid = 1178946115::oid AND l.objsubid = 2 AND l.granted
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database());
REVOKE ALL ON fencing.entered_transactions FROM PUBLIC;
GRANT SELECT ON fencing.entered_transactions TO fencing_auditor, fencing_admin;

REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA fencing FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fencing.enter(text, bigint, text) TO fencing_app;
