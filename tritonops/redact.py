"""Secrets kept out of everything tritonops shows or records: one redaction for every output path. Pure.

- values marked secret where they were read (`SecretText`: a value Ansible Vault decrypted) are shown as
  HIDDEN, whatever their variable's name;
- variables whose name says they hold a secret (ansible_password, ansible_become_pass,
  ansible_sudo_password, *_token, *_secret, *api_key*, ...) are shown as HIDDEN, whatever their value;
  names of files holding secrets (`*_file`, `*_path`) are not secrets themselves;
- in any text: the password of `scheme://user:password@host` URLs; `--token=X`, `--password X`,
  `password=X`, `token: X` forms; `Authorization: Bearer X`; well-known token shapes (Hugging Face
  `hf_...`, GitHub `ghp_...`).
The CLI applies `redact_text` to every byte it writes (cli/output.py), so even a message quoting a
failing command line cannot carry a secret to a terminal, a log or a JSON report; and `redact_literals`
with the SecretText values the inventory decrypted this run, whatever text quotes them.
"""

from __future__ import annotations

import re
from typing import Any

HIDDEN = "(hidden)"
MASK = "****"

_KEYWORD = r"(?:pass(?:word|wd|phrase)?|token|secret|api[_-]?key|access[_-]?key|credentials?|private[_-]?key)"
# the keyword is the name's last part: hf_token and db_password are secrets, max_num_batched_tokens and
# tritonops_hf_token_file are not
_SECRET_NAME = re.compile(r"(?:^|[_.-])" + _KEYWORD + r"$", re.IGNORECASE)
_KNOWN_SECRET_VARS = frozenset({"ansible_password", "ansible_ssh_pass", "ansible_become_password",
                                "ansible_become_pass", "ansible_sudo_pass", "ansible_sudo_password",
                                "ansible_su_pass", "ansible_su_password", "ansible_vault_password"})
_PATTERNS = (
    (re.compile(r"(?P<keep>\b(?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=-]+"), MASK),
    # user:password@ in URLs (pip index URLs, HF_ENDPOINT mirrors, proxies)
    (re.compile(r"(?P<keep>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@'\"\\]+:)[^\s/@'\"\\]+(?=@)"), MASK),
    # --token=X, --password X, --hf-token X
    (re.compile(r"(?P<keep>(?<![\w-])--?(?:[\w-]*[_-])?" + _KEYWORD + r"(?:=|\s+))(?!-)[^\s'\"\\]+", re.IGNORECASE), MASK),
    # "api_key": "X" (JSON: string values only, so "kv_bytes_per_token": 12 stays)
    (re.compile(r'(?P<keep>"(?:[^"\s]*[_.-])?' + _KEYWORD + r'"\s*:\s*")(?:[^"\\]|\\.)+(?=")', re.IGNORECASE), MASK),
    # password=X, token: X, HF_TOKEN='X' (YAML, env, key=value)
    (re.compile(r"(?P<keep>(?<![\w.\"-])(?:[\w.-]*[_.-])?" + _KEYWORD + r"\s*[:=]\s*[\"']?)"
                r"(?![\s\"']|\*{4}|(?:true|false|null)\b)[^\s'\",}&\\]+", re.IGNORECASE), MASK),
    (re.compile(r"(?P<keep>)\b(?:hf|ghp|gho|ghs|github_pat|glpat|xox[abp])_[A-Za-z0-9_]{16,}"), MASK),
)


class SecretText(str):
    """A string that is a secret because of where it came from (an Ansible Vault value decrypted by the
    inventory), not because of its variable's name. It is used like any string; `redact_value` hides it."""

    __slots__ = ()

    def __repr__(self) -> str:  # a traceback or a debug print shows the mark, never the value
        return "SecretText(****)"


def is_secret_name(name: str) -> bool:
    return name in _KNOWN_SECRET_VARS or bool(_SECRET_NAME.search(name))


def redact_text(text: str) -> str:
    for pattern, mask in _PATTERNS:
        text = pattern.sub(lambda match: match.group("keep") + mask, text)
    return text


MIN_HIDDEN_LENGTH = 4  # a shorter "secret" (a port, 'yes') masked everywhere would garble every output


def redact_literals(text: str, secrets: frozenset[str] | set[str]) -> str:
    """`text` with every occurrence of these secret values (SecretText read this run) masked."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_HIDDEN_LENGTH and secret in text:
            text = text.replace(secret, MASK)
    return text


def redact_value(name: str, value: Any) -> Any:
    """A variable's value as it may be shown: HIDDEN for a secret name, else with secrets inside masked."""
    if is_secret_name(str(name)) or isinstance(value, SecretText):
        return HIDDEN
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redact_value(str(key), item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value("", item) for item in value]
    return value
