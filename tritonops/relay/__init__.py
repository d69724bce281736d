"""Hosts pass things on to each other over their own network (issue #29), so they leave the controller once.

    run.py       one relay run: per-run trust on every host, the tree's streams, verification, cleanup; what
                 moves (the cargo) says how it is sent, taken in and verified (image/relay.py, weights/relay.py)
    settings.py  where the hosts reach each other and the fan-out, from the inventory (pure)
The tree itself is pure planning (planning/relay.py); the program each host runs is host_programs/relay.py.
"""
