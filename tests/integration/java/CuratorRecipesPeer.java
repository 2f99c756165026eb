// The Curator side of tests/integration/test_curator_recipes.py and test_revocation.py:
// InterProcessMutex (revocable or not), InterProcessSemaphoreV2, LeaderLatch, LeaderSelector
// and SharedCount on the paths aiocoord's recipes use.
// Usage: java CuratorRecipesPeer <connect string>
//
// Prints "ready", then answers one line per request on stdin:
//   hold <lock path> <revocable: 0|1>  takes an InterProcessMutex (made revocable first if 1,
//                                   its listener printing "revoked" unasked); "held <node path>"
//   status                          "holding <isAcquiredInThisProcess>"
//   release                         releases it; "released"
//   revoke <node path>              Revoker.attemptRevoke; "revoke-sent"
//   semaphore <path> <max leases>   makes an InterProcessSemaphoreV2; "ok"
//   acquire <ms>                    one lease within ms: "lease" (kept), or "none"
//   return                          returns the oldest lease kept; "returned"
//   latch <path> <id>               starts a LeaderLatch; "ok"
//   latch-await <ms>                "leader true|false" (LeaderLatch.await)
//   latch-leader                    "leader-id <id of the latch's leader>"
//   latch-close                     closes the latch; "closed"
//   select <path> <id>              starts a LeaderSelector (no requeue); "ok"; once it leads,
//                                   "leading" (the only line it prints unasked)
//   resign                          ends its term; "resigned"
//   selector-leader                 "leader-id <id of the selector's leader>"
//   count <path> <seed>             starts a SharedCount; "count <value> <version>"
//   count-snapshot                  keeps the versioned value seen now; "count <value> <version>"
//   count-try <n>                   trySetCount(the value kept, n): "set true|false"
//   count-set <n>                   setCount(n); "ok"
//   count-await <n> <ms>            "count <value> <version>" once it reads n, or "timeout"
//   quit                            closes everything and ends

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.SharedCountReader;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;

public final class CuratorRecipesPeer {
    private CuratorRecipesPeer() {}

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static String count(VersionedValue<Integer> value) {
        return "count " + value.getValue() + " " + value.getVersion();
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(
            args[0], 10000, 10000, new RetryNTimes(3, 100));
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        say("ready");
        BufferedReader in = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8));
        InterProcessMutex mutex = null;
        InterProcessSemaphoreV2 semaphore = null;
        ArrayDeque<Lease> leases = new ArrayDeque<>();
        LeaderLatch latch = null;
        LeaderSelector selector = null;
        Semaphore resign = new Semaphore(0);
        SharedCount shared = null;
        VersionedValue<Integer> kept = null;
        // Woken by every change SharedCount reads.
        Object changed = new Object();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.split(" ");
            switch (words[0]) {
                case "hold":
                    mutex = new InterProcessMutex(client, words[1]);
                    if ("1".equals(words[2])) {
                        mutex.makeRevocable(forLock -> say("revoked"));
                    }
                    if (!mutex.acquire(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("no grant within 30 s");
                    }
                    // The holder sorts first among the participants.
                    say("held " + mutex.getParticipantNodes().iterator().next());
                    break;
                case "status":
                    say("holding " + (mutex != null && mutex.isAcquiredInThisProcess()));
                    break;
                case "release":
                    mutex.release();
                    say("released");
                    break;
                case "revoke":
                    Revoker.attemptRevoke(client, words[1]);
                    say("revoke-sent");
                    break;
                case "semaphore":
                    semaphore = new InterProcessSemaphoreV2(
                        client, words[1], Integer.parseInt(words[2]));
                    say("ok");
                    break;
                case "acquire":
                    Lease lease = semaphore.acquire(Long.parseLong(words[1]), TimeUnit.MILLISECONDS);
                    if (lease != null) {
                        leases.add(lease);
                    }
                    say(lease != null ? "lease" : "none");
                    break;
                case "return":
                    semaphore.returnLease(leases.remove());
                    say("returned");
                    break;
                case "latch":
                    latch = new LeaderLatch(client, words[1], words[2]);
                    latch.start();
                    say("ok");
                    break;
                case "latch-await":
                    say("leader " + latch.await(Long.parseLong(words[1]), TimeUnit.MILLISECONDS));
                    break;
                case "latch-leader":
                    say("leader-id " + latch.getLeader().getId());
                    break;
                case "latch-close":
                    latch.close();
                    latch = null;
                    say("closed");
                    break;
                case "select":
                    selector = new LeaderSelector(client, words[1],
                        new LeaderSelectorListenerAdapter() {
                            @Override
                            public void takeLeadership(CuratorFramework framework)
                                    throws Exception {
                                say("leading");
                                resign.acquire();
                            }
                        });
                    selector.setId(words[2]);
                    selector.start();
                    say("ok");
                    break;
                case "resign":
                    resign.release();
                    say("resigned");
                    break;
                case "selector-leader":
                    say("leader-id " + selector.getLeader().getId());
                    break;
                case "count":
                    shared = new SharedCount(client, words[1], Integer.parseInt(words[2]));
                    shared.addListener(new SharedCountListener() {
                        @Override
                        public void countHasChanged(SharedCountReader reader, int value) {
                            synchronized (changed) {
                                changed.notifyAll();
                            }
                        }

                        @Override
                        public void stateChanged(CuratorFramework framework, ConnectionState s) {}
                    });
                    shared.start();
                    say(count(shared.getVersionedValue()));
                    break;
                case "count-snapshot":
                    kept = shared.getVersionedValue();
                    say(count(kept));
                    break;
                case "count-try":
                    say("set " + shared.trySetCount(kept, Integer.parseInt(words[1])));
                    break;
                case "count-set":
                    shared.setCount(Integer.parseInt(words[1]));
                    say("ok");
                    break;
                case "count-await":
                    int wanted = Integer.parseInt(words[1]);
                    long end = System.nanoTime()
                        + TimeUnit.MILLISECONDS.toNanos(Long.parseLong(words[2]));
                    synchronized (changed) {
                        long left;
                        while (shared.getCount() != wanted
                                && (left = end - System.nanoTime()) > 0) {
                            TimeUnit.NANOSECONDS.timedWait(changed, left);
                        }
                    }
                    say(shared.getCount() == wanted
                        ? count(shared.getVersionedValue()) : "timeout");
                    break;
                case "quit":
                    for (Lease held : leases) {
                        semaphore.returnLease(held);
                    }
                    if (latch != null) {
                        latch.close();
                    }
                    if (selector != null) {
                        resign.release();
                        selector.close();
                    }
                    if (shared != null) {
                        shared.close();
                    }
                    client.close();
                    return;
                default:
                    throw new IllegalArgumentException("unknown request: " + line);
            }
        }
        client.close();
    }
}
