/*
 * Fenceline: fencing.guard() in C, the native implementation of the statement trigger on protected tables.
 *
 * Why it exists: a transaction enters a resource at its term by taking the resource's fence lock and reading the
 * mark (R__20_fencing_enter.sql has the safety argument). In PL/pgSQL those two steps, the call and the expressions
 * around them cost several times the write itself for a single-row transaction; here they are one lock-manager call
 * and one index probe, and a transaction pays them once per resource, not once per statement.
 *
 * Decisions are those of the PL/pgSQL guard in R__40_fencing_guard.sql (the trigger contract tests run against both):
 *   common case  fencing.term is a term (digits), fencing.break_glass is empty, fencing.resource is empty or names
 *                this resource, fencing.leader_id is at most 200 bytes: take the fence lock (1178946115, lock_key)
 *                SHARED at transaction level if it is free, then read the mark row with a snapshot taken after the
 *                lock was granted. Mark = term and the leader ids agree (or either is empty): entered, allow.
 *   otherwise    fencing.guard_slow(resource, schema, table, operation, fencing.term) through SPI, which enters
 *                with advancing, honours an audited break-glass, or rejects and audits.
 * An entering is remembered for the rest of the transaction (so later statements cost two setting lookups), keyed by
 * the subtransaction that took the lock: when that subtransaction rolls back, PostgreSQL releases the lock and this
 * guard forgets the entering; when it commits, both pass to its parent; at the end of the transaction (commit,
 * abort, PREPARE) everything is forgotten. Nothing is kept in a setting a client could forge or leave behind.
 *
 * Trigger arguments (set by fencing.protect_table): TG_ARGV[0] = the resource's lock_key, TG_ARGV[1] = the resource,
 * and optionally TG_ARGV[2] = the operations (comma-separated) a transaction without a term may do.
 * Installed by migrations/native/build.sh --install (or loaded by path); switched on by SELECT fencing.use_native_guard()
 * (a superuser; the migrations do it when the library loads) and off by SELECT fencing.use_plpgsql_guard().
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(fenceline_guard);

#define FENCE_LOCK_NAMESPACE 1178946115
#define MAX_ENTERED 16

#if PG_VERSION_NUM >= 170000
#define MY_LXID (MyProc->vxid.lxid)
#else
#define MY_LXID (MyProc->lxid)
#endif

/* Enterings of the current transaction: (lock key, term), valid while the subtransaction that took the lock lives. */
typedef struct Entered
{
	LocalTransactionId lxid;
	SubTransactionId subid;
	int32		key;
	int64		term;
	char		leader[201];	/* fencing.leader_id when entered ("" for none): a change of it is decided anew */
} Entered;

static Entered entered[MAX_ENTERED];
static int	n_entered = 0;

void		_PG_init(void);
static void forget_catalog(Datum arg, int cacheid, uint32 hashvalue);

static void
forget_all(XactEvent event, void *arg)
{
	n_entered = 0;
}

static void
follow_subtransaction(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	int			i = 0;

	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	while (i < n_entered)
	{
		if (entered[i].subid != mySubid)
			i++;
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
			entered[i++].subid = parentSubid;	/* the lock passes to the parent too */
		else
			entered[i] = entered[--n_entered];	/* the lock was released with the rollback */
	}
}

void
_PG_init(void)
{
	RegisterXactCallback(forget_all, NULL);
	RegisterSubXactCallback(follow_subtransaction, NULL);
	CacheRegisterSyscacheCallback(RELOID, forget_catalog, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, forget_catalog, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, forget_catalog, (Datum) 0);
	CacheRegisterSyscacheCallback(ATTNUM, forget_catalog, (Datum) 0);
}

static void
forget_key(int32 key)
{
	int			i = 0;

	while (i < n_entered)
	{
		if (entered[i].key == key)
			entered[i] = entered[--n_entered];
		else
			i++;
	}
}

static bool
is_entered(int32 key, int64 term, const char *leader)
{
	for (int i = 0; i < n_entered; i++)
		if (entered[i].key == key && entered[i].term == term && entered[i].lxid == MY_LXID
			&& strcmp(entered[i].leader, leader == NULL ? "" : leader) == 0)
			return true;
	return false;
}

