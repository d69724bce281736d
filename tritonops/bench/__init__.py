"""`tritonops bench` (issue #24): aiperf from the controller against the fleet, the results kept per deployment
and release, plots, comparisons. The pure parts are bench/plan.py and bench/results.py."""
