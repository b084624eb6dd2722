package dev.fenceline.faults.nemesis;

import java.io.IOException;
import java.net.Socket;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Locale;

/**
 * Which process opened a loopback TCP connection, found the way {@code ss -p} does: the client socket's inode from
 * {@code /proc/net/tcp}, then the process among the candidates that holds a file descriptor on that inode.
 * Linux only; used to attribute connections to etcd members (they all connect from 127.0.0.1 as the same user,
 * so neither address nor uid tells them apart).
 */
public final class SocketOwners {
    private SocketOwners() {}

    /** The candidate pid owning the client end of {@code accepted} (a socket accepted by this JVM), or -1. */
    public static long ownerOf(Socket accepted, Collection<Long> candidatePids) {
        long inode = clientInode(accepted.getPort(), accepted.getLocalPort());
        if (inode <= 0) {
            return -1;
        }
        String target = "socket:[" + inode + "]";
        for (long pid : candidatePids) {
            if (holds(pid, target)) {
                return pid;
            }
        }
        return -1;
    }

    /** Inode of the IPv4 socket with local port {@code clientPort} connected to remote port {@code serverPort}. */
    static long clientInode(int clientPort, int serverPort) {
        String local = String.format(Locale.ROOT, ":%04X", clientPort);
        String remote = String.format(Locale.ROOT, ":%04X", serverPort);
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            List<String> lines;
            try {
                lines = Files.readAllLines(Path.of(table));
            } catch (IOException e) {
                continue;
            }
            for (int i = 1; i < lines.size(); i++) {
                String[] f = lines.get(i).trim().split("\\s+");
                if (f.length > 9 && f[1].endsWith(local) && f[2].endsWith(remote)) {
                    try {
                        long inode = Long.parseLong(f[9]);
                        if (inode > 0) {
                            return inode;
                        }
                    } catch (NumberFormatException ignored) {
                        // malformed line
                    }
                }
            }
        }
        return -1;
    }

    private static boolean holds(long pid, String target) {
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "fd"))) {
            for (Path fd : fds) {
                try {
                    if (target.equals(Files.readSymbolicLink(fd).toString())) {
                        return true;
                    }
                } catch (IOException ignored) {
                    // fd closed meanwhile
                }
            }
        } catch (IOException e) {
            return false;
        }
        return false;
    }
}