/* leader is at most 200 bytes (the common case checks it). */
static void
remember_entered(int32 key, int64 term, const char *leader)
{
	if (n_entered < MAX_ENTERED)
	{
		entered[n_entered].lxid = MY_LXID;
		entered[n_entered].subid = GetCurrentSubTransactionId();
		entered[n_entered].key = key;
		entered[n_entered].term = term;
		strlcpy(entered[n_entered].leader, leader == NULL ? "" : leader, sizeof(entered[n_entered].leader));
		n_entered++;
	}
}

/* A term as the common case accepts it: 1 to 18 decimal digits, no sign, no blanks, not zero. */
static bool
parse_term(const char *s, int64 *term)
{
	int64		v = 0;
	int			n = 0;

	if (s == NULL || s[0] < '1' || s[0] > '9')
		return false;
	for (; s[n] != '\0'; n++)
	{
		if (n >= 18 || s[n] < '0' || s[n] > '9')
			return false;
		v = v * 10 + (s[n] - '0');
	}
	*term = v;
	return true;
}

static bool
is_empty(const char *s)
{
	return s == NULL || s[0] == '\0';
}

/*
 * Takes a lock owned by the current (sub)transaction itself. PostgreSQL gives a lock to CurrentResourceOwner, which
 * while a cursor or an extended-protocol portal runs is the portal's: a portal that fails inside a savepoint releases
 * its locks at the savepoint's rollback, while the rows it wrote earlier, at top level, stay. The fence lock must live
 * exactly as long as the writes it covers.
 */
