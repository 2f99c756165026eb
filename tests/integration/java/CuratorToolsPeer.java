import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.CompressionProvider;
import org.apache.curator.framework.imps.GzipCompressionProvider;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;

/**
 * What ZooKeeper's and Curator's own Java code makes of the inputs aiocoord's issue-28 helpers
 * take, one request a line on stdin, one answer a line on stdout (hex in, hex out, so that no
 * platform charset touches the bytes):
 *
 * <pre>
 * digest HEX(user:password)  -> DigestAuthenticationProvider.generateDigest
 * gzip HEX(data)             -> HEX(GzipCompressionProvider.compress)
 * gunzip HEX(data)           -> HEX(GzipCompressionProvider.decompress)
 * read CONNECT PATH          -> HEX(getData().decompressed().forPath(PATH))
 * write CONNECT PATH HEX     -> create().compressed().forPath(PATH, data); "ok"
 * </pre>
 */
public final class CuratorToolsPeer {
    public static void main(String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        CompressionProvider gzip = new GzipCompressionProvider();
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.split(" ", 2);
            if (words[0].equals("read") || words[0].equals("write")) {
                System.out.println(viaServer(words[0], words[1].split(" ")));
                continue;
            }
            byte[] arg = hex.parseHex(words.length > 1 ? words[1] : "");
            switch (words[0]) {
                case "digest":
                    System.out.println(DigestAuthenticationProvider.generateDigest(
                            new String(arg, StandardCharsets.UTF_8)));
                    break;
                case "gzip":
                    System.out.println(hex.formatHex(gzip.compress("/p", arg)));
                    break;
                case "gunzip":
                    System.out.println(hex.formatHex(gzip.decompress("/p", arg)));
                    break;
                default:
                    throw new IllegalArgumentException("unknown request: " + words[0]);
            }
        }
    }

    /** A Curator client's compressed read or write of a node (Curator's default provider). */
    private static String viaServer(String op, String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        try (CuratorFramework client =
                CuratorFrameworkFactory.newClient(args[0], new RetryOneTime(100))) {
            client.start();
            client.blockUntilConnected();
            if (op.equals("read")) {
                return hex.formatHex(client.getData().decompressed().forPath(args[1]));
            }
            client.create().compressed().forPath(args[1], hex.parseHex(args[2]));
            return "ok";
        }
    }
}
