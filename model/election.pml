/*
 * The election on etcd: the term counter and the leader key with a lease, the campaign transaction, lease
 * renewals and expiry, resign, and each candidate's local validity deadline on a clock whose rate may differ
 * from etcd's within a bound. A candidate may pause at any point (it simply takes no steps).
 *
 * Properties (safety build):
 *   P3  never two candidates valid at once (valid = holds a term and its local deadline has not passed).
 *   The fence relies only on terms being unique and increasing: the campaign transaction's compare on the counter
 *   gives that by construction (one atomic step here), with or without the coordinator's bug.
 * Liveness build (-DLIVENESS, ltl p4, pan -a -f): with a healthy coordinator and weak fairness, eventually a live
 *   candidate leads for good, even if one candidate crashes (also while leading) and each may resign once.
 *
 * Build variants (-D): ETCD_BUG (a recovering etcd leader revokes a lease that is being renewed: P3 is expected to
 * fail), NO_MARGIN (deadline without the safety margin: P3 fails).
 */

#define NC      2       /* candidates */
#ifdef LIVENESS
#define MAXTERM 5       /* more than one crash plus two resigns need */
#else
#define MAXTERM 3
#endif

#ifndef LIVENESS

#define TTL     3       /* lease TTL, in ticks of etcd's clock */
#define DRIFT   1       /* over a run, a candidate's clock may lose at most DRIFT ticks against etcd's */
#ifdef NO_MARGIN
#define MARGIN  0
#else
#define MARGIN  DRIFT   /* safetyMargin: covers the clock-rate difference over one TTL */
#endif
#ifndef TMAX
#define TMAX    5       /* etcd's clock runs 0..TMAX: a lease lifetime and most of the next */
#endif

byte now;               /* etcd's clock (the reference) */
byte counter;           /* etcd: the term counter key */
byte holder;            /* etcd: the leader key, bound to the holder's lease: 0 absent, else candidate + 1 */
bool alive[NC];         /* etcd: the candidate's lease exists */
byte expiry[NC];        /* etcd: when that lease expires */
byte lc[NC];            /* the candidate's monotonic clock */
byte lost[NC];          /* ticks its clock has lost so far */
byte deadline[NC];      /* local validity deadline: send time of the last confirmed renewal + TTL - MARGIN */
bool leading[NC];       /* LeadershipImpl.valid: holds a term, not yet invalidated */

#define valid(c)        (leading[c] && lc[c] < deadline[c])
/* P3 is asserted after every step that can make a candidate valid (a win, a later deadline); the clock's tick
   and everything else can only end validity, so no other step can be the first to break P3 */
#define P3_CHECK        assert(!(valid(0) && valid(1)))

/* etcd expires a lease at its expiry (never earlier) and deletes the keys bound to it */
inline expire(c) {
  if
  :: alive[c] && now >= expiry[c] -> alive[c] = 0; if :: holder == c + 1 -> holder = 0 :: else -> skip fi
  :: else -> skip
  fi
}

/* each candidate's clock ticks with etcd's, or loses the tick while its drift budget lasts */
inline tick(c) {
  if
  :: lost[c] < DRIFT -> lost[c]++
  :: true -> lc[c]++
  fi
}

active proctype clock() {
  end:
  do
  :: atomic { now < TMAX -> now++; tick(0); tick(1); expire(0); expire(1) }
  od
}