static bool
lock_for_transaction(LOCKTAG *tag, LOCKMODE mode, bool dont_wait, bool *newly)
{
	ResourceOwner saved = CurrentResourceOwner;
	LockAcquireResult result;

	CurrentResourceOwner = CurTransactionResourceOwner;
	PG_TRY();
	{
		result = LockAcquire(tag, mode, false, dont_wait);
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = saved;
	}
	PG_END_TRY();
	if (newly != NULL)
		*newly = result == LOCKACQUIRE_OK;
	return result != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Catalog objects the guard looks up on every entering, looked up once per backend: the role fencing_app, the mark's
 * table and its two unique indexes, and the column numbers of their keys. Any change to a relation or a role anywhere
 * (a DROP, a RENAME, a migration re-creating them) is announced by an invalidation, which PostgreSQL processes before
 * the next statement and at every lock it takes; the callbacks below then forget everything, and the next entering
 * looks it up again. Invalid = not looked up yet (or the object does not exist).
 */
typedef struct CatalogCache
{
	Oid			fencing_app;
	Oid			mark_table;
	Oid			by_lock_key;	/* high_water_mark_lock_key_key */
	Oid			by_resource;	/* high_water_mark_pkey */
	AttrNumber	lock_key_column;
	AttrNumber	resource_column;
	AttrNumber	mark_column;		/* highest_accepted */
	AttrNumber	leader_column;		/* leader_id */
} CatalogCache;

static CatalogCache catalog;

static void
forget_catalog(Datum arg, int cacheid, uint32 hashvalue)
{
	memset(&catalog, 0, sizeof(catalog));
}

/*
 * The mark's table, its indexes and column numbers, into *out: from the cache, or looked up (into a local first: a
 * lookup that misses the syscache opens a catalog, which processes invalidations and may empty the cache meanwhile)
 * and then cached. False when they do not exist.
 */
static bool
find_mark_table(CatalogCache *out)
{
	CatalogCache c = catalog;
	Oid			nsp;

	if (OidIsValid(c.mark_table) && OidIsValid(c.by_lock_key) && OidIsValid(c.by_resource))
	{
		*out = c;
		return true;
	}
	nsp = get_namespace_oid("fencing", true);
	if (!OidIsValid(nsp))
		return false;
	c.mark_table = get_relname_relid("high_water_mark", nsp);
	c.by_lock_key = get_relname_relid("high_water_mark_lock_key_key", nsp);
	c.by_resource = get_relname_relid("high_water_mark_pkey", nsp);
	if (!OidIsValid(c.mark_table) || !OidIsValid(c.by_lock_key) || !OidIsValid(c.by_resource))
		return false;
	c.lock_key_column = get_attnum(c.mark_table, "lock_key");
	c.resource_column = get_attnum(c.mark_table, "resource");
	c.mark_column = get_attnum(c.mark_table, "highest_accepted");
	c.leader_column = get_attnum(c.mark_table, "leader_id");
	if (c.lock_key_column <= 0 || c.resource_column <= 0 || c.mark_column <= 0 || c.leader_column <= 0)
		return false;
	c.fencing_app = catalog.fencing_app;	/* looked up on its own, maybe meanwhile */
	catalog = c;
	*out = c;
	return true;
}

/* Terms are honoured from session users in fencing_app only (guard_slow raises 42501 for the others). */
static bool
may_offer_terms(void)
{
	Oid			role = catalog.fencing_app;

	if (!OidIsValid(role))
		catalog.fencing_app = role = get_role_oid("fencing_app", true);
	return OidIsValid(role) && is_member_of_role(GetSessionUserId(), role);
}

/*
 * The mark row of fencing.high_water_mark found by an equality probe of one of its unique indexes, read with a
 * snapshot taken now (after whatever lock the caller took). PROBE_FOUND sets *mark and *holder (leader_id, palloc'd;
 * NULL when none); PROBE_MISSING_TABLE when the table or the index does not exist (the caller names the problem).
 */
typedef enum
{
	PROBE_FOUND,
	PROBE_NO_ROW,
	PROBE_MISSING_TABLE
} ProbeResult;

static ProbeResult
probe_mark(bool by_resource, RegProcedure eq, Datum value, Oid collation, int64 *mark, char **holder, int64 *key)
{
	CatalogCache found;
	Oid			indexid;
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData skey;
	HeapTuple	tuple;
	Snapshot	snapshot;
	ProbeResult result = PROBE_NO_ROW;

	/*
	 * A copy: opening the table processes invalidations, and any relation changed anywhere (a temporary table
	 * created by another session) makes the callbacks forget the cache while this probe still needs it. A stale OID
	 * fails closed: the table or index no longer opens.
	 */
	if (!find_mark_table(&found))
		return PROBE_MISSING_TABLE;
	indexid = by_resource ? found.by_resource : found.by_lock_key;
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	rel = table_open(found.mark_table, AccessShareLock);
	/* systable_beginscan takes the heap's column number and maps it to the index's */
	ScanKeyInit(&skey, by_resource ? found.resource_column : found.lock_key_column, BTEqualStrategyNumber, eq, value);
	skey.sk_collation = collation;
	scan = systable_beginscan(rel, indexid, true, snapshot, 1, &skey);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		TupleDesc	desc = RelationGetDescr(rel);
		Datum	   *values = palloc(desc->natts * sizeof(Datum));
		bool	   *nulls = palloc(desc->natts * sizeof(bool));

		/* heap_deform_tuple, not heap_getattr: the inline version differs between minor releases' headers */
		heap_deform_tuple(tuple, desc, values, nulls);
		if (!nulls[found.mark_column - 1] && !nulls[found.lock_key_column - 1])	/* both NOT NULL */
		{
			*mark = DatumGetInt64(values[found.mark_column - 1]);
			*holder = nulls[found.leader_column - 1] ? NULL : TextDatumGetCString(values[found.leader_column - 1]);
			if (key != NULL)
				*key = DatumGetInt64(values[found.lock_key_column - 1]);
			result = PROBE_FOUND;
		}
	}
	systable_endscan(scan);
	table_close(rel, NoLock);	/* AccessShareLock kept to the end of the transaction, as for any read */
	UnregisterSnapshot(snapshot);
	return result;
}

/*
 * The fence lock, shared, at transaction level (held until the transaction ends, or until this subtransaction rolls
 * back), then the mark row read with a snapshot taken after the lock was granted. True when the mark equals the term
 * and the leader ids agree.
 */
static bool
enter_common(int32 key, int64 term, const char *leader)
{
	LOCKTAG		tag;
	bool		accepted = false;
	bool		newly_locked;
	int64		mark_seen = -1;
	int64		mark;
	char	   *holder;

	/*
	 * Not granted at once: an advance or a squatter holds or awaits the key. The slow path waits for the one and ends
	 * the other (fencing.take_fence_share); waiting here would let a squatter stop every writer.
	 */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, FENCE_LOCK_NAMESPACE, (uint32) key, 2);
	if (!lock_for_transaction(&tag, ShareLock, true, &newly_locked))
		return false;

	switch (probe_mark(false, F_INT8EQ, Int64GetDatum((int64) key), InvalidOid,
					   &mark, &holder, NULL))
	{
		case PROBE_MISSING_TABLE:
			return false;		/* the slow path names the problem */
		case PROBE_NO_ROW:
			break;
		case PROBE_FOUND:
			mark_seen = mark;
			accepted = mark == term && (holder == NULL || is_empty(leader) || strcmp(holder, leader) == 0);
			break;
	}

	/*
	 * A newer term goes to the slow path to advance: without the shared lock, which nothing was written under yet.
	 * An advance ends every other holder, so a transaction advancing while it held it would end (and be ended by) a
	 * concurrent transaction of the same new term.
	 */
	if (!accepted && newly_locked && mark_seen < term)
	{
		ResourceOwner saved = CurrentResourceOwner;

		CurrentResourceOwner = CurTransactionResourceOwner;	/* the owner it was taken for */
		LockRelease(&tag, ShareLock, false);
		CurrentResourceOwner = saved;
	}
	return accepted;
}

