import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.imps.ExtractingCuratorOp;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;

/**
 * What Curator makes of a migration, for aiocoord's versioned migrations. curator-x-async (its
 * MigrationManager) is not packaged here: this peer does what MigrationManager does with
 * curator-framework's own operations, one request a line on stdin, one answer a line on stdout.
 * Operations are written "create PATH HEX[ seq|container]", "set PATH HEX VERSION",
 * "delete PATH VERSION", "check PATH VERSION", joined with ";" (HEX "-" for no data). CONNECT
 * is a connect string, or "CONNECT#NAMESPACE" for a client with Curator's namespace.
 *
 * <pre>
 * hash CONNECT OPS                         -> HEX(SHA-256 of the ops, as MigrationManager.hash)
 * apply CONNECT METAPATH SETID OPS|OPS..   -> the migrations and their records in one
 *                                             transaction, as MigrationManager applies them; "ok"
 * pending CONNECT METAPATH SETID OPS|OPS.. -> what MigrationManager.filter makes of the records:
 *                                             the number of migrations left to apply, or
 *                                             "mismatch N" / "more-metadata"
 * hold CONNECT LOCKPATH                    -> "held" once an InterProcessSemaphoreMutex on
 *                                             LOCKPATH is, then "released" after the next line
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
            try (CuratorFramework client = client(words[1])) {
                client.start();  // transactionOp() wants a started client
                if (words[0].equals("hash")) {
                    System.out.println(HEX.formatHex(hash(ops(client, words[2]))));
                    continue;
                }
                client.blockUntilConnected();
                if (words[0].equals("hold")) {
                    InterProcessSemaphoreMutex lock = new InterProcessSemaphoreMutex(client, words[2]);
                    lock.acquire();
                    System.out.println("held");
                    System.out.flush();
                    in.readLine();
                    lock.release();
                    System.out.println("released");
                    System.out.flush();
                    continue;
                }
                String[] rest = words[2].split(" ", 3);
                String meta = ZKPaths.makePath(rest[0], rest[1]);
                if (words[0].equals("pending")) {
                    System.out.println(pending(client, meta, rest[2].split("\\|")));
                    continue;
                }
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

    private static CuratorFramework client(String connect) {
        String[] parts = connect.split("#", 2);
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(parts[0])
                .retryPolicy(new RetryOneTime(100));
        return (parts.length == 2 ? builder.namespace(parts[1]) : builder).build();
    }

    /** MigrationManager's reading of a set's records: children sorted by name, then filter. */
    private static String pending(CuratorFramework client, String meta, String[] migrations)
            throws Exception {
        List<String> names = new ArrayList<>(client.getChildren().forPath(meta));
        names.sort(null);
        if (names.size() > migrations.length) {
            return "more-metadata";
        }
        for (int i = 0; i < names.size(); i++) {
            byte[] stored = client.getData().forPath(ZKPaths.makePath(meta, names.get(i)));
            if (!Arrays.equals(stored, hash(ops(client, migrations[i])))) {
                return "mismatch " + i;
            }
        }
        return Integer.toString(migrations.length - names.size());
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
