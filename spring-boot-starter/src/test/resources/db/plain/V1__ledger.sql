-- Applied by Boot's Flyway after the starter's fencing migrations; written only under the 'ledger' term.
CREATE TABLE ledger_entry (id bigint PRIMARY KEY);
SELECT fencing.protect_table('ledger_entry'::regclass, 'ledger');