/* Is word one of the comma-separated words of list? */
static bool
is_listed(const char *list, const char *word)
{
	size_t		len = strlen(word);
	const char *p = list;

	while (p != NULL && *p != '\0')
	{
		if (strncmp(p, word, len) == 0 && (p[len] == ',' || p[len] == '\0'))
			return true;
		p = strchr(p, ',');
		if (p != NULL)
			p++;
	}
	return false;
}

static const char *
operation_name(TriggerEvent event)
{
	if (TRIGGER_FIRED_BY_INSERT(event))
		return "INSERT";
	if (TRIGGER_FIRED_BY_UPDATE(event))
		return "UPDATE";
	if (TRIGGER_FIRED_BY_DELETE(event))
		return "DELETE";
	return "TRUNCATE";
}

Datum
fenceline_guard(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata;
	Trigger    *trigger;
	const char *term_setting;
	const char *leader;
	const char *scope;
	int32		key;
	int64		term = 0;
	bool		common;
	char	   *offered;
	Oid			argtypes[5] = {TEXTOID, NAMEOID, NAMEOID, TEXTOID, TEXTOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	int			rc;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("fencing.guard() can only be called as a trigger")));
	trigdata = (TriggerData *) fcinfo->context;
	trigger = trigdata->tg_trigger;
	if (!TRIGGER_FIRED_BEFORE(trigdata->tg_event) || !TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event) ||
		(trigger->tgnargs != 2 && trigger->tgnargs != 3))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("fencing.guard() on %s must be a BEFORE ... FOR EACH STATEMENT trigger with 2 or 3 arguments, has %d",
						RelationGetRelationName(trigdata->tg_relation), trigger->tgnargs),
				 errhint("Create the trigger with fencing.protect_table().")));
	key = pg_strtoint32(trigger->tgargs[0]);

	term_setting = GetConfigOption("fencing.term", true, false);
	/*
	 * An operation the table leaves to writers without a term (third argument), in a transaction without any term:
	 * allowed. A transaction with a term goes on below, fenced on every operation (a blank term: the slow path).
	 */
	if (trigger->tgnargs == 3 && is_empty(term_setting) &&
		is_listed(trigger->tgargs[2], operation_name(trigdata->tg_event)))
		return PointerGetDatum(NULL);
	leader = GetConfigOption("fencing.leader_id", true, false);
	scope = GetConfigOption("fencing.resource", true, false);
	common = parse_term(term_setting, &term)
		&& is_empty(GetConfigOption("fencing.break_glass", true, false))
		&& (is_empty(scope) || strcmp(scope, trigger->tgargs[1]) == 0)
		&& (leader == NULL || strlen(leader) <= 200);
	if (common && is_entered(key, term, leader))
		return PointerGetDatum(NULL);
	if (common && may_offer_terms() && enter_common(key, term, leader))
	{
		remember_entered(key, term, leader);
		return PointerGetDatum(NULL);
	}

	if (leader != NULL)
		leader = pstrdup(leader);	/* the slow path runs SQL that sets settings */

	/*
	 * Slow path. What it decides replaces what this transaction entered before for the resource (it may advance the
	 * mark past a term entered earlier): forgotten now, remembered again below if it enters.
	 */
	forget_key(key);
	offered = term_setting == NULL ? NULL : pstrdup(term_setting);
	values[0] = CStringGetTextDatum(trigger->tgargs[1]);
	values[1] = DirectFunctionCall1(namein,
									CStringGetDatum(get_namespace_name(RelationGetNamespace(trigdata->tg_relation))));
	values[2] = DirectFunctionCall1(namein, CStringGetDatum(RelationGetRelationName(trigdata->tg_relation)));
	values[3] = CStringGetTextDatum(operation_name(trigdata->tg_event));
	if (offered == NULL)
	{
		values[4] = (Datum) 0;
		nulls[4] = 'n';
	}
	else
		values[4] = CStringGetTextDatum(offered);

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "fencing.guard(): SPI_connect failed: %s", SPI_result_code_string(rc));
	/* Schema-qualified with explicit argument types: the caller's search_path cannot redirect the call. */
	rc = SPI_execute_with_args("SELECT fencing.guard_slow($1, $2, $3, $4, $5)", 5, argtypes, values, nulls, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "fencing.guard(): SELECT fencing.guard_slow(...) failed: %s", SPI_result_code_string(rc));
	SPI_finish();
	/*
	 * guard_slow returned: entered at the term, or an audited break-glass. Whatever it entered with, it took the fence
	 * lock through SQL, i.e. for CurrentResourceOwner; every mode this backend holds is taken again for the
	 * transaction itself (granted at once), so that no portal's failure can release it early. This must not depend on
	 * how the settings were spelled: the slow path accepts spellings the common case does not (blanks, leading
	 * zeros, a leader id counted in characters), and enters with them too. Only a canonical entering is remembered.
	 */
	{
		LOCKTAG		tag;

		SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, FENCE_LOCK_NAMESPACE, (uint32) key, 2);
		if (LockHeldByMe(&tag, ExclusiveLock))
			(void) lock_for_transaction(&tag, ExclusiveLock, true, NULL);
		if (LockHeldByMe(&tag, ShareLock))
		{
			(void) lock_for_transaction(&tag, ShareLock, true, NULL);
			if (common)
				remember_entered(key, term, leader);
		}
	}
	return PointerGetDatum(NULL);
}

