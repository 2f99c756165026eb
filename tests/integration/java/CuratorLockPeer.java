// The Curator 5 side of tests/integration/test_curator_locks.py.
// Usage: java CuratorLockPeer <connect string> <lock path> <holder path> <threads> <rounds>
//
// Connects one CuratorFramework per thread, prints "ready", waits for "go" on stdin, then each
// thread takes an InterProcessMutex on <lock path> <rounds> times, while the Python side's
// Locks contend for the same path. Each holder proves it holds alone by creating the ephemeral
// node <holder path> (NodeExists: two holders at once) and deleting it before it releases.
// Prints "acquired <n>", "violations <n>" and "handoff_ms <p50 of its waits after a release>".

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

public final class CuratorLockPeer {
    private CuratorLockPeer() {}

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String lockPath = args[1];
        String holderPath = args[2];
        int threads = Integer.parseInt(args[3]);
        int rounds = Integer.parseInt(args[4]);
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            CuratorFramework client = CuratorFrameworkFactory.newClient(
                connect, 10000, 10000, new RetryNTimes(3, 100));
            client.start();
            client.blockUntilConnected(30, TimeUnit.SECONDS);
            clients.add(client);
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (!"go".equals(in.readLine())) {
            throw new IllegalStateException("expected go");
        }
        AtomicInteger acquired = new AtomicInteger();
        AtomicInteger violations = new AtomicInteger();
        List<Double> waits = Collections.synchronizedList(new ArrayList<>());
        List<Thread> workers = new ArrayList<>();
        List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        for (CuratorFramework client : clients) {
            Thread t = new Thread(() -> {
                InterProcessMutex mutex = new InterProcessMutex(client, lockPath);
                try {
                    for (int r = 0; r < rounds; r++) {
                        long start = System.nanoTime();
                        if (!mutex.acquire(60, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("no grant within 60 s");
                        }
                        waits.add((System.nanoTime() - start) / 1e6);
                        acquired.incrementAndGet();
                        try {
                            client.create().withMode(CreateMode.EPHEMERAL).forPath(holderPath);
                            client.delete().forPath(holderPath);
                        } catch (KeeperException.NodeExistsException e) {
                            violations.incrementAndGet();
                        } finally {
                            mutex.release();
                        }
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            });
            t.start();
            workers.add(t);
        }
        for (Thread t : workers) {
            t.join();
        }
        for (CuratorFramework client : clients) {
            client.close();
        }
        if (!failures.isEmpty()) {
            failures.get(0).printStackTrace();
            System.exit(1);
        }
        List<Double> sorted = new ArrayList<>(waits);
        Collections.sort(sorted);
        System.out.println("acquired " + acquired.get());
        System.out.println("violations " + violations.get());
        System.out.println("wait_p50_ms " + sorted.get(sorted.size() / 2));
        System.out.flush();
    }
}
