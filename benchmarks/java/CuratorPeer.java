// The Apache Curator peer of the benchmark (see benchmarks/peers/curator_peer.py, which runs
// it). The same workloads as the Python peers, measured the same way:
//   W1: one client, one InterProcessMutex, acquire + release in a loop;
//   W2: N clients (own sessions), one InterProcessMutex each on one path, hammered by one
//       thread each; handoff = a holder's release call to the next holder's acquire return;
//   W3: N contenders (a thread and a mutex each) on one client, each acquires once;
//   W4: a CuratorCache over the children of a node: load time, then setData-to-event latency;
//   W6: a TreeCache over a tree: load time, RSS, then paced setData-to-event latency
//       (TreeCache, not CuratorCache: see w6 below);
//   W7: N clients on an ensemble, one member SIGKILLed: time until its sessions are back;
//   W8: N InterProcessMutexes on distinct paths held at once: rates, RSS per lock (the
//       release phase ends once the server has applied every release);
//   W9: a ServiceCache (curator-x-discovery) over N instances, paced updates: event latency.
// Client CPU ("cpu_s") is this JVM's process CPU time over the measured part, every thread
// (JIT and GC included), as the Python peers report their process's.
// Usage: java CuratorPeer <w1|w2|w3|w4> key=value ...; one JSON object on stdout holds the
// raw figures (the Python side turns them into the same metrics as every other peer).

import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
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
import org.apache.curator.framework.recipes.cache.TreeCache;
import org.apache.curator.framework.recipes.cache.TreeCacheEvent;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;
import org.apache.curator.x.discovery.details.ServiceCacheListener;

public final class CuratorPeer {
    private CuratorPeer() {}

    static double now() {
        return System.nanoTime() / 1e9;
    }

