"""Model weights on each host: `/opt/tritonops/<deployment>/models/<model-id>/`, shared by releases.

    (where weights come from, the model id and the manifest: tritonops/weights_source/, which
    planning uses too)
    token.py      the hub token: read on the controller, never printed, passed on stdin only
    facts.py      a host program + pure parser: what is in the model folder, its staging twin, free disk
    plan.py       pure: source + facts -> the transfer steps still needed (nothing when verified)
    programs.py   the programs those steps run on the host (stdlib; the hub one needs the hub library)
    transfer.py   the step types, each with run_on(transport)
    operation.py  the `model_weights` operation (strict Args) and `ensure_weights` for one host

Nothing half-written is ever at the final path: files are written in `.<model-id>.partial/`
(complete files under their names, incomplete ones as `<name>.part`, resumed from their size),
verified against the manifest, and the folder is renamed into place.
"""
