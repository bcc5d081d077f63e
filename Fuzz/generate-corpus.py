#!/usr/bin/env python3
"""Writes the seed corpora of Fuzz/Corpus: files shaped like the ones the server meets, made
here with Pillow and exiftool, and written by hand where those cannot (MPF second images,
Motion Photo trailers, the fuzz targets' own record formats). Every coordinate is made up,
in open sea. `make fuzz` minimises and grows the corpora from these seeds; run this only to
seed them again:

    pip install Pillow; apt-get install libimage-exiftool-perl
    Fuzz/generate-corpus.py
"""
import io
import json
import pathlib
import shutil
import struct
import subprocess
import tempfile
import zlib

from PIL import Image, ImageCms, PngImagePlugin

ROOT = pathlib.Path(__file__).resolve().parent
CORPUS = ROOT / "Corpus"
FIXTURES = ROOT.parent / "Tests/DiaryServerTests/Fixtures/revenuecat"
# Made up, in the middle of the Pacific: no one's home.
LATITUDE, LONGITUDE = 12.3456, -145.6789


def write(target, name, data):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def picture(size=(16, 12), mode="RGB"):
    image = Image.new(mode, size)
    for x in range(size[0]):
        for y in range(size[1]):
            image.putpixel((x, y), (x * 16 % 256, y * 20 % 256, 128) if mode == "RGB" else (x * 16 % 256, y * 20 % 256, 128, 200))
    return image


def exiftool(data, suffix, *arguments):
    """`data` with the tags `arguments` set by exiftool, as a phone's camera app would."""
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / ("image" + suffix)
        path.write_bytes(data)
        subprocess.run(["exiftool", "-q", "-overwrite_original", *arguments, str(path)], check=True)
        return path.read_bytes()


PHONE_TAGS = [
    "-Make=FuzzPhone", "-Model=FuzzPhone 15 Pro", "-Software=17.5", "-DateTimeOriginal=2026:01:01 09:30:00",
    f"-GPSLatitude={LATITUDE}", "-GPSLatitudeRef=N", f"-GPSLongitude={-LONGITUDE}", "-GPSLongitudeRef=W",
    "-GPSAltitude=3", "-LensModel=FuzzPhone back camera 6.86mm f/1.78", "-SerialNumber=F00Z000001",
]


def jpeg_bytes(image, **options):
    out = io.BytesIO()
    image.save(out, "JPEG", quality=60, **options)
    return out.getvalue()


def segment(marker, payload):
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def insert_after_soi(jpeg, *segments):
    return jpeg[:2] + b"".join(segments) + jpeg[2:]


