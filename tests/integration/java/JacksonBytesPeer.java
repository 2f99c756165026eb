import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The bytes Jackson's default ObjectMapper (what Curator's JacksonModelSerializer uses) writes
 * for a value, for aiocoord's byte-identity test of its typed models. One request a line on
 * stdin, one answer a line on stdout, bytes as hex:
 *
 * <pre>
 * echo HEX           -> HEX(mapper.writeValueAsBytes(mapper.readValue(bytes, Sample.class)))
 * make               -> HEX(mapper.writeValueAsBytes(the Sample built below))
 * doubles BITS,BITS  -> HEX(mapper.writeValueAsBytes(double[] of those IEEE bit patterns))
 * strings HEX,HEX    -> HEX(mapper.writeValueAsBytes(String[] of those UTF-8 texts))
 * java               -> JAVA feature-version Double.toString(2e23)
 *                       (the digits changed in Java 19: 1.9999999999999998E23 before, 2.0E23)
 * </pre>
 *
 * Used by tests/integration/test_modeled_jackson.py.
 */
public class JacksonBytesPeer {
    public static class Inner {
        public String label;
        public List<Double> values;
    }

    public static class Sample {
        public double tiny;
        public double big;
        public double small;
        public double smallest;
        public double largest;
        public double negativeZero;
        public double third;
        public double hundred;
        public double thousandth;
        public double tenMillion;
        public List<Double> subnormals;
        public List<Double> notShortest;
        public long count;
        public String controls;
        public String astral;
        public String plain;
        public String nothing;
        public List<String> empty;
        public Map<String, String> emptyMap;
        public Map<String, List<Integer>> nested;
        public List<Inner> inners;
        public Inner absent;
    }

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        HexFormat hex = HexFormat.of();
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.split(" ", 2);
            if (words[0].equals("java")) {
                // A call, not "" + 2e23: javac would write that constant's text itself.
                System.out.println(
                        "JAVA " + Runtime.version().feature() + " " + Double.toString(2e23));
            } else if (words[0].equals("doubles")) {
                String[] bits = words[1].split(",");
                double[] values = new double[bits.length];
                for (int i = 0; i < bits.length; i++) {
                    values[i] = Double.longBitsToDouble(Long.parseUnsignedLong(bits[i], 16));
                }
                System.out.println(hex.formatHex(mapper.writeValueAsBytes(values)));
            } else if (words[0].equals("strings")) {
                String[] texts = words[1].split(",", -1);
                String[] values = new String[texts.length];
                for (int i = 0; i < texts.length; i++) {
                    values[i] = new String(hex.parseHex(texts[i]), StandardCharsets.UTF_8);
                }
                System.out.println(hex.formatHex(mapper.writeValueAsBytes(values)));
            } else {
                Sample sample = words[0].equals("echo")
                        ? mapper.readValue(hex.parseHex(words[1]), Sample.class)
                        : built();
                System.out.println(hex.formatHex(mapper.writeValueAsBytes(sample)));
            }
        }
    }

    private static Sample built() {
        Sample s = new Sample();
        s.tiny = 1e-7;
        s.big = 1e20;
        s.small = 1e-5;
        s.smallest = Double.MIN_VALUE;
        s.largest = Double.MAX_VALUE;
        s.negativeZero = -0.0;
        s.third = 1.0 / 3;
        s.hundred = 100.0;
        s.thousandth = 0.001;
        s.tenMillion = 1e7;
        s.subnormals = List.of(1e-323, 1.5e-323, 2e-323, 1e-310, 2.2250738585072014E-308);
        // Doubles Java 17 prints with more digits than the shortest, or other ones.
        s.notShortest = List.of(1e23, 8e23, -5e22, 0x1p60, -1.6130484589462314e17, 5e-323,
                1.6e-322, 5.8652e21, 7.2766781e19, 0x1p53, 1e16, 9999999.999999998,
                0.0009999999999999998);
        s.count = 9007199254740993L;
        s.controls = "\u0000\u001f\t\n\r\u007f\"\\/";
        s.astral = "\uD83D\uDE00 \uD800\uDC00 \u00e9\u20ac\u2028";
        s.plain = "plain";
        s.nothing = null;
        s.empty = new ArrayList<>();
        s.emptyMap = new LinkedHashMap<>();
        s.nested = new LinkedHashMap<>();
        s.nested.put("a", List.of(1, 2));
        s.nested.put("b", new ArrayList<>());
        Inner inner = new Inner();
        inner.label = "in";
        inner.values = List.of(2.5, -1e-10, 123456789.0);
        s.inners = List.of(inner);
        s.absent = null;
        return s;
    }
}
