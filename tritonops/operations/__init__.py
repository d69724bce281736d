"""Operations: (desired state, facts) -> the steps still needed, like pyinfra's operations.

An operation is pure: it names the facts it needs (`facts(args)`), and from the arguments and those
facts yields only the steps still needed (`steps(args, facts)`); facts that already match yield
nothing, which is what makes a run idempotent and `--check` free. Steps are data (a file to put, an
argument list to run), never a shell string built from user values; `execute.py` carries them out
over a host session. The playbook engine finds an operation by the import path its name has in
`tritonops/playbook/known_operations.py`; nothing here imports the operation modules to list them.
"""
