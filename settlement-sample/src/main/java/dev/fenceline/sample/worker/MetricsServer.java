package dev.fenceline.sample.worker;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * {@code GET /metrics} (Prometheus text format) and {@code GET /health} (JSON; 200 while the worker runs,
 * 503 once it is stopping) on the JDK's built-in HTTP server, bound to 127.0.0.1 by default.
 */
public final class MetricsServer implements AutoCloseable {
    private final HttpServer server;

    private MetricsServer(HttpServer server) {
        this.server = server;
    }

    /** Health: a supplier of (healthy, JSON body). */
    public record Health(boolean up, String json) {}

    public static MetricsServer start(String host, int port, PrometheusMeterRegistry registry, Supplier<Health> health)
            throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress(host, port), 16);
        s.createContext("/metrics", ex -> {
            if (!"GET".equals(ex.getRequestMethod())) {
                send(ex, 405, "text/plain", "method not allowed\n");
                return;
            }
            send(ex, 200, "text/plain; version=0.0.4; charset=utf-8", registry.scrape());
        });
        s.createContext("/health", ex -> {
            Health h = health.get();
            send(ex, h.up() ? 200 : 503, "application/json", h.json() + "\n");
        });
        s.createContext("/", ex -> send(ex, 404, "text/plain", "try /metrics or /health\n"));
        s.setExecutor(Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "metrics-http");
            t.setDaemon(true);
            return t;
        }));
        s.start();
        return new MetricsServer(s);
    }

    public int port() {
        return server.getAddress().getPort();
    }

    private static void send(HttpExchange ex, int code, String type, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", type);
        ex.sendResponseHeaders(code, b.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(b);
        }
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
