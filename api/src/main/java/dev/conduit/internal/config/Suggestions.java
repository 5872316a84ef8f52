package dev.conduit.internal.config;

import java.util.Collection;

/** Finds the known name nearest to a misspelt one, for "did you mean" messages. */
final class Suggestions {

    private Suggestions() {
    }

    /** The element of {@code known} with the smallest edit distance to {@code name}, or {@code null} if none is close. */
    static String nearest(String name, Collection<String> known) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : known) {
            int d = distance(name, candidate);
            if (d < bestDistance) {
                bestDistance = d;
                best = candidate;
            }
        }
        // Beyond half the name's length the "nearest" key is noise, not a typo.
        return best != null && bestDistance <= Math.max(2, name.length() / 2) ? best : null;
    }

    /** Levenshtein distance. */
    static int distance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) previous[j] = j;
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                current[j] = Math.min(Math.min(current[j - 1] + 1, previous[j] + 1), previous[j - 1] + cost);
            }
            int[] t = previous;
            previous = current;
            current = t;
        }
        return previous[b.length()];
    }
}
