"""Chaos faults as data: the seeded plan, the phases a deploy's own progress shows, and whether a fault
landed. Pure: no process, no host, no clock; tested by equality (tests/adversarial/test_chaos_faults.py).

A fault targets a phase of a deploy. The phase is read from the deploy's progress on stderr, as the
bench read it (`Line`: when, what): a phase opens on its line and lasts until the run moves on —
the controller's phases (lock, image) until the next phase's line, a playbook task (weights, release,
serve) on a host until that host's result line (or the next task). A fault *landed* when it was
carried out while the run was in its phase (on its host, for the faults that hit a host), before the
run ended, and it hit something (`Effect.hit`: SSH connections cut, a dockerd or Triton killed, the
controller signalled while it ran). Anything else is *inert*, with the reason, and proves nothing.
"""

from __future__ import annotations

import random
import signal
from dataclasses import dataclass, replace
from typing import Sequence

KINDS = ("ssh", "dockerd", "triton", "collector", "controller-int", "controller-kill")
HOST_KINDS = ("ssh", "dockerd", "triton")  # the others hit the controller or the lab, whatever host the fault names


@dataclass(frozen=True)
class Phase:
    marker: str       # the progress line (on the deploy's stderr) that opens it
    task: bool        # a playbook task: on each host it ends with that host's result line
    spread_s: float   # how far into it a fault may be planned; 0: at its first line (it lasts well under a second)


PHASES = {
    "lock": Phase("lock ", False, 0.0),                 # the run holds the hosts; the image phase runs
    "image": Phase("image ", False, 0.0),               # the image is there; the playbook's first tasks run
    "weights": Phase("TASK model weights", True, 0.0),  # the weights are brought and verified
    "release": Phase("TASK release ", True, 0.0),       # the release folder is being written (not "releases folder")
    "serve": Phase("TASK Triton serves", True, 3.0),    # the container is replaced and gated: seconds
}
_RUN_DONE = ("unlock ", "events ", "targets ")  # the controller's lines after the playbook
_GONE = ("failed", "unreachable")              # a host result that drops the host from its batch


@dataclass(frozen=True)
class Fault:
    trial: int
    kind: str          # one of KINDS
    phase: str         # one of PHASES
    delay_s: float     # after the phase's line appears
    host: str          # the inventory host it hits (ssh, dockerd, triton); the controller's for the others

    @property
    def label(self) -> str:
        return f"{self.kind}@{self.phase}+{self.delay_s:.1f}s on {self.host}"


def plan_faults(seed: int, trials: int, hosts: list[str], kinds: tuple[str, ...] = KINDS,
                phases: tuple[str, ...] = tuple(PHASES)) -> list[Fault]:
    """`trials` faults drawn from `seed`: the kinds in turn (each kind as often as the others, their
    order shuffled by the seed), the phase, the delay (within the phase's spread) and host at random."""
    rng = random.Random(seed)
    order = list(kinds)
    rng.shuffle(order)
    faults = []
    for trial in range(trials):
        kind = order[trial % len(order)]
        phase = rng.choice(phases)
        faults.append(Fault(trial, kind, phase, round(rng.uniform(0.0, PHASES[phase].spread_s), 1),
                            rng.choice(sorted(hosts))))
    return faults


@dataclass(frozen=True)
class Line:
    at_s: float   # seconds from the run's start when it was read
    text: str     # without colours and newline


@dataclass(frozen=True)
class Window:
    phase: str
    host: str | None      # None: every host of the run (a controller phase, or a task whose hosts were not named)
    start_s: float
    end_s: float | None   # None: still open when the lines end


