"""ProxyCommand and ProxyJump as OpenSSH reads them, made safe to run. Pure.

A ProxyCommand is a shell command written by the user; `%h`, `%p`, `%r`, `%n` and `%%` in it
are filled in from the host being reached. OpenSSH pastes those values in unquoted; here each
value is shell-quoted for the place it lands in (outside quotes, inside '...' or inside "..."),
so a value is always one literal piece of a word and never shell syntax. Host, user and port are
already checked where they are read (tritonops.values.ssh_target): the quoting is the second wall.
Quoting protects from the shell that runs the ProxyCommand only: a value that the command hands
to yet another shell (`sh -c '... %h ...'`) is parsed again there.

The expanded command runs like OpenSSH runs it, `/bin/sh -c 'exec <command>'`, so shell syntax the
user wrote (`2>/dev/null`, `$HOME`) keeps working. paramiko shlex-splits the command line it is
given; `proxy_command_line` returns one that splits back to exactly those three arguments.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from tritonops.errors import InputError
from tritonops.values.ssh_target import Target, parse_target

PROXY_SHELL = "/bin/sh"
TOKENS = {"h": "host", "p": "port", "r": "user", "n": "name"}


@dataclass(frozen=True)
class ProxyValues:
    """What the tokens stand for: %h host, %p port, %r remote user, %n the name the user gave."""

    host: str
    port: int
    user: str
    name: str


def expand_proxy_command(template: str, values: ProxyValues, where: str | None = None) -> str:
    """The ProxyCommand with its tokens replaced in one pass (substituted text is never re-read)."""
    out: list[str] = []
    quote = ""  # the shell quote the template is inside at this point: "", "'" or '"'
    index = 0
    while index < len(template):
        char = template[index]
        index += 1
        if char == "%":
            if index >= len(template):
                raise InputError(f"ProxyCommand {template!r} ends with a lone '%' (write %% for a percent sign)",
                                 where)
            token = template[index]
            index += 1
            if token == "%":
                out.append("%")
            elif token in TOKENS:
                out.append(_quoted_here(_value(values, token, where), quote))
            else:
                raise InputError(f"ProxyCommand {template!r}: unknown token %{token} "
                                 f"(known: %h host, %p port, %r user, %n name, %% a percent sign)", where)
            continue
        out.append(char)
        if char == "\\" and quote != "'" and index < len(template):
            if template[index] != "%":
                out.append(template[index])  # an escaped character is not a quote
                index += 1
            elif template[index + 1:index + 2] in TOKENS:
                # The backslash would escape the quote the value starts with and open the value up.
                raise InputError(f"ProxyCommand {template!r}: a backslash before "
                                 f"{template[index:index + 2]} cannot be kept; remove it", where)
        elif char in "'\"" and quote in ("", char):
            quote = "" if quote == char else char
    return "".join(out)


def check_proxy_command(template: str, where: str | None = None) -> None:
    """Refuse a ProxyCommand whose tokens cannot be expanded (for checking an inventory as it is read)."""
    expand_proxy_command(template, ProxyValues(host="host", port=22, user="user", name="name"), where)


def proxy_command_line(template: str, values: ProxyValues, where: str | None = None) -> str:
    """The command line to hand paramiko's ProxyCommand: it splits to [/bin/sh, -c, 'exec ...']."""
    return shlex.join([PROXY_SHELL, "-c", "exec " + expand_proxy_command(template, values, where)])


def parse_jump_hops(text: str, where: str | None = None) -> tuple[Target, ...]:
    """ProxyJump `[user@]host[:port],...` → the hops in the order they are reached; each one checked
    (a bad hop is an InputError naming it). `none` means no hops."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"ProxyJump needs at least one [user@]host[:port], not {text!r}", where)
    if text.strip().lower() == "none":
        return ()  # as in ssh_config: no ProxyJump
    hops = []
    for hop in text.split(","):
        hop = hop.strip()
        if hop.startswith("ssh://"):
            raise InputError(f"ProxyJump hop {hop!r}: write it as [user@]host[:port]", where)
        hops.append(parse_target(hop, f"{where}: ProxyJump hop {hop!r}" if where else f"ProxyJump hop {hop!r}"))
    return tuple(hops)


def _value(values: ProxyValues, token: str, where: str | None) -> str:
    text = str(getattr(values, TOKENS[token]))
    if not text or text.startswith("-"):
        # Quoting keeps a value one word, but a word starting with '-' is still an option to ssh/nc.
        raise InputError(f"ProxyCommand %{token} would be {text!r}: an empty value or one starting with '-' "
                         f"cannot be passed safely", where)
    return text


def _quoted_here(value: str, quote: str) -> str:
    """`value` as literal text at a point of a shell word that is inside `quote`."""
    quoted = shlex.quote(value)
    if quote == "":
        return quoted
    if quoted == value:
        return value  # nothing the shell would read specially, even inside quotes
    return quote + quoted + quote  # close the user's quote, the value quoted, reopen it
