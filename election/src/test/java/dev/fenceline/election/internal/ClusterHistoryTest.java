package dev.fenceline.election.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ClusterHistoryTest {

    private static ClusterHistory seenUpTo(long cluster, long revision) {
        ClusterHistory h = new ClusterHistory();
        ClusterHistory.Mark m = h.mark();
        assertThat(h.observe(m, cluster, revision, true)).isNull(); // first header: learns the cluster id
        h.advance(m, revision);
        return h;
    }

    @Test
    void otherClusterIdResetsRevisionEvenForLaggingHeaders() {
        ClusterHistory h = seenUpTo(7, 250);
        String change = h.observe(h.mark(), 9, 3, false);
        assertThat(change).contains("cluster id changed");
        assertThat(h.revision()).isEqualTo(3);
    }

    @Test
    void linearizableRevisionBelowWhatWasKnownAtSendingResetsSameClusterId() {
        ClusterHistory h = seenUpTo(7, 250);
        ClusterHistory.Mark sent = h.mark();
        assertThat(h.observe(sent, 7, 2, true)).contains("below revision 250");
        assertThat(h.revision()).isEqualTo(2);
        h.advance(h.mark(), 5);
        assertThat(h.revision()).isEqualTo(5);
    }

    @Test
    void laggingOrConcurrentHeadersOfTheSameClusterAreNoChange() {
        ClusterHistory h = seenUpTo(7, 250);
        assertThat(h.observe(h.mark(), 7, 240, false))
                .as("keep-alive/watch header of a lagging member")
                .isNull();
        ClusterHistory.Mark sent = h.mark();
        h.advance(sent, 260); // a watch event arrived while the request was in flight
        assertThat(h.observe(sent, 7, 255, true))
                .as("below the current revision, not below the one at sending")
                .isNull();
        assertThat(h.revision()).isEqualTo(260);
    }

    @Test
    void oneRebuildResetsOnceAndOlderHistoryNeverRaisesTheRevision() {
        ClusterHistory h = seenUpTo(7, 250);
        ClusterHistory.Mark before = h.mark();
        assertThat(h.observe(before, 7, 1, true)).isNotNull();
        assertThat(h.observe(before, 7, 2, true))
                .as("a second answer sent before the reset")
                .isNull();
        h.advance(before, 251); // a late event of the old watch
        assertThat(h.revision()).isEqualTo(1);
    }
}
