"""Which of the processes the probe saw on the GPUs are not the deployment's own (stdlib only): a process that
still runs and is no descendant of one of the deployment's running containers holds its GPU for another user, and
the rollout refuses a replica placed there before anything stops (in --check too).

    python3 -c SOURCE PROCESSES DEPLOYMENT    PROCESSES: JSON [{gpu, pid, bytes}]
                                              stdout: JSON [{gpu, pid, bytes}] of those held by another process
"""

import json, os, sys

from tritonops.host_programs.basic import answer, docker


def descendants(roots):
    """Processes under the pids of `roots`, from /proc's parent links (the roots included)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


def main():
    processes, deployment = json.loads(sys.argv[1]), sys.argv[2]
    code, out, _ = docker("ps", "--filter", "label=tritonops.deployment=%s" % deployment, "--format", "{{.Names}}")
    roots = []
    for name in (out.split() if code == 0 else []):
        code, out, _ = docker("inspect", "--format", "{{.State.Running}} {{.State.Pid}}", name)
        words = out.split()
        if code == 0 and len(words) == 2 and words[0] == "true" and words[1].isdigit():
            roots.append(int(words[1]))
    ours = descendants(roots) if roots else set()
    answer([p for p in processes if p["pid"] not in ours and os.path.exists("/proc/%d" % p["pid"])])


if __name__ == "__main__":
    main()
