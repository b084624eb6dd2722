package dev.fenceline.sample.cli;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * Up-front validation of CLI input. Every method either returns the normalised value or throws
 * {@link BadInputException} with a message naming the option, the rule and the value; the CLI
 * turns it into exit code 2 before anything is contacted or changed.
 */
public final class Validation {
    private static final Pattern ELECTION = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");
    private static final Pattern WORKER_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,62}");

    private Validation() {}

    public static String jdbcUrl(String url) {
        if (url == null || url.isBlank()) {
            throw new BadInputException("--jdbc-url must not be empty (env FENCELINE_JDBC_URL)");
        }
        String u = url.trim();
        if (!u.startsWith("jdbc:postgresql:")) {
            throw new BadInputException("--jdbc-url must be a PostgreSQL JDBC URL such as "
                    + "jdbc:postgresql://127.0.0.1:5432/fenceline?user=postgres (got '" + url + "')");
        }
        if (u.startsWith("jdbc:postgresql://")) {
            String rest = u.substring("jdbc:postgresql://".length());
            int end = rest.length();
            for (char ch : new char[] {'/', '?'}) {
                int i = rest.indexOf(ch);
                if (i >= 0 && i < end) {
                    end = i;
                }
            }
            for (String hostPort : rest.substring(0, end).split(",", -1)) {
                int colon = hostPort.lastIndexOf(':');
                if (colon < 0 || hostPort.endsWith("]")) {
                    continue; // default port
                }
                String p = hostPort.substring(colon + 1);
                int n;
                try {
                    n = Integer.parseInt(p);
                } catch (NumberFormatException e) {
                    throw new BadInputException("--jdbc-url has a malformed port '" + p + "': '" + url + "'");
                }
                if (n < 1 || n > 65535) {
                    throw new BadInputException("--jdbc-url port must be 1..65535 (got " + n + "): '" + url + "'");
                }
            }
        }
        Properties parsed = org.postgresql.Driver.parseURL(u, new Properties());
        if (parsed == null) {
            throw new BadInputException("--jdbc-url is malformed: '" + url + "'");
        }
        String db = parsed.getProperty("PGDBNAME");
        if (db == null || db.isBlank()) {
            throw new BadInputException("--jdbc-url names no database: '" + url + "'");
        }
        return u;
    }

    /** Comma-separated etcd client endpoints, each http(s)://host:port; host:port alone means http, as with etcdctl. */
    public static List<String> etcdEndpoints(String csv) {
        if (csv == null || csv.isBlank()) {
            throw new BadInputException(
                    "--etcd must name at least one endpoint, e.g. http://127.0.0.1:2379 (env FENCELINE_ETCD)");
        }
        List<String> out = new ArrayList<>();
        for (String raw : csv.split(",", -1)) {
            String e = raw.trim();
            if (e.isEmpty()) {
                throw new BadInputException("--etcd contains an empty endpoint: '" + csv + "'");
            }
            String url = e.contains("://") ? e : "http://" + e; // host:port alone means http, as with etcdctl
            if (!url.startsWith("http://") && !url.startsWith("https://")) {
                throw new BadInputException(
                        "--etcd endpoint must be host:port or start with http:// or https://: '" + e + "'");
            }
            URI uri;
            try {
                uri = new URI(url);
            } catch (URISyntaxException ex) {
                throw new BadInputException("--etcd endpoint is malformed: '" + e + "' (" + ex.getReason() + ")");
            }
            if (uri.getScheme() == null
                    || !(uri.getScheme().equals("http") || uri.getScheme().equals("https"))) {
                throw new BadInputException(
                        "--etcd endpoint must be host:port or start with http:// or https://: '" + e + "'");
            }
            if (uri.getHost() == null || uri.getPort() < 1 || uri.getPort() > 65535) {
                throw new BadInputException(
                        "--etcd endpoint must be [http(s)://]host:port with a port 1..65535: '" + e + "'");
            }
            if (uri.getPath() != null
                    && !uri.getPath().isEmpty()
                    && !uri.getPath().equals("/")) {
                throw new BadInputException("--etcd endpoint must not have a path: '" + e + "'");
            }
            out.add(uri.getScheme() + "://" + uri.getHost() + ":" + uri.getPort());
        }
        return List.copyOf(out);
    }

    /**
     * A file an option names: it must exist and be readable. @throws BadInputException naming the option, its
     * environment variable and the path
     */
    public static java.nio.file.Path readableFile(String option, String env, String path) {
        java.nio.file.Path p;
        try {
            p = java.nio.file.Path.of(path);
        } catch (java.nio.file.InvalidPathException e) {
            throw new BadInputException(option + " is not a valid path: '" + path + "' (env " + env + ")");
        }
        if (!java.nio.file.Files.isRegularFile(p) || !java.nio.file.Files.isReadable(p)) {
            throw new BadInputException(
                    option + " names a file that does not exist or is not readable: '" + path + "' (env " + env + ")");
        }
        return p;
    }

    public static String electionName(String name) {
        if (name == null || !ELECTION.matcher(name).matches()) {
            throw new BadInputException("--election must match " + ELECTION.pattern()
                    + " (lower-case letters, digits, '-' and '_', at most 63 characters); got '" + name + "'");
        }
        return name;
    }

    public static String workerId(String id) {
        if (id == null || !WORKER_ID.matcher(id).matches()) {
            throw new BadInputException("--id must match " + WORKER_ID.pattern() + "; got '" + id + "'");
        }
        return id;
    }

    public static long atLeast(String option, long value, long min) {
        if (value < min) {
            throw new BadInputException(option + " must be >= " + min + " (got " + value + ")");
        }
        return value;
    }

    public static long between(String option, long value, long min, long max) {
        if (value < min || value > max) {
            throw new BadInputException(option + " must be between " + min + " and " + max + " (got " + value + ")");
        }
        return value;
    }

    public static void check(boolean ok, String message) {
        if (!ok) {
            throw new BadInputException(message);
        }
    }
}
