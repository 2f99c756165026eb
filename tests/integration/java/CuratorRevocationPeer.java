// The Curator 5 side of tests/integration/test_revocation.py.
// Usage: java CuratorRevocationPeer <connect string>
//
// Prints "ready", then answers one line per request on stdin:
//   hold <lock path> <revocable: 0|1>  takes an InterProcessMutex (made revocable first if 1,
//                                      its listener printing "revoked"); "held <node path>"
//   status                             "holding <isAcquiredInThisProcess>"
//   release                            releases it; "released"
//   revoke <node path>                 Revoker.attemptRevoke; "revoke-sent"
//   quit                               closes the client and ends

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryNTimes;

public final class CuratorRevocationPeer {
    private CuratorRevocationPeer() {}

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
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
                case "quit":
                    client.close();
                    return;
                default:
                    throw new IllegalArgumentException("unknown request: " + line);
            }
        }
        client.close();
    }
}
