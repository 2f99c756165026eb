// The Apache Curator peer of the benchmark (see benchmarks/peers/curator_peer.py, which runs
// it). The same workloads as the Python peers, measured the same way:
//   W1: one client, one InterProcessMutex, acquire + release in a loop;
//   W2: N clients (own sessions), one InterProcessMutex each on one path, hammered by one
//       thread each; handoff = a holder's release call to the next holder's acquire return;
//   W3: N contenders (a thread and a mutex each) on one client, each acquires once;
//   W4: a CuratorCache over the children of a node: load time, then setData-to-event latency.
// Usage: java CuratorPeer <w1|w2|w3|w4> key=value ...; one JSON object on stdout holds the
// raw figures (the Python side turns them into the same metrics as every other peer).

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.HashMap;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorPeer {
    private CuratorPeer() {}

    static double now() {
        return System.nanoTime() / 1e9;
    }

    static CuratorFramework open(String connect, double sessionTimeout) throws Exception {
        int ms = (int) (sessionTimeout * 1000);
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(ms)
                .connectionTimeoutMs(ms)
                .retryPolicy(new ExponentialBackoffRetry(50, 3))
                .build();
        client.start();
        if (!client.blockUntilConnected(ms, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("no connection to " + connect);
        }
        return client;
    }

    /** The same bookkeeping as benchmarks.common.HandoffTracker. */
    static final class Handoffs {
        final double end;
        int acquisitions;
        int violations;
        int holders;
        Double lastRelease;
        Object lastHolder;
        final List<Double> handoffsMs = new ArrayList<>();

        Handoffs(double end) {
            this.end = end;
        }

        synchronized void acquired(Object who) {
            double t = now();
            holders += 1;
            if (holders > 1) {
                violations += 1;
            }
            if (t <= end) {
                acquisitions += 1;
                if (lastRelease != null && lastHolder != who) {
                    handoffsMs.add((t - lastRelease) * 1000.0);
                }
            }
            lastRelease = null;
        }

        synchronized void releasing(Object who) {
            holders -= 1;
            lastHolder = who;
            lastRelease = now();
        }
    }

    static String list(List<Double> values) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < values.size(); i++) {
            if (i > 0) {
                out.append(',');
            }
            out.append(String.format(java.util.Locale.ROOT, "%.4f", values.get(i)));
        }
        return out.append(']').toString();
    }

    static String w1(Map<String, String> p) throws Exception {
        CuratorFramework client = open(p.get("connect"), Double.parseDouble(p.get("session_timeout")));
        try {
            InterProcessMutex lock = new InterProcessMutex(client, p.get("path"));
            int warmup = Integer.parseInt(p.get("warmup"));
            for (int i = 0; i < warmup; i++) {
                lock.acquire();
                lock.release();
            }
            List<Double> cycles = new ArrayList<>();
            List<Double> acquires = new ArrayList<>();
            double start = now();
            double end = start + Double.parseDouble(p.get("duration"));
            double t = start;
            while (t < end) {
                double t0 = t;
                lock.acquire();
                double t1 = now();
                lock.release();
                t = now();
                acquires.add((t1 - t0) * 1000.0);
                cycles.add((t - t0) * 1000.0);
            }
            return "{\"elapsed\":" + (t - start) + ",\"cycle_ms\":" + list(cycles)
                    + ",\"acquire_ms\":" + list(acquires) + "}";
        } finally {
            client.close();
        }
    }

    static String w2(Map<String, String> p) throws Exception {
        int n = Integer.parseInt(p.get("clients"));
        double timeout = Double.parseDouble(p.get("session_timeout"));
        List<CuratorFramework> clients = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                clients.add(open(p.get("connect"), timeout));
            }
            double start = now();
            Handoffs tracker = new Handoffs(start + Double.parseDouble(p.get("duration")));
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            for (CuratorFramework client : clients) {
                InterProcessMutex lock = new InterProcessMutex(client, p.get("path"));
                Thread thread = new Thread(() -> {
                    try {
                        while (now() < tracker.end) {
                            lock.acquire();
                            tracker.acquired(lock);
                            tracker.releasing(lock);
                            lock.release();
                        }
                    } catch (Throwable exc) {
                        failure.compareAndSet(null, exc);
                    }
                });
                threads.add(thread);
                thread.start();
            }
            for (Thread thread : threads) {
                thread.join();
            }
            if (failure.get() != null) {
                throw new RuntimeException(failure.get());
            }
            return "{\"acquisitions\":" + tracker.acquisitions + ",\"violations\":"
                    + tracker.violations + ",\"handoff_ms\":" + list(tracker.handoffsMs) + "}";
        } finally {
            for (CuratorFramework client : clients) {
                client.close();
            }
        }
    }

    static String w3(Map<String, String> p) throws Exception {
        int n = Integer.parseInt(p.get("n"));
        CuratorFramework client = open(p.get("connect"), Double.parseDouble(p.get("session_timeout")));
        try {
            Handoffs tracker = new Handoffs(Double.POSITIVE_INFINITY);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            CountDownLatch done = new CountDownLatch(n);
            double start = now();
            for (int i = 0; i < n; i++) {
                InterProcessMutex lock = new InterProcessMutex(client, p.get("path"));
                Thread thread = new Thread(() -> {
                    try {
                        lock.acquire();
                        tracker.acquired(lock);
                        tracker.releasing(lock);
                        lock.release();
                    } catch (Throwable exc) {
                        failure.compareAndSet(null, exc);
                    } finally {
                        done.countDown();
                    }
                }, "contender-" + i);
                thread.setDaemon(true);
                thread.start();
            }
            done.await();
            double wall = now() - start;
            if (failure.get() != null) {
                throw new RuntimeException(failure.get());
            }
            return "{\"wall_s\":" + wall + ",\"acquisitions\":" + tracker.acquisitions
                    + ",\"violations\":" + tracker.violations + "}";
        } finally {
            client.close();
        }
    }

    static String w4(Map<String, String> p) throws Exception {
        double timeout = Double.parseDouble(p.get("session_timeout"));
        String base = p.get("path");
        int n = Integer.parseInt(p.get("children"));
        int size = Integer.parseInt(p.get("data_size"));
        int updates = Integer.parseInt(p.get("updates"));
        CuratorFramework reader = open(p.get("connect"), timeout);
        CuratorFramework writer = open(p.get("connect"), timeout);
        Random rng = new Random(Long.parseLong(p.get("seed")));
        AtomicReference<byte[]> expected = new AtomicReference<>();
        AtomicReference<CompletableFuture<Double>> seen = new AtomicReference<>();
        CompletableFuture<Void> loaded = new CompletableFuture<>();
        CuratorCache cache = CuratorCache.build(reader, base);
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forChanges((before, after) -> {
                    double t = now();
                    byte[] want = expected.get();
                    CompletableFuture<Double> fut = seen.get();
                    if (want != null && fut != null && java.util.Arrays.equals(after.getData(), want)) {
                        fut.complete(t);
                    }
                })
                .forInitialized(() -> loaded.complete(null))
                .build());
        try {
            double start = now();
            cache.start();
            loaded.get(60, TimeUnit.SECONDS);
            double load = now() - start;
            long held = cache.stream().filter(d -> !d.getPath().equals(base)).count();
            if (held != n) {
                throw new IllegalStateException("cache holds " + held + " children, not " + n);
            }
            List<Double> latencies = new ArrayList<>();
            for (int i = 0; i < updates; i++) {
                String child = String.format("%s/c%05d", base, rng.nextInt(n));
                StringBuilder text = new StringBuilder(String.format("update-%06d-", i));
                while (text.length() < size) {
                    text.append('u');
                }
                byte[] data = text.toString().getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                CompletableFuture<Double> fut = new CompletableFuture<>();
                seen.set(fut);
                expected.set(data);
                double t0 = now();
                writer.setData().forPath(child, data);
                double t1 = fut.get(10, TimeUnit.SECONDS);
                latencies.add((t1 - t0) * 1000.0);
            }
            return "{\"load_s\":" + load + ",\"update_ms\":" + list(latencies) + "}";
        } finally {
            cache.close();
            writer.close();
            reader.close();
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> p = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            p.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        String out;
        switch (args[0]) {
            case "w1": out = w1(p); break;
            case "w2": out = w2(p); break;
            case "w3": out = w3(p); break;
            case "w4": out = w4(p); break;
            default: throw new IllegalArgumentException("unknown workload " + args[0]);
        }
        System.out.println(out);
        System.out.flush();
        System.exit(0);
    }
}
