"""Planning: from inventory hosts and their probed facts to what each host should run.

The flow `plan` shows and `deploy` executes, as data: `plan_hosts(...) -> [HostDeployPlan]`
(pure, given loaded models) and `load_models_for(...)` / `controller_folders(...)` (the I/O: model
specs, and the digests of the controller folders weights are pushed from).
"""

from tritonops.planning.host_plan import HostDeployPlan, ModelInstancePlan, plan_hosts
from tritonops.planning.models import controller_folders, load_models, load_models_for, model_refs

__all__ = ["HostDeployPlan", "ModelInstancePlan", "controller_folders", "load_models", "load_models_for", "model_refs",
           "plan_hosts"]
