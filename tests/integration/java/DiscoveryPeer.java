// The Curator side of tests/integration/test_discovery_curator.py: Apache Curator 5.x's own
// ServiceDiscovery registers one instance, then lists what it finds once the Python side has
// registered its own (a line on stdin), then closes (unregistering its instance).
// Usage: java DiscoveryPeer <connect string with chroot> <base path>
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HashMap;
import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;

public class DiscoveryPeer {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryNTimes(5, 200));
        client.start();
        client.blockUntilConnected();
        Map<String, Object> payload = new HashMap<>();
        payload.put("lang", "java");
        ServiceInstance<Object> mine = ServiceInstance.builder()
            .name("api").id("java-1").address("10.0.0.7").port(8080).sslPort(8443)
            .payload(payload).uriSpec(new UriSpec("{scheme}://{address}:{ssl-port}")).build();
        ServiceDiscovery<Object> discovery = ServiceDiscoveryBuilder.builder(Object.class)
            .client(client).basePath(args[1])
            .serializer(new JsonInstanceSerializer<>(Object.class, false)).build();
        discovery.start();
        discovery.registerService(mine);
        System.out.println("REGISTERED");
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        for (ServiceInstance<Object> found : discovery.queryForInstances("api")) {
            Object p = found.getPayload();
            System.out.println("INSTANCE " + found.getId() + " " + found.getAddress() + " "
                + found.getPort() + " " + found.getSslPort() + " " + found.getServiceType() + " "
                + found.isEnabled() + " " + (p == null ? "null" : p.getClass().getName()) + " "
                + p + " " + found.buildUriSpec());
        }
        System.out.flush();
        discovery.close();
        client.close();
    }
}
