"""image_present: the host holds the vllm_env image the release will run, by ID.

The image itself is built once and streamed to the hosts by the deploy flow (tritonops.image.api,
controller-coordinated: one build for the fleet, not one per host); this task checks the result on
each host before a release names the image, and fails with what to do when it is missing.
"""

from __future__ import annotations

from typing import ClassVar, Iterable

from tritonops.errors import TritonopsError
from tritonops.facts.queries import CommandQuery, Facts, Query
from tritonops.operations.base import Args
from tritonops.operations.steps import Step


class ImagePresentArgs(Args):
    image_id: str  # sha256:...
    reference: str = ""  # the tag it was built as, for the message


def inspect_argv(image_id: str) -> tuple[str, ...]:
    return ("docker", "image", "inspect", "--format", "{{.Id}}", image_id)


class ImagePresentOperation:
    name: ClassVar[str] = "image_present"
    Args: ClassVar[type[Args]] = ImagePresentArgs

    def facts(self, args: ImagePresentArgs) -> Iterable[Query]:
        return [CommandQuery(inspect_argv(args.image_id))]

    def steps(self, args: ImagePresentArgs, facts: Facts) -> Iterable[Step]:
        found = facts.command(inspect_argv(args.image_id))
        if not (found.ok and found.stdout.strip() == args.image_id):
            shown = args.reference or args.image_id
            raise TritonopsError(f"the image {shown} ({args.image_id[:19]}) is not on this host: "
                                 f"{found.stderr.strip()[:120] or 'docker did not find it'}; "
                                 "run `tritonops image build -i INVENTORY`")
        return ()


image_present = ImagePresentOperation()
