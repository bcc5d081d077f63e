#!/usr/bin/env bash
# moto's S3 server on loopback, twice, as the tests' S3-compatible stores: one with its access
# checks on, and one without them for presigned GETs, which moto answers with 500 under access
# checks (their signing is proven with AWS's published examples instead).
#
#   scripts/moto.sh start   install moto[server] (PyPI) if missing, start both; on the checked
#                           one create a user, its key and a bucket, and prove a wrong
#                           signature is refused; on the open one create the bucket
#   scripts/moto.sh stop    stop both
#   scripts/moto.sh env     print TEST_S3_ENDPOINT, TEST_S3_REGION, TEST_S3_BUCKET,
#                           TEST_S3_ACCESS_KEY_ID and TEST_S3_SECRET_ACCESS_KEY (checked), and
#                           TEST_S3_OPEN_ENDPOINT (the same bucket name, any key)
#
# moto checks signatures only once INITIAL_NO_AUTH_ACTION_COUNT requests have passed: the
# first three make the IAM user, its policy and its key; every request after them must be
# signed by that key. Its state lives in memory: each start is a new, empty store.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/service-user.sh
source "$root/scripts/service-user.sh"
instance="$root/.data/moto"
pid_files=("$instance/moto.pid" "$instance/moto-open.pid")
env_file="$instance/env"

log() { echo "moto.sh: $*" >&2; }

ensure_installed() {
    python3 -c 'import moto.server, flask_cors' 2>/dev/null && return 0
    log "installing moto[server] from PyPI"
    python3 -m pip install -q 'moto[server]' >&2
}

running_pid() {
    local pid
    [ -f "$1" ] || return 1
    pid=$(cat "$1")
    kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# launch NAME [VARIABLE=VALUE ...]: moto on a free port, its pid in NAME.pid; prints the port
# once moto answers on it, so that the next launch cannot pick the same port.
launch() {
    local name=$1 port
    shift
    port=$(free_port_between 57432 58431)
    env "$@" nohup python3 -m moto.server -H 127.0.0.1 -p "$port" >"$instance/$name.log" 2>&1 &
    echo $! > "$instance/$name.pid"
    log "$name: starting on port $port (pid $!)"
    python3 - "$port" <<'PY' || { log "$name did not start; see $instance/$name.log"; exit 1; }
import sys, time, urllib.request
for _ in range(300):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/moto-api/", timeout=1)
        sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit(1)
PY
    echo "$port"
}

start() {
    ensure_installed
    mkdir -p "$instance"
    if running_pid "${pid_files[0]}" >/dev/null && running_pid "${pid_files[1]}" >/dev/null && [ -f "$env_file" ]; then return 0; fi
    stop
    local port open_port
    port=$(launch moto INITIAL_NO_AUTH_ACTION_COUNT=3)
    open_port=$(launch moto-open)
    python3 - "$port" "$open_port" "$env_file" <<'PY'
import json, sys
import boto3, botocore
port, open_port, env_file = sys.argv[1], sys.argv[2], sys.argv[3]
endpoint, open_endpoint = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{open_port}"
boto3.client("s3", endpoint_url=open_endpoint, region_name="us-east-1", aws_access_key_id="open",
             aws_secret_access_key="open").create_bucket(Bucket="diary-photos")
anonymous = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="anonymous", aws_secret_access_key="anonymous")
iam = boto3.client("iam", **anonymous)
iam.create_user(UserName="diary-server")
iam.put_user_policy(UserName="diary-server", PolicyName="photos", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
key = iam.create_access_key(UserName="diary-server")["AccessKey"]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"])
s3.create_bucket(Bucket="diary-photos")
forged = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id=key["AccessKeyId"], aws_secret_access_key="not-the-secret")
try:
    forged.list_objects_v2(Bucket="diary-photos")
    sys.exit("moto accepted a wrong signature: its access checks are off")
except botocore.exceptions.ClientError as error:
    if error.response["Error"]["Code"] != "SignatureDoesNotMatch":
        sys.exit(f"a wrong signature got {error.response['Error']['Code']}, not SignatureDoesNotMatch")
with open(env_file, "w") as out:
    out.write(f"export TEST_S3_ENDPOINT='{endpoint}' TEST_S3_REGION='us-east-1' TEST_S3_BUCKET='diary-photos' "
              f"TEST_S3_ACCESS_KEY_ID='{key['AccessKeyId']}' TEST_S3_SECRET_ACCESS_KEY='{key['SecretAccessKey']}' "
              f"TEST_S3_OPEN_ENDPOINT='{open_endpoint}'\n")
PY
}

stop() {
    local pid file
    for file in "${pid_files[@]}"; do
        if pid=$(running_pid "$file"); then kill "$pid"; fi
        rm -f "$file"
    done
    rm -f "$env_file"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env) cat "$env_file" ;;
    *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
