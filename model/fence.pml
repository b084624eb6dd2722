/*
 * The fence inside PostgreSQL, for one resource: fencing.enter, fencing.enter_transaction, the guard's fast and
 * slow paths, the advance, commit, PREPARE TRANSACTION / COMMIT PREPARED / ROLLBACK PREPARED, and what any
 * fencing_app client may do (pg_advisory_unlock_all(), raw writes with SET LOCAL fencing.term, writes into a
 * partition, a pooled server session handed to another client between transactions).
 *
 * Clients are leader processes that are honest but may be stale: each acts for the term it last won (terms come
 * from the coordinator: unique, increasing; see election.pml) and may be arbitrarily slow (paused). Nothing here
 * assumes that only one client believes it leads: any client may write at any time. That is what makes P1 hold
 * whatever the election does, including a lease revoked by the coordinator's bug.
 *
 * One SQL statement is one atomic step. A statement that waits for a lock is a guarded step; every such wait may
 * instead end by its timeout (lock_timeout / advance_timeout), which aborts the transaction and changes nothing.
 * pg_terminate_backend is one step: the backend is gone, its open transaction rolled back, its session locks and
 * settings dropped (the advance waits until the backend has exited, so the intermediate states cannot matter).
 *
 * Properties:
 *   P1  no transaction carrying term t commits a write after a transaction carrying a higher term committed one
 *       (ghost: highest term committed so far; asserted at every commit, also COMMIT PREPARED);
 *   P2  every rejected attempt is audited (ghost counters; asserted when the client sees the rejection).
 *
 * Build variants (-D): POOLED (server sessions behind a transaction pooler) and the mutations, each removing one
 * defence: NO_REGISTRY, NO_PREPARED, NO_TXN_ENTER (with POOLED), NO_PARTITION, ENTER_PREPARABLE (entering
 * inside a transaction the client may prepare), AUDIT_IN_TXN (audit row written inside the rejected transaction).
 */

#define NS      2       /* server sessions (backends) */
#define NC      2       /* clients */
#define PREP    NS      /* slot of the one prepared transaction in tx[] */
#define MAXTERM 3       /* terms handed out by the coordinator: 1..MAXTERM */

#ifndef MAXTX
#define MAXTX   3
#endif
#define SESSION 1
#define TXN     0

#define PARENT  0       /* the table protect_table() was called on */
#define PART    1       /* a partition of it, created after protect_table() */

#ifdef NO_PARTITION
#define NEW_CHILD_PROTECTED 0
#else
#define NEW_CHILD_PROTECTED 1   /* event trigger fencing_protect_new_children, same transaction as the DDL */
#endif

typedef Txn {
  bool open;
  byte owner;           /* client + 1 */
  byte term;            /* ghost: the term the client acts for (0: it never won one) */
  bool wrote;           /* a write passed the guard (or met no guard) */
  bool tbl;             /* RowExclusiveLock on a protected table */
  bool xlock;           /* transaction-level SHARED advisory lock (1178946115, lock_key) */
  bool excl;            /* transaction-level EXCLUSIVE advisory lock (advance) */
  bool share_row;       /* mark row FOR SHARE */
  bool upd_row;         /* mark row FOR NO KEY UPDATE */
  byte newmark;         /* uncommitted move of the mark */
  byte reg;             /* uncommitted fencing.entered_session row: term (0 once its backend is gone) */
  byte reg_sess;        /* ... naming this backend (pid, backend_start) */
  byte saved;           /* session setting at BEGIN: restored by ROLLBACK */
  bool audit;           /* an audit row written inside this transaction (AUDIT_IN_TXN only) */
}

Txn  tx[NS + 1];
byte entered[NS];       /* session setting fencing.entered_<key> (session-scoped entering) */
byte entered_local[NS]; /* the same setting with is_local = true (this transaction only) */
bool slock[NS];         /* session-level SHARED advisory lock */
byte reg[NS];           /* committed fencing.entered_session row of the live backend: term, 0 none */

