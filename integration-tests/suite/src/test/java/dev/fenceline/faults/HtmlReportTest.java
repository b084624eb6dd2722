package dev.fenceline.faults;

import static org.assertj.core.api.Assertions.assertThat;

import dev.fenceline.faults.nemesis.Faults;
import org.junit.jupiter.api.Test;

/** The HTML report's shape without a browser (HtmlReportBrowserIT renders it in Chromium). */
class HtmlReportTest {

    @Test
    void pageIsSelfContainedAndListsEveryKindOnce() {
        RunReport report = ReportFixtures.report();
        assertThat(report.result.safetyViolations()).as(report.result.explain()).isEmpty();
        String html = HtmlReport.render(report);
        // nothing fetched from anywhere: no external scripts, styles, images or fonts (the SVG namespace is a name)
        assertThat(html.replace("'http://www.w3.org/2000/svg'", ""))
                .doesNotContain("src=")
                .doesNotContain("href=")
                .doesNotContain("@import")
                .doesNotContain("url(")
                .doesNotContain("http://")
                .doesNotContain("https://");
        for (String kind : Faults.kinds()) {
            assertThat(html).contains("<tr data-kind=\"" + kind + "\">");
        }
        // names from the history are escaped in the markup and cannot end the data block early
        assertThat(html).doesNotContain("<b>not bold</b>").contains("&lt;b&gt;not bold&lt;/b&gt;");
        String data = html.substring(
                html.indexOf("id=\"fault-data\">"), html.indexOf("</script>", html.indexOf("id=\"fault-data\">")));
        assertThat(data).contains("not bold<\\/b>").contains("\"w<1>\"").doesNotContain("</");
    }
}