    /** CPU seconds this JVM has used so far, every thread. */
    static double cpu() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime() / 1e9;
    }

    /** Resident memory of this process now, MiB (as the Python peers read it). */
    static double rssMb() throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
            }
        }
        return 0.0;
    }

    /** Sessions the server on 127.0.0.1:port serves now (its "cons" lines with a sid). */
    static int memberSessions(int port) throws Exception {
        try (Socket sock = new Socket("127.0.0.1", port)) {
            OutputStream out = sock.getOutputStream();
            out.write("cons".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String text = new String(sock.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            int count = 0;
            for (String line : text.split("\n")) {
                if (line.contains("sid=")) {
                    count++;
                }
            }
            return count;
        }
    }

    /** Calls send(i) for i in 0..count-1 at rate per second, open loop. */
    interface Send {
        void send(int i) throws Exception;
    }

    static void paced(int count, double rate, Send send) throws Exception {
        double began = now();
        for (int i = 0; i < count; i++) {
            double wait = began + i / rate - now();
            if (wait > 0) {
                long nanos = (long) (wait * 1e9);
                Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
            }
            send.send(i);
        }
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
            double cpu0 = cpu();
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
            double cpuS = cpu() - cpu0;
            return "{\"elapsed\":" + (t - start) + ",\"cpu_s\":" + cpuS + ",\"cycle_ms\":" + list(cycles)
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
            double cpu0 = cpu();
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
            double cpuS = cpu() - cpu0;
            return "{\"acquisitions\":" + tracker.acquisitions + ",\"violations\":"
                    + tracker.violations + ",\"cpu_s\":" + cpuS + ",\"handoff_ms\":"
                    + list(tracker.handoffsMs) + "}";
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
        AtomicReference<Exception> failure = new AtomicReference<>();
        // A read the cache could not make fails the run (by default it is only logged, and
        // the peer logs nowhere: slf4j-nop).
        CuratorCache cache = CuratorCache.builder(reader, base)
                .withExceptionHandler(e -> failure.compareAndSet(null, e))
                .build();
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
            if (failure.get() != null) {
                throw new IllegalStateException("the cache failed while loading", failure.get());
            }
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

    // Curator 5.4's CuratorCache cannot hold this tree: it counts its outstanding reads in a
    // java.util.concurrent.Phaser, which takes at most 65,535 parties, so past that many reads
    // in flight each further read is refused (IllegalStateException to the cache's exception
    // handler, a log line by default) and never sent; the cache then reports "initialized"
    // with ~65,600 of the 100,101 nodes (CURATOR-690, fixed in Curator 5.6.0). A Curator 5.4
    // user with a tree this size keeps Curator's TreeCache, which counts in an AtomicLong:
    // the same two reads per node (getData and getChildren, each with a one-shot watch where
    // CuratorCache has one persistent recursive watch) and the same reload on a data change.
    // Default options (data cached, no depth limit), its own single event thread. (5.x marks
    // TreeCache deprecated in favour of CuratorCache, hence the annotation.)
    @SuppressWarnings("deprecation")
    static String w6(Map<String, String> p) throws Exception {
        double timeout = Double.parseDouble(p.get("session_timeout"));
        String base = p.get("path");
        int leaves = Integer.parseInt(p.get("nodes"));
        int fanout = Integer.parseInt(p.get("fanout"));
        int updates = Integer.parseInt(p.get("updates"));
        double rate = Double.parseDouble(p.get("rate"));
        CuratorFramework reader = open(p.get("connect"), timeout);
        CuratorFramework writer = open(p.get("connect"), timeout);
        Map<String, Double> sent = new ConcurrentHashMap<>();
        List<Double> latencies = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch allSeen = new CountDownLatch(updates);
        CompletableFuture<Void> loaded = new CompletableFuture<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        TreeCache cache = TreeCache.newBuilder(reader, base).build();
        // An error the cache would only log (a read it could not make) fails the run instead.
        cache.getUnhandledErrorListenable().addListener((message, e) -> failure.compareAndSet(null, e));
        cache.getListenable().addListener((client, event) -> {
            if (event.getType() == TreeCacheEvent.Type.INITIALIZED) {
                loaded.complete(null);
            } else if (event.getType() == TreeCacheEvent.Type.NODE_UPDATED && event.getData() != null) {
                double t = now();
                byte[] data = event.getData().getData();
                if (data != null && data.length >= 12) {
                    Double t0 = sent.remove(new String(data, 0, 12, StandardCharsets.US_ASCII));
                    if (t0 != null) {
                        latencies.add((t - t0) * 1000.0);
                        allSeen.countDown();
                    }
                }
            }
        });
        try {
            double baseline = rssMb();
            double start = now();
            cache.start();
            loaded.get(600, TimeUnit.SECONDS);
            double load = now() - start;
            double rss = rssMb() - baseline;
            if (failure.get() != null) {
                throw new IllegalStateException("the cache failed while loading", failure.get());
            }
            long held = cache.size();
            long expected = 1 + leaves / fanout + leaves;
            if (held != expected) {
                throw new IllegalStateException("cache holds " + held + " nodes, not " + expected);
            }
            // Distinct nodes, as the Python peers pick them (two quick updates may merge).
            List<Integer> all = new ArrayList<>();
            for (int i = 0; i < leaves; i++) {
                all.add(i);
            }
            Collections.shuffle(all, new Random(Long.parseLong(p.get("seed"))));
            List<CompletableFuture<Void>> pending = new ArrayList<>();
            double cpu0 = cpu();
            paced(updates, rate, i -> {
                int pick = all.get(i);
                String node = String.format("%s/p%03d/c%04d", base, pick / fanout, pick % fanout);
                StringBuilder text = new StringBuilder(String.format("u%011d", i));
                while (text.length() < 100) {
                    text.append('u');
                }
                CompletableFuture<Void> done = new CompletableFuture<>();
                sent.put(text.substring(0, 12), now());
                writer.setData().inBackground((c, event) -> done.complete(null))
                        .forPath(node, text.toString().getBytes(StandardCharsets.US_ASCII));
                pending.add(done);
            });
            for (CompletableFuture<Void> done : pending) {
                done.get(30, TimeUnit.SECONDS);
            }
            if (!allSeen.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("saw " + latencies.size() + " of " + updates + " updates");
            }
            double cpuS = cpu() - cpu0;
            if (failure.get() != null) {
                throw new IllegalStateException("the cache failed", failure.get());
            }
            return "{\"load_s\":" + load + ",\"cache_rss_mb\":" + rss + ",\"cpu_s\":" + cpuS
                    + ",\"peak_rss_mb\":" + rssMb() + ",\"update_ms\":" + list(latencies) + "}";
        } finally {
            cache.close();
            writer.close();
            reader.close();
        }
    }

    static String w7(Map<String, String> p) throws Exception {
        double timeout = Double.parseDouble(p.get("session_timeout"));
        int n = Integer.parseInt(p.get("sessions"));
        int killPort = Integer.parseInt(p.get("kill_port"));
        List<CuratorFramework> clients = new ArrayList<>();
        Map<Integer, Double> back = new ConcurrentHashMap<>();
        Map<Integer, Boolean> expired = new ConcurrentHashMap<>();
        AtomicInteger expected = new AtomicInteger(0);
        CountDownLatch done = new CountDownLatch(1);
        try {
            for (int i = 0; i < n; i++) {
                CuratorFramework client = open(p.get("connect"), timeout);
                final int index = i;
                client.getConnectionStateListenable().addListener((c, state) -> {
                    if (state == ConnectionState.LOST) {
                        expired.put(index, true);
                    } else if (state == ConnectionState.RECONNECTED) {
                        back.putIfAbsent(index, now());
                        if (expected.get() > 0 && back.size() >= expected.get()) {
                            done.countDown();
                        }
                    }
                });
                clients.add(client);
            }
            List<Long> ids = new ArrayList<>();
            for (CuratorFramework client : clients) {
                ids.add(client.getZookeeperClient().getZooKeeper().getSessionId());
            }
            expected.set(memberSessions(killPort));
            if (expected.get() == 0) {
                throw new IllegalStateException("no session is on the member to be killed");
            }
            double cpu0 = cpu();
            double t0 = now();
            new ProcessBuilder("kill", "-KILL", "--", "-" + p.get("kill_pid")).inheritIO().start().waitFor();
            if (!done.await((long) (Double.parseDouble(p.get("reconnect_timeout")) * 1000), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException(back.size() + " of " + expected.get() + " sessions back in time");
            }
            double cpuS = cpu() - cpu0;
            int same = 0;
            for (int i = 0; i < n; i++) {
                if (clients.get(i).getZookeeperClient().getZooKeeper().getSessionId() == ids.get(i)) {
                    same++;
                }
            }
            List<Double> times = new ArrayList<>();
            for (double t : back.values()) {
                times.add(t - t0);
            }
            return "{\"sessions\":" + n + ",\"moved\":" + expected.get() + ",\"expiries\":"
                    + expired.size() + ",\"same_sessions\":" + same + ",\"cpu_s\":" + cpuS
                    + ",\"peak_rss_mb\":" + rssMb() + ",\"back_s\":" + list(times) + "}";
        } finally {
            for (CuratorFramework client : clients) {
                client.close();
            }
        }
    }

    static String w8(Map<String, String> p) throws Exception {
        int n = Integer.parseInt(p.get("locks"));
        String base = p.get("path");
        CuratorFramework client = open(p.get("connect"), Double.parseDouble(p.get("session_timeout")));
        try {
            List<InterProcessMutex> locks = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                locks.add(new InterProcessMutex(client, String.format("%s/l%05d", base, i)));
            }
            double baseline = rssMb();
            double cpu0 = cpu();
            double start = now();
            for (InterProcessMutex lock : locks) {
                lock.acquire();
            }
            double acquired = now();
            double held = rssMb() - baseline;
            for (InterProcessMutex lock : locks) {
                lock.release();
            }
            // Each release waited for its delete's answer; a sync behind them ends the phase
            // as the Python peers' does (Curator's sync has a background form only).
            CountDownLatch synced = new CountDownLatch(1);
            client.sync().inBackground((c, event) -> synced.countDown()).forPath(base);
            synced.await();
            double released = now();
            double cpuS = cpu() - cpu0;
            return "{\"acquire_s\":" + (acquired - start) + ",\"release_s\":" + (released - acquired)
                    + ",\"held_mb\":" + held + ",\"cpu_s\":" + cpuS + ",\"peak_rss_mb\":" + rssMb() + "}";
        } finally {
            client.close();
        }
    }

    @SuppressWarnings({"rawtypes", "unchecked"})
    static String w9(Map<String, String> p) throws Exception {
        double timeout = Double.parseDouble(p.get("session_timeout"));
        String base = p.get("path");
        int n = Integer.parseInt(p.get("instances"));
        int updates = Integer.parseInt(p.get("updates"));
        double rate = Double.parseDouble(p.get("rate"));
        CuratorFramework reader = open(p.get("connect"), timeout);
        CuratorFramework writer = open(p.get("connect"), timeout);
        JsonInstanceSerializer<Map> serializer = new JsonInstanceSerializer<>(Map.class);
        ServiceDiscovery<Map> discovery = ServiceDiscoveryBuilder.builder(Map.class)
                .client(reader).basePath(base).serializer(serializer).watchInstances(false).build();
        Map<Integer, Double> sent = new ConcurrentHashMap<>();
        Map<String, Integer> lastSeq = new ConcurrentHashMap<>();
        List<Double> latencies = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch allSeen = new CountDownLatch(updates);
        Random rng = new Random(Long.parseLong(p.get("seed")));
        try {
            discovery.start();
            ServiceCache<Map> cache = discovery.serviceCacheBuilder().name("svc").build();
            cache.addListener(new ServiceCacheListener() {
                @Override
                public void cacheChanged() {
                    // ServiceCache says only that something changed: find what by its payload.
                    double t = now();
                    for (ServiceInstance<Map> instance : cache.getInstances()) {
                        Object seq = instance.getPayload() == null ? null : instance.getPayload().get("seq");
                        if (seq instanceof Number) {
                            int value = ((Number) seq).intValue();
                            Integer before = lastSeq.put(instance.getId(), value);
                            if (before == null || before != value) {
                                Double t0 = sent.remove(value);
                                if (t0 != null) {
                                    latencies.add((t - t0) * 1000.0);
                                    allSeen.countDown();
                                }
                            }
                        }
                    }
                }

                @Override
                public void stateChanged(CuratorFramework client, ConnectionState state) {}
            });
            double start = now();
            cache.start();
            double load = now() - start;
            if (cache.getInstances().size() != n) {
                throw new IllegalStateException("cache holds " + cache.getInstances().size() + " instances, not " + n);
            }
            for (ServiceInstance<Map> instance : cache.getInstances()) {
                lastSeq.put(instance.getId(), -1);
            }
            List<CompletableFuture<Void>> pending = new ArrayList<>();
            double cpu0 = cpu();
            // Each instance once before any twice: two quick updates may reach a cache as one.
            List<Integer> order = new ArrayList<>();
            for (int k = 0; k < n; k++) {
                order.add(k);
            }
            Collections.shuffle(order, rng);
            paced(updates, rate, i -> {
                String id = String.format("i%05d", order.get(i % n));
                Map<String, Object> payload = new HashMap<>();
                payload.put("seq", i);
                ServiceInstance<Map> instance = ServiceInstance.<Map>builder().name("svc").id(id)
                        .address("10.0.0.1").port(8080).payload(payload).registrationTimeUTC(1).build();
                CompletableFuture<Void> done = new CompletableFuture<>();
                sent.put(i, now());
                writer.setData().inBackground((c, event) -> done.complete(null))
                        .forPath(base + "/svc/" + id, serializer.serialize(instance));
                pending.add(done);
            });
            for (CompletableFuture<Void> done : pending) {
                done.get(30, TimeUnit.SECONDS);
            }
            if (!allSeen.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("saw " + latencies.size() + " of " + updates + " updates");
            }
            double cpuS = cpu() - cpu0;
            cache.close();
            return "{\"load_s\":" + load + ",\"cpu_s\":" + cpuS + ",\"peak_rss_mb\":" + rssMb()
                    + ",\"event_ms\":" + list(latencies) + "}";
        } finally {
            discovery.close();
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
            case "w6": out = w6(p); break;
            case "w7": out = w7(p); break;
            case "w8": out = w8(p); break;
            case "w9": out = w9(p); break;
            default: throw new IllegalArgumentException("unknown workload " + args[0]);
        }
        System.out.println(out);
        System.out.flush();
        System.exit(0);
    }
}
