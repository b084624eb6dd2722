/*
 * The fence inside PostgreSQL, for one resource: transaction-scoped entering at the first write. The guard (a
 * statement trigger) enters the transaction: it takes the SHARED transaction-level advisory lock on the fence key,
 * then reads the mark with a snapshot taken after the lock was granted; a term above the mark advances it (the
 * EXCLUSIVE transaction-level lock, terminating the backends that hold the key, then the mark moved, held to the
 * end). Modelled around it: commit, rollback, savepoints (SAVEPOINT, RELEASE, ROLLBACK TO), PREPARE TRANSACTION with
 * COMMIT / ROLLBACK PREPARED from a resolver, REPEATABLE READ transactions (where the guard reads the mark FOR
 * SHARE), pg_terminate_backend, the native guard's cache, and what any fencing_app client may do:
 * pg_advisory_unlock_all(), taking the key at session level (a squatter), raw writes with SET LOCAL fencing.term,
 * writes without a term, a cancel at any point, and (unless -DDIRECT) a transaction pooler that puts every
 * transaction on any idle server session.
 *
 * Clients are leader processes that are honest but may be stale: each acts for the term it last won (terms come
 * from the coordinator: unique, increasing; see election.pml) and may be arbitrarily slow (paused). Nothing here
 * assumes that only one client believes it leads: any client may write at any time. That is what makes P1 hold
 * whatever the election does.
 *
 * One SQL statement is one atomic step, except the guard's entering: statement start (the cache lookup), the wait
 * for the shared lock with the read of the mark, and each round of the advance are separate steps. Every wait may
 * end by its timeout (lock_timeout, advance_timeout: FL005) or by a cancel instead; an error aborts the statement:
 * inside a savepoint the client may roll back to it and go on, at the top level the transaction is over.
 * pg_terminate_backend is one step: the backend is gone, its open transaction rolled back, its session-level locks
 * and its memory (the guard's cache) dropped; a new backend takes its slot.
 *
 * Properties:
 *   P1  no transaction carrying term t commits a write after a transaction carrying a higher term committed one
 *       (ghost: highest term committed so far; asserted at every commit, also COMMIT PREPARED);
 *   P2  every rejected attempt is audited (ghost counter; asserted when the client sees the rejection).
 *
 * Build variants (-D): DIRECT (each client on its own connection; the pooled default includes those runs),
 * MAXTX (transactions per client), MAXST (statements per transaction), MAXDEPTH (savepoint nesting), MAXTERM, and the
 * mutations, each removing one defence: READ_BEFORE_LOCK, NO_LOCK_AT_COMMIT, ADVANCE_NO_WAIT, PARTITION_UNGUARDED,
 * PREPARED_RELEASES, CACHE_SURVIVES_SAVEPOINT, CACHE_EXACT_SUBXACT, CACHE_SURVIVES_TXN, RR_PLAIN_READ (P1) and
 * AUDIT_IN_TXN (P2).
 */

#define NS      2       /* server sessions (backends) */
#define NC      2       /* clients */
#define PREP    NS      /* slot of the one prepared transaction in tx[] */
#ifndef MAXTERM
#define MAXTERM 3       /* terms handed out by the coordinator: 1..MAXTERM */
#endif

#ifndef MAXTX
#define MAXTX   2       /* transactions per client */
#endif
#ifndef MAXST
#define MAXST   3       /* statements per transaction between BEGIN and its end */
#endif
#ifndef MAXDEPTH
#define MAXDEPTH 1      /* savepoints open at once */
#endif

/* Subtransaction levels are stored as codes: 0 nothing, 1 the top level, d + 1 the savepoint at depth d. A lock
   taken again at a deeper level keeps the lowest code (PostgreSQL counts the holds per resource owner: rolling back
   the savepoint releases only the hold taken in it). */
