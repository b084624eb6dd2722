package dev.fenceline.spring;

/**
 * Published as a Spring application event when a {@code @FencedLeaderTask} stops leading: it resigned (a newer term
 * was accepted, a handover, a shutdown) or lost its term, and no run of that term starts any more. Published on the
 * task's own thread, after its phase changed.
 *
 * @param resource    the fenced resource the task wrote under
 * @param candidateId this application's candidate id in the election
 * @param term        the term that ended
 * @param reason      why, as the task logged it
 */
public record FencedLeadershipRevoked(String resource, String candidateId, long term, String reason) {}
