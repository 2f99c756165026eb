// The Curator 5 side of tests/integration/test_curator_atomic_sharder.py.
// Usage: java CuratorAtomicShardPeer <connect string with chroot> atomic|sharder
// One "key: value" line per check on stdout.
//
// atomic: reads and compare-and-sets what the Python side put in a DistributedAtomicValue and a
// DistributedAtomicLong, prints "ready", waits for "go" on stdin, then increments a promoted
// DistributedAtomicLong from two threads while the Python side does the same on the same node
// and lock path; prints its successes, its promoted tries and the values it wrote.
//
// sharder: a QueueSharder on the shards the Python side made; takes the Python side's items
// from them, then puts its own until, as the leader, it has added a shard; prints the shards.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicValue;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueAllocator;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.QueueSharder;
import org.apache.curator.framework.recipes.queue.QueueSharderPolicies;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.retry.RetryOneTime;

public final class CuratorAtomicShardPeer {
    private CuratorAtomicShardPeer() {}

    private static final int THREADS = 2;
    private static final int INCREMENTS = 40;

    private static String text(byte[] bytes) {
        return bytes == null ? "null" : new String(bytes, StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static final QueueSerializer<byte[]> RAW = new QueueSerializer<byte[]>() {
        @Override public byte[] serialize(byte[] item) { return item; }
        @Override public byte[] deserialize(byte[] bytes) { return bytes; }
    };

    private static String names(Iterable<String> paths) {
        List<String> out = new ArrayList<>();
        for (String path : paths) {
            out.add(path.substring(path.lastIndexOf('/') + 1));
        }
        Collections.sort(out);
        return String.join(",", out);
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryOneTime(100));
        client.start();
        client.blockUntilConnected();
        if (args[1].equals("atomic")) {
            atomic(client);
        } else {
            sharder(client);
        }
        client.close();
    }

    private static void atomic(CuratorFramework client) throws Exception {
        DistributedAtomicValue value = new DistributedAtomicValue(client, "/value", new RetryNTimes(3, 10));
        System.out.println("value: " + text(value.get().postValue()));
        AtomicValue<byte[]> cas = value.compareAndSet(bytes("py-1"), bytes("java-2"));
        System.out.println("cas: " + cas.succeeded() + " " + text(cas.preValue()) + " " + text(cas.postValue()));
        System.out.println("cas stale: " + value.compareAndSet(bytes("py-1"), bytes("x")).succeeded());
        DistributedAtomicLong counter = new DistributedAtomicLong(client, "/long", new RetryNTimes(3, 10));
        AtomicValue<Long> inc = counter.increment();
        System.out.println("long: " + inc.succeeded() + " " + inc.preValue() + " -> " + inc.postValue());
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (!"go".equals(in.readLine())) {
            throw new IllegalStateException("expected go");
        }

        PromotedToLock promoted = PromotedToLock.builder()
                .lockPath("/counter-lock")
                .retryPolicy(new RetryNTimes(100, 5))
                .build();
        AtomicInteger successes = new AtomicInteger();
        AtomicInteger promotedTries = new AtomicInteger();
        List<Long> posts = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < THREADS; t++) {
            Thread thread = new Thread(() -> {
                try {
                    DistributedAtomicLong contended =
                            new DistributedAtomicLong(client, "/contended", new RetryNTimes(0, 0), promoted);
                    for (int i = 0; i < INCREMENTS; i++) {
                        AtomicValue<Long> r = contended.increment();
                        promotedTries.addAndGet(r.getStats().getPromotedLockTries());
                        if (r.succeeded()) {
                            successes.incrementAndGet();
                            posts.add(r.postValue());
                        }
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            thread.start();
            threads.add(thread);
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (!errors.isEmpty()) {
            throw new IllegalStateException(errors.get(0));
        }
        List<String> written = new ArrayList<>();
        for (Long post : posts) {
            written.add(Long.toString(post));
        }
        System.out.println("contended: " + successes.get() + " " + promotedTries.get());
        System.out.println("posts: " + String.join(",", written));
    }

    private static void sharder(CuratorFramework client) throws Exception {
        QueueSharderPolicies policies = QueueSharderPolicies.builder()
                .newQueueThreshold(3)
                .thresholdCheckMs(100)
                .maxQueues(4)
                .build();
        QueueAllocator<byte[], DistributedQueue<byte[]>> producers =
                (c, path) -> QueueBuilder.builder(c, null, RAW, path).putInBackground(false).buildQueue();
        QueueSharder<byte[], DistributedQueue<byte[]>> sharder =
                new QueueSharder<>(client, producers, "/sharded", "/sharded-leader", policies);
        sharder.start();
        System.out.println("initial shards: " + sharder.getShardQty());

        // Take the Python side's items with consumers on each shard it made.
        BlockingQueue<String> taken = new LinkedBlockingQueue<>();
        QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
            @Override public void consumeMessage(byte[] message) { taken.add(text(message)); }
            @Override public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        List<DistributedQueue<byte[]>> consumers = new ArrayList<>();
        for (String path : sharder.getQueuePaths()) {
            DistributedQueue<byte[]> queue = QueueBuilder.builder(client, consumer, RAW, path).buildQueue();
            queue.start();
            consumers.add(queue);
        }
        List<String> items = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String item = taken.poll(10, TimeUnit.SECONDS);
            items.add(item == null ? "missing" : item);
        }
        Collections.sort(items);
        System.out.println("took: " + String.join(",", items));
        for (DistributedQueue<byte[]> queue : consumers) {
            queue.close();
        }

        // Put until a shard is at the threshold; the leader (this sharder: the Python one has
        // left) then adds a shard at its next check.
        for (int i = 0; i < 6; i++) {
            sharder.getQueue().put(bytes("java-" + i));
        }
        long deadline = System.currentTimeMillis() + 10_000;
        while (sharder.getShardQty() < 3 && System.currentTimeMillis() < deadline) {
            Thread.sleep(20); // QueueSharder has no event for a new shard: its own check polls
        }
        sharder.close();
        System.out.println("shards after java: " + sharder.getShardQty());
        System.out.println("shard names: " + names(sharder.getQueuePaths()));
    }
}
