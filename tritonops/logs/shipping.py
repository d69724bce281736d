"""Where a Triton container's logs go: the Docker logging driver and its options, as `docker run`
arguments. Pure, tested by equality.

The inventory names a driver (`tritonops_log_driver`), the collector's address for the drivers
that send somewhere (`tritonops_log_collector`), and any more options of that driver
(`tritonops_log_options`). Every driver runs in Docker's non-blocking mode with a bounded buffer,
so a slow or absent collector never stalls Triton's output; the local drivers rotate by size and
count, so a fleet without a collector never fills its disks. A driver or option Docker does not
know is refused here, naming the allowed ones, before any host is touched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from tritonops.text import printable
from tritonops.values.containers import LABEL_DEPLOYMENT, LABEL_RELEASE

LABELS = f"{LABEL_DEPLOYMENT},{LABEL_RELEASE}"  # container labels attached to each log entry

# driver -> the options Docker takes for it (besides COMMON); the address option, where it has one
_DRIVERS: dict[str, tuple[str | None, frozenset[str]]] = {
    "json-file": (None, frozenset({"max-size", "max-file", "compress", "labels", "labels-regex", "env",
                                   "env-regex", "tag"})),
    "local": (None, frozenset({"max-size", "max-file", "compress"})),
    "syslog": ("syslog-address", frozenset({"syslog-address", "syslog-facility", "syslog-tls-ca-cert",
                                            "syslog-tls-cert", "syslog-tls-key", "syslog-tls-skip-verify",
                                            "syslog-format", "tag", "labels", "labels-regex", "env", "env-regex"})),
    "fluentd": ("fluentd-address", frozenset({"fluentd-address", "fluentd-async", "fluentd-buffer-limit",
                                              "fluentd-retry-wait", "fluentd-max-retries",
                                              "fluentd-sub-second-precision", "fluentd-request-ack", "tag",
                                              "labels", "labels-regex", "env", "env-regex"})),
    "gelf": ("gelf-address", frozenset({"gelf-address", "gelf-compression-type", "gelf-compression-level",
                                        "gelf-tcp-max-reconnect", "gelf-tcp-reconnect-delay", "tag", "labels",
                                        "labels-regex", "env", "env-regex"})),
    "journald": (None, frozenset({"tag", "labels", "labels-regex", "env", "env-regex"})),
}
DRIVERS = tuple(_DRIVERS)
COMMON = frozenset({"mode", "max-buffer-size"})
_SCHEMES = {"syslog-address": ("tcp", "udp", "tcp+tls", "unix", "unixgram"),
            "fluentd-address": ("tcp", "unix", None), "gelf-address": ("udp", "tcp")}
_SIZE = re.compile(r"[1-9][0-9]{0,8}[kmg]?")
_ADDRESS = re.compile(r"(?:(?P<scheme>[a-z+]+)://)?(?P<rest>[^\s'\"\\;|&$`<>]+)")


def deployment_tag(deployment: str) -> str:
    """The log tag of a deployment's containers (syslog's app name): one rule, since the settings'
    digest that names what a container was started for includes it."""
    return f"tritonops/{deployment}"


class LogSettingError(ValueError):
    """A log setting Docker would refuse; the message names the setting and what is allowed."""


@dataclass(frozen=True)
class LogShipping:
    driver: str = "json-file"
    options: tuple[tuple[str, str], ...] = ()

    @property
    def collector(self) -> str | None:
        """The address logs are sent to (None: kept on the host)."""
        address_key = _DRIVERS[self.driver][0]
        return dict(self.options).get(address_key) if address_key else None

    @property
    def ships(self) -> bool:
        """True when the driver sends logs off the host (so deploy events are sent the same way)."""
        return self.driver not in ("json-file", "local")


def log_shipping(driver: str = "json-file", collector: str | None = None,
                 options: Mapping[str, Any] | None = None, *, max_size: str = "50m", max_file: int = 5,
                 buffer_size: str = "4m", tag: str | None = None) -> LogShipping:
    """The validated settings; LogSettingError naming the bad one."""
    if driver not in _DRIVERS:
        raise LogSettingError(f"log driver {printable(str(driver))!r} is not one tritonops ships with; "
                              f"allowed: {', '.join(DRIVERS)}")
    address_key, allowed = _DRIVERS[driver]
    chosen: dict[str, str] = {"mode": "non-blocking", "max-buffer-size": _size(buffer_size, "log buffer size")}
    if driver in ("json-file", "local"):
        chosen["max-size"] = _size(max_size, "log max size")
        chosen["max-file"] = str(_count(max_file))
    if "labels" in allowed:
        chosen["labels"] = LABELS
    if driver == "syslog":
        chosen["syslog-format"] = "rfc5424micro"
    if tag and "tag" in allowed:
        chosen["tag"] = tag
    if collector:
        if address_key is None:
            raise LogSettingError(f"log driver {driver} keeps logs on the host; a collector address is for "
                                  f"{', '.join(d for d, (key, _) in _DRIVERS.items() if key)}")
        chosen[address_key] = _address(address_key, collector)
    elif address_key == "gelf-address":
        raise LogSettingError("log driver gelf needs the collector's address (udp://host:12201)")
    for key, value in (options or {}).items():
        key = str(key)
        if key not in allowed and key not in COMMON:
            raise LogSettingError(f"log option {printable(key)!r} is not one log driver {driver} takes; "
                                  f"allowed: {', '.join(sorted(allowed | COMMON))}")
        chosen[key] = _value(key, value)
    if chosen.get("mode") not in ("blocking", "non-blocking"):
        raise LogSettingError("log option mode is blocking or non-blocking")
    return LogShipping(driver, tuple(chosen.items()))


def log_argv(shipping: LogShipping) -> tuple[str, ...]:
    """`docker run` arguments for the settings."""
    argv = ["--log-driver", shipping.driver]
    for key, value in shipping.options:
        argv += ["--log-opt", f"{key}={value}"]
    return tuple(argv)


def _size(value: Any, what: str) -> str:
    text = str(value).strip().lower()
    if not _SIZE.fullmatch(text):
        raise LogSettingError(f"{what} must be a size like 50m or 4m, not {printable(str(value))!r}")
    return text


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
        raise LogSettingError(f"log max file must be a whole number from 1 to 1000, not {printable(str(value))!r}")
    return value


def _address(key: str, value: Any) -> str:
    text = str(value)
    match = _ADDRESS.fullmatch(text)
    schemes = _SCHEMES[key]
    if not match or match.group("scheme") not in schemes:
        shown = ", ".join(f"{s}://" for s in schemes if s) + (" or host:port" if None in schemes else "")
        raise LogSettingError(f"log collector {printable(text)!r} is not an address the driver takes ({shown})")
    return text


def _value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, (str, int)) or isinstance(value, float):
        raise LogSettingError(f"log option {key} must be a string or a whole number")
    text = str(value)
    if not text or any(ord(c) < 32 or c == "\x7f" for c in text) or len(text) > 4096:
        raise LogSettingError(f"log option {key} has an empty, overlong or control-character value")
    if key.endswith("-address"):
        return _address(key, text)
    return text


LOCAL_FALLBACK = log_shipping()  # what a container falls back to when its driver cannot start


# host variable -> log_shipping() keyword (the logging role's defaults are under every host's variables)
_SIZE_VARS = {"tritonops_log_max_size": "max_size", "tritonops_log_max_file": "max_file",
              "tritonops_log_buffer_size": "buffer_size"}


def shipping_of(variables: Mapping[str, Any], deployment: str) -> LogShipping | None:
    """The host's log settings from its variables; None when they do not make valid settings (the
    serve task says why)."""
    try:
        return log_shipping(str(variables.get("tritonops_log_driver", "json-file")),
                            variables.get("tritonops_log_collector") or None,
                            variables.get("tritonops_log_options") or {},
                            **{key: variables[var] for var, key in _SIZE_VARS.items() if var in variables},
                            tag=deployment_tag(deployment))
    except (LogSettingError, TypeError, ValueError):
        return None
