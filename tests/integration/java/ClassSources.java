/**
 * Where each class named on the command line is loaded from, one line each: {@code NAME URL}
 * (the jar of its code source). The jars' manifests name /usr/share/java's jars on their
 * Class-Path, so a peer's classpath could load another Curator or ZooKeeper than the one it
 * was given: tests/support.py asks this before it trusts a Curator version's peers.
 */
public final class ClassSources {
    public static void main(String[] args) throws Exception {
        for (String name : args) {
            Class<?> type = Class.forName(name, false, ClassSources.class.getClassLoader());
            System.out.println(name + " " + type.getProtectionDomain().getCodeSource().getLocation());
        }
    }
}
