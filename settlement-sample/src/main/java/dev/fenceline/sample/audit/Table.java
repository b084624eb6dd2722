package dev.fenceline.sample.audit;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A small result table with three renderings: {@code table} (aligned text for people), {@code json}
 * (one JSON array of objects keyed by column name; numbers stay numbers, nulls stay null) and
 * {@code csv} (RFC 4180: header line, comma separator, fields with comma/quote/newline quoted, CRLF-free
 * {@code \n} line ends, null as empty field).
 */
public record Table(List<String> columns, List<List<Object>> rows) {
    private static final ObjectMapper JSON = new ObjectMapper().disable(SerializationFeature.FAIL_ON_EMPTY_BEANS);

    public enum Format {
        TABLE,
        JSON,
        CSV;

        public static Format parse(String s) {
            try {
                return valueOf(s.trim().toUpperCase(Locale.ROOT));
            } catch (RuntimeException e) {
                throw new dev.fenceline.sample.cli.BadInputException(
                        "--format must be one of table, json, csv (got '" + s + "')");
            }
        }
    }

    public String render(Format f) {
        return switch (f) {
            case TABLE -> text();
            case JSON -> json();
            case CSV -> csv();
        };
    }

    public String text() {
        int[] w = new int[columns.size()];
        for (int i = 0; i < w.length; i++) {
            w[i] = columns.get(i).length();
        }
        List<String[]> cells = new ArrayList<>();
        for (List<Object> r : rows) {
            String[] c = new String[w.length];
            for (int i = 0; i < w.length; i++) {
                Object o = r.get(i);
                c[i] = o == null ? "" : String.valueOf(o).replace('\n', ' ');
                w[i] = Math.max(w[i], c[i].length());
            }
            cells.add(c);
        }
        StringBuilder sb = new StringBuilder();
        line(sb, columns.toArray(new String[0]), w);
        StringBuilder rule = new StringBuilder();
        for (int i = 0; i < w.length; i++) {
            rule.append(i == 0 ? "" : "-+-").append("-".repeat(w[i]));
        }
        sb.append(rule).append('\n');
        for (String[] c : cells) {
            line(sb, c, w);
        }
        sb.append("(")
                .append(rows.size())
                .append(rows.size() == 1 ? " row)" : " rows)")
                .append('\n');
        return sb.toString();
    }

    private static void line(StringBuilder sb, String[] c, int[] w) {
        StringBuilder l = new StringBuilder();
        for (int i = 0; i < w.length; i++) {
            l.append(i == 0 ? "" : " | ").append(c[i]).append(" ".repeat(w[i] - c[i].length()));
        }
        sb.append(l.toString().stripTrailing()).append('\n');
    }

    public String json() {
        List<Map<String, Object>> out = new ArrayList<>();
        for (List<Object> r : rows) {
            Map<String, Object> m = new LinkedHashMap<>();
            for (int i = 0; i < columns.size(); i++) {
                m.put(columns.get(i), r.get(i));
            }
            out.add(m);
        }
        try {
            return JSON.writeValueAsString(out) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    public String csv() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.join(",", columns.stream().map(Table::csvField).toList()))
                .append('\n');
        for (List<Object> r : rows) {
            List<String> f = new ArrayList<>();
            for (Object o : r) {
                f.add(o == null ? "" : csvField(String.valueOf(o)));
            }
            sb.append(String.join(",", f)).append('\n');
        }
        return sb.toString();
    }

    static String csvField(String s) {
        if (s.indexOf(',') >= 0 || s.indexOf('"') >= 0 || s.indexOf('\n') >= 0 || s.indexOf('\r') >= 0) {
            return '"' + s.replace("\"", "\"\"") + '"';
        }
        return s;
    }
}
