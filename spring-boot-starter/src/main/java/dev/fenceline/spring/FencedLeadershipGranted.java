package dev.fenceline.spring;

/**
 * Published as a Spring application event when a {@code @FencedLeaderTask} starts leading: its election granted this
 * application {@code term}. The task then checks the term against the database's mark; a term the database refuses
 * is revoked at once ({@link FencedLeadershipRevoked}). A new term won while the task was leading revokes the old one
 * and grants the new. Published on the task's own thread: a listener that blocks delays the task's first run.
 *
 * @param resource    the fenced resource the task writes under
 * @param candidateId this application's candidate id in the election
 * @param term        the term granted
 */
public record FencedLeadershipGranted(String resource, String candidateId, long term) {}
