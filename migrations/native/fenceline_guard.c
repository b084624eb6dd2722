/*
 * Fenceline: fencing.guard() in C, the native implementation of the statement trigger on protected tables.
 *
 * Why it exists: the fence's hot path is one comparison of two settings, but a PL/pgSQL trigger pays a
 * per-transaction set-up for every expression it evaluates (and for the call itself). On a small machine that set-up
 * was the whole measured cost of fencing (tens of microseconds per transaction). This function makes the same
 * decision with two in-memory setting lookups and a strcmp.
 *
 * Behaviour is identical to the PL/pgSQL guard in R__40_fencing_guard.sql (the trigger contract tests run against
 * both), because only the fast path is here:
 *   allow   when the backend is entered for the resource (the setting named by TG_ARGV[0], set by fencing.enter()
 *           or fencing.enter_transaction(), is non-empty) and fencing.term is unset, empty or exactly the entered
 *           term;
 *   else    call fencing.guard_slow(resource, schema, table, operation, fencing.term) through SPI, which honours an
 *           audited break-glass, enters with fencing.term (possibly advancing the mark) or rejects and audits.
 * The safety argument (why "entered setting non-empty" implies "the mark still equals that term") is in the header
 * of R__20_fencing_enter.sql: entering sets the setting only while holding the shared advisory lock (for the session,
 * with the backend registered; or for the transaction), and an advance makes every older backend exit before the
 * mark moves.
 *
 * Installed by migrations/native/build.sh --install; switched on by SELECT fencing.use_native_guard() (a superuser;
 * the V5 migration does it when the library loads) and off by SELECT fencing.use_plpgsql_guard().
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(fenceline_guard);

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
	const char *entered;
	const char *term;
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
		trigger->tgnargs != 2)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("fencing.guard() on %s must be a BEFORE ... FOR EACH STATEMENT trigger with 2 arguments, has %d",
						RelationGetRelationName(trigdata->tg_relation), trigger->tgnargs),
				 errhint("Create the trigger with fencing.protect_table().")));

	/* Fast path: no lock, no table read, no memory allocated. */
	entered = GetConfigOption(trigger->tgargs[0], true, false);
	term = GetConfigOption("fencing.term", true, false);
	if (entered != NULL && entered[0] != '\0' &&
		(term == NULL || term[0] == '\0' || strcmp(term, entered) == 0))
		return PointerGetDatum(NULL);

	/* Slow path: copy the offered term first, guard_slow() changes settings. */
	offered = term == NULL ? NULL : pstrdup(term);
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
	return PointerGetDatum(NULL);
}
