"""Writes growth.tsv for Benchmarks/growth/wrk.lua and growth.sh: one line per diary size of
Benchmarks/growth/seed.sql, with the tokens (HS256, signed with the server's key, the claims
TokenService issues, spelt as tokens.py spells them) and the ids the requests name.

Usage: data.py KEY_FILE OUT_FILE CURSOR_1 CURSOR_2 CURSOR_3
CURSOR_s is the plain text of diary s's deep-page cursor, "<created_at RFC 3339>|<entry id>"
(EntryRepository.Cursor), which this encodes as the server does (base64url, no padding).

Columns: size, entries, diary, invite code, measuring user's id, their token, the deep cursor,
p's 16 newest entries (GET entry, reads, mark read: all read by m already), m's 16 newest
(PATCH; 10 in the 100-entry diary), the 8 joiners' ids, the joiners' tokens (joiner i for pair
connection i); lists comma-separated."""
import base64, hashlib, hmac, json, sys, time, uuid

SIZES = {1: 100, 2: 10000, 3: 100000}
JOINERS = 8


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def md5_uuid(text: str) -> str:
    return str(uuid.UUID(hashlib.md5(text.encode()).hexdigest()))


key = open(sys.argv[1], "rb").read()
out_path = sys.argv[2]
cursors = sys.argv[3:6]
now = int(time.time())
header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())


def token(s: int, role: str) -> str:
    claims = {"sub": md5_uuid(f"g-u-{s}-{role}"), "sid": md5_uuid(f"g-s-{s}-{role}"), "iat": now, "exp": now + 6 * 3600}
    body = b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    signature = b64(hmac.new(key, f"{header}.{body}".encode(), hashlib.sha256).digest())
    return f"{header}.{body}.{signature}"


with open(out_path, "w") as out:
    for s, n in SIZES.items():
        partner_entries = [k for k in range(n, 0, -1) if k % 10 != 0][:16]
        own_entries = [k for k in range(n, 0, -1) if k % 10 == 0][:16]
        joiners = [f"j{i}" for i in range(1, JOINERS + 1)]
        out.write("\t".join([
            str(s), str(n), md5_uuid(f"g-d-{s}"), f"G{s:09d}", md5_uuid(f"g-u-{s}-m"), token(s, "m"),
            b64(cursors[s - 1].encode()),
            ",".join(md5_uuid(f"g-e-{s}-{k}") for k in partner_entries),
            ",".join(md5_uuid(f"g-e-{s}-{k}") for k in own_entries),
            ",".join(md5_uuid(f"g-u-{s}-{j}") for j in joiners),
            ",".join(token(s, j) for j in joiners),
        ]) + "\n")
