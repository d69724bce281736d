"""The image as a relay's cargo (relay/run.py): `docker save` at the roots, `docker load` at every receiver,
verified by the exact image ID through each receiver's engine. The controller moves no image bytes.

Only the layers a host lacks: before each round the receivers' engines say which images (so which stacks of
layers) they hold; the image's lowest layers that every receiver of the round holds, stacked the same way, are
left out of the stream (planning/relay.py: layers_everyone_has).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from tritonops.image.engine import HostEngine
from tritonops.planning.relay import DEFAULT_FANOUT, RelayPlan, layer_chains, layers_everyone_has
from tritonops.relay.run import ROUNDS, Delivery, RelayHost, RelayReport, SendOrder, each, relay

IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class ImageCargo:
    image_id: str
    engines: Mapping[str, HostEngine]  # every host taking part: its engine, over the controller's session
    layers: tuple[str, ...] = ()  # the image's layers (diff IDs, base first), as a holder's engine says

    def order(self, receivers: Sequence[RelayHost]) -> SendOrder:
        skip = self._held_by_all(receivers)
        return SendOrder({"kind": "image", "image_id": self.image_id, "skip": list(skip)}, len(skip))

    def sink(self, host: RelayHost) -> dict:
        return {"kind": "image"}

    def verify(self, host: RelayHost) -> str:
        if self.engines[host.name].image(self.image_id) is not None:
            return ""
        return f"its engine does not hold {self.image_id[:19]}"

    def _held_by_all(self, receivers: Sequence[RelayHost]) -> tuple[str, ...]:
        """The image's lowest layers every receiver holds already, asked of their engines now; none when an
        engine does not answer (the whole image then goes)."""
        held: dict[str, frozenset] = {}

        def one(host: RelayHost) -> None:
            try:
                held[host.name] = layer_chains(self.engines[host.name].image_layers())
            except Exception:  # nothing is left out for a receiver whose engine did not say what it holds
                held[host.name] = frozenset()

        each(list(receivers), one)
        return layers_everyone_has(self.layers, [held[r.name] for r in receivers])


def relay_image(image_id: str, holders: Sequence[RelayHost], needers: Sequence[RelayHost],
                engines: Mapping[str, HostEngine], *, fanout: int = DEFAULT_FANOUT, send_timeout_s: float = 3600,
                rounds: int = ROUNDS, cancel: threading.Event | None = None,
                on_round: Callable[[int, RelayPlan], None] | None = None,
                on_delivery: Callable[[Delivery], None] | None = None) -> RelayReport:
    """Bring `image_id` from `holders` to `needers` over the hosts' own network; every host verified by image ID.
    Hosts not reached after `rounds` rounds are in `report.missing` (for the caller's fallback)."""
    if not IMAGE_ID.fullmatch(image_id):
        raise ValueError(f"not an image ID (sha256:<64 hex>): {image_id!r}")
    cargo = ImageCargo(image_id, engines, _layers(image_id, [engines[h.name] for h in holders]))
    return relay(cargo, holders, needers, fanout=fanout, send_timeout_s=send_timeout_s, rounds=rounds,
                 cancel=cancel, on_round=on_round, on_delivery=on_delivery)


def _layers(image_id: str, engines: Sequence[HostEngine]) -> tuple[str, ...]:
    for engine in engines:
        try:
            info = engine.image(image_id)
        except Exception:  # its engine does not answer: another holder may
            continue
        if info is not None:
            return info.layers
    return ()
