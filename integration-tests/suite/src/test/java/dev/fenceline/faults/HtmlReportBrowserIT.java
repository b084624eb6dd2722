package dev.fenceline.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.fenceline.faults.nemesis.Faults;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Loads the HTML report of a hand-made run ({@link ReportFixtures}) in headless Chromium ({@code --dump-dom}: the DOM
 * after the page's scripts ran) and checks that the drawing script finished without an error and that the timeline
 * and the table show every fault kind.
 *
 * <p>Chromium: {@code FENCELINE_CHROMIUM_BIN}, else {@code chromium} on PATH, else {@code /usr/bin/chromium}
 * ({@code scripts/ensure-chromium.sh} installs Debian's package as root). Without it the test is skipped with that
 * message, unless {@code FENCELINE_REQUIRE_CHROMIUM=1} (set by {@code scripts/test.sh} when Chromium is there), which
 * turns the skip into a failure. Only the Chromium process this test starts (and its children) is ever signalled, and
 * only when it outlives its bound.
 */
class HtmlReportBrowserIT {
    private static final long BROWSER_TIMEOUT_S = 90;

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void reportRendersWithoutScriptErrorsAndShowsEveryFaultKind(@TempDir Path dir) throws Exception {
        Path chromium = chromium();
        Path page = dir.resolve("report-77.html");
        ReportFixtures.report().writeHtml(page);

        Path out = dir.resolve("dom.html");
        Path err = dir.resolve("chromium.log");
        List<String> cmd = new ArrayList<>(List.of(
                chromium.toString(),
                "--headless",
                "--disable-gpu",
                "--no-sandbox",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-dev-shm-usage",
                "--user-data-dir=" + dir.resolve("profile"),
                "--enable-logging=stderr",
                "--v=0",
                "--virtual-time-budget=5000",
                "--dump-dom",
                page.toUri().toString()));
        Process p = new ProcessBuilder(cmd)
                .redirectOutput(out.toFile())
                .redirectError(err.toFile())
                .start();
        p.getOutputStream().close();
        if (!p.waitFor(BROWSER_TIMEOUT_S, TimeUnit.SECONDS)) {
            // only what this test started: the browser and its own children (renderer, zygote)
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
            fail("chromium did not finish within " + BROWSER_TIMEOUT_S + " s; its log:\n" + tail(err));
        }
        String dom = Files.readString(out);
        String log = Files.readString(err);
        assertThat(p.exitValue()).as("chromium exit code; log:\n%s", tail(err)).isZero();
        assertThat(dom)
                .as("the DOM after the scripts ran; chromium log:\n%s", tail(err))
                .contains("<body");

        // no script error: none caught by window.onerror, none in the console log
        Matcher body = Pattern.compile("<body([^>]*)>").matcher(dom);
        assertThat(body.find()).isTrue();
        assertThat(body.group(1))
                .as("attributes of <body>")
                .doesNotContain("data-js-error")
                .contains("data-rendered=\"ok\"");
        Matcher errors = Pattern.compile("<pre id=\"js-errors\">([^<]*)</pre>").matcher(dom);
        assertThat(errors.find()).as("the error box is there").isTrue();
        assertThat(errors.group(1)).as("script errors").isEmpty();
        assertThat(log)
                .as("console errors in the chromium log")
                .doesNotContain("Uncaught")
                // Chromium 156 logs page console lines as "INFO:CONSOLE:3] \"message\", source: ..."
                .doesNotContainPattern("CONSOLE[:(]\\d+\\)?\\].*[Ee]rror");
        assertThat(dom).as("the drawing script ran to its end").contains("data-rendered=\"ok\"");

        // the drawn timeline: lanes per worker, state segments, batch ticks, one shaded window per fault
        assertThat(dom)
                .contains("<svg")
                .contains("class=\"state\"")
                .contains("data-outcome=\"REJECTED\"")
                .contains("data-outcome=\"COMMITTED\"")
                .contains(">t2<");
        for (String kind : Faults.kinds()) {
            assertThat(dom).as("timeline window of %s", kind).contains("class=\"fault\" data-kind=\"" + kind + "\"");
            assertThat(dom).as("table row of %s", kind).contains("<tr data-kind=\"" + kind + "\">");
        }
        assertThat(count(dom, "class=\"fault-label\"")).isEqualTo(Faults.kinds().size());
    }

    private static Path chromium() {
        String configured = System.getenv("FENCELINE_CHROMIUM_BIN");
        List<Path> candidates = new ArrayList<>();
        if (configured != null && !configured.isBlank()) {
            candidates.add(Path.of(configured));
        } else {
            String path = System.getenv("PATH");
            for (String d : (path == null ? "" : path).split(":")) {
                if (!d.isEmpty()) {
                    candidates.add(Path.of(d, "chromium"));
                }
            }
            candidates.add(Path.of("/usr/bin/chromium"));
        }
        for (Path c : candidates) {
            if (Files.isRegularFile(c) && Files.isExecutable(c)) {
                return c;
            }
        }
        String message = "chromium was not found ("
                + (configured != null && !configured.isBlank()
                        ? "FENCELINE_CHROMIUM_BIN=" + configured
                        : "PATH, /usr/bin/chromium")
                + "): run scripts/ensure-chromium.sh "
                + "as root, or ask an administrator to run 'sudo apt-get install -y chromium'";
        if ("1".equals(System.getenv("FENCELINE_REQUIRE_CHROMIUM"))) {
            fail(message + " (FENCELINE_REQUIRE_CHROMIUM=1 requires the browser check)");
        }
        Assumptions.assumeTrue(false, message + " (set FENCELINE_REQUIRE_CHROMIUM=1 to fail instead of skipping)");
        return null;
    }

    private static int count(String s, String what) {
        int n = 0;
        for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1)) {
            n++;
        }
        return n;
    }

    private static String tail(Path file) throws IOException {
        if (!Files.exists(file)) {
            return "(no log)";
        }
        List<String> lines = Files.readAllLines(file);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    }
}