byte mark;              /* fencing.high_water_mark.highest_accepted (committed) */
bool part_protected = NEW_CHILD_PROTECTED;   /* a partition of the protected table, attached after
                                                protect_table(): the event trigger protects it */
byte next_term;         /* coordinator: last term handed out */
byte myterm[NC];        /* the term each client acts for */
byte conn_term[NC];     /* writer's memory: "this connection is entered at" (session mode) */
bool conn_broken[NC];   /* direct mode: the client's backend was terminated (it reconnects) */

byte highest;           /* ghost (P1): highest term of a committed write */
byte unaudited;         /* ghost (P2): rejections the clients have seen minus committed audit rows */

#define MINE            (tx[s].open && tx[s].owner == c + 1)
/* first statement of a step: if our backend was terminated (or our transaction is gone), the client sees the error */
#define CHECK           if :: !MINE -> goto failed :: else -> skip fi
#define PROTECTED(t)    ((t) == PARENT || part_protected)

inline clear(i) {
  tx[i].open = 0; tx[i].owner = 0; tx[i].term = 0; tx[i].wrote = 0; tx[i].tbl = 0; tx[i].xlock = 0;
  tx[i].excl = 0; tx[i].share_row = 0; tx[i].upd_row = 0; tx[i].newmark = 0; tx[i].reg = 0;
  tx[i].reg_sess = 0; tx[i].saved = 0; tx[i].audit = 0
}

/* pg_terminate_backend(x): the backend exits; its open transaction is rolled back; a new backend takes its slot */
inline kill(x) {
  clear(x); entered[x] = 0; entered_local[x] = 0; slock[x] = 0; reg[x] = 0;
  if :: tx[PREP].reg > 0 && tx[PREP].reg_sess == x -> tx[PREP].reg = 0 :: else -> skip fi;  /* names a dead backend */
#ifndef POOLED
  conn_broken[x] = 1;                                          /* direct: session x is client x's connection */
#endif
  skip
}

/* ROLLBACK (or an error): settings made in the transaction revert; session-level locks stay (PostgreSQL does not
   release them on rollback) */
inline rollback(i) {
  entered[i] = tx[i].saved; entered_local[i] = 0; clear(i)
}

/* COMMIT and COMMIT PREPARED. P1 is asserted here. */
inline commit(i) {
  if
  :: tx[i].wrote ->
       assert(tx[i].term >= highest);                          /* P1 */
       if :: tx[i].term > highest -> highest = tx[i].term :: else -> skip fi
  :: else -> skip
  fi;
  if :: tx[i].newmark > 0 -> mark = tx[i].newmark :: else -> skip fi;
  if :: tx[i].audit -> unaudited-- :: else -> skip fi;
  if :: tx[i].reg > 0 -> reg[tx[i].reg_sess] = tx[i].reg :: else -> skip fi;
  clear(i)
}

/* A rejection: fencing.record_rejection writes the audit row through an autonomous transaction (dblink), so it
   survives the rollback the error causes. The client then sees the error (P2 asserted). */
inline reject(s) {
  unaudited++;                                                 /* the client sees the rejection ... */
#ifdef AUDIT_IN_TXN
  tx[s].audit = 1;                                             /* ... audited inside the rejected transaction */
#else
  unaudited--;                                                 /* ... audited by an autonomous transaction */
#endif
  rollback(s);
  assert(unaudited == 0)                                       /* P2 */
}

/* Every wait: the lock is granted, or our backend was terminated meanwhile, or the timeout ends the transaction. */
#define GONE            atomic { !MINE -> goto failed }
#define TIMEOUT         atomic { MINE -> rollback(s); goto failed }

/* Entering at term t succeeded (inside the step that decided it): session-scoped entering registers the backend
   in fencing.entered_session and sets the session setting (the writer remembers its connection is entered);
   transaction-scoped entering sets the setting with is_local = true, so nothing stays on the server session. */
inline enter_self(t) {
  if
  :: scope == SESSION -> tx[s].reg = t; tx[s].reg_sess = s; entered[s] = t; conn_term[c] = t
  :: else -> entered_local[s] = t
  fi
}

