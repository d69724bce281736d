"""deployment_index: this deployment named in the host's index of its deployments (serving/deployment_index.py),
so `tritonops prune` knows every deployment whose releases may name an image on the host.

The fact is the index file; the step, only when the index does not name `<root>/<deployment>` yet, is the host
program that adds it under a flock (another deployment's deploy may add its own at the same moment). A file at
the index's path that is not the index fails the task: tritonops never overwrites what it cannot read.
"""

from __future__ import annotations

from typing import ClassVar, Iterable

from pydantic import field_validator

from tritonops import host_programs
from tritonops.errors import InputError, TritonopsError
from tritonops.facts.queries import Facts, FileQuery, Query
from tritonops.operations.base import Args
from tritonops.operations.steps import Run, Step
from tritonops.serving.deployment_index import INDEX_PATH, DeploymentIndex, indexed, parse_index


class DeploymentIndexArgs(Args):
    root: str          # tritonops_root: /opt/tritonops
    deployment: str

    @field_validator("deployment")
    @classmethod
    def _entry(cls, deployment: str, info) -> str:
        try:
            indexed(info.data.get("root", "/"), deployment)
        except InputError as err:
            raise ValueError(err.what) from None
        return deployment

    @field_validator("root")
    @classmethod
    def _root(cls, root: str) -> str:
        try:
            return indexed(root, "x").root
        except InputError as err:
            raise ValueError(err.what) from None


def add_argv(root: str, deployment: str) -> tuple[str, ...]:
    return host_programs.argv("deployment_index", "add", INDEX_PATH, root, deployment)


class DeploymentIndexOperation:
    name: ClassVar[str] = "deployment_index"
    Args: ClassVar[type[Args]] = DeploymentIndexArgs

    def facts(self, args: DeploymentIndexArgs) -> Iterable[Query]:
        return [FileQuery(INDEX_PATH, content=True)]

    def steps(self, args: DeploymentIndexArgs, facts: Facts) -> Iterable[Step]:
        found = facts.file(INDEX_PATH)
        if found.kind == "missing":
            index = DeploymentIndex()
        elif found.kind != "file" or found.text is None:
            raise TritonopsError(f"{INDEX_PATH} is not tritonops' index of deployments (a {found.kind}): move it "
                                 "away and deploy again")
        else:
            try:
                index = parse_index(found.text)
            except TritonopsError as err:
                raise TritonopsError(f"{err}; move it away and deploy again (`tritonops prune` then reads "
                                     "the inventory's deployment only)") from None
        if not index.names(args.root, args.deployment):
            yield Run(add_argv(args.root, args.deployment), timeout_s=60.0, program="deployment_index")


deployment_index = DeploymentIndexOperation()
