"""tar_bytes: the archive holds exactly the given files, names, modes and times."""

import io
import tarfile

from tritonops.tarball import tar_bytes


def members(data: bytes):
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return [(m.name, m.mode, m.mtime, tar.extractfile(m).read()) for m in tar.getmembers()]


def test_a_mapping_and_triples():
    assert members(tar_bytes({"a/b.txt": b"x", "c": b""})) == [("a/b.txt", 0o644, 0, b"x"), ("c", 0o644, 0, b"")]
    assert members(tar_bytes([("/etc/p", b"yz", 0o600)], mtime=7)) == [("etc/p", 0o600, 7, b"yz")]
