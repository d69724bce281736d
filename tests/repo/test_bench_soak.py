"""bench/soak.py's leftovers: what a host keeps beyond the retention, counted per replica (a host of 4 replicas keeps
4 times one replica's containers: itself, and a parked and a failed one per release kept)."""


from tests.support.bench_scripts import bench


def _soak():
    return bench("soak")


def host(replicas: int, releases: list[str], parked: int) -> dict:
    names = [f"tritonops-soak{'' if i == 0 else f'-{i}'}" for i in range(replicas)]
    kept = [f"{name}--{release}{suffix}" for name in names for release in releases for suffix in ("", "-failed")]
    return {"releases": len(releases), "release_names": " ".join(releases), "containers": replicas + parked,
            "container_names": " ".join(names + kept[:parked])}


def test_a_host_of_four_replicas_may_keep_four_times_one_replicas_containers():
    soak = _soak()
    releases = [f"r{i}" for i in range(7)]
    found = soak.leftovers({"h4": {}, "h1": {}}, {"h4": host(4, releases, 14), "h1": host(1, releases, 14)}, keep=5)
    assert found["h4"]["containers_beyond_retention"] == 0  # 18 of 4 x 15
    assert found["h1"]["containers_beyond_retention"] == 0  # 15 of 15
    over = soak.leftovers({"h1": {}}, {"h1": {**host(1, releases, 14), "containers": 17}}, keep=5)
    assert over["h1"]["containers_beyond_retention"] == 2