typedef Txn {
  bool open;
  byte owner;           /* client + 1 */
  byte term;            /* setting fencing.term (SET LOCAL / the writer's set_config(..., true)); 0: none */
  bool rr;              /* REPEATABLE READ (or SERIALIZABLE): one snapshot for the whole transaction */
  byte snap;            /* the mark in that snapshot (taken by the first statement) */
  byte dep;             /* savepoints open */
  byte sh;              /* level code of the SHARED transaction-level advisory lock on the fence key */
  byte ex;              /* level code of the EXCLUSIVE one (advance) */
  byte wl;              /* lowest level code holding a write into a protected table (0: no write) */
  byte mv;              /* level code of the uncommitted move of the mark to term (0: none) */
}

Txn  tx[NS + 1];
bool squat[NS];         /* session-level EXCLUSIVE advisory lock on the fence key (a squatter) */
byte cterm[NS];         /* native guard's cache in backend memory: entered at this term (0: empty) ... */
byte clev[NS];          /* ... by the subtransaction with this level code, which took the lock */
bool cgone[NS];         /* CACHE_EXACT_SUBXACT only: that subtransaction was released into its parent */

byte mark;              /* fencing.high_water_mark.highest_accepted (committed) */
byte next_term;         /* coordinator: last term handed out */
byte myterm[NC];        /* the term each client acts for */

byte highest;           /* ghost (P1): highest term of a committed write */
byte unaudited;         /* ghost (P2): rejections the clients have seen minus committed audit rows */

#define MINE            (tx[s].open && tx[s].owner == c + 1)
#define LV              (tx[s].dep + 1)          /* level code of the current (sub)transaction */
/* first statement of a step: if our backend was terminated (or our transaction is gone), the client sees the error */
#define CHECK           if :: !MINE -> goto failed :: else -> skip fi
/* the mark as this transaction sees it: its own uncommitted move, else the committed value */
#define OWNMARK         (tx[s].mv > 0 -> tx[s].term : mark)

/* lock compatibility: a backend never conflicts with its own locks (session- or transaction-level) */
#define SHARED_OK       (tx[o].ex == 0 && !squat[o] && tx[PREP].ex == 0)
#define EXCL_OK         (tx[o].sh == 0 && tx[o].ex == 0 && !squat[o] && tx[PREP].sh == 0 && tx[PREP].ex == 0)
#define HOLDS_KEY(x)    (tx[x].sh > 0 || tx[x].ex > 0 || squat[x])

inline clear(i) {
  tx[i].open = 0; tx[i].owner = 0; tx[i].term = 0; tx[i].rr = 0; tx[i].snap = 0; tx[i].dep = 0;
  tx[i].sh = 0; tx[i].ex = 0; tx[i].wl = 0; tx[i].mv = 0
}

inline drop_cache(x) {
  cterm[x] = 0; clev[x] = 0; cgone[x] = 0
}

/* the end of a transaction on backend x (COMMIT, ROLLBACK, PREPARE): the guard's cache goes with it */
inline end_txn(x) {
#ifndef CACHE_SURVIVES_TXN
  drop_cache(x);
#endif
  skip
}

/* pg_terminate_backend(x): the backend exits; its open transaction is rolled back, its session-level locks and
   memory are gone; a new backend takes its slot */
inline kill(x) {
  clear(x); squat[x] = 0; drop_cache(x)
}

/* ROLLBACK (or an error at the top level): session-level locks stay */
inline rollback(i) {
  clear(i); end_txn(i)
}

/* ROLLBACK TO SAVEPOINT at depth d (d >= 1): the savepoint's subtransaction and those nested in it are rolled back:
   their writes, their mark move and the locks they took (PostgreSQL releases a subtransaction's locks when it
   aborts); the savepoint stays, so the depth is d again. The native guard drops its cache when the subtransaction
   that took the lock, or one enclosing it, rolls back. */
inline rollback_to() {   /* d: the savepoint's depth */
  if :: tx[s].sh > d -> tx[s].sh = 0 :: else -> skip fi;
  if :: tx[s].ex > d -> tx[s].ex = 0 :: else -> skip fi;
  if :: tx[s].wl > d -> tx[s].wl = 0 :: else -> skip fi;
  if :: tx[s].mv > d -> tx[s].mv = 0 :: else -> skip fi;
#if defined(CACHE_SURVIVES_SAVEPOINT)
  skip;                                                        /* the cache is kept */
#elif defined(CACHE_EXACT_SUBXACT)
  if :: clev[s] > d && !cgone[s] -> drop_cache(s) :: else -> skip fi;   /* only if its own subxact aborts */
#else
  if :: clev[s] > d -> drop_cache(s) :: else -> skip fi;
#endif
  tx[s].dep = d; d = 0
}

