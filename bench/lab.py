"""What the bench scripts share: the lab's connection settings (from
`scripts/lab env`) and a quiet psql that stops the script on any error."""
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def lab_env():
    out = subprocess.run([os.path.join(HERE, "..", "scripts", "lab"), "env"], check=True, capture_output=True, text=True).stdout
    env = dict(os.environ)
    for word in shlex.split(out.replace("export ", "")):
        key, _, value = word.partition("=")
        env[key] = value
    return env


ENV = lab_env()
# the lab's major (PG=17 make bench): scripts/lab env names its bin folder
PG_BIN = ENV["PG_BIN"]


# quiet, unaligned, no psqlrc, stop at the first error
PSQL = [f"{PG_BIN}/psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"]


def psql(*statements):
    """Runs each statement with its own -c (a CALL that commits cannot share
    one) and returns the unaligned output; exits the script on an error."""
    cmd = list(PSQL)
    for s in statements:
        cmd += ["-c", s]
    r = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"psql failed: {r.stderr}")
    return r.stdout.strip()


def lab_scale():
    """pgbench's scale that makes the data four times the studies lab's
    memory limit (about 15 MB a scale unit, indexes included); exits when
    the lab has no limit, since its results would not be storage-bound."""
    limit = psql("SELECT max(memory_limit_bytes) FROM storlab.tablespaces()")
    if not limit:
        sys.exit("the lab has no memory limit: start it with scripts/lab start --studies (as root)")
    return -(-4 * int(limit) // (15 * 1024 * 1024))
