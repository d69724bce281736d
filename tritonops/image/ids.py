"""Docker image IDs as people read them. Pure."""

from __future__ import annotations


def short_image_id(image_id: str | None) -> str:
    """The 12 hex digits `docker images` shows ("sha256:" left off); "-" for none."""
    if not image_id:
        return "-"
    return image_id[7:19] if image_id.startswith("sha256:") else image_id[:12]