/* RELEASE SAVEPOINT of the innermost savepoint: its subtransaction commits into the parent, which now owns its
   locks, writes and mark move. The native guard re-keys its cache to the parent. */
inline release() {
  if :: tx[s].sh == LV -> tx[s].sh = LV - 1 :: else -> skip fi;
  if :: tx[s].ex == LV -> tx[s].ex = LV - 1 :: else -> skip fi;
  if :: tx[s].wl == LV -> tx[s].wl = LV - 1 :: else -> skip fi;
  if :: tx[s].mv == LV -> tx[s].mv = LV - 1 :: else -> skip fi;
#ifdef CACHE_EXACT_SUBXACT
  if :: clev[s] == LV -> cgone[s] = 1 :: else -> skip fi;      /* still keyed by the released subtransaction */
#else
  if :: clev[s] == LV -> clev[s] = LV - 1 :: else -> skip fi;
#endif
  tx[s].dep--
}

/* COMMIT and COMMIT PREPARED (open savepoints are committed with the transaction). P1 is asserted here. The
   advisory locks are released after the commit is visible: one step. */
inline commit(i) {
  if
  :: tx[i].wl > 0 ->
       assert(tx[i].term >= highest);                          /* P1 */
       if :: tx[i].term > highest -> highest = tx[i].term :: else -> skip fi
  :: else -> skip
  fi;
  if :: tx[i].mv > 0 -> mark = tx[i].term :: else -> skip fi;
  clear(i)
}

/* A statement failed (an error, a timeout, a cancel): inside a savepoint the client rolls back to it and goes on
   (it may still roll everything back later); at the top level the transaction is aborted. */
inline abort_stmt() {
  if
  :: tx[s].dep > 0 -> d = tx[s].dep; rollback_to(); goto next
  :: else -> rollback(s); goto failed
  fi
}

/* A rejection by the guard (FL001, FL002): fencing.reject audits through an autonomous transaction (dblink), so the
   audit row survives the abort the error causes. The client then sees the error (P2 asserted). */
inline reject() {
  unaudited++;                                                 /* the client sees the rejection ... */
#ifndef AUDIT_IN_TXN
  unaudited--;                                                 /* ... audited by an autonomous transaction */
#endif                                                         /* (else the row goes with the aborted statement) */
  assert(unaudited == 0);                                      /* P2 */
  abort_stmt()
}

/* Every wait: granted (the option before it), or our backend was terminated meanwhile, or a timeout or a cancel
   ends the statement. */
#define GONE            atomic { !MINE -> goto failed }
#define CANCEL          atomic { MINE -> abort_stmt() }

/* The write passes the guard: the transaction is entered at its term (the native guard caches that, keyed by the
   current subtransaction), and the statement writes (at the current level). */
inline entered() {
  if :: cterm[s] != tx[s].term -> cterm[s] = tx[s].term; clev[s] = LV; cgone[s] = 0 :: else -> skip fi;
  if :: tx[s].wl == 0 || tx[s].wl > LV -> tx[s].wl = LV :: else -> skip fi
}

inline take(f) {
  if :: f == 0 || f > LV -> f = LV :: else -> skip fi
}

/* The mark read by the guard after the lock was granted. READ COMMITTED: a new snapshot, taken after the lock.
   REPEATABLE READ: the transaction's snapshot, so the guard reads FOR SHARE: a row moved by a transaction that
   committed after the snapshot is a serialization failure. (ERR: the statement fails.) */
