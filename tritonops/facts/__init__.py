"""Facts: what tritonops reads from a host. A fact is a program run on the host
plus a pure parser of its output."""