def phase_windows(lines: Sequence[Line]) -> list[Window]:
    """The phases the run went through, in order, from its progress lines."""
    done: list[Window] = []
    open_: list[Window] = []
    batch: list[str] = []  # the hosts named by result lines since the last task line (serial: the batch)

    def close(at: float, which=lambda w: True) -> None:
        for window in [w for w in open_ if which(w)]:
            open_.remove(window)
            done.append(replace(window, end_s=at))

    for line in lines:
        text = line.text
        opened = next((name for name, phase in PHASES.items() if text.startswith(phase.marker)), None)
        if text.startswith("  ") and text[2:3].strip():  # a host's result of the running task (-v steps: deeper)
            host, _, rest = text.strip().partition(" ")
            close(line.at_s, lambda w: PHASES[w.phase].task and w.host in (host, None))
            if rest.split(" ", 1)[0] not in _GONE:
                batch.append(host)
        elif text.startswith("TASK "):
            close(line.at_s, lambda w: PHASES[w.phase].task or opened is not None)
            if opened is not None:
                open_ += [Window(opened, host, line.at_s, None) for host in (dict.fromkeys(batch) or [None])]
            batch = []
        elif opened is not None:  # a controller phase's line (one per host: the first opens it)
            if not any(w.phase == opened for w in open_ + done):
                close(line.at_s)
                open_.append(Window(opened, None, line.at_s, None))
        elif text.startswith(_RUN_DONE):
            close(line.at_s)
    return sorted(done + open_, key=lambda w: (w.start_s, w.host or ""))


def targets(fault: Fault, window: Window) -> bool:
    """Whether `window` is the fault's phase (on its host, for a fault that hits a host)."""
    return window.phase == fault.phase and (fault.kind not in HOST_KINDS or window.host in (None, fault.host))


def open_target(fault: Fault, lines: Sequence[Line], now_s: float) -> Window | None:
    """The fault's phase, open now and open for at least the fault's delay: when to carry it out."""
    return next((w for w in phase_windows(lines) if w.end_s is None and targets(fault, w)
                 and w.start_s + fault.delay_s <= now_s), None)


def next_fire_s(fault: Fault, lines: Sequence[Line]) -> float | None:
    """When the fault is due, from the phases open now (None: none of its phases is open)."""
    due = [w.start_s + fault.delay_s for w in phase_windows(lines) if w.end_s is None and targets(fault, w)]
    return min(due, default=None)


@dataclass(frozen=True)
class Effect:
    hit: bool     # it broke what it aims at: connections cut > 0, a process or container killed, a signal delivered
    said: str


@dataclass(frozen=True)
class Shot:
    """A fault carried out: when it began and returned (seconds from the run's start), what it did."""
    started_s: float
    done_s: float
    effect: Effect


@dataclass(frozen=True)
class Landing:
    landed: bool
    why: str


def landing(fault: Fault, lines: Sequence[Line], ended_s: float, shot: Shot | None,
            exit_code: int | None) -> Landing:
    """Whether `fault` landed in the run whose progress is `lines` and which ended at `ended_s` with
    `exit_code` (a negative code: the signal that ended it)."""
    where = f"{fault.phase} on {fault.host}" if fault.kind in HOST_KINDS else fault.phase
    windows = [w if w.end_s is not None else replace(w, end_s=ended_s)
               for w in phase_windows(lines) if targets(fault, w)]
    spans = ", ".join(f"{w.start_s:.2f}-{w.end_s:.2f} s" for w in windows)
    if shot is None:
        if not windows:
            return Landing(False, f"not fired: the run never reached {where} (it ended at {ended_s:.2f} s)")
        return Landing(False, f"not fired: {where} ({spans}) was over before the fault was due "
                              f"({fault.delay_s:.1f} s into it)")
    when = f"{shot.started_s:.2f}-{shot.done_s:.2f} s"
    if shot.started_s >= ended_s:
        return Landing(False, f"fired at {when}, after the run ended ({ended_s:.2f} s): {shot.effect.said}")
    inside = next((w for w in windows if w.start_s <= shot.started_s and shot.done_s <= w.end_s), None)
    if inside is None:
        return Landing(False, f"fired at {when}, outside {where} ({spans or 'never reached'}): {shot.effect.said}")
    if not shot.effect.hit:
        return Landing(False, f"no effect: {shot.effect.said}")
    if fault.kind == "controller-kill" and exit_code != -signal.SIGKILL:
        return Landing(False, f"the controller exited {exit_code}, not killed by SIGKILL: {shot.effect.said}")
    return Landing(True, f"{shot.effect.said}, at {when} in {where} ({inside.start_s:.2f}-{inside.end_s:.2f} s)")
