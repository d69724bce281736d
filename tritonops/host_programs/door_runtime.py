"""HAProxy's runtime API on a balancer host: commands sent to its stats socket (a `stats socket ... level
admin` of the worker), each answer read to the end. The lines are built and checked by the controller
(tritonops/door/runtime.py) and passed as arguments; this program checks them again before sending.

    python3 -c SOURCE SOCKET send COMMAND...
        stdout: JSON {"answers": [{"command", "answer"}...]}
        one connection per command, in order; the first command HAProxy refuses ends the run
    python3 -c SOURCE SOCKET wait-drained BACKEND SERVER TIMEOUT_S
        polls `show stat` until the server has no current session and no queue, or TIMEOUT_S passes
        stdout: JSON {"drained", "waited_s", "polls", "status", "scur", "qcur"}   (drained false: the deadline)

Exit codes: 0 done; 1 an argument this program will not send (one line on stderr); 65 HAProxy refused a
command, or has no such server (stdout: the answers so far, the refused one last; stderr: one line);
69 the socket cannot be reached: missing, refusing, not allowed, silent (one line on stderr, no stdout).
"""

import csv, json, socket, sys, time

from tritonops.host_programs.haproxy_answers import line_problem, refusal

ANSWER_LIMIT = 16 * 1024 * 1024  # a `show stat` of thousands of servers is a few MiB
SOCKET_TIMEOUT_S = 10


class Unreachable(Exception):
    """The stats socket could not be reached or did not answer; the message is one line."""


def ask(path, command):
    """HAProxy's whole answer to one command: one connection, the line sent, read until HAProxy closes."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(SOCKET_TIMEOUT_S)
    try:
        try:
            client.connect(path)
        except FileNotFoundError:
            raise Unreachable("%s: no such socket (is haproxy running, with this `stats socket`?)" % path)
        except ConnectionRefusedError:
            raise Unreachable("%s: connection refused (no haproxy listens there: stopped, or not a socket)" % path)
        except PermissionError:
            raise Unreachable("%s: permission denied (the socket's mode or owner)" % path)
        except OSError as err:
            raise Unreachable("%s: %s" % (path, err.strerror or err))
        chunks, size = [], 0
        try:
            client.sendall(command.encode("ascii") + b"\n")
            while True:
                chunk = client.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > ANSWER_LIMIT:
                    raise Unreachable("%s: the answer to `%s` is over %d bytes" % (path, command, ANSWER_LIMIT))
        except socket.timeout:
            raise Unreachable("%s: no answer to `%s` within %d s" % (path, command, SOCKET_TIMEOUT_S))
        except OSError as err:
            raise Unreachable("%s: `%s`: %s" % (path, command, err.strerror or err))
        return b"".join(chunks).decode("utf-8", "replace")
    finally:
        client.close()


def server_row(answer, backend, server):
    """The `show stat` CSV row of BACKEND/SERVER as a dict, or None. Rows are matched by name: a
    `show stat` filter on a backend that does not exist can read its name as another proxy's id."""
    lines = answer.splitlines()
    if not lines or not lines[0].startswith("# "):
        return None
    for row in csv.DictReader([lines[0][2:]] + [line for line in lines[1:] if line]):
        if row.get("pxname") == backend and row.get("svname") == server:
            return row
    return None


def count(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def fail(code, message, out=None):
    if out is not None:
        json.dump(out, sys.stdout)
        sys.stdout.flush()
    sys.stderr.write(message.replace("\n", " ") + "\n")
    sys.exit(code)


def send(path, commands):
    answers = []
    for command in commands:
        answer = ask(path, command)
        answers.append({"command": command, "answer": answer})
        why = refusal(command, answer)
        if why:
            fail(65, "haproxy refused `%s`: %s" % (command, why), {"answers": answers})
    json.dump({"answers": answers}, sys.stdout)


def wait_drained(path, backend, server, timeout_s):
    started = time.monotonic()
    deadline, interval, polls = started + timeout_s, 0.05, 0
    while True:
        answer = ask(path, "show stat")
        polls += 1
        why = refusal("show stat", answer)
        if why:
            fail(65, "haproxy refused `show stat`: %s" % why, {"answers": [{"command": "show stat", "answer": answer}]})
        row = server_row(answer, backend, server)
        if row is None:
            fail(65, "haproxy has no server %s/%s" % (backend, server))
        scur, qcur = count(row.get("scur")), count(row.get("qcur"))
        drained = scur == 0 and qcur == 0
        now = time.monotonic()
        if drained or now >= deadline:
            json.dump({"drained": drained, "waited_s": round(now - started, 3), "polls": polls,
                       "status": row.get("status"), "scur": scur, "qcur": qcur}, sys.stdout)
            return
        time.sleep(min(interval, deadline - now))
        interval = min(interval * 2, 0.5)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: SOCKET send COMMAND... | SOCKET wait-drained BACKEND SERVER TIMEOUT_S")
    path, action, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if action == "send":
        if not args:
            sys.exit("send: no command")
        for command in args:
            why = line_problem(command)
            if why:
                sys.exit("send: %s: %r" % (why, command))
    elif action == "wait-drained":
        if len(args) != 3:
            sys.exit("wait-drained: BACKEND SERVER TIMEOUT_S")
        try:
            timeout_s = float(args[2])
        except ValueError:
            timeout_s = -1.0
        if not 0 <= timeout_s <= 86400:
            sys.exit("wait-drained: TIMEOUT_S is seconds from 0 to 86400, not %r" % args[2])
    else:
        sys.exit("unknown action " + action)
    try:
        if action == "send":
            send(path, args)
        else:
            wait_drained(path, args[0], args[1], timeout_s)
    except Unreachable as err:
        fail(69, str(err))


if __name__ == "__main__":
    main()
