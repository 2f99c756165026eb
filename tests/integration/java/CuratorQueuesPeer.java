// The Curator 5 side of tests/integration/test_curator_interop.py: it consumes what the
// Python side put in Curator's SimpleDistributedQueue, DistributedDelayQueue,
// DistributedIdQueue and SharedValue layouts (and shares a PersistentTtlNode's child), then puts its own for the Python side to take.
// Usage: java CuratorQueuesPeer <connect string with chroot>; one "key: value" line per check.

import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.nodes.PersistentTtlNode;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.DistributedIdQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.recipes.shared.SharedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryOneTime;

public final class CuratorQueuesPeer {
    private CuratorQueuesPeer() {}

    private static String text(byte[] bytes) {
        return bytes == null ? "null" : new String(bytes, StandardCharsets.UTF_8);
    }

    private static final QueueSerializer<byte[]> RAW = new QueueSerializer<byte[]>() {
        @Override public byte[] serialize(byte[] item) { return item; }
        @Override public byte[] deserialize(byte[] bytes) { return bytes; }
    };

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryOneTime(100));
        client.start();
        client.blockUntilConnected();

        SimpleDistributedQueue simple = new SimpleDistributedQueue(client, "/simple");
        System.out.println("simple: " + text(simple.poll(10, TimeUnit.SECONDS)));
        simple.offer("from-java".getBytes(StandardCharsets.UTF_8));

        BlockingQueue<String> delivered = new LinkedBlockingQueue<>();
        QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
            @Override public void consumeMessage(byte[] message) { delivered.add(text(message)); }
            @Override public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        DistributedDelayQueue<byte[]> delay =
            QueueBuilder.builder(client, consumer, RAW, "/delay").buildDelayQueue();
        delay.start();
        System.out.println("delay: " + delivered.poll(10, TimeUnit.SECONDS));
        delay.put("from-java".getBytes(StandardCharsets.UTF_8), System.currentTimeMillis() + 300);
        delay.flushPuts(10, TimeUnit.SECONDS);

        DistributedIdQueue<byte[]> ids = QueueBuilder.builder(client, null, RAW, "/ids").buildIdQueue();
        ids.start();
        ids.put("from-java".getBytes(StandardCharsets.UTF_8), "java-id");
        ids.put("removed-by-java".getBytes(StandardCharsets.UTF_8), "doomed");
        ids.flushPuts(10, TimeUnit.SECONDS);
        System.out.println("ids removed: " + ids.remove("doomed"));

        SharedValue shared = new SharedValue(client, "/shared", "java-seed".getBytes(StandardCharsets.UTF_8));
        shared.start();
        System.out.println("shared: " + text(shared.getValue()));
        boolean set = shared.trySetValue(shared.getVersionedValue(), "from-java".getBytes(StandardCharsets.UTF_8));
        System.out.println("shared set: " + set);

        // The Python side keeps /ttl alive: Curator's node on the same path shares its child.
        PersistentTtlNode ttl = new PersistentTtlNode(client, "/ttl", 5000, new byte[0]);
        ttl.start();
        System.out.println("ttl created: " + ttl.waitForInitialCreate(10, TimeUnit.SECONDS));
        System.out.println("ttl children: " + client.getChildren().forPath("/ttl"));
        ttl.close();

        shared.close();
        ids.close();
        delay.close();
        client.close();
    }
}
