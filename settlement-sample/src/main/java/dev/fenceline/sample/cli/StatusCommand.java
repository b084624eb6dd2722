package dev.fenceline.sample.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.fenceline.election.ElectionAdmin;
import dev.fenceline.election.LeaderRecord;
import dev.fenceline.sample.db.SampleDatabase;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "status",
        mixinStandardHelpOptions = true,
        description = {
            "Show leader, term, lease TTL, kill switch, database marks and payment/rejection counts.",
            "",
            "Leader id, term, lease and TTL left, paused?, database mark per resource, pending/settled counts, "
                    + "rejected-write count. --json prints one JSON object with stable field names (see docs/settlement-sample.md). Exit 1 "
                    + "(still printing what is known) when etcd or the database could not be read."
        })
final class StatusCommand implements Callable<Integer> {
    /** The stable top-level field names of {@code status --json}, in output order. */
    static final List<String> JSON_FIELDS = List.of(
            "election",
            "resource",
            "leader_id",
            "term",
            "lease_id",
            "lease_id_hex",
            "ttl_left_ms",
            "acquired_at",
            "etcd_term",
            "paused",
            "db_mark",
            "marks",
            "payments_pending",
            "payments_settled",
            "batches",
            "rejected_writes",
            "etcd_ok",
            "database_ok",
            "errors");

    @Mixin
    CommonOptions common;

    @Option(names = "--json", description = "One JSON object with stable field names.")
    boolean json;

    @Override
    public Integer call() throws Exception {
        common.validateAll();
        String election = common.election();
        Map<String, Object> s = new LinkedHashMap<>();
        JSON_FIELDS.forEach(f -> s.put(f, null));
        s.put("election", election);
        s.put("resource", election);
        List<String> errors = new ArrayList<>();
        try (SampleDatabase db = common.openDatabase("fenceline-status", 2)) {
            Preconditions.requireKnownElection(db, election);
            List<Map<String, Object>> marks = new ArrayList<>();
            for (SampleDatabase.Mark m : db.marks()) {
                Map<String, Object> mm = new LinkedHashMap<>();
                mm.put("resource", m.resource());
                mm.put("highest_accepted", m.highestAccepted());
                mm.put("leader_id", m.leaderId());
                mm.put("updated_at", m.updatedAt());
                marks.add(mm);
                if (m.resource().equals(election)) {
                    s.put("db_mark", m.highestAccepted());
                }
            }
            s.put("marks", marks);
            Preconditions.requireMigrated(db);
            Map<String, Long> c = db.counts(election);
            s.put("payments_pending", c.get("pending"));
            s.put("payments_settled", c.get("settled"));
            s.put("batches", c.get("batches"));
            s.put("rejected_writes", c.get("rejected_writes"));
            s.put("database_ok", true);
        } catch (BadInputException e) {
            throw e;
        } catch (Exception e) {
            s.put("database_ok", false);
            errors.add("database: " + FencelineCli.describe(e));
        }
        try (ElectionAdmin admin = EtcdOps.admin(common)) {
            Optional<LeaderRecord> leader = admin.leader(election);
            s.put("etcd_term", admin.currentTerm(election));
            s.put("paused", admin.isPaused(election));
            if (leader.isPresent()) {
                LeaderRecord r = leader.get();
                s.put("leader_id", r.leaderId());
                s.put("term", r.term());
                s.put("lease_id", r.leaseId());
                s.put("lease_id_hex", r.leaseIdHex());
                s.put(
                        "acquired_at",
                        r.acquiredAt() == null ? null : r.acquiredAt().toString());
                s.put("ttl_left_ms", EtcdOps.leaseTtlLeftMillis(common.electionConfig(), r.leaseId()));
            }
            s.put("etcd_ok", true);
        } catch (Exception e) {
            s.put("etcd_ok", false);
            errors.add("etcd: " + FencelineCli.describe(e));
        }
        s.put("errors", errors);
        if (json) {
            System.out.println(new ObjectMapper()
                    .disable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
                    .writeValueAsString(s));
        } else {
            printText(s);
        }
        return errors.isEmpty() ? FencelineCli.EXIT_OK : FencelineCli.EXIT_FAILURE;
    }

    @SuppressWarnings("unchecked")
    private static void printText(Map<String, Object> s) {
        StringBuilder b = new StringBuilder();
        b.append("election      ")
                .append(s.get("election"))
                .append(Boolean.TRUE.equals(s.get("paused")) ? "  (PAUSED: kill switch set)" : "")
                .append('\n');
        if (s.get("leader_id") != null) {
            b.append("leader        ")
                    .append(s.get("leader_id"))
                    .append("  term ")
                    .append(s.get("term"))
                    .append("  lease ")
                    .append(s.get("lease_id_hex"))
                    .append("  ttl left ")
                    .append(s.get("ttl_left_ms") == null ? "?" : s.get("ttl_left_ms") + " ms")
                    .append("  since ")
                    .append(s.get("acquired_at"))
                    .append('\n');
        } else {
            b.append("leader        none").append('\n');
        }
        b.append("etcd term     ")
                .append(s.get("etcd_term") == null ? "?" : s.get("etcd_term"))
                .append('\n');
        b.append("db mark       ");
        List<Map<String, Object>> marks = (List<Map<String, Object>>) s.get("marks");
        if (marks == null || marks.isEmpty()) {
            b.append("?");
        } else {
            for (Map<String, Object> m : marks) {
                b.append(m.get("resource"))
                        .append('=')
                        .append(m.get("highest_accepted"))
                        .append(" (")
                        .append(m.get("leader_id"))
                        .append(")  ");
            }
        }
        b.append('\n');
        b.append("payments      ")
                .append(s.get("payments_pending"))
                .append(" pending, ")
                .append(s.get("payments_settled"))
                .append(" settled in ")
                .append(s.get("batches"))
                .append(" batches")
                .append('\n');
        b.append("rejected      ")
                .append(s.get("rejected_writes"))
                .append(" stale/term-less writes audited")
                .append('\n');
        for (Object e : (List<Object>) s.get("errors")) {
            b.append("ERROR         ").append(e).append('\n');
        }
        System.out.print(b);
    }
}