def jpegs():
    base = jpeg_bytes(picture())
    write("jpeg", "plain.jpg", base)
    phone = exiftool(base, ".jpg", *PHONE_TAGS, "-Orientation#=6", "-XMP-dc:Creator=Fuzz Person", "-IPTC:City=Nowhere", "-Comment=taken at home")
    write("jpeg", "phone-exif-gps-xmp-iptc.jpg", phone)
    # A maker note as Apple's starts, which exiftool will not write from scratch: an APP1 EXIF by hand.
    maker = b"Apple iOS\0\0\x01MM" + bytes(range(32))
    tiff = b"MM\0*\0\0\0\x08" + struct.pack(">H", 2)
    tiff += struct.pack(">HHII", 0x0112, 3, 1, 8 << 16)  # Orientation 8
    tiff += struct.pack(">HHII", 0x927C, 7, len(maker), 8 + 2 + 24 + 4)  # MakerNote, UNDEFINED
    tiff += b"\0\0\0\0" + maker
    write("jpeg", "makernote-orientation8.jpg", insert_after_soi(base, segment(0xE1, b"Exif\0\0" + tiff)))
    # A lone Orientation without the next-IFD offset TIFF requires after the entries.
    short = b"Exif\0\0MM\0*\0\0\0\x08\0\x01" + struct.pack(">HHII", 0x0112, 3, 1, 6 << 16)
    write("jpeg", "exif-without-next-ifd.jpg", insert_after_soi(base, segment(0xE1, short)))
    # MPF: a second picture after End Of Image (a depth map or preview), with its own EXIF and GPS.
    second = exiftool(jpeg_bytes(picture((8, 8))), ".jpg", *PHONE_TAGS)
    mpf = segment(0xE2, b"MPF\0MM\0*\0\0\0\x08" + bytes(40))
    write("jpeg", "mpf-second-image.jpg", insert_after_soi(phone, mpf) + second)
    # A Motion Photo: an MP4 appended after End Of Image, its own location inside.
    video = struct.pack(">I", 24) + b"ftypmp42\0\0\0\0mp42isom" + struct.pack(">I", 40) + b"udta" + b"\xa9xyz+12.3456-145.6789/" + bytes(9)
    write("jpeg", "motion-photo-trailer.jpg", exiftool(base, ".jpg", "-XMP-GCamera:MicroVideo=1", "-XMP-GCamera:MicroVideoOffset=64") + video)
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    write("jpeg", "icc-jfif-progressive.jpg", jpeg_bytes(picture(), icc_profile=icc, progressive=True, dpi=(72, 72)))
    # Fill bytes before a marker, a restart marker, and a cut inside the scan.
    write("jpeg", "fill-bytes.jpg", base[:2] + b"\xff\xff\xff" + base[2:])
    write("jpeg", "truncated-scan.jpg", base[: len(base) - 40])
    write("jpeg", "comment-between-scans.jpg", jpeg_bytes(picture(), progressive=True).replace(b"\xff\xda", segment(0xFE, b"hidden") + b"\xff\xda", 2))


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def pngs():
    out = io.BytesIO()
    picture().save(out, "PNG")
    base = out.getvalue()
    write("png", "plain.png", base)
    info = PngImagePlugin.PngInfo()
    info.add_text("Author", "Fuzz Person")
    info.add_itxt("XML:com.adobe.xmp", f'<x:xmpmeta xmlns:x="adobe:ns:meta/"><exif:GPSLatitude>{LATITUDE}</exif:GPSLatitude></x:xmpmeta>')
    info.add_text("Comment", "compressed comment " * 4, zip=True)
    exif = Image.Exif()
    exif[0x010F] = "FuzzPhone"
    exif[0x0112] = 6
    out = io.BytesIO()
    picture((12, 12), "RGBA").save(out, "PNG", pnginfo=info, exif=exif.tobytes(), icc_profile=ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())
    texts = out.getvalue()
    time = png_chunk(b"tIME", struct.pack(">HBBBBB", 2026, 1, 1, 9, 30, 0))
    with_time = texts[:33] + time + texts[33:]
    write("png", "exif-itxt-ztxt-time-icc.png", with_time)
    write("png", "trailing-data.png", base + b"PK\x03\x04 a zip after IEND")
    write("png", "exif-by-exiftool.png", exiftool(base, ".png", *PHONE_TAGS))
    write("png", "old-exif-spelling.png", base[:33] + png_chunk(b"zxIf", b"Exif\0\0MM\0*") + base[33:])


def webps():
    for name, options in [("lossy-vp8.webp", {"quality": 50}), ("lossless-vp8l.webp", {"lossless": True})]:
        out = io.BytesIO()
        picture().save(out, "WEBP", **options)
        write("webp", name, out.getvalue())
    exif = Image.Exif()
    exif[0x010F] = "FuzzPhone"
    exif[0x0112] = 3
    xmp = f'<x:xmpmeta xmlns:x="adobe:ns:meta/"><exif:GPSLongitude>{LONGITUDE}</exif:GPSLongitude></x:xmpmeta>'.encode()
    for name, options in [("vp8x-exif-xmp-lossy.webp", {"quality": 50}), ("vp8x-exif-xmp-icc-lossless.webp", {"lossless": True, "icc_profile": ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()})]:
        out = io.BytesIO()
        picture(mode="RGBA").save(out, "WEBP", exif=exif.tobytes(), xmp=xmp, **options)
        write("webp", name, out.getvalue())
    out = io.BytesIO()
    frames = [picture(), picture((16, 12)).transpose(Image.Transpose.FLIP_LEFT_RIGHT)]
    frames[0].save(out, "WEBP", save_all=True, append_images=frames[1:], duration=100, exif=exif.tobytes())
    write("webp", "animated-exif.webp", out.getvalue())
    lossy = (CORPUS / "webp/lossy-vp8.webp").read_bytes()
    write("webp", "trailing-data.webp", lossy + b"trailing bytes after the RIFF")


