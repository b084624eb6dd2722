package dev.fenceline.fencing;

import java.util.Locale;

/**
 * Finds SQL that would end (or restart) the fenced transaction from inside the work: {@code COMMIT} (also
 * {@code AND CHAIN}), {@code END}, {@code ROLLBACK} / {@code ABORT} (not {@code ROLLBACK TO} a savepoint),
 * {@code PREPARE TRANSACTION}, {@code BEGIN} / {@code START TRANSACTION}, as any statement of a multi-statement string.
 * Such SQL would commit the work's earlier writes on their own, outside the writer's all-or-nothing. A scan of the
 * text, not a parser: it skips comments, quoted identifiers and string literals (standard, {@code E''} and dollar
 * quoted) and looks at the first words of each statement. It tokenizes as the server's lexer does where that decides
 * what is code: a word runs on through {@code $} (so {@code a$x$} is one identifier, not a dollar quote), only a
 * standalone {@code E} opens an escape string (not the {@code e} ending {@code name'...'}), and a line comment ends at
 * a carriage return as well as a newline. The text is scanned twice, as the server reads it with
 * {@code standard_conforming_strings} on and off, because the session can turn it off, and then a backslash escapes the
 * quote in a plain string too.
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
        String found = find(sql, false);
        return found != null ? found : find(sql, true);
    }

    private static String find(String sql, boolean backslashQuotes) {
        int n = sql.length();
        int start = 0;
        int i = 0;
        int depth = 0;                 // parentheses open in this statement
        boolean afterBegin = false;    // the last token (but blanks and comments) was the word BEGIN, at depth 0
        while (i <= n) {
            if (i == n || sql.charAt(i) == ';') {
                String found = check(sql, start, i);
                if (found != null) {
                    return found;
                }
                start = ++i;
                depth = 0;
                afterBegin = false;
                continue;
            }
            char c = sql.charAt(i);
            int j = skip(sql, i, backslashQuotes);
            if (Character.isWhitespace(c) || j > i + 1 && (sql.startsWith("--", i) || sql.startsWith("/*", i))) {
                i = j;
                continue;
            }
            boolean word = startsWord(c) && !((c == 'E' || c == 'e') && i + 1 < n && sql.charAt(i + 1) == '\'');
            if (word && afterBegin && sql.regionMatches(true, i, "ATOMIC", 0, j - i) && j - i == 6
                    && routineDefinition(sql, start, i)) {
                j = afterAtomicBody(sql, j, backslashQuotes);
            }
            afterBegin = word && depth == 0 && j - i == 5 && sql.regionMatches(true, i, "BEGIN", 0, 5);
            depth += c == '(' ? 1 : c == ')' ? -1 : 0;
            i = j;
        }
        return null;
    }

    /**
     * A SQL-standard routine body ({@code CREATE FUNCTION|PROCEDURE ... BEGIN ATOMIC stmt; ...; END}) is one statement
     * to the server, semicolons and all, and nothing in it runs when it is created. The body is taken to end at its
     * first word END (not at the END that matches: a CASE's END, or {@code end} as a column label, comes first). So
     * what is skipped is never more than the server's body: a COMMIT after the body is still found, and a body with an
     * END inside it (a CASE) is refused rather than risked. {@code from}: just after BEGIN ATOMIC.
     */
    private static int afterAtomicBody(String sql, int from, boolean backslashQuotes) {
        int i = from;
        while (i < sql.length()) {
            int j = skip(sql, i, backslashQuotes);
            if (j - i == 3 && sql.regionMatches(true, i, "END", 0, 3) && startsWord(sql.charAt(i))) {
                return j;
            }
            i = j;
        }
        return i;
    }

    /**
     * Whether the statement starting at {@code from} creates a function or procedure, and the BEGIN ATOMIC before
     * {@code atomic} is outside parentheses (so not a parameter {@code begin} of a type {@code atomic}): where the
     * server's grammar has nothing but a routine body for BEGIN ATOMIC.
     */
    private static boolean routineDefinition(String sql, int from, int atomic) {
        String w = firstWords(sql, from, atomic, 4);
        return w.startsWith("CREATE FUNCTION ") || w.startsWith("CREATE PROCEDURE ")
                || w.startsWith("CREATE OR REPLACE FUNCTION ") || w.startsWith("CREATE OR REPLACE PROCEDURE ");
    }

    /**
     * Index after the token starting at {@code i} (a word, a comment, a quoted string or identifier, or one character);
     * {@code backslashQuotes}: a backslash escapes in plain strings ({@code standard_conforming_strings} off).
     */
    private static int skip(String s, int i, boolean backslashQuotes) {
        int n = s.length();
        char c = s.charAt(i);
        if (c == '-' && i + 1 < n && s.charAt(i + 1) == '-') {
            int j = i + 2;
            while (j < n && s.charAt(j) != '\n' && s.charAt(j) != '\r') {
                j++;
            }
            return j;
        }
        if ((c == 'E' || c == 'e') && i + 1 < n && s.charAt(i + 1) == '\'') {
            return quoted(s, i + 1, true);
        }
        if (startsWord(c)) {
            int j = i + 1;
            while (j < n && (startsWord(s.charAt(j)) || Character.isDigit(s.charAt(j)) || s.charAt(j) == '$')) {
                j++;
            }
            return j;
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
            return quoted(s, i, c == '\'' && backslashQuotes);
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

    /** Index after the string or quoted identifier opened by the quote at {@code i}. */
    private static int quoted(String s, int i, boolean backslashes) {
        int n = s.length();
        char c = s.charAt(i);
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

    /** The server's identifier start: a letter, an underscore or any character outside ASCII. */
    private static boolean startsWord(char c) {
        return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c > 127;
    }

    private static String check(String sql, int from, int to) {
        String w = firstWords(sql, from, to, 3);
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

    /** The statement's first {@code max} words, upper case, each followed by a blank (comments between are skipped). */
    private static String firstWords(String sql, int from, int to, int max) {
        StringBuilder words = new StringBuilder();
        int i = from;
        int count = 0;
        while (i < to && count < max) {
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
            } else if (sql.startsWith("--", i) || sql.startsWith("/*", i)) {
                i = Math.min(skip(sql, i, false), to);  // a comment between words
            } else {
                break;                 // not a word, a comment or blank: the statement's first words are over
            }
        }
        return words.toString().toUpperCase(Locale.ROOT);
    }
}