#define ERR     255
inline read_mark() {
  if
#ifdef READ_BEFORE_LOCK
  :: !tx[s].rr -> v = stmt_snap                                /* the statement's snapshot, taken before the lock */
#else
  :: !tx[s].rr -> v = OWNMARK
#endif
  :: tx[s].rr && tx[s].mv > 0 -> v = tx[s].term               /* its own move: visible, row locked by itself */
#ifdef RR_PLAIN_READ
  :: tx[s].rr && tx[s].mv == 0 -> v = tx[s].snap               /* plain read: the snapshot's value */
#else
  :: tx[s].rr && tx[s].mv == 0 && mark == tx[s].snap -> v = mark
  :: tx[s].rr && tx[s].mv == 0 && mark != tx[s].snap -> v = ERR  /* could not serialize access */
#endif
  fi
}

/* The ADVANCE to the transaction's term t (the caller holds the shared lock and read a mark below t; fencing.resource
   names the resource and t - mark <= max_term_jump: FL010 and FL009 are out of scope). One round per step:
   pg_try_advisory_xact_lock (exclusive) and, when granted, the re-read of the mark and the move (nothing can move
   the mark while the exclusive lock is held); else pg_terminate_backend of a backend holding the key in any mode. A
   prepared transaction has no backend: it is waited for until advance_timeout (FL005 naming its gid). */
inline advance() {
#ifdef ADVANCE_NO_WAIT
  atomic { CHECK; take(tx[s].mv); entered() }                  /* moves the mark without the exclusive lock */
#else
  do
  :: atomic { MINE && EXCL_OK ->
       take(tx[s].ex);
       if
       :: !tx[s].rr -> v = OWNMARK                             /* a new snapshot */
       :: tx[s].rr -> v = (tx[s].mv > 0 -> tx[s].term : tx[s].snap)
       fi;
       if
       :: v == tx[s].term -> entered()
       :: v > tx[s].term -> reject()                           /* FL001 */
       :: v < tx[s].term && tx[s].rr && mark != tx[s].snap ->  /* UPDATE of a row changed after the snapshot */
            abort_stmt()
       :: v < tx[s].term && !(tx[s].rr && mark != tx[s].snap) ->
            take(tx[s].mv); entered()                          /* UPDATE the mark, INSERT term_history */
       fi;
       break }
  :: atomic { MINE && !EXCL_OK && HOLDS_KEY(o) -> kill(o) }    /* pg_terminate_backend (never a squatter: its
                                                                  exclusive lock stops every entering first) */
  :: GONE
  :: CANCEL                                                    /* FL005 at advance_timeout, or a cancel */
  od
#endif
}

/* One write statement into a protected table (or any descendant: each has the trigger); the statement trigger
   fencing_guard decides before the write. */
inline write() {
  atomic {
    MINE ->
#ifdef READ_BEFORE_LOCK
    stmt_snap = OWNMARK;                                       /* the statement's snapshot: before the lock */
#endif
    if
    :: tx[s].term == 0 -> reject()                             /* FL002 no_term */
    :: tx[s].term > 0 && cterm[s] == tx[s].term -> entered(); goto next   /* native guard: cached, allow */
    :: tx[s].term > 0 -> skip                                  /* enter (the PL/pgSQL guard always does) */
    fi
  };
  /* entering: pg_advisory_xact_lock_shared (waits while another backend holds the key exclusively), then, in a
     new statement, the mark */
  if
  :: atomic { MINE && SHARED_OK ->
       take(tx[s].sh);
       read_mark();
       if
       :: v == ERR -> abort_stmt()                             /* serialization failure */
       :: v == tx[s].term -> entered()
       :: v != ERR && v > tx[s].term -> reject()               /* FL001 stale_term */
       :: v < tx[s].term -> skip                               /* advance */
       fi;
#ifdef NO_LOCK_AT_COMMIT
       tx[s].sh = 0;                                           /* the lock is given back after the check */
#endif
       if :: v == tx[s].term -> goto next :: else -> skip fi }
  :: GONE
  :: CANCEL                                                    /* lock_timeout, or a cancel */
  fi;
  advance()
}