def jsons():
    bodies = {
        "entry.json": '{"content": "今日は晴れ", "question": "What made you smile?"}',
        "duplicate.json": '{"content": "a", "content": "b"}',
        "escaped-duplicate.json": '{"content": "a", "\\u0063ontent": "b"}',
        "nested-duplicate.json": '{"content": "a", "photoIds": [{"x": 1, "x": 2}]}',
        "same-key-other-objects.json": '{"a": {"k": 1}, "b": {"k": 2}, "k": 3}',
        "read-only.json": '{"content": "a", "author": "me"}',
        "allowed-id.json": '{"id": "6f1c8a1e-2b7d-4e0a-9c3f-1a2b3c4d5e6f", "content": "x", "photoIds": []}',
        "wrong-type.json": '{"content": 12}',
        "bad-uuid.json": '{"content": "x", "photoIds": ["not-a-uuid"]}',
        "not-object.json": '["content"]',
        "invalid.json": '{"content": "x",}',
        "escapes.json": '{"con\\"tent": "x", "content": "\\ud83d\\ude00", "\\\\": 1}',
        "unicode-keys.json": '{"caf\\u00e9": 1, "café": 2, "content": "x"}',
        "deep-33.json": '{"content": "x", "d": ' + "[" * 33 + "]" * 33 + "}",
        "deep-32.json": '{"content": "x", "d": ' + "[" * 31 + "]" * 31 + "}",
        "deep-600.json": "[" * 600 + "]" * 600,
        "brackets-in-strings.json": '{"content": "{[{[", "k": "]}]}", "k2": 1}',
    }
    for name, body in bodies.items():
        write("json", name, body)


def b64url(data):
    import base64
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def cursors():
    write("cursor", "change.txt", b64url(b"c1.123456.7"))
    write("cursor", "change-max.txt", b64url(b"c1.18446744073709551615.9223372036854775807"))
    write("cursor", "change-leading-zero.txt", b64url(b"c1.0007.+5"))
    write("cursor", "entry.txt", b64url(b"2026-01-01 09:30:00.123456+00|6f1c8a1e-2b7d-4e0a-9c3f-1a2b3c4d5e6f"))
    write("cursor", "entry-extra-bar.txt", b64url(b"|2026-01-01 09:30:00+00||6f1c8a1e-2b7d-4e0a-9c3f-1a2b3c4d5e6f|"))
    write("cursor", "padding.txt", b64url(b"c1.1.1") + "==")
    write("cursor", "not-canonical.txt", "YQ")
    write("cursor", "empty.txt", "")


def headers():
    def header(selector, value, size=b""):
        return bytes([selector]) + size + value.encode()
    size = struct.pack(">I", 50000)[1:]
    for name, value in [("range-ab", "bytes=0-99"), ("range-open", "bytes=100-"), ("range-suffix", "bytes=-500"),
                        ("range-huge-end", "bytes=0-9223372036854775807"), ("range-several", "bytes=0-1,5-9"),
                        ("range-past-end", "bytes=60000-"), ("range-spaces", "bytes= 1-2 ")]:
        write("headers", name, header(0, value, size))
    write("headers", "range-empty-photo", header(0, "bytes=-1", b"\0\0\0"))
    for name, value in [("inm-star", "*"), ("inm-list", '"x", W/"0123abcd", "y"'), ("inm-empty", "")]:
        write("headers", name, header(1, value))
    for name, value in [("ct-jpeg", "image/jpeg"), ("ct-json", "Application/JSON; charset=utf-8"), ("ct-problem", "application/problem+json"),
                        ("ct-odd", "  IMAGE/WebP ;q=1"), ("ct-empty", "")]:
        write("headers", name, header(2, value))
    for name, value in [("version", "2.10.3"), ("version-short", "7"), ("version-zeros", "000001.0.0"), ("version-bad", "1..2"), ("version-long", "1.2.3.4")]:
        write("headers", name, header(3, value))


def revenuecat():
    (CORPUS / "revenuecat").mkdir(parents=True, exist_ok=True)
    for fixture in sorted(FIXTURES.glob("*.json")):
        shutil.copy(fixture, CORPUS / "revenuecat" / fixture.name)
    test = {"api_version": "1.0", "event": {"id": "CD489E0E-5D52-4E03-966B-A7F17788E432", "type": "TEST", "app_user_id": "$RCAnonymousID:fuzz",
                                            "event_timestamp_ms": 1767225600000, "environment": "SANDBOX", "aliases": None, "product_id": None}}
    write("revenuecat", "test.json", json.dumps(test))
    write("revenuecat", "bool-timestamp.json", json.dumps({"event": {"id": "1", "type": "RENEWAL", "app_user_id": "u", "event_timestamp_ms": True, "environment": "PRODUCTION"}}))
    write("revenuecat", "huge-number.json", '{"event": {"id": "1", "type": "RENEWAL", "app_user_id": "u", "event_timestamp_ms": 1e400, "environment": "PRODUCTION"}}')


