import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;

/**
 * Curator's own serializer as a filter: each stdin line is the base64 of an instance node's
 * data; it is read with JsonInstanceSerializer (payload type Object, enabled written) and
 * written back, and the base64 of what Jackson wrote is printed ("ERROR ..." if Curator
 * cannot read it). The first line out is "JAVA <feature version>": Jackson writes a double
 * with Double.toString, whose digits changed in Java 19. Used by test_discovery_curator.py
 * to hold aiocoord's encoder to Jackson's bytes.
 */
public class JacksonEcho {
    public static void main(String[] args) throws Exception {
        JsonInstanceSerializer<Object> serializer = new JsonInstanceSerializer<>(Object.class, false);
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        System.out.println("JAVA " + Runtime.version().feature());
        String line;
        while ((line = in.readLine()) != null) {
            byte[] data = Base64.getDecoder().decode(line.trim());
            String answer;
            try {
                ServiceInstance<Object> instance = serializer.deserialize(data);
                answer = Base64.getEncoder().encodeToString(serializer.serialize(instance));
            } catch (Exception e) {
                answer = "ERROR " + e.toString().replace('\n', ' ');
            }
            System.out.println(answer);
            System.out.flush();
        }
    }
}
