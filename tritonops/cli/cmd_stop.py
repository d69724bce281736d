"""`tritonops stop`: cli/maintenance_command.py."""

from __future__ import annotations

from tritonops.cli.maintenance_command import register_action


def register(subparsers, common) -> None:
    register_action(subparsers, common, "stop")
