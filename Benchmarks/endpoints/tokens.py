"""Writes users.tsv for wrk.lua: for each seeded user n, an access token signed with the
server's key (HS256, the claims TokenService issues), their home diary, its invite code,
and the entry mark_read.sql reads. Usage: tokens.py KEY_FILE OUT_FILE"""
import base64, hashlib, hmac, json, sys, time, uuid

def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

def md5_uuid(text: str) -> str:
    return str(uuid.UUID(hashlib.md5(text.encode()).hexdigest()))

def home(n: int) -> int:
    if n <= 5000: return (n - 1) // 10 + 1
    if n <= 9000: return 501 + (n - 5001) // 8
    return 1001 + (n - 9001) // 2

key = open(sys.argv[1], "rb").read()
now = int(time.time())
header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
with open(sys.argv[2], "w") as out:
    for n in range(1, 10001):
        claims = {"sub": md5_uuid(str(n)), "sid": md5_uuid(f"s{n}"), "iat": now, "exp": now + 6 * 3600}
        # Spelt as the server signs them (sorted keys, no spaces): it reads that spelling
        # without JSONDecoder, and a benchmark of any other measures a path real tokens never take.
        body = b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
        signature = b64(hmac.new(key, f"{header}.{body}".encode(), hashlib.sha256).digest())
        d = home(n)
        k = d + 1500 * (n % 133)
        out.write(f"{n}\t{header}.{body}.{signature}\t{md5_uuid(f'd{d}')}\tB{d:09d}\t{md5_uuid(f'e{k}')}\n")
