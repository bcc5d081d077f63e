import java.io.BufferedInputStream;
import java.io.FileInputStream;
import java.io.InputStream;
import java.security.MessageDigest;
import java.util.Enumeration;
import java.util.HexFormat;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipInputStream;

/**
 * Reads every entry of a ZIP archive as Java does, and prints each one's name and SHA-256,
 * a line each: `java ZipReaders.java zipfile|stream ARCHIVE`. `zipfile` reads the central
 * directory (java.util.zip.ZipFile); `stream` reads front to back (ZipInputStream, as
 * Android apps and many server tools do), which needs a stored entry's sizes in its local
 * header. Either checks every CRC-32 and throws on a mismatch.
 */
public class ZipReaders {
    public static void main(String[] args) throws Exception {
        if (args[0].equals("zipfile")) {
            try (ZipFile zip = new ZipFile(args[1])) {
                for (Enumeration<? extends ZipEntry> entries = zip.entries(); entries.hasMoreElements();) {
                    ZipEntry entry = entries.nextElement();
                    try (InputStream in = zip.getInputStream(entry)) {
                        print(entry.getName(), in);
                    }
                }
            }
        } else {
            try (ZipInputStream zip = new ZipInputStream(new BufferedInputStream(new FileInputStream(args[1])))) {
                for (ZipEntry entry; (entry = zip.getNextEntry()) != null;) {
                    print(entry.getName(), zip);
                }
            }
        }
    }

    static void print(String name, InputStream in) throws Exception {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        byte[] buffer = new byte[65536];
        for (int count; (count = in.read(buffer)) > 0;) {
            sha.update(buffer, 0, count);
        }
        System.out.println(name + "\t" + HexFormat.of().formatHex(sha.digest()));
    }
}