/*
 * The fenced writer's two statements around its work (the PL/pgSQL bodies of the same contract are in
 * fencing.use_plpgsql_guard(); the writer contract tests run against both).
 *
 * fencing.begin_write(resource, term, leader_id, statement_timeout_ms, lock_timeout_ms, idle_timeout_ms) is the first
 * statement of every writer transaction. It sets, local to the transaction, the writer's timeouts and the fencing
 * settings the guard reads (so nothing is left on a pooled server session, and nothing another client left there
 * counts), remembers which transaction it began, and returns the resource's mark (NULL: no such resource) read with a
 * snapshot taken now. At the mark's term it enters the transaction (what the guard does at the first write), so that
 * the next advance ends it even before it writes. It refuses (FL014) a transaction
 * that is not READ COMMITTED, READ WRITE (a default_transaction_isolation or default_transaction_read_only another
 * client left); the writer then begins again with SET TRANSACTION first.
 *
 * fencing.check_writers_transaction() runs right before the writer's COMMIT, in the same message: FL013 unless the
 * current transaction is the one begin_write began in this backend (the work did not end it and go on in another).
 * A backend's local transaction id is new for every transaction, so no other transaction can match.
 */
static LocalTransactionId writers_lxid = InvalidLocalTransactionId;

#define ERRCODE_FENCING_INVALID_INPUT MAKE_SQLSTATE('F', 'L', '0', '0', '3')
#define ERRCODE_FENCING_NOT_WRITERS_TRANSACTION MAKE_SQLSTATE('F', 'L', '0', '1', '3')
#define ERRCODE_FENCING_TRANSACTION_MODE MAKE_SQLSTATE('F', 'L', '0', '1', '4')

PG_FUNCTION_INFO_V1(fenceline_begin_write);
PG_FUNCTION_INFO_V1(fenceline_check_writers_transaction);

static void
set_local(const char *name, const char *value, GucContext context)
{
	(void) set_config_option(name, value, context, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
}

static int32
timeout_argument(FunctionCallInfo fcinfo, int n, const char *name)
{
	int32		ms;

	if (PG_ARGISNULL(n) || (ms = PG_GETARG_INT32(n)) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FENCING_INVALID_INPUT),
				 errmsg("fencing.begin_write: %s must be 0 (none) or a positive number of milliseconds, was %s",
						name, PG_ARGISNULL(n) ? "NULL" : psprintf("%d", PG_GETARG_INT32(n)))));
	return ms;
}

/*
 * The mark of the resource and its lock key (by its primary key), read with a snapshot taken now; false when there is
 * no row.
 */