#ifdef NO_PREPARED
#define NO_PREPARED_HOLDER  1
#else
#define NO_PREPARED_HOLDER  !(tx[PREP].open && (tx[PREP].tbl || tx[PREP].xlock))
#endif

/* ADVANCE to term t (the caller holds its shared lock and read mark < t FOR SHARE). The jump bound
   (max_term_jump, FL009) never applies with MAXTERM terms. Steps are merged where nothing another session
   does in between could change the outcome. */
inline advance(t) {
  /* step 2: EXCLUSIVE transaction-level advisory lock; meanwhile terminate the backends holding the shared one.
     A prepared transaction has no backend: it cannot be terminated, only waited for. */
  do
  :: atomic { MINE && !slock[o] && !tx[o].xlock && !tx[o].excl && !tx[PREP].xlock && !tx[PREP].excl ->
       tx[s].excl = 1; break }
  :: atomic { MINE && (slock[o] || tx[o].xlock) -> kill(o) }
  :: GONE
  :: TIMEOUT                                                   /* FL005 */
  od;
  /* step 3: the mark row FOR NO KEY UPDATE: waits for entering transactions still open, prepared ones too;
     step 4: terminate every live backend registered in fencing.entered_session, whatever locks it holds */
  if
  :: atomic { MINE && !tx[o].share_row && !tx[o].upd_row && !tx[PREP].share_row && !tx[PREP].upd_row ->
       tx[s].upd_row = 1;
#ifndef NO_REGISTRY
       if :: reg[o] > 0 -> kill(o) :: else -> skip fi;
#endif
       skip }
  :: GONE
  :: TIMEOUT                                                   /* FL005 */
  fi;
  /* step 5: wait until no prepared transaction holds a protected table's lock or the resource's advisory lock;
     step 6: move the mark (committed with this transaction) and enter */
  if
  :: atomic { MINE && NO_PREPARED_HOLDER -> tx[s].newmark = t; enter_self(t) }
  :: GONE
  :: TIMEOUT                                                   /* FL005 naming the prepared transaction */
  fi
}

/* fencing.enter (scope SESSION), fencing.enter_transaction and the guard's entering with SET LOCAL fencing.term
   (scope TXN). One wait: the shared advisory lock (session- or transaction-level), then the mark FOR SHARE. */
inline enter(t) {
  if
  :: atomic { MINE && !tx[o].excl && !tx[PREP].excl && !tx[o].upd_row && !tx[PREP].upd_row ->
       if :: scope == SESSION -> slock[s] = 1 :: else -> tx[s].xlock = 1 fi;
       tx[s].share_row = 1;
       seen = mark;
       if
       :: seen == t -> enter_self(t)
       :: seen > t -> reject(s); goto failed                    /* FL001 stale_term (session: the writer's) */
       :: seen < t -> skip
       fi }
  :: GONE
  fi;
  if :: seen < t -> advance(t) :: else -> skip fi
}

/* One write statement into table tb; the statement trigger fencing.guard() decides. */
inline write(tb) {
  atomic {
    CHECK;
    eff = entered_local[s];                                    /* is_local overrides the session value */
    if :: eff == 0 -> eff = entered[s] :: else -> skip fi;
    if
    :: !PROTECTED(tb) -> tx[s].wrote = 1                       /* no guard on this table */
    :: PROTECTED(tb) && eff > 0 && (offered == 0 || offered == eff) ->
         tx[s].wrote = 1; tx[s].tbl = 1                        /* guard fast path: no lock, no read */
    :: PROTECTED(tb) && !(eff > 0 && (offered == 0 || offered == eff)) && offered == 0 ->
         reject(s); goto failed                                /* guard_slow: FL002 no_term */
    :: PROTECTED(tb) && !(eff > 0 && (offered == 0 || offered == eff)) && offered > 0 ->
         slow = 1                                              /* guard_slow: enter with fencing.term */
    fi
  };
  if
  :: slow ->
     slow = 0;
     scope = TXN;
     enter(offered);
     atomic { CHECK; tx[s].wrote = 1; tx[s].tbl = 1 }
  :: else -> skip
  fi
}