def apple():
    def claims(event, jti="7d9c4e1a-fuzz", iat=1767225000, aud="app.zutto-nikki.fuzz"):
        return json.dumps({"iss": "https://appleid.apple.com", "aud": aud, "iat": iat, "jti": jti, "events": json.dumps(event)})
    sub = "001234.fuzz0000000000000000000000000000.0123"
    # As Apple's documentation shows them, signed by the target's own key (selector 0).
    write("apple", "email-disabled", b"\0" + claims({"type": "email-disabled", "sub": sub, "email": "fuzz@privaterelay.appleid.com", "is_private_email": "true", "event_time": 1767225000000}).encode())
    write("apple", "consent-revoked", b"\0" + claims({"type": "consent-revoked", "sub": sub, "event_time": 1767225000000}).encode())
    write("apple", "account-delete", b"\0" + claims({"type": "account-delete", "sub": sub, "event_time": 1767225000000}).encode())
    write("apple", "wrong-audience", b"\0" + claims({"type": "account-delete", "sub": sub}, aud="com.example.other").encode())
    write("apple", "too-old", b"\0" + claims({"type": "account-delete", "sub": sub}, iat=1700000000).encode())
    write("apple", "events-not-json", b"\0" + json.dumps({"iss": "https://appleid.apple.com", "aud": "app.zutto-nikki.fuzz", "iat": 1767225000, "jti": "j", "events": "{"}).encode())
    # Whole payloads (selector 1): unsigned, another algorithm, garbage.
    header = b64url(b'{"alg":"none","kid":"fuzz-key"}')
    write("apple", "alg-none", b"\x01" + f"{header}.{b64url(claims({'type': 'x', 'sub': sub}).encode())}.".encode())
    write("apple", "garbage", b"\x01not.a.jws")


def zips():
    def member(name, contents, flags=0):
        name = name.encode()
        return bytes([flags, len(name)]) + name + struct.pack(">H", len(contents)) + contents
    write("zip", "export-like", member("README.txt", b"Zutto Nikki export\n") + member("diary/2026-01-01.md", b"# Jan 1\n" * 20, 1)
          + member("photos/9f1c.jpg", jpeg_bytes(picture((8, 8))), 0) + member("index.html", b"<html></html>" * 10, 1 | 2 | (7 << 3)))
    write("zip", "non-ascii-names", member("日記/写真 1.jpg", b"\xff\xd8\xff") + member("Ünïcödé/ß.txt", b"x" * 300, 1) + member("emoji/📷.txt", b""))
    write("zip", "bad-dotdot", member("ok.txt", b"1") + member("../escape.txt", b"2"))
    write("zip", "bad-absolute", member("/etc/passwd", b"x"))
    write("zip", "bad-backslash", member("a\\b.txt", b"x"))
    write("zip", "lying-size", member("photo.jpg", b"abc", 4))
    write("zip", "duplicate-names", member("a.txt", b"1") + member("a.txt", b"2", 1))
    write("zip", "empty", b"")


def websocket():
    for name, text in [("auth", '{"type": "auth", "accessToken": "eyJhbGciOiJFZERTQSJ9.e30.c2ln"}'), ("auth-null", '{"type": "auth", "accessToken": null}'),
                       ("auth-number", '{"type": "auth", "accessToken": 5}'), ("ping", '{"type": "ping"}'), ("not-json", "hello"),
                       ("array", '["auth"]'), ("auth-no-token", '{"type":"auth"}')]:
        write("websocket", name, text)


def queries():
    for name, text in [("entries", "limit=20&before=" + b64url(b"2026-01-01 09:30:00+00|6f1c8a1e-2b7d-4e0a-9c3f-1a2b3c4d5e6f")),
                       ("changes", "since=" + b64url(b"c1.42.0") + "&limit=500"), ("calendar", "month=2026-01"), ("month-bad", "month=2026-13"),
                       ("escaped", "since=%41%42&month=2026%2D02&x=a+b&y=%zz&&=&k"), ("token", "access_token=abc.def.ghi&since="),
                       ("photo", "exp=1767225600&sig=abcdef")]:
        write("query", name, text)


if __name__ == "__main__":
    shutil.rmtree(CORPUS, ignore_errors=True)
    for seed in (jpegs, pngs, webps, jsons, cursors, headers, revenuecat, apple, zips, websocket, queries):
        seed()
