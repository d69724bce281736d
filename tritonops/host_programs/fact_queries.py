"""The fact program: one task's queries (tritonops/facts/queries.py) answered on the host in one round trip.

    python3 -c SOURCE        stdin: JSON queries   stdout: JSON answers, one per query, in order
"""

import hashlib, json, os, stat, sys

def owners(st):
    """The owner's and group's names (the numbers, as text, when the host has no name for them)."""
    import grp, pwd
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = str(st.st_uid)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return {"owner": owner, "group": group}

def file_fact(q):
    path = q["path"]
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {"kind": "missing"}
    except NotADirectoryError:
        return {"kind": "missing"}
    if stat.S_ISLNK(st.st_mode):
        return {"kind": "link", "link_target": os.readlink(path)}
    if stat.S_ISDIR(st.st_mode):
        return dict(kind="dir", mode=stat.S_IMODE(st.st_mode), **owners(st))
    if not stat.S_ISREG(st.st_mode):
        return {"kind": "other"}
    digest = hashlib.sha256()
    text = None
    with open(path, "rb") as handle:
        head = b""
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
            if q.get("content") and len(head) <= q["text_limit"]:
                head += chunk
    if q.get("content") and len(head) <= q["text_limit"]:
        try:
            text = head.decode("utf-8")
        except UnicodeDecodeError:
            text = None
    return dict(kind="file", size=st.st_size, mode=stat.S_IMODE(st.st_mode), sha256=digest.hexdigest(), text=text,
                **owners(st))

def dir_fact(q):
    try:
        return {"exists": True, "names": sorted(os.listdir(q["path"]))}
    except (FileNotFoundError, NotADirectoryError):
        return {"exists": False, "names": []}

def command_fact(q):
    import subprocess
    try:
        done = subprocess.run(q["argv"], stdin=subprocess.DEVNULL, capture_output=True, timeout=q["timeout_s"])
    except FileNotFoundError:
        return {"exit_code": 127, "stderr": "%s: not found" % q["argv"][0]}
    except subprocess.TimeoutExpired:
        return {"exit_code": 124, "stderr": "timed out"}
    return {"exit_code": done.returncode, "stdout": done.stdout.decode("utf-8", "replace")[-65536:],
            "stderr": done.stderr.decode("utf-8", "replace")[-4096:]}


def main():
    queries = json.load(sys.stdin)
    answer = {"file": file_fact, "dir": dir_fact, "command": command_fact}
    json.dump([answer[q["kind"]](q) for q in queries], sys.stdout)


if __name__ == "__main__":
    main()