proctype client(byte c) {
  byte s, o, seen, eff, offered, n, tb;
  bit scope;
  bool slow;
  end:
  do
  :: atomic { next_term < MAXTERM -> next_term++; myterm[c] = next_term }   /* wins the next term */
  :: n < MAXTX ->
     n++;
     /* BEGIN on a server session */
     atomic {
#ifdef POOLED
       if
       :: !tx[0].open -> s = 0                                 /* the pooler hands over any idle server session */
       :: !tx[1].open -> s = 1
       fi;
#else
       s = c;                                                  /* the client's own connection */
       if
       :: conn_broken[c] -> conn_broken[c] = 0; conn_term[c] = 0   /* reconnected after termination */
       :: else -> skip
       fi;
#endif
       o = 1 - s;
       tx[s].open = 1; tx[s].owner = c + 1; tx[s].term = myterm[c]; tx[s].saved = entered[s];
       offered = 0
     };
     if
#if !defined(POOLED) || defined(NO_TXN_ENTER)
     :: myterm[c] > 0 -> scope = SESSION; enter(myterm[c]);    /* fencing.enter */
#ifndef ENTER_PREPARABLE
        /* the entering transaction is committed at once: no client statement can run in it, so it is never
           prepared (a setting made in a prepared transaction survives ROLLBACK PREPARED, the registry row not) */
        atomic { CHECK; commit(s); entered_local[s] = 0 };
        goto done;
#endif
#endif
     :: myterm[c] > 0 -> scope = TXN; enter(myterm[c])         /* fencing.enter_transaction */
     :: myterm[c] > 0 -> offered = myterm[c]                   /* raw writer: SET LOCAL fencing.term */
     :: conn_term[c] == myterm[c] -> skip                      /* none: the writer believes its connection is
                                                                  entered at its term (or it has no term) */
     fi;
     if
     :: tb = PARENT; write(tb)
     :: tb = PART; write(tb)
     :: skip                                                   /* no write */
     fi;
     if
     :: atomic { MINE -> slock[s] = 0 }                        /* pg_advisory_unlock_all() */
     :: skip
     fi;
     if
     :: atomic { MINE -> commit(s); entered_local[s] = 0 }
     :: atomic { MINE -> rollback(s); conn_term[c] = 0 }
     :: atomic {                                               /* PREPARE TRANSACTION */
          MINE && !tx[PREP].open && !(tx[s].xlock && slock[s]) ->  /* PostgreSQL refuses to prepare while holding
                                                                     a session- and a transaction-level lock on
                                                                     the same object */
          tx[PREP].open = 1; tx[PREP].owner = NC + 1; tx[PREP].term = tx[s].term; tx[PREP].wrote = tx[s].wrote;
          tx[PREP].tbl = tx[s].tbl; tx[PREP].xlock = tx[s].xlock; tx[PREP].excl = tx[s].excl;
          tx[PREP].share_row = tx[s].share_row; tx[PREP].upd_row = tx[s].upd_row;
          tx[PREP].newmark = tx[s].newmark; tx[PREP].reg = tx[s].reg; tx[PREP].reg_sess = tx[s].reg_sess;
          tx[PREP].audit = tx[s].audit;
          entered_local[s] = 0;                                /* SET LOCAL ends with the transaction; a plain
                                                                  SET stays, as at COMMIT */
          clear(s)
        }
     :: GONE
     fi;
     goto done;
failed:
     conn_term[c] = 0;                                         /* on any error the writer enters again */
done:
     skip
  od
}

/* The transaction manager (or any session): resolves the prepared transaction at any time. */
proctype resolver() {
  end:
  do
  :: atomic { tx[PREP].open -> commit(PREP) }                  /* COMMIT PREPARED */
  :: atomic { tx[PREP].open -> clear(PREP) }                   /* ROLLBACK PREPARED: settings made before the
                                                                  PREPARE stay on their session */
  od
}

init {
  atomic {
    run client(0);
    run client(1);
    run resolver()
  }
}
