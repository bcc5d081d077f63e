#!/usr/bin/env bash
# moto's S3 server on loopback, with its access checks on, as the tests' S3-compatible store.
#
#   scripts/moto.sh start   install moto[server] (PyPI) if missing, start it, create a user, its
#                           key and a bucket, and prove a wrong signature is refused
#   scripts/moto.sh stop    stop it
#   scripts/moto.sh env     print TEST_S3_ENDPOINT, TEST_S3_REGION, TEST_S3_BUCKET,
#                           TEST_S3_ACCESS_KEY_ID and TEST_S3_SECRET_ACCESS_KEY
#
# moto checks signatures only once INITIAL_NO_AUTH_ACTION_COUNT requests have passed: the
# first three make the IAM user, its policy and its key; every request after them must be
# signed by that key. Its state lives in memory: each start is a new, empty store.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/service-user.sh
source "$root/scripts/service-user.sh"
instance="$root/.data/moto"
pid_file="$instance/moto.pid"
log_file="$instance/moto.log"
env_file="$instance/env"

log() { echo "moto.sh: $*" >&2; }

ensure_installed() {
    python3 -c 'import moto.server, flask_cors' 2>/dev/null && return 0
    log "installing moto[server] from PyPI"
    python3 -m pip install -q 'moto[server]' >&2
}

running_pid() {
    local pid
    [ -f "$pid_file" ] || return 1
    pid=$(cat "$pid_file")
    kill -0 "$pid" 2>/dev/null && echo "$pid"
}

start() {
    ensure_installed
    mkdir -p "$instance"
    if running_pid >/dev/null && [ -f "$env_file" ]; then return 0; fi
    local port
    port=$(free_port_between 57432 58431)
    INITIAL_NO_AUTH_ACTION_COUNT=3 nohup python3 -m moto.server -H 127.0.0.1 -p "$port" >"$log_file" 2>&1 &
    echo $! > "$pid_file"
    log "starting on port $port (pid $(cat "$pid_file"))"
    python3 - "$port" "$env_file" <<'PY'
import json, sys, time, urllib.request
import boto3, botocore
port, env_file = sys.argv[1], sys.argv[2]
endpoint = f"http://127.0.0.1:{port}"
for _ in range(300):
    try:
        urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
        break
    except Exception:
        time.sleep(0.1)
else:
    sys.exit("moto did not start")
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
              f"TEST_S3_ACCESS_KEY_ID='{key['AccessKeyId']}' TEST_S3_SECRET_ACCESS_KEY='{key['SecretAccessKey']}'\n")
PY
}

stop() {
    local pid
    if pid=$(running_pid); then kill "$pid"; fi
    rm -f "$pid_file" "$env_file"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env) cat "$env_file" ;;
    *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
