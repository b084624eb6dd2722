package dev.fenceline.faults;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fenceline.faults.check.Violation;
import dev.fenceline.faults.history.BatchAttempt;
import dev.fenceline.faults.history.FaultRecord;
import dev.fenceline.faults.history.History;
import dev.fenceline.faults.history.StateChange;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The run's report as one self-contained HTML page (no external resource: inline CSS, SVG drawn by inline JS from
 * data embedded in the page): a timeline per worker — election states with their terms, batch attempts by outcome —
 * with every fault's window (injection to heal) shaded and labelled, then the per-kind table, the totals, the
 * violations and the acknowledged commits lost by an asynchronous failover.
 *
 * <p>Invariants the browser check ({@code HtmlReportBrowserIT}) relies on: a script error anywhere writes itself into
 * {@code #js-errors} and sets {@code data-js-error} on {@code <body>}; a completed drawing sets
 * {@code data-rendered="ok"} on {@code <body>}; every fault window is an SVG {@code <g class="fault">} with
 * {@code data-kind}, and every fault kind of the run is a row of the table ({@code <tr data-kind>}).
 */
final class HtmlReport {
    private static final ObjectMapper JSON = new ObjectMapper();

    private HtmlReport() {}

    static String render(RunReport report) {
        StringBuilder html = new StringBuilder(64 * 1024);
        html.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>Fault run seed ")
                .append(report.seed)
                .append("</title>\n<style>")
                .append(CSS)
                .append("</style></head>\n<body>\n")
                // First, so it also reports errors of the drawing script below.
                .append("<script>window.onerror = function (msg, src, line, col) {\n"
                        + "  var d = document.getElementById('js-errors');\n"
                        + "  if (d) { d.textContent += 'script error: ' + msg + ' (line ' + line + ':' + col + ')\\n'; }\n"
                        + "  document.body.setAttribute('data-js-error', '1');\n"
                        + "};</script>\n")
                .append("<pre id=\"js-errors\"></pre>\n");
        Map<String, Object> totals = report.totals;
        html.append("<h1>Fault run, seed ")
                .append(report.seed)
                .append("</h1>\n<p class=\"summary\">")
                .append(esc(String.valueOf(totals.get("mode"))))
                .append(", TTL ")
                .append(totals.get("ttl_ms"))
                .append(" ms, PostgreSQL ")
                .append(esc(String.valueOf(totals.getOrDefault("postgres", "direct"))))
                .append(", ")
                .append(totals.get("injections"))
                .append(" injections in ")
                .append(totals.get("elapsed_s"))
                .append(" s, ")
                .append(totals.get("payments_settled"))
                .append(" payments settled in ")
                .append(totals.get("batches_committed_db"))
                .append(" batches. ")
                .append(
                        report.ok()
                                ? "<b class=\"ok\">History check passed.</b>"
                                : "<b class=\"bad\">"
                                        + report.result.safetyViolations().size() + " violation(s).</b>")
                .append("</p>\n");

        html.append("<h2>Timeline</h2>\n<p class=\"legend\">"
                + "<span class=\"sw LEADER\"></span>LEADER (label: term) <span class=\"sw FOLLOWER\"></span>FOLLOWER "
                + "<span class=\"sw SUSPECT\"></span>SUSPECT <span class=\"sw LOST\"></span>LOST / other "
                + "&nbsp; batches: <span class=\"tk COMMITTED\"></span>committed <span class=\"tk REJECTED\"></span>rejected "
                + "<span class=\"tk FAILED\"></span>failed <span class=\"tk UNKNOWN\"></span>unknown "
                + "&nbsp; <span class=\"sw fault\"></span>fault in force (injection → heal). Hover for details.</p>\n"
                + "<div id=\"timeline\"></div>\n");

        html.append("<h2>Per fault kind</h2>\n<table id=\"per-kind\"><thead><tr><th>fault kind</th><th>injections</th>"
                + "<th>new leader committed while in force</th><th>batches committed</th><th>stale attempts rejected</th>"
                + "<th>violations</th><th>failover p50 / p99 / max (ms)</th><th>recovery after heal p50 / p99 / max (ms)</th>"
                + "<th>successor p50 / p99 / max (ms)</th><th>election findings</th>"
                + "<th>rogue writes refused / audited once / made</th></tr></thead><tbody>\n");
        for (RunReport.Row r : report.rows) {
            html.append("<tr data-kind=\"")
                    .append(esc(r.kind()))
                    .append("\"><td>")
                    .append(esc(r.kind()))
                    .append(
                            report.skippedKinds.contains(r.kind())
                                    ? " <i>(skipped: " + esc(report.skipNotes.getOrDefault(r.kind(), "not available"))
                                            + ")</i>"
                                    : "")
                    .append("</td><td>")
                    .append(r.injections())
                    .append("</td><td>")
                    .append(r.takeoversDuringFault())
                    .append("</td><td>")
                    .append(r.batchesCommitted())
                    .append("</td><td>")
                    .append(r.staleRejected())
                    .append("</td><td class=\"")
                    .append(r.violations() > 0 ? "bad" : "")
                    .append("\">")
                    .append(r.violations())
                    .append("</td><td>")
                    .append(triple(r.failoverSamples() == 0 ? -1 : r.failoverP50(), r.failoverP99(), r.failoverMax()))
                    .append("</td><td>")
                    .append(triple(r.recoveryP50(), r.recoveryP99(), r.recoveryMax()))
                    .append("</td><td>")
                    .append(triple(
                            r.successorSamples() == 0 ? -1 : r.successorP50(), r.successorP99(), r.successorMax()))
                    .append("</td><td class=\"")
                    .append(r.electionFindings() > 0 ? "warn" : "")
                    .append("\">")
                    .append(r.electionFindings())
                    .append("</td><td>")
                    .append(
                            r.rogueAttempts() == 0
                                    ? "-"
                                    : r.rogueRefused() + " / " + r.rogueAudited() + " / " + r.rogueAttempts())
                    .append("</td></tr>\n");
        }
        html.append("</tbody></table>\n");

        html.append("<h2>Violations</h2>\n");
        list(
                html,
                "violations",
                report.result.safetyViolations().stream()
                        .map(Violation::toString)
                        .toList(),
                "none");
        html.append("<h2>Rogue writes</h2>\n<p id=\"rogue\">A login that is no leader wrote to protected tables with "
                + "stale, missing, invalid and over-jumped terms, through two-phase commit, after releasing its advisory "
                + "locks, into a partition and through a foreign-key cascade (rogueWriter), and many at once (auditFlood). "
                + "Made: " + report.result.rogue().attempts() + ", refused by the fence: "
                + report.result.rogue().refused()
                + ", audited exactly once: " + report.result.rogue().audited() + ", committed: "
                + report.result.rogue().committed() + ", failed or unknown (no fence decision): "
                + report.result.rogue().failed() + ". etcd server "
                + esc(String.valueOf(totals.get("etcd_server_version")))
                + ".</p>\n");
        html.append("<h2>Election findings</h2>\n<p>Liveness and validity findings about the election (a hung etcd "
                + "member: no successor within TTL + 1 s; around a stalled etcd member (slow disk, hung process): two workers valid "
                + "at once, "
                + report.result.etcdStallOverlapNs() + " ns in all). Reported, not violations: the database fence "
                + "covers them, and the checks above say whether it did.</p>\n");
        list(
                html,
                "election-findings",
                report.result.electionFindings().stream()
                        .map(Violation::toString)
                        .toList(),
                "none");
        html.append("<h2>Acknowledged commits lost by a failover to an asynchronous standby</h2>\n"
                + "<p>Durability, not fencing: an asynchronous standby may lack what the primary acknowledged last. "
                + "Not counted as violations. In all: "
                + report.result.asyncLoss().payments() + " inserted payment(s), "
                + report.result.asyncLoss().batches() + " batch(es) reported committed, "
                + report.result.asyncLoss().auditRows() + " audit row(s) of rejected attempts.</p>\n");
        list(
                html,
                "lost",
                report.result.lostByAsyncFailover().stream()
                        .map(Violation::explanation)
                        .toList(),
                "none");

        html.append("<h2>Faults</h2>\n<table id=\"faults\"><thead><tr><th>#</th><th>kind</th><th>target</th>"
                + "<th>held (ms)</th><th>failover (ms)</th><th>recovery (ms)</th><th>note</th></tr></thead><tbody>\n");
        for (Map<String, Object> f : report.faults) {
            html.append("<tr><td>")
                    .append(f.get("index"))
                    .append("</td><td>")
                    .append(esc(String.valueOf(f.get("kind"))))
                    .append("</td><td>")
                    .append(esc(String.valueOf(f.get("target"))))
                    .append("</td><td>")
                    .append(f.get("held_ms"))
                    .append("</td><td>")
                    .append(f.get("failover_ms") == null ? "-" : f.get("failover_ms"))
                    .append("</td><td>")
                    .append(f.get("recovery_ms") == null ? "-" : f.get("recovery_ms"))
                    .append("</td><td>")
                    .append(esc(String.valueOf(f.get("note"))))
                    .append("</td></tr>\n");
        }
        html.append("</tbody></table>\n<h2>Totals</h2>\n<pre id=\"totals\">");
        try {
            html.append(esc(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(totals)));
        } catch (JsonProcessingException e) {
            html.append(esc(totals.toString()));
        }
        html.append("</pre>\n");

        html.append("<script type=\"application/json\" id=\"fault-data\">")
                .append(scriptSafe(timelineData(report)))
                .append("</script>\n<script>")
                .append(SCRIPT)
                .append("</script>\n</body></html>\n");
        return html.toString();
    }

    /** Times in ms from the first recorded event; workers in name order. */
    static String timelineData(RunReport report) {
        History h = report.history;
        long t0 = Long.MAX_VALUE;
        long t1 = Long.MIN_VALUE;
        TreeSet<String> workers = new TreeSet<>();
        for (StateChange s : h.stateChanges) {
            t0 = Math.min(t0, s.monoNs());
            t1 = Math.max(t1, s.monoNs());
            if (s.worker() != null) {
                workers.add(s.worker());
            }
        }
        for (BatchAttempt a : h.attempts) {
            if (a.startMonoNs() >= 0) {
                t0 = Math.min(t0, a.startMonoNs());
            }
            t1 = Math.max(t1, Math.max(a.startMonoNs(), a.endMonoNs()));
            if (a.worker() != null) {
                workers.add(a.worker());
            }
        }
        for (FaultRecord f : h.faults) {
            t0 = Math.min(t0, f.injectMonoNs());
            t1 = Math.max(t1, Math.max(f.injectMonoNs(), f.healMonoNs()));
        }
        if (t0 == Long.MAX_VALUE) {
            t0 = 0;
            t1 = 1;
        }
        List<String> ws = new ArrayList<>(workers);
        List<Object[]> states = new ArrayList<>();
        for (StateChange s : h.stateChanges) {
            states.add(new Object[] {ws.indexOf(s.worker()), ms(s.monoNs(), t0), s.state(), s.term()});
        }
        states.sort((a, b) -> Double.compare((Double) a[1], (Double) b[1]));
        List<Object[]> attempts = new ArrayList<>();
        for (BatchAttempt a : h.attempts) {
            long start = a.startMonoNs() >= 0 ? a.startMonoNs() : a.endMonoNs();
            attempts.add(new Object[] {
                ws.indexOf(a.worker()),
                ms(start, t0),
                a.ended() ? ms(a.endMonoNs(), t0) : null,
                a.outcome().name(),
                a.term(),
                a.payments()
            });
        }
        List<Object[]> faults = new ArrayList<>();
        for (FaultRecord f : h.faults) {
            faults.add(new Object[] {
                f.index(),
                f.kind(),
                f.target(),
                ms(f.injectMonoNs(), t0),
                f.healMonoNs() >= 0 ? ms(f.healMonoNs(), t0) : null,
                f.note()
            });
        }
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("seed", report.seed);
        data.put("workers", ws);
        data.put("end_ms", ms(t1, t0));
        data.put("states", states);
        data.put("attempts", attempts);
        data.put("faults", faults);
        try {
            return JSON.writeValueAsString(data);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialize the timeline: " + e.getMessage(), e);
        }
    }

    private static double ms(long ns, long t0) {
        return Math.round((ns - t0) / 100_000.0) / 10.0;
    }

    private static String triple(long p50, long p99, long max) {
        if (p50 < 0) {
            return "-";
        }
        return p50 + " / " + p99 + " / " + max;
    }

    private static void list(StringBuilder html, String id, List<String> items, String empty) {
        html.append("<ul id=\"").append(id).append("\">");
        if (items.isEmpty()) {
            html.append("<li class=\"none\">").append(empty).append("</li>");
        }
        for (String i : items) {
            html.append("<li>").append(esc(i)).append("</li>");
        }
        html.append("</ul>\n");
    }

    static String esc(String s) {
        if (s == null) {
            return "";
        }
        StringBuilder b = new StringBuilder(s.length() + 16);
        for (char c : s.toCharArray()) {
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }

    /** JSON inside a script element: "&lt;/" would end the element early, so it is written "&lt;\/" (same JSON). */
    static String scriptSafe(String json) {
        return json.replace("</", "<\\/").replace("<!--", "<\\u0021--");
    }

    private static final String CSS = String.join(
            "\n",
            "body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }",
            "h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }",
            "table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }",
            "td:first-child, th:first-child, #faults td:nth-child(2), #faults td:nth-child(3), #faults td:last-child "
                    + "{ text-align: left; }",
            ".ok { color: #1a7f37; } .bad { color: #c62828; font-weight: bold; } .warn { color: #b26a00; } #js-errors { color: #c62828; }",
            "#timeline { overflow-x: auto; border: 1px solid #ddd; } #timeline svg { display: block; }",
            ".sw, .tk { display: inline-block; width: 14px; height: 10px; margin: 0 3px 0 8px; vertical-align: middle; }",
            ".tk { width: 4px; height: 12px; }",
            ".sw.LEADER { background: #2e7d32; } .sw.FOLLOWER { background: #b0bec5; } .sw.SUSPECT { background: #f9a825; }",
            ".sw.LOST { background: #8d6e63; } .sw.fault { background: rgba(229, 57, 53, 0.18); border: 1px solid #e53935; }",
            ".tk.COMMITTED { background: #1b5e20; } .tk.REJECTED { background: #d50000; } .tk.FAILED { background: #ef6c00; }",
            ".tk.UNKNOWN { background: #6a1b9a; }");

    /** Draws the timeline from #fault-data; ends by marking the body as rendered. */
    private static final String SCRIPT = String.join(
            "\n",
            "(function () {",
            "  'use strict';",
            "  var NS = 'http://www.w3.org/2000/svg';",
            "  var data = JSON.parse(document.getElementById('fault-data').textContent);",
            "  var colors = {LEADER: '#2e7d32', FOLLOWER: '#b0bec5', SUSPECT: '#f9a825'};",
            "  var tick = {COMMITTED: '#1b5e20', REJECTED: '#d50000', FAILED: '#ef6c00', UNKNOWN: '#6a1b9a'};",
            "  var left = 70, right = 20, faultRows = 3, faultRowH = 16, laneH = 56, axisH = 24;",
            "  var top = faultRows * faultRowH + 8;",
            "  var width = Math.max(1100, Math.min(12000, Math.round(data.end_ms / 40)));",
            "  var height = top + data.workers.length * laneH + axisH;",
            "  var end = Math.max(1, data.end_ms);",
            "  function x(ms) { return left + (width - left - right) * ms / end; }",
            "  function el(name, attrs, parent, text) {",
            "    var e = document.createElementNS(NS, name);",
            "    for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) { e.setAttribute(k, attrs[k]); } }",
            "    if (text !== undefined) { e.textContent = text; }",
            "    if (parent) { parent.appendChild(e); }",
            "    return e;",
            "  }",
            "  function tip(e, text) { el('title', {}, e, text); return e; }",
            "  var svg = el('svg', {width: width, height: height, viewBox: '0 0 ' + width + ' ' + height, role: 'img'});",
            "  svg.setAttribute('aria-label', 'timeline of seed ' + data.seed);",
            "  // lanes",
            "  data.workers.forEach(function (w, i) {",
            "    var y = top + i * laneH;",
            "    el('rect', {x: left, y: y, width: width - left - right, height: laneH - 6, fill: i % 2 ? '#fafafa' : '#f4f4f4'}, svg);",
            "    el('text', {x: 8, y: y + laneH / 2, 'class': 'lane', 'font-size': 13}, svg, w);",
            "  });",
            "  // states: a segment from each change to the worker's next one",
            "  var byWorker = data.workers.map(function () { return []; });",
            "  data.states.forEach(function (s) { if (s[0] >= 0) { byWorker[s[0]].push(s); } });",
            "  byWorker.forEach(function (list, i) {",
            "    var y = top + i * laneH + 4;",
            "    list.forEach(function (s, j) {",
            "      var from = s[1], to = j + 1 < list.length ? list[j + 1][1] : end;",
            "      var c = colors[s[2]] || '#8d6e63';",
            "      var r = el('rect', {x: x(from), y: y, width: Math.max(0.5, x(to) - x(from)), height: 18, fill: c,",
            "        'class': 'state', 'data-state': s[2]}, svg);",
            "      tip(r, data.workers[i] + ' ' + s[2] + ' term ' + s[3] + ' from ' + (from / 1000).toFixed(3) + ' s');",
            "      if (s[2] === 'LEADER' && x(to) - x(from) > 14) {",
            "        el('text', {x: x(from) + 2, y: y + 13, fill: '#fff', 'font-size': 11, 'class': 'term'}, svg, 't' + s[3]);",
            "      }",
            "    });",
            "  });",
            "  // batch attempts: a tick at the end (or start, when it never ended), height by outcome",
            "  data.attempts.forEach(function (a) {",
            "    if (a[0] < 0) { return; }",
            "    var t = a[2] === null ? a[1] : a[2];",
            "    var y = top + a[0] * laneH + 26;",
            "    var big = a[3] !== 'COMMITTED';",
            "    var r = el('rect', {x: x(t) - (big ? 1.5 : 0.5), y: big ? y : y + 6, width: big ? 3 : 1, height: big ? 22 : 14,",
            "      fill: tick[a[3]] || '#000', 'class': 'batch', 'data-outcome': a[3]}, svg);",
            "    tip(r, data.workers[a[0]] + ' batch term ' + a[4] + ' ' + a[3] + ', ' + a[5] + ' payments, at '",
            "      + (t / 1000).toFixed(3) + ' s');",
            "  });",
            "  // fault windows, shaded over every lane, labelled in rows above them",
            "  data.faults.forEach(function (f, i) {",
            "    var from = f[3], to = f[4] === null ? end : f[4];",
            "    var g = el('g', {'class': 'fault', 'data-kind': f[1]}, svg);",
            "    var w = Math.max(2, x(to) - x(from));",
            "    el('rect', {x: x(from), y: top - 2, width: w, height: data.workers.length * laneH,",
            "      fill: 'rgba(229,57,53,0.15)', stroke: '#e53935', 'stroke-width': 0.5}, g);",
            "    var ly = 12 + (i % faultRows) * faultRowH;",
            "    el('line', {x1: x(from), x2: x(from), y1: ly + 2, y2: top - 2, stroke: '#e53935', 'stroke-width': 0.5}, g);",
            "    el('text', {x: x(from) + 2, y: ly, 'font-size': 11, fill: '#b71c1c', 'class': 'fault-label'}, g,",
            "      '#' + f[0] + ' ' + f[1]);",
            "    tip(g, '#' + f[0] + ' ' + f[1] + ' on ' + f[2] + ': ' + f[5] + ' (' + (from / 1000).toFixed(3) + ' s to '",
            "      + (to / 1000).toFixed(3) + ' s)');",
            "  });",
            "  // time axis",
            "  var ay = top + data.workers.length * laneH;",
            "  var step = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 3600].find(function (s) {",
            "    return end / 1000 / s <= 30; }) || 7200;",
            "  for (var s = 0; s * 1000 <= end; s += step) {",
            "    el('line', {x1: x(s * 1000), x2: x(s * 1000), y1: ay - 4, y2: ay + 2, stroke: '#666'}, svg);",
            "    el('text', {x: x(s * 1000) - 6, y: ay + 16, 'font-size': 11, fill: '#444'}, svg, s + ' s');",
            "  }",
            "  document.getElementById('timeline').appendChild(svg);",
            "  document.body.setAttribute('data-rendered', 'ok');",
            "})();");
}
