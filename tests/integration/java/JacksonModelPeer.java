import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;

/**
 * A Java service sharing a typed node with aiocoord.modeled, through ZooKeeper, with Jackson's
 * default ObjectMapper (what Curator's JacksonModelSerializer uses). Arguments: CONNECT
 * READ_PATH WRITE_PATH. It reads READ_PATH (written by aiocoord) as a Tenant and prints its
 * fields one a line, "field=value" (Date as its epoch millis, collections with toString); then
 * it creates WRITE_PATH with a Tenant of its own and prints "WROTE " and the JSON. Used by
 * tests/integration/test_modeled_jackson.py.
 */
public class JacksonModelPeer {
    public enum Tier { FREE, PRO }

    public static class Limits {
        public int maxJobs;
        public double burst;
    }

    public static class Endpoint {
        public String host;
        public int port;
    }

    public static class Tenant {
        public String name;
        public Tier tier;
        public Limits limits;
        public List<String> tags;
        public List<Endpoint> endpoints;
        public String owner;
        public Date created;
        public Map<String, Integer> quota;
        public Long budget;
    }

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        try (CuratorFramework client =
                CuratorFrameworkFactory.newClient(args[0], new RetryOneTime(100))) {
            client.start();
            client.blockUntilConnected();
            Tenant t = mapper.readValue(client.getData().forPath(args[1]), Tenant.class);
            System.out.println("name=" + t.name);
            System.out.println("tier=" + t.tier);
            System.out.println("limits.maxJobs=" + t.limits.maxJobs);
            System.out.println("limits.burst=" + t.limits.burst);
            System.out.println("tags=" + t.tags);
            List<String> endpoints = new ArrayList<>();
            for (Endpoint e : t.endpoints) {
                endpoints.add(e.host + ":" + e.port);
            }
            System.out.println("endpoints=" + endpoints);
            System.out.println("owner=" + t.owner);
            System.out.println("created=" + t.created.getTime());
            System.out.println("quota=" + new TreeMap<>(t.quota));
            System.out.println("budget=" + t.budget);

            Tenant mine = new Tenant();
            mine.name = "java-tenant \u00e9\u20ac";
            mine.tier = Tier.FREE;
            mine.limits = new Limits();
            mine.limits.maxJobs = 7;
            mine.limits.burst = 0.1;
            mine.tags = List.of("jvm", "x\"y");
            Endpoint a = new Endpoint();
            a.host = "10.0.0.1";
            a.port = 8080;
            mine.endpoints = List.of(a);
            mine.owner = null;
            mine.created = new Date(1714979289123L);
            mine.quota = new TreeMap<>(Map.of("cpu", 2, "mem", 1024));
            mine.budget = 9007199254740993L;
            byte[] data = mapper.writeValueAsBytes(mine);
            client.create().creatingParentsIfNeeded().forPath(args[2], data);
            System.out.println("WROTE " + new String(data, StandardCharsets.UTF_8));
        }
    }
}