proctype client(byte c) {
  byte s, o, v, n, k, d;
#ifdef READ_BEFORE_LOCK
  byte stmt_snap;
#endif
  end:
  do
  :: atomic { next_term < MAXTERM -> next_term++; myterm[c] = next_term }   /* wins the next term */
  :: n < MAXTX ->
     n++;
     /* BEGIN on a server session, and the transaction's first statement */
     atomic {
#ifdef DIRECT
       s = c;                                                  /* the client's own connection */
#else
       if                                                      /* the pooler hands over any idle server session */
       :: !tx[0].open -> s = 0
       :: !tx[1].open -> s = 1
       fi;
#endif
       o = 1 - s;
       tx[s].open = 1; tx[s].owner = c + 1;
       k = 0;
       if
       :: myterm[c] > 0 ->                                     /* the library writer: READ COMMITTED, its term,
                                                                  and the mark read by its first statement */
            tx[s].term = myterm[c];
            if
            :: mark > tx[s].term ->                            /* certainly stale: roll back, then audit */
                 rollback(s); unaudited++; unaudited--; assert(unaudited == 0); goto failed
            :: else -> skip
            fi
       :: myterm[c] > 0 ->                                     /* a raw writer: SET LOCAL fencing.term in a
                                                                  REPEATABLE READ transaction whose first
                                                                  statement takes the snapshot */
            tx[s].term = myterm[c]; tx[s].rr = 1; tx[s].snap = mark
       :: myterm[c] == 0                                       /* a write without a term */
       fi
     };
     do
     :: k < MAXST ->
        k++;
        if
        :: write()
#ifdef PARTITION_UNGUARDED
        :: atomic { MINE -> if :: tx[s].wl == 0 || tx[s].wl > LV -> tx[s].wl = LV :: else -> skip fi }
                                                               /* a partition without the trigger */
#endif
        :: atomic { MINE && tx[s].dep < MAXDEPTH -> tx[s].dep++ }                  /* SAVEPOINT */
        :: atomic { MINE && tx[s].dep > 0 -> release() }                           /* RELEASE SAVEPOINT */
        :: atomic { MINE && tx[s].dep > 0 -> d = tx[s].dep; rollback_to() }        /* ROLLBACK TO SAVEPOINT */
        :: atomic { MINE -> squat[s] = 0 }                     /* pg_advisory_unlock_all(): session level only */
        :: if                                                  /* pg_advisory_lock: a squatter, session level */
           :: atomic { MINE && EXCL_OK -> squat[s] = 1 }
           :: GONE
           :: CANCEL
           fi
        :: GONE
        fi;
next:   v = 0
     :: break
     od;
     if
     :: atomic { MINE -> commit(s); end_txn(s) }
     :: atomic { MINE -> rollback(s) }
     :: atomic {                                               /* PREPARE TRANSACTION */
          MINE && !tx[PREP].open && !(squat[s] && (tx[s].sh > 0 || tx[s].ex > 0)) ->
                                                               /* PostgreSQL refuses to prepare while holding a
                                                                  session- and a transaction-level lock on the
                                                                  same object */
          tx[PREP].open = 1; tx[PREP].owner = NC + 1; tx[PREP].term = tx[s].term;
          tx[PREP].wl = (tx[s].wl > 0 -> 1 : 0); tx[PREP].mv = (tx[s].mv > 0 -> 1 : 0);
#ifndef PREPARED_RELEASES
          tx[PREP].sh = (tx[s].sh > 0 -> 1 : 0); tx[PREP].ex = (tx[s].ex > 0 -> 1 : 0);
#endif
          clear(s); end_txn(s)                                 /* the backend is free; the transaction has none */
        }
     :: GONE
     fi;
failed:
     s = 0; o = 0; v = 0; k = 0
  od
}

/* The transaction manager (or any session): resolves the prepared transaction at any time. */
proctype resolver() {
  end:
  do
  :: atomic { tx[PREP].open -> commit(PREP) }                  /* COMMIT PREPARED */
  :: atomic { tx[PREP].open -> clear(PREP) }                   /* ROLLBACK PREPARED */
  od
}

init {
  atomic {
    next_term = 1; myterm[0] = 1; mark = 1;                    /* client 0 won term 1 and advanced the mark to it */
    run client(0);
    run client(1);
    run resolver()
  }
}
