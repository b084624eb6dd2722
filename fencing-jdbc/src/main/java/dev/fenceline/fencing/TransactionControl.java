package dev.fenceline.fencing;

import java.util.Locale;

/**
 * Finds SQL that would end (or restart) the fenced transaction from inside the work: {@code COMMIT} (also
 * {@code AND CHAIN}), {@code END}, {@code ROLLBACK} / {@code ABORT} (not {@code ROLLBACK TO} a savepoint),
 * {@code PREPARE TRANSACTION}, {@code BEGIN} / {@code START TRANSACTION}, as any statement of a multi-statement string.
 * Such SQL would commit the work's earlier writes on their own, outside the writer's all-or-nothing. A scan of the
 * text, not a parser: it skips comments, quoted identifiers and string literals (standard, {@code E''} and dollar
 * quoted) and looks at the first words of each statement.
 */
final class TransactionControl {
    private TransactionControl() {
    }

    /** Throws when {@code sql} would end the fenced transaction; {@code via} names the way it was sent. */
    static void refuse(String sql, String via) throws java.sql.SQLException {
        String found = find(sql);
        if (found != null) {
            throw new java.sql.SQLException(via + ": '" + found + "' is not allowed inside fenced work: it would end"
                    + " the fenced transaction and commit (or drop) the work's earlier writes on their own; the writer"
                    + " commits when the work returns (throw from the work to roll back; savepoints are allowed)",
                    "0A000");
        }
    }

    /** The statement that ends the transaction, as written (trimmed, first 60 characters), or null if there is none. */
    static String find(String sql) {
        if (sql == null) {
            return null;
        }
        int n = sql.length();
        int start = 0;
        int i = 0;
        while (i <= n) {
            if (i == n || sql.charAt(i) == ';') {
                String found = check(sql, start, i);
                if (found != null) {
                    return found;
                }
                start = ++i;
                continue;
            }
            i = skip(sql, i);
        }
        return null;
    }

    /** Index after the token starting at {@code i} (a comment, a quoted string or identifier, or one character). */
    private static int skip(String s, int i) {
        int n = s.length();
        char c = s.charAt(i);
        if (c == '-' && i + 1 < n && s.charAt(i + 1) == '-') {
            int e = s.indexOf('\n', i);
            return e < 0 ? n : e + 1;
        }
        if (c == '/' && i + 1 < n && s.charAt(i + 1) == '*') {
            int depth = 1;             // PostgreSQL block comments nest
            int j = i + 2;
            while (j < n && depth > 0) {
                if (s.startsWith("/*", j)) {
                    depth++;
                    j += 2;
                } else if (s.startsWith("*/", j)) {
                    depth--;
                    j += 2;
                } else {
                    j++;
                }
            }
            return j;
        }
        if (c == '\'' || c == '"') {
            boolean backslashes = c == '\'' && i > 0 && (s.charAt(i - 1) == 'E' || s.charAt(i - 1) == 'e');
            int j = i + 1;
            while (j < n) {
                char d = s.charAt(j);
                if (backslashes && d == '\\') {
                    j += 2;
                    continue;
                }
                if (d == c) {
                    if (j + 1 < n && s.charAt(j + 1) == c) {
                        j += 2;        // doubled quote
                        continue;
                    }
                    return j + 1;
                }
                j++;
            }
            return n;
        }
        if (c == '$') {
            int j = i + 1;
            while (j < n && (Character.isLetterOrDigit(s.charAt(j)) || s.charAt(j) == '_')) {
                j++;
            }
            if (j < n && s.charAt(j) == '$' && !(j > i + 1 && Character.isDigit(s.charAt(i + 1)))) {
                String tag = s.substring(i, j + 1);
                int e = s.indexOf(tag, j + 1);
                return e < 0 ? n : e + tag.length();
            }
        }
        return i + 1;
    }

    private static String check(String sql, int from, int to) {
        StringBuilder words = new StringBuilder();
        int i = from;
        int count = 0;
        while (i < to && count < 3) {
            char c = sql.charAt(i);
            if (Character.isLetter(c)) {
                int j = i;
                while (j < to && (Character.isLetterOrDigit(sql.charAt(j)) || sql.charAt(j) == '_')) {
                    j++;
                }
                words.append(sql, i, j).append(' ');
                count++;
                i = j;
            } else if (Character.isWhitespace(c)) {
                i++;
            } else {
                int j = skip(sql, i);
                if (j == i + 1) {
                    break;             // not a word, a comment or blank: the statement's first words are over
                }
                i = j;                 // a comment between words
            }
        }
        String w = words.toString().toUpperCase(Locale.ROOT);
        boolean ends = w.startsWith("COMMIT ") || w.startsWith("END ") || w.startsWith("ABORT ")
                || w.startsWith("BEGIN ") || w.startsWith("START TRANSACTION ") || w.startsWith("PREPARE TRANSACTION ")
                || (w.startsWith("ROLLBACK ") && !w.startsWith("ROLLBACK TO ") && !w.startsWith("ROLLBACK WORK TO ")
                    && !w.startsWith("ROLLBACK TRANSACTION TO "));
        if (!ends) {
            return null;
        }
        String text = sql.substring(from, to).strip();
        return text.length() > 60 ? text.substring(0, 60) + "..." : text;
    }
}