proctype candidate(byte c) {
  byte sent;            /* local send time of the request in flight */
  byte req;             /* 0 none, 2 processed by etcd (response in flight) */
  bool ok;              /* the response: positive TTL */
  byte seen;            /* the counter value read before campaigning */
  bool campaigning, winning;
  end:
  do
  /* LeaseKeeper: one renewal (or, after the lease is gone, a grant) at a time */
  :: atomic { req == 0 && now < TMAX ->
       sent = lc[c];                                           /* send time on the local clock */
       if
       :: alive[c] -> expiry[c] = now + TTL; ok = 1            /* keep-alive: the lease lives TTL from now */
       :: !alive[c] && !leading[c] ->                          /* grant of a new lease (new lease id) */
            alive[c] = 1; expiry[c] = now + TTL; ok = 1;
            winning = 0                                        /* a win with the old lease is never valid:
                                                                  validity names the lease id it was won with */
       :: !alive[c] && leading[c] -> ok = 0                    /* TTL <= 0: the lease is gone */
       fi;
       req = 2 }                                               /* processed at once: the tightest case (a
                                                                  later arrival only extends the lease further) */
  :: atomic { req == 2 -> req = 0; sent = 0; ok = 0 }          /* response lost (outcome unknown) */
  :: atomic { req == 2 ->
       if
       :: ok && sent + TTL - MARGIN > deadline[c] -> deadline[c] = sent + TTL - MARGIN; P3_CHECK
       :: ok && sent + TTL - MARGIN <= deadline[c] -> skip     /* a late response never moves it back */
       :: !ok -> leading[c] = 0                                /* lease gone: the term ends */
       fi;
       req = 0; sent = 0; ok = 0 }
  /* campaign: read, then the transaction (key absent AND counter unchanged -> put key with lease, counter + 1) */
  :: atomic { !campaigning && !winning && !leading[c] && holder == 0 && lc[c] < deadline[c] ->
       seen = counter; campaigning = 1 }
  :: atomic { campaigning ->
       campaigning = 0;
       if
       :: holder == 0 && counter == seen && alive[c] && counter < MAXTERM ->
            counter++; holder = c + 1;
            winning = 1
       :: else -> skip
       fi;
       seen = 0 }
  :: atomic { winning -> winning = 0; leading[c] = 1; P3_CHECK }   /* the response: LEADER */
  /* resign: valid is cleared before the delete is sent */
  :: atomic { leading[c] -> leading[c] = 0 }
  :: atomic { !leading[c] && !winning && holder == c + 1 -> holder = 0 }
  od
}

#ifdef ETCD_BUG
/* a recovering etcd leader revokes a lease that is being renewed through the new leader (once) */
active proctype etcd_bug() {
  byte c;
  end:
  atomic {
    if :: alive[0] -> c = 0 :: alive[1] -> c = 1 fi;
    alive[c] = 0;
    if :: holder == c + 1 -> holder = 0 :: else -> skip fi
  }
}
#endif

init {
  atomic {
    /* both start with a granted lease (sent at local time 0) */
    alive[0] = 1; expiry[0] = TTL; deadline[0] = TTL - MARGIN;
    alive[1] = 1; expiry[1] = TTL; deadline[1] = TTL - MARGIN;
    run candidate(0);
    run candidate(1)
  }
}

#else /* LIVENESS: no clock; renewals of a live candidate always succeed; only a crashed candidate's lease expires */

byte counter;
byte holder;
bool leading[NC];
bool crashed[NC];
bool crash_used;

#define leads   (holder != 0 && leading[holder - 1] && !crashed[holder - 1])

proctype candidate(byte c) {
  byte seen;
  bool resigned;
  end:
  do
  :: atomic { !leading[c] && holder == 0 -> seen = counter }
     if
     :: atomic { holder == 0 && counter == seen && counter < MAXTERM -> counter++; holder = c + 1; leading[c] = 1 }
     :: atomic { !(holder == 0 && counter == seen) -> skip }   /* lost the race: read again */
     fi
  :: atomic { leading[c] && !resigned -> resigned = 1; leading[c] = 0 }   /* resign once */
     atomic { holder == c + 1 -> holder = 0 }
  :: atomic { !crash_used -> crash_used = 1; crashed[c] = 1 }  /* crash: no more steps, ever */
     end_crashed: (false)
  od
}

/* etcd: the lease of a crashed candidate runs out */
active proctype etcd() {
  end:
  do
  :: atomic { holder != 0 && crashed[holder - 1] -> holder = 0 }
  od
}

ltl p4 { <> [] leads }

init {
  atomic {
    run candidate(0);
    run candidate(1)
  }
}

#endif
