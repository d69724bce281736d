"""HAProxy's runtime API lines and answers as the balancer's host programs judge them (stdlib only, no program of
its own): shared by door_runtime.py (commands the controller sends) and door_apply.py (the changes it makes on the
running worker), and by the controller (tritonops/door/runtime.py), so both ends judge an answer alike."""


def line_problem(command):
    """Why `command` is not one runtime-API line this program sends, or None. HAProxy splits a line at
    ';' into several commands (a trailing one runs the first and answers "Unknown command" for the
    rest) and reads '\\' as an escape: neither is in a command tritonops builds."""
    if not command.strip():
        return "an empty command"
    if any(not " " <= char <= "~" for char in command):
        return "a command with a control or non-ASCII character"
    if ";" in command or "\\" in command:
        return "a command with ';' or '\\' (HAProxy would read more than one command)"
    return None


def refusal(command, answer):
    """HAProxy's error for `command` (the answer's first line), or None when the answer is what success
    looks like: `show stat` a CSV header, `show servers state` its format's version, another `show` any
    text, and a command that changes something answers nothing. HAProxy marks no error as an error
    (an unknown command is even answered at the 'info' severity), so each is told from its shape."""
    text = answer.strip("\n")
    first = text.split("\n", 1)[0].strip()
    if first.startswith("Unknown command"):
        return first
    words = command.split()
    if words[:2] == ["show", "stat"] and not {"typed", "json", "domain"} & set(words):
        return None if first.startswith("# pxname,") else first or "an empty answer"
    if command.startswith("show servers state"):
        return None if first.isdigit() else first or "an empty answer"
    if command.startswith("show "):
        return None
    if words[:2] == ["set", "server"] and "addr" in words[3:4]:  # it says what changed, or that nothing had to
        return None if first.startswith(("IP changed", "no need to change")) else first or "an empty answer"
    return first or None
