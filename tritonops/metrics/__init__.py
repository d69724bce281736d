"""Metrics: Triton's :8002 page parsed into per-model figures, the Prometheus targets file and
alerting rules tritonops writes for a fleet (pure), and `tritonops metrics` reading hosts over SSH."""
