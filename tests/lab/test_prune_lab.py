"""`tritonops prune` on a real lab host: three releases deployed on the full host (engine arguments changed between
them, as day two's test makes them), the oldest made to name an older build of the image (a real image committed
on the host, as an earlier `tritonops image build` would have left), then `prune --check` changes nothing,
`prune --keep 1` removes the oldest release and that image while current and previous and their image stay,
`releases` lists the kept ones, rollback still works and a second prune has nothing to do. One deployment
(`dep-prune`) on ports of its own; every other deployment on the host is put in the host's index first, so the
images their releases name stay."""

import json

import pytest

from tests.lab.test_serve_lab import cli, full_host_inventory
from tritonops import host_programs
from tritonops.lab.testing import FULL_2080TI
from tritonops.serving.deployment_index import INDEX_PATH, parse_index

ROOT = "/opt/tritonops"
DEPLOYMENT = "dep-prune"
OLD_TAG = "tritonserver:vllm_env-0ldbu11d0000"


@pytest.fixture(scope="module")
def inventory(lab, tmp_path_factory):
    return full_host_inventory(lab, tmp_path_factory.mktemp("prune") / "hosts.yml", DEPLOYMENT,
                               tritonops_http_port=18760, tritonops_grpc_port=18761, tritonops_metrics_port=18762)


@pytest.fixture(scope="module")
def on_host(lab, inventory):
    import shlex
    import subprocess

    def run(*argv: str) -> subprocess.CompletedProcess:
        """One shell line, or an argument list quoted for the host's shell."""
        line = argv[0] if len(argv) == 1 else shlex.join(argv)
        return subprocess.run(lab.ssh_argv(FULL_2080TI, line), capture_output=True, text=True)

    def clean():
        run(f"docker rm -f $(docker ps -aq --filter label=tritonops.deployment={DEPLOYMENT}) 2>/dev/null; "
            f"docker image rm {OLD_TAG} 2>/dev/null; rm -rf {ROOT}/{DEPLOYMENT}")
    clean()
    yield run
    clean()


def host_state(on_host) -> tuple[str, str, str]:
    """What prune could change: the release folders, the images, the containers."""
    return (on_host(f"ls -a {ROOT}/{DEPLOYMENT}/releases").stdout,
            on_host("docker images -q --no-trunc | sort -u").stdout,
            on_host("docker ps -a --format '{{.Names}} {{.Image}}' | sort").stdout)


def current(on_host) -> str:
    return on_host(f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip().rsplit("/", 1)[-1]


def test_prune_keeps_current_previous_and_their_image_and_removes_the_rest(capsys, lab, inventory, on_host, tmp_path):
    made = []
    for extra in ([], ["-e", "tritonops_max_num_seqs=8"], ["-e", "tritonops_max_num_seqs=4"]):
        code, report = cli(capsys, "deploy", "-i", inventory, *extra)
        assert code == 0, [r["msg"] for r in report["results"] if r["status"] == "failed"]
        made.append(current(on_host))
    oldest, previous, newest = made
    assert len(set(made)) == 3
    index = parse_index(on_host(f"cat {INDEX_PATH}").stdout)
    assert index.names(ROOT, DEPLOYMENT)  # the deploy wrote it
    for other in on_host(f"ls -d {ROOT}/*/releases").stdout.split():  # the host's other deployments, as indexed
        name = other.split("/")[-2]
        assert on_host(*host_programs.argv("deployment_index", "add", INDEX_PATH, ROOT, name)).returncode == 0

    serving = on_host(f"docker inspect --format '{{{{.Image}}}}' tritonops-{DEPLOYMENT}").stdout.strip()
    # the oldest release ran an older build: a real image on the host, named by its release.json only
    assert on_host(f"docker rm -f prune-old 2>/dev/null; docker create --name prune-old {serving} true && "
                   f"docker commit --change 'LABEL tritonops.test=older-build' prune-old {OLD_TAG} && "
                   "docker rm prune-old").returncode == 0
    older_build = on_host(f"docker image inspect --format '{{{{.Id}}}}' {OLD_TAG}").stdout.strip()
    assert older_build.startswith("sha256:") and older_build != serving
    release_json = f"{ROOT}/{DEPLOYMENT}/releases/{oldest}/release.json"
    assert on_host("python3", "-c", "import json, sys; p = sys.argv[1]; d = json.load(open(p)); "
                   "d['image_id'] = sys.argv[2]; json.dump(d, open(p, 'w'))", release_json,
                   older_build).returncode == 0

    before = host_state(on_host)
    code, checked = cli(capsys, "prune", "-i", inventory, "--keep", "1", "--check")
    (row,) = checked["results"]
    assert code == 0 and row["status"] == "changed", row["msg"]
    assert host_state(on_host) == before  # --check changes nothing
    decided = {r["release"]: (r["remove"], r["why"]) for r in row["payload"]["releases"]}
    assert decided == {newest: (False, "current"), previous: (False, "previous: what a rollback goes back to"),
                       oldest: (True, "older than the 1 newest, not current or previous")}
    images = {i["id"]: i for i in row["payload"]["images"]}
    assert images[older_build]["remove"] and not images[serving]["remove"]
    assert row["payload"]["index"] == "read" and f"{ROOT}/{DEPLOYMENT}" in row["payload"]["deployments"]

    audit = tmp_path / "audit.log"
    code, pruned = cli(capsys, "prune", "-i", inventory, "--keep", "1", "--audit-log", str(audit))
    (row,) = pruned["results"]
    assert code == 0 and row["status"] == "changed", row["msg"]
    removed = row["payload"]["removed"]
    assert f"release {oldest}" in removed and f"image {older_build[7:19]}" in removed
    assert row["payload"]["release_bytes"] > 0 and row["payload"]["image_bytes"] > 0
    assert on_host(f"ls {ROOT}/{DEPLOYMENT}/releases").stdout.split() == [previous, newest]
    kept_images = on_host("docker images -q --no-trunc").stdout.split()
    assert serving in kept_images and older_build not in kept_images
    for release in (previous, newest):  # their image, as their release.json names it, is still on the host
        named = json.loads(on_host(f"cat {ROOT}/{DEPLOYMENT}/releases/{release}/release.json").stdout)["image_id"]
        assert named in kept_images
    phases = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(d["tritonops"]["action"], d["tritonops"].get("status")) for d in phases] == \
        [("prune-started", None), ("phase", "changed"), ("prune-finished", "ok")]

    code, listed = cli(capsys, "releases", "-i", inventory)
    listing = listed["results"][0]["payload"]
    assert code == 0 and [(r["id"], r["role"]) for r in listing["releases"]] == \
        [(newest, "current"), (previous, "previous")]

    code, back = cli(capsys, "rollback", "-i", inventory)
    assert code == 0, [r["msg"] for r in back["results"] if r["status"] == "failed"]
    assert current(on_host) == previous

    code, again = cli(capsys, "prune", "-i", inventory, "--keep", "1")
    (row,) = again["results"]
    assert code == 0 and row["status"] == "ok" and row["payload"]["removed"] == []
    assert row["msg"].startswith(f"nothing to prune of {DEPLOYMENT}")
