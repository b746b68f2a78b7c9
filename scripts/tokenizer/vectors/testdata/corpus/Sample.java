package dev.infill.sample;

import java.util.*;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;

/**
 * Java sample with generics, streams, records and annotations.
 */
public final class Sample {
    public record Pair<A, B>(A first, B second) {}

    @FunctionalInterface
    interface Parser<T> { T parse(String s) throws IllegalArgumentException; }

    private static final Map<String, Integer> COUNTS = new HashMap<>();

    public static <T extends Comparable<? super T>> T max(List<? extends T> xs) {
        if (xs.isEmpty()) throw new NoSuchElementException("empty list");
        T best = xs.get(0);
        for (T x : xs) if (x.compareTo(best) > 0) best = x;
        return best;
    }

    @Override
    public String toString() {
        return String.format("Sample[%d entries, max=%s]", COUNTS.size(), max(List.of(3, 1, 4, 1, 5, 9)));
    }

    public static void main(String[] args) throws Exception {
        var words = Arrays.asList("alpha", "beta", "gamma", "delta", "ünïcödé");
        Map<Integer, List<String>> byLen = words.stream()
                .collect(Collectors.groupingBy(String::length, TreeMap::new, Collectors.toList()));
        CompletableFuture<String> f = CompletableFuture.supplyAsync(() -> "done")
                .thenApply(s -> s + "!");
        Parser<Integer> p = Integer::parseInt;
        System.out.println(byLen + " " + f.get() + " " + p.parse("-2147483648"));
        int[] arr = {5, 3, 8, 1};
        Arrays.sort(arr);
        System.out.printf("%s %c %.2e%n", Arrays.toString(arr), 'x', 12345.678);
    }
}