static bool
read_mark(const char *resource, int64 *mark, int64 *key)
{
	char	   *holder;

	switch (probe_mark(true, F_TEXTEQ, CStringGetTextDatum(resource),
					   DEFAULT_COLLATION_OID, mark, &holder, key))
	{
		case PROBE_MISSING_TABLE:
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("fencing.begin_write: fencing.high_water_mark or its primary key is missing"),
					 errhint("Apply the fencing migrations.")));
			break;
		case PROBE_NO_ROW:
			return false;
		case PROBE_FOUND:
			break;
	}
	return true;
}

Datum
fenceline_begin_write(PG_FUNCTION_ARGS)
{
	char	   *resource;
	char	   *leader;
	int64		term;
	int32		statement_ms;
	int32		lock_ms;
	int32		idle_ms;
	int64		mark;
	int64		key;
	char		buf[32];
	GucContext	context;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_GETARG_INT64(1) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_FENCING_INVALID_INPUT),
				 errmsg("fencing.begin_write: resource and term are required, and the term must be at least 1 (was %s)",
						PG_ARGISNULL(1) ? "NULL" : psprintf(INT64_FORMAT, PG_GETARG_INT64(1)))));
	resource = text_to_cstring(PG_GETARG_TEXT_PP(0));
	term = PG_GETARG_INT64(1);
	leader = PG_ARGISNULL(2) ? "" : text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (strlen(leader) > 200)
		ereport(ERROR,
				(errcode(ERRCODE_FENCING_INVALID_INPUT),
				 errmsg("fencing.begin_write: leader_id must be at most 200 bytes, was %zu", strlen(leader))));
	statement_ms = timeout_argument(fcinfo, 3, "statement_timeout_ms");
	lock_ms = timeout_argument(fcinfo, 4, "lock_timeout_ms");
	idle_ms = timeout_argument(fcinfo, 5, "idle_timeout_ms");
	if (XactIsoLevel != XACT_READ_COMMITTED || XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_FENCING_TRANSACTION_MODE),
				 errmsg("fencing.begin_write: the transaction is %s%s; the writer's work runs READ COMMITTED, READ WRITE",
						XactIsoLevel == XACT_READ_COMMITTED ? "READ COMMITTED" :
						XactIsoLevel == XACT_REPEATABLE_READ ? "REPEATABLE READ" :
						XactIsoLevel == XACT_SERIALIZABLE ? "SERIALIZABLE" : "READ UNCOMMITTED",
						XactReadOnly ? ", READ ONLY" : ""),
				 errhint("Begin the transaction with SET TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE (the session's default_transaction_isolation or default_transaction_read_only says otherwise).")));

	context = superuser() ? PGC_SUSET : PGC_USERSET;
	snprintf(buf, sizeof(buf), "%d", statement_ms);
	set_local("statement_timeout", buf, context);
	snprintf(buf, sizeof(buf), "%d", lock_ms);
	set_local("lock_timeout", buf, context);
	snprintf(buf, sizeof(buf), "%d", idle_ms);
	set_local("idle_in_transaction_session_timeout", buf, context);
	snprintf(buf, sizeof(buf), INT64_FORMAT, term);
	set_local("fencing.term", buf, context);
	set_local("fencing.resource", resource, context);
	set_local("fencing.leader_id", leader, context);
	set_local("fencing.break_glass", "", context);
	writers_lxid = MY_LXID;

	if (!read_mark(resource, &mark, &key))
		PG_RETURN_NULL();

	/*
	 * At the mark's term the transaction enters now, as the guard would at the work's first write: so that the next
	 * term's advance ends it even while its work has only locked rows (SELECT ... FOR UPDATE) and not written yet,
	 * instead of leaving the new leader waiting for those row locks. Not granted at once, or not at the term: the
	 * guard decides at the first write, as before. A newer term is advanced by the writer before the work.
	 */
	if (mark == term && may_offer_terms() && !is_entered((int32) key, term, leader) &&
		enter_common((int32) key, term, leader))
		remember_entered((int32) key, term, leader);
	PG_RETURN_INT64(mark);
}

Datum
fenceline_check_writers_transaction(PG_FUNCTION_ARGS)
{
	if (writers_lxid != MY_LXID)
		ereport(ERROR,
				(errcode(ERRCODE_FENCING_NOT_WRITERS_TRANSACTION),
				 errmsg("fencing: the transaction about to commit is not the one the writer began: the work ended that one itself")));
	PG_RETURN_VOID();
}
