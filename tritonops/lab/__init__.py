"""The lab: real SSH hosts with simulated GPUs on one machine (`tritonops lab up|down|status`).

Layers: `profiles`, `profile_file`, `request`, `plan`, `inventory`, `image_specs` are pure;
`engine`, `images`, `keys`, `containers`, `health` talk to the local Docker engine or run
programs; `api` ties them together and returns data for the CLI to render.
"""
