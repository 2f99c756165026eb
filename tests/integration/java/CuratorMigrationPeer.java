import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.imps.ExtractingCuratorOp;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;

/**
 * What Curator makes of a migration, for aiocoord's versioned migrations. curator-x-async (its
 * MigrationManager) is not packaged here: this peer does what MigrationManager does with
 * curator-framework's own operations, one request a line on stdin, one answer a line on stdout.
 * Operations are written "create PATH HEX[ seq|container]", "set PATH HEX VERSION",
 * "delete PATH VERSION", "check PATH VERSION", joined with ";" (HEX "-" for no data).
 *
 * <pre>
 * hash CONNECT OPS                       -> HEX(SHA-256 of the ops, as MigrationManager.hash)
 * apply CONNECT METAPATH SETID OPS|OPS.. -> the migrations and their records in one
 *                                           transaction, as MigrationManager applies them; "ok"
 * </pre>
 */
public final class CuratorMigrationPeer {
    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.split(" ", 3);
            try (CuratorFramework client =
                    CuratorFrameworkFactory.newClient(words[1], new RetryOneTime(100))) {
                client.start();  // transactionOp() wants a started client
                if (words[0].equals("hash")) {
                    System.out.println(HEX.formatHex(hash(ops(client, words[2]))));
                    continue;
                }
                client.blockUntilConnected();
                String[] rest = words[2].split(" ", 3);
                String meta = ZKPaths.makePath(rest[0], rest[1]);
                List<CuratorOp> all = new ArrayList<>();
                for (String migration : rest[2].split("\\|")) {
                    List<CuratorOp> these = ops(client, migration);
                    all.addAll(these);
                    all.add(client.transactionOp().create().withMode(CreateMode.PERSISTENT_SEQUENTIAL)
                            .forPath(ZKPaths.makePath(meta, "meta-"), hash(these)));
                }
                client.createContainers(meta);
                client.transaction().forOperations(all);
                System.out.println("ok");
            }
        }
    }

    private static List<CuratorOp> ops(CuratorFramework client, String spec) throws Exception {
        List<CuratorOp> out = new ArrayList<>();
        for (String op : spec.split(";")) {
            String[] w = op.trim().split(" ");
            switch (w[0]) {
                case "create":
                    CreateMode mode = CreateMode.PERSISTENT;
                    if (w.length > 3 && w[3].equals("seq")) mode = CreateMode.PERSISTENT_SEQUENTIAL;
                    if (w.length > 3 && w[3].equals("container")) mode = CreateMode.CONTAINER;
                    out.add(client.transactionOp().create().withMode(mode).forPath(w[1], data(w[2])));
                    break;
                case "set":
                    out.add(client.transactionOp().setData().withVersion(Integer.parseInt(w[3]))
                            .forPath(w[1], data(w[2])));
                    break;
                case "delete":
                    out.add(client.transactionOp().delete().withVersion(Integer.parseInt(w[2]))
                            .forPath(w[1]));
                    break;
                case "check":
                    out.add(client.transactionOp().check().withVersion(Integer.parseInt(w[2]))
                            .forPath(w[1]));
                    break;
                default:
                    throw new IllegalArgumentException("unknown op: " + op);
            }
        }
        return out;
    }

    private static byte[] data(String hex) {
        return hex.equals("-") ? new byte[0] : HEX.parseHex(hex);
    }

    /** MigrationManager.hash, with the same calls. */
    private static byte[] hash(List<CuratorOp> operations) throws Exception {
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        for (CuratorOp op : operations) {
            if (op instanceof ExtractingCuratorOp) {
                ((ExtractingCuratorOp) op).addToDigest(digest);
            } else {
                digest.update(op.toString().getBytes());
            }
        }
        return digest.digest();
    }
}
